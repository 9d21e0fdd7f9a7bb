"""graph.fft, graph.rfft, graph.irfft (dialects/graph/fourier.py) and their Stockham
kernels (lowering/dense_linalg/fourier.py): compiled and interpreted against numpy's FFT on
fresh inputs for lengths of every radix (4, 2, 3, 5, 7, 13 and their products, 1),
signals along rows and along columns, block widths that leave a partial block of lanes,
batches (also symbolic) and symbolic lane counts, both directions, float32 and float64;
the lane loops vectorized; the GPU path (emulated); the verifier's errors."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from nvcc import compile_ptx
from tensorkiln.driver.cuda import build_emulated
from tensorkiln.driver.pipelines import TO_LOOPS
from tensorkiln.dialects import loop
from tensorkiln.dialects.graph.fourier import MAX_RADIX, radices
from tensorkiln.passes.pipeline import PassContext, run_pipeline

TOLERANCE = {"float32": 2e-6, "float64": 1e-13}


def _expected(re: np.ndarray, im: np.ndarray, axis: int, inverse: bool) -> np.ndarray:
    z = re.astype(np.float64) + 1j * im.astype(np.float64)
    y = np.fft.ifft(z, axis=axis) * z.shape[axis] if inverse else np.fft.fft(z, axis=axis)
    return np.stack([y.real, y.imag], axis=-3)


def _close(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[dtype] * scale * np.log2(max(want.shape[-1], want.shape[-2]) + 1))


CASES = [  # (shape, axis): lengths 1, 4^k, 2 * 4^k, odd primes, mixed; lanes 1, < 16, 16, > 16 and partial
    ((3, 12, 5), -1), ((3, 12, 5), -2), ((2, 17, 30), -1), ((30, 17), -2), ((40, 2048), -1), ((1, 1), -1),
    ((5, 1), -2), ((3, 1), -1), ((9, 49), -1), ((26, 33), -2), ((4, 100, 7), -1), ((2, 2, 64, 3), -2),
    ((16, 128), -1), ((243, 4), -2), ((11, 26), -1),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("inverse", [False, True], ids=["forward", "inverse"])
def test_compiled_and_interpreted_match_numpy(rng, dtype, inverse):
    b = tk.GraphBuilder()
    outputs, inputs = [], []
    for k, (shape, axis) in enumerate(CASES):
        re, im = b.input(f"re{k}", shape, dtype), b.input(f"im{k}", shape, dtype)
        outputs.append(b.fft(re, im, axis=axis, inverse=inverse))
    module = b.finish(*outputs)
    lib = tk.build(module)
    for _ in range(2):
        inputs = [rng.standard_normal(shape).astype(dtype) for shape, _ in CASES for _ in range(2)]
        compiled = lib(*inputs)
        interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
        for k, (shape, axis) in enumerate(CASES):
            want = _expected(inputs[2 * k], inputs[2 * k + 1], axis, inverse)
            _close(compiled[k], want, dtype)
            _close(interpreted[k], want, dtype)


REAL_CASES = [  # (shape, axis): even lengths 2 .. 2048 (halves of radix 4, 2, 3, 13, 1), lanes 1 .. 40
    ((3, 12, 8), -1), ((3, 8, 5), -2), ((2, 17, 30), -1), ((2, 30, 17), -2), ((40, 2048), -1), ((3, 2), -1),
    ((2, 5), -2), ((9, 98), -1), ((26, 33), -2), ((4, 3, 52), -1),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_transforms_compiled_and_interpreted_match_numpy(rng, dtype):
    """rfft's bins and irfft's signals (unnormalised; the imaginary parts of the first and
    last bins ignored, as numpy does) against numpy."""
    b = tk.GraphBuilder()
    outputs, shapes = [], []
    for k, (shape, axis) in enumerate(REAL_CASES):
        bins = list(shape)
        bins[axis] = shape[axis] // 2 + 1
        x, re, im = b.input(f"x{k}", shape, dtype), b.input(f"re{k}", tuple(bins), dtype), b.input(f"im{k}", tuple(bins), dtype)
        outputs += [b.rfft(x, axis=axis), b.irfft(re, im, length=shape[axis], axis=axis)]
        shapes += [shape, tuple(bins), tuple(bins)]
    module = b.finish(*outputs)
    lib = tk.build(module)
    inputs = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    compiled = lib(*inputs)
    interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for k, (shape, axis) in enumerate(REAL_CASES):
        x, re, im = inputs[3 * k : 3 * k + 3]
        spectrum = np.fft.rfft(x.astype(np.float64), axis=axis)
        signal = np.fft.irfft(re + 1j * im.astype(np.float64), n=shape[axis], axis=axis) * shape[axis]
        for results in (compiled, interpreted):
            _close(results[2 * k], np.stack([spectrum.real, spectrum.imag], axis=-3), dtype)
            _close(results[2 * k + 1], signal, dtype)


def test_symbolic_batch_and_lanes_and_the_gpu_path(rng, tmp_path):
    """Symbolic batches and lane counts; the GPU path (one thread per matrix) emulated on
    the CPU gives the compiled results, and its CUDA C compiles with nvcc."""
    b = tk.GraphBuilder()
    re, im = b.input("re", ("n", 20, 12)), b.input("im", ("n", 20, 12))
    rows, columns = b.input("r", (2, "k", 12)), b.input("c", (2, "k", 12))
    transforms = (b.fft(re, im, axis=-1), b.fft(re, im, axis=-2, inverse=True), b.fft(rows, columns, axis=-1))
    module = b.finish(*transforms, b.rfft(re, axis=-2), b.irfft(rows, columns, length=22, axis=-1))
    lib = tk.build(module)
    for n, k in ((1, 19), (3, 1)):
        inputs = [rng.standard_normal(s).astype(np.float32) for s in ((n, 20, 12),) * 2 + ((2, k, 12),) * 2]
        got = lib(*inputs)
        _close(got[0], _expected(inputs[0], inputs[1], -1, False), "float32")
        _close(got[1], _expected(inputs[0], inputs[1], -2, True), "float32")
        _close(got[2], _expected(inputs[2], inputs[3], -1, False), "float32")
        spectrum = np.fft.rfft(inputs[0], axis=-2)
        _close(got[3], np.stack([spectrum.real, spectrum.imag], axis=-3), "float32")
        _close(got[4], np.fft.irfft(inputs[2] + 1j * inputs[3], n=22, axis=-1) * 22, "float32")
        for emulated, compiled in zip(build_emulated(module)(*inputs), got):
            np.testing.assert_allclose(emulated, compiled, rtol=1e-6, atol=1e-5)
    ptx = compile_ptx(tk.emit_source(module, target="cuda -arch=sm_90"), tmp_path, "fft")
    assert all(f".entry {name}_" in ptx for name in ("fft", "rfft", "irfft"))


def _transforms():
    b = tk.GraphBuilder()
    re, im = b.input("re", (4, 32, 256)), b.input("im", (4, 32, 256))
    bins_re, bins_im = b.input("bins_re", (4, 32, 129)), b.input("bins_im", (4, 32, 129))
    return b.finish(
        b.fft(re, im, axis=-1), b.fft(re, im, axis=-2), b.rfft(re, axis=-1), b.irfft(bins_re, bins_im, length=256, axis=-1)
    )


def test_the_lane_loops_are_vector_code(caplog):
    """Every stage's lane loop (and the copies of signals along rows, into a real signal
    too) is vectorized, the matrices of the batch run in parallel; no loop is lowered
    serially for a reason."""
    module = _transforms()
    run_pipeline(module, TO_LOOPS + ("default-schedule",), PassContext(opt_level=0, dump_ir=False))
    kernels = [f for f in module.ops if "tk.kernel" in f.attributes and "fft" in f.attributes["tk.kernel"].data]
    assert len(kernels) == 4
    for kernel in kernels:
        kinds = {f.loop_name.data: f.kind.data for f in kernel.walk() if isinstance(f, loop.ForOp)}
        assert kinds.pop("i0") == "parallel"
        lanes = {name: kind for name, kind in kinds.items() if name.startswith("lane")}
        assert lanes and set(lanes.values()) == {"vectorized"}
    with caplog.at_level(logging.DEBUG, logger="tensorkiln.lowering"):
        tk.build(_transforms())
    assert not [r.getMessage() for r in caplog.records if "lowered serially" in r.getMessage()]


def test_radices():
    assert radices(1) == [] and radices(2048) == [4, 4, 4, 4, 4, 2] and radices(1000) == [4, 2, 5, 5, 5]
    assert radices(2 * 3 * 7 * 13) == [2, 3, 7, 13] and radices(17) is None and MAX_RADIX == 13


def test_graph_op_errors():
    b = tk.GraphBuilder()
    x = b.input("x", (3, 12, 17))
    with pytest.raises(VerifyException, match="prime factor above 13"):
        b.fft(x, x, axis=-1)
    with pytest.raises(VerifyException, match="axis must be -1"):
        b.fft(x, x, axis=0)
    with pytest.raises(VerifyException, match="one shape"):
        b.fft(x, b.input("y", (3, 12, 16)), axis=-2)
    with pytest.raises(VerifyException, match="static transform length"):
        s = b.input("s", (3, "n"))
        b.fft(s, s, axis=-1)
    with pytest.raises(VerifyException, match="float tensors"):
        i = b.input("i", (4, 4), "int32")
        b.fft(i, i)
    assert str(b.fft(x, x, axis=-2).type) == "tensor<3x2x12x17xf32>"
    with pytest.raises(VerifyException, match="must be even"):
        b.rfft(x, axis=-1)
    with pytest.raises(VerifyException, match="has 7 bins along axis -2"):
        b.irfft(x, x, length=12, axis=-2)
    with pytest.raises(VerifyException, match="free of prime factors above 13"):
        b.irfft(x, x, length=34, axis=-2)
    assert str(b.rfft(x, axis=-2).type) == "tensor<3x2x7x17xf32>"
    assert str(b.irfft(x, x, length=32, axis=-1).type) == "tensor<3x12x32xf32>"


def test_printed_ops_parse_back_and_a_wrong_length_is_named():
    b = tk.GraphBuilder()
    x, bins = b.input("x", (64, 5)), b.input("bins", (3, 33))
    module = b.finish(b.rfft(x, axis=-2), b.irfft(bins, bins, length=64), b.fft(bins, bins, axis=-2, inverse=True))
    text = str(module)
    assert "graph.irfft %bins, %bins {length = 64 : i64} : tensor<3x33xf32>, tensor<3x33xf32> -> tensor<3x64xf32>" in text
    assert str(tk.parse_module(text)) == text
    with pytest.raises(VerifyException, match="graph.irfft: a signal of 48 points has 25 bins along axis -1"):
        tk.parse_module(text.replace("length = 64", "length = 48")).verify()
