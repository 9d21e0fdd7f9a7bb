"""The example packages under examples/ run as their READMEs and the docs say: the pass
package installed (into a temporary directory) and found by tensorkiln-opt through its
entry point, and the BYOC backend offloading a model's dense layers end to end."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.examples.models import mlp

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BIN = Path(sys.executable).parent


def _opt(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tensorkiln.tools.opt", *args], capture_output=True, text=True, env=env, timeout=300)


def test_pass_package_is_found_once_installed(tmp_path):
    sample = EXAMPLES / "my_passes" / "double_neg.mlir"
    env = {**os.environ}
    before = _opt([str(sample), "-p", "cancel-double-neg,dce"], env)
    assert before.returncode != 0 and "cancel-double-neg" in before.stderr

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target),
         str(EXAMPLES / "my_passes")],
        check=True, capture_output=True, timeout=300,
    )
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    after = _opt([str(sample), "-p", "cancel-double-neg,dce"], env)
    assert after.returncode == 0, after.stderr
    assert "graph.neg" not in after.stdout and "graph.relu %x" in after.stdout
    # the sample's own RUN line: FileCheck over the same output
    checked = subprocess.run([str(BIN / "filecheck"), str(sample)], input=after.stdout, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # without dce, the inner neg stays (unused)
    kept = _opt([str(sample), "-p", "cancel-double-neg"], env)
    assert kept.stdout.count("graph.neg") == 1


@pytest.fixture
def my_backend(monkeypatch):
    """``examples/my_backend`` imported afresh (the import registers the backend "mine")."""
    monkeypatch.syspath_prepend(str(EXAMPLES / "my_backend"))
    sys.modules.pop("my_backend", None)
    yield importlib.import_module("my_backend")
    tk.byoc.unregister_backend("mine")
    sys.modules.pop("my_backend", None)


def test_custom_backend_offloads_dense_layers(my_backend, rng, tmp_path):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 9))
    w1, b1 = rng.standard_normal((7, 9)).astype("f4"), rng.standard_normal(7).astype("f4")
    w2, b2 = rng.standard_normal((3, 7)).astype("f4"), rng.standard_normal(3).astype("f4")
    h = b.relu(b.dense(x, b.constant(w1, "w1"), b.constant(b1, "b1")))
    module = b.finish(b.tanh(b.dense(h, b.constant(w2, "w2"), b.constant(b2, "b2"))))
    part = tk.byoc.partition_for(module, "mine")
    (external,) = tk.byoc.external_modules(part)
    assert external.relus == [True, False]  # dense_relu then dense, merged in one region; tanh stays ours
    lib = tk.build(part)
    data = rng.standard_normal((5, 9)).astype("f4")
    want = np.tanh(np.maximum(data @ w1.T + b1, 0) @ w2.T + b2)
    np.testing.assert_allclose(lib(data), want, rtol=1e-5, atol=1e-6)
    lib.export_library(tmp_path / "mine.tk")
    np.testing.assert_allclose(tk.runtime.load_module(tmp_path / "mine.tk")(data), want, rtol=1e-5, atol=1e-6)
