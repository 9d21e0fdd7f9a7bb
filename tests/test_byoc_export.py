"""A model with BYOC external modules survives export_library / load_module: the library
links one trampoline per module, the artifact carries each module's bytes, and the
runtime (in a fresh process without torch or xDSL) deserializes and binds them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.byoc.backends import blas
from tensorkiln.runtime.artifact import ArtifactError, load_module

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="export links with a C compiler (cc)")

BACKENDS = [
    "example_npu",
    pytest.param("blas", marks=pytest.mark.skipif(blas.unavailable() is not None, reason=str(blas.unavailable()))),
]


def _model(rng):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 21))
    h = b.relu(b.dense(x, rng.standard_normal((17, 21)).astype("f4"), rng.standard_normal(17).astype("f4")))
    return b.finish(b.exp(b.dense(h, rng.standard_normal((5, 17)).astype("f4"))))


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_and_load_in_a_fresh_process(rng, backend, tmp_path):
    module = _model(rng)
    lib = tk.build(tk.byoc.partition_for(module, backend))
    assert lib.external_modules
    path = tmp_path / "model.tk"
    lib.export_library(path)
    meta = json.loads((path / "meta.json").read_text())
    assert len(meta["externals"]["modules"]) == len(lib.external_modules)
    x = rng.standard_normal((4, 21)).astype("f4")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", tk.create_executor("interpreter", module).evaluate()(x))
    code = f"""
import sys
sys.modules["xdsl"] = None  # importing xDSL now fails
sys.modules["torch"] = None
import numpy as np
from tensorkiln.runtime import load_module
x, want = np.load({str(tmp_path / "x.npy")!r}), np.load({str(tmp_path / "want.npy")!r})
for executor in ("aot", "graph"):
    lib = load_module({str(path)!r}, executor=executor)
    np.testing.assert_allclose(lib(x), want, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(lib(x[:1]), want[:1], rtol=2e-5, atol=1e-5)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_corrupt_external_module_is_named(rng, tmp_path):
    lib = tk.build(tk.byoc.partition_for(_model(rng), "example_npu"))
    path = tmp_path / "model.tk"
    lib.export_library(path)
    blob = path / "externals" / "0.bin"
    blob.write_bytes(blob.read_bytes()[:-7])
    with pytest.raises(ArtifactError, match=r"externals/0.bin: corrupt, truncated or edited"):
        load_module(path)
    blob.unlink()
    with pytest.raises(ArtifactError, match=r"externals/0.bin: missing"):
        load_module(path)
