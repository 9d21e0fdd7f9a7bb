"""export_library / runtime.load_module: a round trip in a fresh process that imports
neither torch nor xDSL nor llvmlite, dynamic batch from one artifact, swapping the
weights file, and clear errors for corrupt or truncated artifacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.runtime import ArtifactError, load_module
from tensorkiln.runtime.artifact import replace_weights
from tensorkiln.runtime.manifest import seal

#: run in the fresh process: load the artifact, run both executors on the saved inputs,
#: compare with the saved outputs, and fail if a compiler module was imported
LOADER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    start = time.perf_counter()
    from tensorkiln.runtime import load_module
    art, data = sys.argv[1], np.load(sys.argv[2])
    libs = {kind: load_module(art, executor=kind) for kind in ("aot", "graph")}
    print(f"load {libs['aot'].load_seconds * 1e3:.2f} ms (import + load {(time.perf_counter() - start) * 1e3:.1f} ms)")
    for k in range(int(data["cases"])):
        x = data[f"x{k}"]
        for kind, lib in libs.items():
            got = lib(x)
            np.testing.assert_allclose(got, data[f"y{k}"], rtol=1e-5, atol=1e-6, err_msg=f"{kind} case {k}")
    bad = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "xdsl", "llvmlite"))
    assert not bad, f"the deployed model imported {bad}"
    print("ok", len(sys.modules), "modules")
    """
)


def _run_loader(artifact: Path, cases: list[tuple[np.ndarray, np.ndarray]], tmp_path: Path) -> str:
    data = {"cases": np.array(len(cases))}
    for k, (x, y) in enumerate(cases):
        data[f"x{k}"], data[f"y{k}"] = x, y
    np.savez(tmp_path / "cases.npz", **data)
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(artifact), str(tmp_path / "cases.npz")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout
    return done.stdout


def _mlp(rng, batch="n"):
    b = tk.GraphBuilder()
    x = b.input("x", (batch, 19))
    h = b.relu(b.dense(x, rng.standard_normal((23, 19)).astype("f4"), rng.standard_normal(23).astype("f4")))
    y = b.softmax(b.dense(h, rng.standard_normal((7, 23)).astype("f4")), -1)
    return b.finish(y)


@pytest.fixture
def exported(tmp_path, rng):
    module = _mlp(rng)
    lib = tk.build(module)
    path = tmp_path / "model.tk"
    lib.export_library(path)
    return module, path


def test_round_trip_in_a_fresh_process_without_the_compiler(exported, tmp_path, rng):
    module, path = exported
    assert sorted(p.name for p in path.iterdir()) == ["graph.json", "manifest.json", "meta.json", "model.so", "weights.npz"]
    reference = tk.create_executor("interpreter", module).evaluate()
    cases = []
    for n in (1, 3, 17):  # one artifact, any batch
        x = rng.standard_normal((n, 19)).astype("f4")
        cases.append((x, reference(x)))
    out = _run_loader(path, cases, tmp_path)
    assert "load" in out


def test_load_in_process_both_executors_and_profile(exported, rng):
    module, path = exported
    x = rng.standard_normal((5, 19)).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    for kind in ("aot", "graph"):
        lib = load_module(path, executor=kind)
        np.testing.assert_allclose(lib(x), expected, rtol=1e-5, atol=1e-6)
        assert lib.load_seconds > 0
    report = load_module(path).profile(x, runs=2)
    assert report.kernels and report.first_run_seconds is not None
    with pytest.raises(ValueError, match=r"argument 'x'.*expected 19, got 18"):
        load_module(path)(np.zeros((5, 18), "f4"))
    with pytest.raises(ValueError, match="holds a graph/AOT model"):
        load_module(path, executor="vm")
    with pytest.raises(ValueError, match="unknown executor 'relay'"):
        load_module(path, executor="relay")


