"""The ``tensorkiln`` command: every subcommand on real small models, through ``main(argv)``
and (for the entry point, exit codes and stderr) through a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.examples.models import mlp, small_cnn
from tensorkiln.tools.cli import main
from tensorkiln.tools.cli.commands import COMMANDS
from tensorkiln.tools.cli.common import save_mlir

COMMAND = [sys.executable, "-m", "tensorkiln.tools.main"]


def _tensorkiln(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ})


@pytest.fixture(scope="module")
def cnn_files(tmp_path_factory):
    """A small CNN as model.mlir + model.npz (weights), an input x.npy and the expected output."""
    root = tmp_path_factory.mktemp("cli")
    module, (x,) = small_cnn(channels=3, size=12, seed=3)
    save_mlir(module, root / "cnn.mlir")
    np.save(root / "x.npy", x)
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    return root, expected


def test_version_and_help_of_every_command(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"tensorkiln {tk.__version__}"
    for command in COMMANDS:
        with pytest.raises(SystemExit) as exit:
            main([command.NAME, "--help"])
        assert exit.value.code == 0
        assert f"usage: tensorkiln {command.NAME}" in capsys.readouterr().out


def test_compile_then_run_matches_the_interpreter(cnn_files, capsys):
    root, expected = cnn_files
    assert main(["compile", str(root / "cnn.mlir"), "-o", str(root / "cnn.tk"), "--opt-level", "2"]) == 0
    assert "input  x: float32[1, 3, 12, 12]" in capsys.readouterr().out
    assert main(["run", str(root / "cnn.tk"), "--input", str(root / "x.npy"), "--output", str(root / "y.npy")]) == 0
    np.testing.assert_allclose(np.load(root / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def test_compile_dumps_ir_and_applies_opt_level_zero(cnn_files, tmp_path):
    root, expected = cnn_files
    dump = tmp_path / "ir"
    assert main(["compile", str(root / "cnn.mlir"), "-o", str(tmp_path / "o0.tk"), "--opt-level", "0", "--dump-ir", str(dump)]) == 0
    dumped = sorted(p.name for p in dump.iterdir())
    assert dumped and any("graph-to-te" in name for name in dumped)
    assert not any("fuse-ops" in name for name in dumped)  # O0: no graph optimization
    lib = tk.runtime.load_module(tmp_path / "o0.tk")
    np.testing.assert_allclose(lib(np.load(root / "x.npy")), expected, rtol=1e-4, atol=1e-5)


def test_run_without_output_prints_each_output(cnn_files, capsys):
    root, _ = cnn_files
    main(["compile", str(root / "cnn.mlir"), "-o", str(root / "cnn.tk")])
    capsys.readouterr()
    assert main(["run", str(root / "cnn.tk")]) == 0  # random inputs
    assert capsys.readouterr().out.startswith("output 0: float32[1, 10] [")


def test_bench_prints_a_table(cnn_files, capsys):
    root, _ = cnn_files
    assert main(["bench", str(root / "cnn.mlir"), "--threads", "1", "--number", "2", "--repeat", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["engine", "median", "ms", "x", "tensorkiln", "max", "|diff|"]
    assert lines[3].split()[0] == "tensorkiln" and lines[3].split()[2] == "1.00"


def test_bench_compares_with_torch_on_a_pt2(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh()).eval()
    torch.export.save(torch.export.export(model, (torch.randn(3, 7),)), tmp_path / "m.pt2")
    assert main(["bench", str(tmp_path / "m.pt2"), "--compare", "torch", "--number", "2", "--repeat", "2"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[3:]}
    assert set(rows) == {"tensorkiln", "torch"}
    assert float(rows["torch"][3]) < 1e-5  # the outputs agree


def test_compile_pt2_runs_like_torch(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 3, 6)).eval()
    x = torch.randn(2, 2, 7, 5)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "m.pt2")
    np.save(tmp_path / "x.npy", x.numpy())
    assert main(["compile", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "m.tk")]) == 0
    assert main(["run", str(tmp_path / "m.tk"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz")]) == 0
    with np.load(tmp_path / "y.npz") as saved:
        np.testing.assert_allclose(saved["arr_0"], model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_show_lists_kernels_and_writes_pictures(cnn_files, tmp_path, capsys):
    root, _ = cnn_files
    assert main(["show", str(root / "cnn.mlir")]) == 0
    listing = capsys.readouterr().out
    assert "conv2d -> relu" in listing and "float32[1, 10]" in listing
    assert main(["show", str(root / "cnn.mlir"), "--html", str(tmp_path / "g.html"), "--profile"]) == 0
    page = (tmp_path / "g.html").read_text()
    assert "Shaded by measured time" in page and "conv2d_relu_0" in page
    assert main(["show", str(root / "cnn.mlir"), "--svg", str(tmp_path / "g.svg")]) == 0
    assert "conv2d_relu_0" in (tmp_path / "g.svg").read_text()


def test_tune_logs_records_and_prints_a_summary(tmp_path, capsys):
    module, _ = mlp(sizes=(16, 8, 4))
    save_mlir(module, tmp_path / "mlp.mlir")
    log = tmp_path / "tune.jsonl"
    assert main(["tune", str(tmp_path / "mlp.mlir"), "--trials", "4", "--log", str(log), "--tuner", "random"]) == 0
    out = capsys.readouterr().out
    assert log.exists() and log.read_text().count("\n") >= 4
    table = out.splitlines()
    assert table[0].split()[:3] == ["kernel", "trials", "default"]
    for row in table[2:4]:  # (a rule under the header) two kernels, each with its default and a candidate: a verdict each
        assert row.split()[1] == "2" and ("faster than the default" in row or "default schedule is fastest" in row), row
    assert f"--tuning-log {log}" in out
    assert main(["compile", str(tmp_path / "mlp.mlir"), "-o", str(tmp_path / "mlp.tk"), "--tuning-log", str(log)]) == 0


def test_user_errors_are_one_line_with_exit_code_1(cnn_files):
    root, _ = cnn_files
    cases = {
        ("run", "missing.tk"): "missing.tk: no such file or directory",
        ("compile", "cnn.npz", "-o", "a.tk"): "unknown model file type '.npz'",
        ("run", "cnn.mlir"): "not a compiled model",
        ("bench", "cnn.mlir", "--dim", "n"): "--dim 'n': expected NAME=SIZE",
        ("bench", "cnn.mlir", "--compare", "torch"): "--compare torch: not available",
    }
    for args, message in cases.items():
        done = _tensorkiln(*args, cwd=root)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_wrong_input_names_the_argument_and_traceback_on_request(cnn_files):
    root, _ = cnn_files
    main(["compile", str(root / "cnn.mlir"), "-o", str(root / "cnn.tk")])
    np.save(root / "bad.npy", np.zeros((2, 3), np.float32))
    done = _tensorkiln("run", "cnn.tk", "--input", "bad.npy", cwd=root)
    assert done.returncode == 1 and "argument 'x': expected rank 4" in done.stderr and "Traceback" not in done.stderr
    done = _tensorkiln("run", "cnn.tk", "--input", "bad.npy", "--traceback", cwd=root)
    assert done.returncode == 1 and "Traceback" in done.stderr


def test_usage_errors_exit_2(tmp_path):
    for args in (["frobnicate"], ["compile"], ["run", "a.tk", "--no-such-flag"], ["compile", "m.mlir", "-o", "x", "--opt-level", "7"]):
        done = _tensorkiln(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert "usage: tensorkiln" in done.stderr


def test_onnx_model_compiles_runs_and_benches_against_onnxruntime(tmp_path, capsys):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    bias = np.random.default_rng(1).standard_normal(6).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "bias"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6])],
        initializer=[numpy_helper.from_array(bias, "bias")],
    )
    import onnx

    onnx.save(helper.make_model(graph), tmp_path / "m.onnx")
    x = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.tk")]) == 0
    assert main(["run", str(tmp_path / "m.tk"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.maximum(x + bias, 0), rtol=1e-6)
    assert main(["show", str(tmp_path / "m.onnx")]) == 0
    assert "add -> relu" in capsys.readouterr().out
    pytest.importorskip("onnxruntime")
    assert main(["bench", str(tmp_path / "m.onnx"), "--compare", "onnxruntime", "--dim", "n=7", "--number", "2", "--repeat", "2"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[3:]}
    assert set(rows) == {"tensorkiln", "onnxruntime"} and float(rows["onnxruntime"][3]) == 0.0
