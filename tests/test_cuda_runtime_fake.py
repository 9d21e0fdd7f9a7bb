"""The CUDA runtime's Python side without a GPU: ``CudaModule`` with a stand-in for cupy
(``fake_cupy.py``: arrays are numpy, kernels record their launches). Checks argument binding and its
errors, output allocation from symbolic shapes, the launch arguments the host program
passes (buffers, then int32 dynamic sizes), and output="numpy"; the kernels' numbers are
checked by the emulator and, on a GPU, by test_cuda_device.py."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cupy import FakeArray, fake_cupy

import tensorkiln as tk
from tensorkiln.runtime import cuda as runtime


@pytest.fixture
def launches(monkeypatch):
    log: list = []
    monkeypatch.setattr(runtime, "require_cupy", lambda: fake_cupy(log))
    return log


def _mlp():
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37))
    return b.finish(b.relu(b.dense(x, np.ones((13, 37), np.float32))))


def test_build_binds_inputs_allocates_outputs_and_launches(launches):
    lib = tk.build(_mlp(), target="cuda -arch=sm_90")
    assert "--gpu-architecture=sm_90" in lib._module.options
    out = lib(np.zeros((70, 37), np.float32))
    assert isinstance(out, FakeArray) and out.shape == (70, 13) and out.dtype == np.float32
    ((kernel, grid, block, args),) = launches  # dense and relu fused (O2)
    assert kernel == "dense_relu_0" and block == (16, 16, 1) and grid == (2, 1, 1)  # row tiles on x
    # x and its batch size, the weight, the output and its batch size
    assert [a.shape if isinstance(a, np.ndarray) and a.ndim else int(a) for a in args] == [
        (70, 37), 70, (13, 37), (70, 13), 70
    ]
    assert all(type(a) is np.int32 for a in args if not (isinstance(a, np.ndarray) and a.ndim))
    assert isinstance(lib(np.zeros((3, 37), np.float32), output="numpy"), np.ndarray)


def test_bad_arguments_name_the_argument(launches):
    lib = tk.build(_mlp(), target="cuda")
    with pytest.raises(ValueError, match="argument 'x': expected dtype float32, got float64"):
        lib(np.zeros((2, 37)))
    with pytest.raises(ValueError, match=r"argument 'x': expected shape float32\[n, 37\], got \[2, 36\]"):
        lib(np.zeros((2, 36), np.float32))
    with pytest.raises(ValueError, match="expected 1 arguments"):
        lib()
    with pytest.raises(ValueError, match="output must be 'cupy' or 'numpy'"):
        lib(np.zeros((2, 37), np.float32), output="torch")
    with pytest.raises(ValueError, match="argument 'x': expected a numpy array, cupy array or CUDA tensor, got str"):
        lib("x")


def test_empty_batch_launches_nothing(launches):
    lib = tk.build(_mlp(), target="cuda")
    assert lib(np.zeros((0, 37), np.float32)).shape == (0, 13)
    assert launches == []


def test_tf32_build_needs_tensor_cores(monkeypatch):
    """``cuda -tf32`` compiles mma.sync kernels for an sm_80+ GPU and refuses an older one
    before compiling anything."""
    log: list = []
    for capability in ("75", "90"):
        monkeypatch.setattr(runtime, "require_cupy", lambda cc=capability: fake_cupy(log, cc))
        g = tk.GraphBuilder()
        module = g.finish(g.matmul(g.input("a", (40, 33)), g.input("b", (33, 50))))
        if capability == "75":
            with pytest.raises(ValueError, match="sm_75\\) has no TF32 tensor cores"):
                tk.build(module, target="cuda -tf32")
        else:
            lib = tk.build(module, target="cuda -tf32")
            assert "mma.sync.aligned.m16n8k8" in lib.source and not log


def test_bfloat16_lives_on_the_device_as_int16_bits(launches):
    """cupy has no bfloat16: inputs (ml_dtypes or torch bfloat16) go to the device as
    int16 views of the same bits, outputs are int16 there and bfloat16 with output="numpy"."""
    import ml_dtypes

    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.input("x", ("n", 5), ml_dtypes.bfloat16)))
    lib = tk.build(module, target="cuda")
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(ml_dtypes.bfloat16)
    out = lib(x)
    assert isinstance(out, FakeArray) and out.dtype == np.int16 and out.shape == (3, 5)
    ((_, _, _, args),) = launches
    np.testing.assert_array_equal(args[0], x.view(np.int16))  # the input's bits, as int16
    host = lib(x, output="numpy")
    assert host.dtype == ml_dtypes.bfloat16 and host.shape == (3, 5)
    with pytest.raises(ValueError, match=r"argument 'x': expected dtype bfloat16 \(bfloat16's bits as int16 in a cupy array\), got float32"):
        lib(x.astype(np.float32))
    torch = pytest.importorskip("torch")
    lib(torch.from_numpy(x.astype(np.float32)).bfloat16())  # a CPU torch bfloat16 tensor: copied as its bits
    np.testing.assert_array_equal(launches[-1][3][0], x.view(np.int16))


def test_host_program_folds_constant_index_arithmetic(launches):
    """A static model's host program launches with literal grid sizes (computed when it
    was printed, not at every call); a symbolic batch keeps its arithmetic, and both
    launch the same grid for the same batch."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((13, 37)).astype(np.float32)

    def build(rows):
        b = tk.GraphBuilder()
        return tk.build(b.finish(b.relu(b.dense(b.input("x", (rows, 37)), w))), target="cuda")

    static, symbolic = build(70), build("n")
    (line,) = [s.strip() for s in static.host_source.splitlines() if "rt.launch(" in s]
    assert line.startswith("rt.launch('dense_relu_0', (2, 1, 1), (16, 16, 1), ")
    assert not any(op in static.host_source.split("def main")[1] for op in (" + ", " - ", " * ", "//", "max("))
    assert "//" in symbolic.host_source.split("def main")[1] or "_divsi" in symbolic.host_source.split("def main")[1]
    x = rng.standard_normal((70, 37)).astype(np.float32)
    static(x)
    symbolic(x)
    assert launches[0][1] == launches[1][1] == (2, 1, 1)