def test_replacing_the_weights_needs_no_rebuild(tmp_path, rng):
    """Same architecture, other weights: artifact A given B's weights computes B. Copying
    the file over is refused (the manifest holds the weights' hash); replace_weights checks
    the shapes and rewrites the manifest."""
    module_a, module_b = _mlp(rng), _mlp(rng)
    tk.build(module_a).export_library(tmp_path / "a")
    tk.build(module_b).export_library(tmp_path / "b")
    x = rng.standard_normal((4, 19)).astype("f4")
    expected_b = tk.create_executor("interpreter", module_b).evaluate()(x)
    assert not np.allclose(load_module(tmp_path / "a")(x), expected_b)
    original = (tmp_path / "a" / "weights.npz").read_bytes()
    (tmp_path / "a" / "weights.npz").write_bytes((tmp_path / "b" / "weights.npz").read_bytes())
    with pytest.raises(ArtifactError, match=r"weights\.npz: corrupt, truncated or edited"):
        load_module(tmp_path / "a")
    (tmp_path / "a" / "weights.npz").write_bytes(original)
    replace_weights(tmp_path / "a", tmp_path / "b" / "weights.npz")
    np.testing.assert_allclose(load_module(tmp_path / "a")(x), expected_b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(load_module(tmp_path / "a", executor="graph")(x), expected_b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"weight 'w0' must be float32\[23\], got float32\[3, 3\]"):
        replace_weights(tmp_path / "a", {**_weights(tmp_path / "b"), "w0": np.zeros((3, 3), "f4")})


def _weights(path: Path) -> dict[str, np.ndarray]:
    with np.load(path / "weights.npz") as data:
        return {k: data[k] for k in data.files}


def _corrupt_json(path: Path, name: str) -> None:
    (path / name).write_text((path / name).read_text()[:-40])


def _truncate_library(path: Path) -> None:
    blob = (path / "model.so").read_bytes()
    (path / "model.so").write_bytes(blob[: len(blob) // 2])


def _reshape_a_weight(path: Path) -> None:
    weights = _weights(path)
    weights["w0"] = np.zeros((3, 3), weights["w0"].dtype)
    np.savez(path / "weights.npz", **weights)


def _drop_a_weight(path: Path) -> None:
    weights = _weights(path)
    del weights["w1"]
    np.savez(path / "weights.npz", **weights)


def _rename_the_entry(path: Path) -> None:
    meta = json.loads((path / "meta.json").read_text())
    meta["entry"] = "old_main"
    (path / "meta.json").write_text(json.dumps(meta))


def _pickled_weight(path: Path) -> None:
    weights = _weights(path)
    weights["w0"] = np.array([{"evil": 1}], dtype=object)
    np.savez(path / "weights.npz", **weights)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: _corrupt_json(p, "meta.json"), r"meta\.json: not valid JSON"),
        (lambda p: _corrupt_json(p, "graph.json"), r"graph\.json: not valid JSON"),
        (lambda p: (p / "meta.json").unlink(), r"meta\.json: not listed in"),
        (lambda p: (p / "meta.json").write_text('{"format": "onnx"}'), "format 'onnx'"),
        (_truncate_library, r"model\.so: not a loadable shared library \(truncated"),
        (lambda p: (p / "model.so").unlink(), r"model\.so: not listed in"),
        (lambda p: (p / "weights.npz").unlink(), r"weights\.npz: not listed in"),
        (lambda p: (p / "weights.npz").write_bytes(b"PK\x03\x04garbage"), r"weights\.npz: not a readable \.npz"),
        (_reshape_a_weight, r"weight 'w0' is float32\[3, 3\], the model needs float32\[23\]"),
        (_drop_a_weight, r"weight 'w1' missing"),
        (_pickled_weight, r"weights\.npz: not a readable \.npz weights file"),
        (_rename_the_entry, r"model\.so was exported with another graph\.json and meta\.json"),
        (lambda p: (p / "manifest.json").unlink(), r"manifest\.json: missing \(not a tensorkiln artifact"),
    ],
)
def test_a_corrupt_artifact_gives_a_clear_error(exported, damage, message):
    """Damage is caught by the manifest (naming the file); with the manifest rewritten to
    match, by the checks behind it."""
    _, path = exported
    damage(path)
    with pytest.raises(ArtifactError, match=r"corrupt, truncated or edited|missing"):
        load_module(path)
    if (path / "manifest.json").exists():
        seal(path)
    with pytest.raises(ArtifactError, match=message):
        load_module(path)


def test_missing_artifact_directory_is_named(tmp_path):
    with pytest.raises(ArtifactError, match="no such artifact directory"):
        load_module(tmp_path / "nothing.tk")


def test_export_onto_a_file_is_refused(tmp_path, rng):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RuntimeError, match="exists and is not a directory"):
        tk.build(_mlp(rng)).export_library(tmp_path / "file")


def test_dynamic_batch_torch_model_one_artifact_at_batch_1_3_17(tmp_path):
    torch = pytest.importorskip("torch", reason="the torch frontend needs torch")
    from tensorkiln.frontends.torch import from_exported_program

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3), torch.nn.BatchNorm2d(6), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(6 * 7 * 7, 5)
    ).eval()
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (torch.randn(2, 3, 9, 9),), dynamic_shapes=({0: batch},))
    lib = tk.build(from_exported_program(ep))  # compiled once
    lib.export_library(tmp_path / "dyn.tk")
    cases = []
    for n in (1, 3, 17):
        x = torch.randn(n, 3, 9, 9)
        with torch.no_grad():
            cases.append((x.numpy(), model(x).numpy()))
    _run_loader(tmp_path / "dyn.tk", cases, tmp_path)


def test_deployed_parallel_code_follows_the_runtime_thread_count(tmp_path, rng):
    """The library owns its thread-count variable; the runtime keeps it in step."""
    import json

    from tensorkiln.examples.models import small_cnn
    from tensorkiln.runtime.threads import num_threads

    module, (x,) = small_cnn(batch=3)
    lib = tk.build(module)
    lib.export_library(tmp_path / "cnn.tk")
    meta = json.loads((tmp_path / "cnn.tk" / "meta.json").read_text())
    deployed = load_module(tmp_path / "cnn.tk")
    expected = lib(x)
    for n in (1, 2):
        with num_threads(n):
            np.testing.assert_allclose(deployed(x), expected, rtol=1e-6, atol=1e-6)
            if meta["reads_thread_count"]:
                assert deployed._thread_count.value == n  # noqa: SLF001


def test_runtime_imports_only_numpy_ctypes_and_the_stdlib():
    """Layering: what a deployed model imports never reaches the compiler."""
    import ast

    runtime = Path(tk.__file__).resolve().parent / "runtime"
    # ml_dtypes: numpy's bfloat16; optional, imported on first use: cupy (runtime/cuda.py runs CUDA
    # modules), matplotlib (profile plots)
    allowed_third_party = {"numpy", "ml_dtypes", "cupy", "matplotlib"}
    for path in sorted(runtime.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: must stay inside runtime/
                    assert node.level == 1, f"{path.name}: imports outside runtime/ ({ast.unparse(node)})"
                    continue
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in allowed_third_party or top in sys.stdlib_module_names, f"{path.name} imports {name}"
