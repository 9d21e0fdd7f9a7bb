"""Block reductions on the GPU path (``schedule/gpu_reduction.py``: strided partials, an
xor-shuffle butterfly in each warp, the warps' values combined by the first warp): the
kernels lowered for ``target="cuda"`` run on the CPU through ``emulate-gpu`` (shuffles
with their meaning) and are compared with numpy on odd sizes that leave threads without
work, partial warps of work and rows of one element."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.driver.cuda import build_emulated, lower_to_gpu
from tensorkiln.dialects.loop import ShuffleXorOp
from tensorkiln.lowering.loop_to_gpu import gpu_module_of
from tensorkiln.schedule import gpu_reduction


def _strategies(module) -> dict[str, str]:
    """Kernel name -> the GPU strategy it got ("none": one thread)."""
    gpu_level, _ = lower_to_gpu(module)
    kernels = gpu_module_of(gpu_level).body.block.ops
    return {k.sym_name.data: k.attributes["tk.gpu_strategy"].data if "tk.gpu_strategy" in k.attributes else "none" for k in kernels}


def _shuffling_kernels(module) -> list[str]:
    """The kernels whose threads combine values with warp shuffles."""
    gpu_level, _ = lower_to_gpu(module)
    kernels = gpu_module_of(gpu_level).body.block.ops
    return [k.sym_name.data for k in kernels if any(isinstance(op, ShuffleXorOp) for op in k.walk())]


def _rows(dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(3, 1000), (5, 77), (1, 4097)])
def test_row_reductions(shape):
    """sum, mean, max and min of each row: every reduction kernel is a block reduction."""
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    module = b.finish(*(getattr(b, op)(x, (1,)) for op in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")))
    assert set(_strategies(module).values()) == {"block_reduction"}
    a = _rows(np.float32, shape, sum(shape))
    got = build_emulated(module)(a)
    for g, expected in zip(got, (a.sum(1), a.mean(1), a.max(1), a.min(1))):
        np.testing.assert_allclose(g, expected, rtol=2e-5, atol=2e-4)


@pytest.mark.parametrize("shape", [(301,), (37, 53), (3, 5, 7)])
def test_full_reductions_are_one_block(shape):
    """A 0-d result (x.sum(), a slice's max...) gets a unit output loop; the reduction
    loops over all axes are fused into one and shared by a block's threads (before: the
    1-d case failed in loop-to-gpu, the others ran in one thread)."""
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    everything = tuple(range(len(shape)))
    module = b.finish(b.reduce_sum(x, everything), b.reduce_max(b.neg(x), everything), b.reduce_mean(x, everything))
    assert set(_strategies(module).values()) == {"block_reduction"}
    a = _rows(np.float32, shape, len(shape))
    total, biggest, mean = build_emulated(module)(a)
    assert total.shape == biggest.shape == mean.shape == ()
    np.testing.assert_allclose(total, a.sum(), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(biggest, (-a).max())
    np.testing.assert_allclose(mean, a.mean(), rtol=1e-5, atol=1e-6)


def test_long_full_reductions_spread_over_blocks():
    """split-reductions (GPU builds): a sum of 77100 elements is reduced as 257 partial
    block reductions, then one over the partials; keepdims and mean come out right."""
    b = tk.GraphBuilder()
    x = b.input("x", (300, 257))
    module = b.finish(b.reduce_sum(b.abs(x), (0, 1)), b.reduce_mean(x, (0, 1), keepdims=True))
    gpu_level, _ = lower_to_gpu(module)
    kernels = gpu_module_of(gpu_level).body.block.ops
    assert len(kernels) == 4 and {k.attributes["tk.gpu_strategy"].data for k in kernels} == {"block_reduction"}
    a = _rows(np.float32, (300, 257), 3)
    total, mean = build_emulated(module)(a)
    assert total.shape == () and mean.shape == (1, 1)
    np.testing.assert_allclose(total, np.abs(a).sum(), rtol=1e-5)
    np.testing.assert_allclose(mean, a.mean(keepdims=True), rtol=1e-4, atol=1e-7)


def test_short_full_reduction_and_scalar_ops_are_mapped():
    """A full reduction shorter than MIN_BLOCK_REDUCTION still takes a block (it is the
    only output), and 0-d elementwise ops a grid-stride loop of one element: no kernel
    is left unmapped."""
    b = tk.GraphBuilder()
    x, y = b.input("x", (5, 3)), b.input("y", ())
    total = b.reduce_sum(b.slice(x, [0], [1], [1], [1]), (0, 1))
    module = b.finish(b.mul(b.add(total, y), y), b.exp(y))
    assert sorted(_strategies(module).values()) == ["block_reduction", "grid_stride"]
    a, c = _rows(np.float32, (5, 3), 1), np.float32(1.75)
    got, e = build_emulated(module)(a, c)
    np.testing.assert_allclose(got, (a[:, 0].sum() + c) * c, rtol=1e-6)
    np.testing.assert_allclose(e, np.exp(c), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_row_reductions_of_other_types(dtype):
    """Integer sums are exact (any order), 64-bit values shuffle whole."""
    b = tk.GraphBuilder()
    x = b.input("x", (7, 301), dtype)
    module = b.finish(b.reduce_sum(x, (1,)), b.reduce_max(x, (1,)))
    assert set(_strategies(module).values()) == {"block_reduction"}
    a = _rows(dtype, (7, 301), 7)
    total, biggest = build_emulated(module)(a)
    assert total.dtype == np.dtype(dtype)
    np.testing.assert_allclose(total, a.sum(1), rtol=1e-12 if dtype == "float64" else 0)
    np.testing.assert_array_equal(biggest, a.max(1))


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_row_products(dtype):
    """reduce_prod: rows of 1000 (a block reduction whose shuffles multiply; idle threads
    contribute 1), of 9 (a thread per row), and a row kernel's product stage (row_blocks,
    gpu_rows.py); int64 products wrap exactly, in any order."""
    b = tk.GraphBuilder()
    x, y = b.input("x", (3, 1000), dtype), b.input("y", (7, 9), dtype)
    module = b.finish(
        b.reduce_prod(x, (1,)), b.reduce_prod(y, (1,), keepdims=True), b.sub(x, b.reduce_prod(x, -1, keepdims=True))
    )
    assert _strategies(module) == {
        "reduce_prod_0": "block_reduction", "reduce_prod_1": "one_thread_per_element", "reduce_prod_sub_0": "row_blocks"
    }  # fmt: skip
    rng = np.random.default_rng(3)
    if dtype == "int64":
        a, c = rng.integers(-9, 9, (3, 1000)), rng.integers(-99, 99, (7, 9))
    else:
        a, c = (1 + rng.standard_normal((3, 1000)) / 32).astype(dtype), rng.standard_normal((7, 9)).astype(dtype)
    long_rows, short_rows, row_stage = build_emulated(module)(a, c)
    assert long_rows.dtype == short_rows.dtype == row_stage.dtype == np.dtype(dtype)
    if dtype == "int64":
        np.testing.assert_array_equal(long_rows, a.prod(1))
        np.testing.assert_array_equal(short_rows, c.prod(1, keepdims=True))
        np.testing.assert_array_equal(row_stage, a - a.prod(1, keepdims=True))
    else:
        np.testing.assert_allclose(long_rows, a.astype(np.float64).prod(1), rtol=2e-5)
        np.testing.assert_allclose(short_rows, c.astype(np.float64).prod(1, keepdims=True), rtol=2e-5)
        np.testing.assert_allclose(row_stage, a - a.astype(np.float64).prod(1, keepdims=True), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("threads", [32, 64, 1024])
def test_other_block_sizes(monkeypatch, threads):
    """One warp (no second level), two warps, 32 warps (the second level a full warp)."""
    monkeypatch.setattr(gpu_reduction, "REDUCTION_THREADS", threads)
    b = tk.GraphBuilder()
    x = b.input("x", (3, 1001))
    module = b.finish(b.reduce_sum(x, (1,)), b.reduce_max(x, (1,)))
    gpu_level, _ = lower_to_gpu(module)
    for kernel in gpu_module_of(gpu_level).body.block.ops:
        assert kernel.known_block_size.get_values() == (threads, 1, 1)
        barriers = sum(op.name == "gpu.barrier" for op in kernel.walk())
        assert barriers == (1 if threads == 32 else 2), kernel.sym_name.data
    a = _rows(np.float32, (3, 1001), threads)
    total, biggest = build_emulated(module)(a)
    np.testing.assert_allclose(total, a.sum(1), rtol=2e-5, atol=2e-4)
    np.testing.assert_array_equal(biggest, a.max(1))


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape, axis", [((3, 1000), -1), ((7, 77), -1), ((1, 4097), -1), ((1000, 5), 0), ((77, 3, 9), 0)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(shape, axis, log):
    """Along the last axis (one row kernel, its stages block reductions) and the first
    (the row max and sum are block reductions of their own: the sum's body reads the max
    and takes exp inside the loop)."""
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    module = b.finish(b.log_softmax(x, axis) if log else b.softmax(x, axis))
    reductions = {k: v for k, v in _strategies(module).items() if k.startswith(("softmax_max", "softmax_sum"))}
    if axis == 0:  # the row max and the row sum are kernels of their own
        assert reductions and set(reductions.values()) == {"block_reduction"}, reductions
    else:  # one kernel per row, its stages block reductions (gpu_rows.py)
        assert len(_shuffling_kernels(module)) == 1
    a = _rows(np.float32, shape, sum(shape)) * 4
    expected = np.log(_softmax(a, axis)) if log else _softmax(a, axis)
    np.testing.assert_allclose(build_emulated(module)(a), expected, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(5, 77), (3, 1000)])
def test_layer_norm(shape):
    """The row statistics (mean, variance) and the normalisation (one row kernel whose
    stages are block reductions)."""
    torch = pytest.importorskip("torch", reason="layer_norm comes from the torch frontend")
    from tensorkiln.frontends.torch import from_exported_program

    torch.manual_seed(shape[1])
    model = torch.nn.LayerNorm(shape[1]).eval()
    with torch.no_grad():
        model.weight.normal_()
        model.bias.normal_()
    x = torch.randn(*shape) * 3 + 1
    module = from_exported_program(torch.export.export(model, (x,)))
    assert _shuffling_kernels(module), "the row statistics are not block reductions"
    got = build_emulated(module)(x.numpy())
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=2e-5, atol=5e-5)


@pytest.mark.parametrize("shape, cached", [((3, 1024), True), ((4, 2, 301), True), ((2, 9000), False)])
def test_rows_read_by_several_stages_are_copied_to_shared_memory(shape, cached):
    """Softmax reads its row three times (max, sum, elements): a row that fits in
    ``ROW_CACHE_BYTES`` crosses device memory once, into shared memory (an unrolled copy
    when the threads divide it evenly), and every stage reads that copy."""
    from tensorkiln.schedule.gpu_rows import ROW_CACHE_BYTES

    b = tk.GraphBuilder()
    module = b.finish(b.softmax(b.input("x", shape), -1))
    source = tk.emit_source(module, target="cuda")
    cols = shape[-1]
    assert (cols * 4 <= ROW_CACHE_BYTES) == cached
    row_buffer = re.search(rf"__shared__ __align__\(16\) float (v\d+)\[{cols}\];", source)
    input_reads = len(re.findall(r"\ba0\[", source))
    if cached:  # the input read by the copy alone
        assert row_buffer and input_reads == 1, source
        assert ("#pragma unroll" in source) == (cols % gpu_reduction.REDUCTION_THREADS == 0)
    else:  # by each stage (once per accumulator and in the rest loop) and the elements
        assert not row_buffer and input_reads == 2 * (gpu_reduction.ACCUMULATORS + 1) + 1
    a = _rows(np.float32, shape, cols) * 4
    np.testing.assert_allclose(build_emulated(module)(a), _softmax(a, -1), rtol=2e-5, atol=2e-5)


def test_layer_norm_caches_its_input_row_not_its_weights():
    """Layer norm's input row is read by the mean, the variance and the elements (cached);
    its weight and bias once each, by the elements (read from device memory)."""
    torch = pytest.importorskip("torch", reason="layer_norm comes from the torch frontend")
    from tensorkiln.frontends.torch import from_exported_program

    torch.manual_seed(5)
    model = torch.nn.LayerNorm(768).eval()
    with torch.no_grad():
        model.weight.normal_()
        model.bias.normal_()
    x = torch.randn(3, 5, 768) * 3 + 1
    module = from_exported_program(torch.export.export(model, (x,)))
    source = tk.emit_source(module, target="cuda")
    assert len(re.findall(r"__shared__ __align__\(16\) float v\d+\[768\];", source)) == 1, source
    np.testing.assert_allclose(build_emulated(module)(x.numpy()), model(x).detach().numpy(), rtol=2e-5, atol=5e-5)


@pytest.mark.parametrize("length", [255, 1023, 1024, 1025, 3071, 5121])
def test_every_element_is_accumulated_once(length):
    """Each thread's strided partial keeps ``ACCUMULATORS`` accumulators: a main loop of
    that many of its iterations a step, the rest after it. Integer sums are exact, so an
    element counted twice or missed shows, at lengths around the main loop's step."""
    step = gpu_reduction.ACCUMULATORS * gpu_reduction.REDUCTION_THREADS
    assert step == 1024  # (the lengths above straddle multiples of it)
    b = tk.GraphBuilder()
    x = b.input("x", (3, length), "int32")
    module = b.finish(b.reduce_sum(x, (1,)))
    assert set(_strategies(module).values()) == {"block_reduction"}
    a = _rows("int32", (3, length), length)
    np.testing.assert_array_equal(build_emulated(module)(a), a.sum(1))


@pytest.mark.parametrize("shape", [(3, 1000), (2, 5, 301), (1, 4097)])
def test_arg_reductions_take_a_block_per_row(shape):
    """argmax/argmin are two stages (the row's extreme, then the first index holding it)
    ending in a store: one block per row (``row_blocks`` without an element loop), not a
    thread serially walking the row. Ties and NaNs: the first index wins, as in numpy."""
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    module = b.finish(b.argmax(x, -1), b.argmin(x, -1))
    assert set(_strategies(module).values()) == {"row_blocks"}, _strategies(module)
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-3, 4, shape).astype(np.float32)  # many ties
    a.reshape(-1, shape[-1])[0, [shape[-1] // 3, shape[-1] - 1]] = np.nan  # first row: NaN wins, first one
    biggest, smallest = build_emulated(module)(a)
    np.testing.assert_array_equal(biggest, a.argmax(-1))
    np.testing.assert_array_equal(smallest, a.argmin(-1))


def test_max_along_a_dim_returns_values_and_first_indices():
    """torch.max(x, dim): the values and the indices of the first maximum, on the GPU
    kernels run with GPU semantics."""
    torch = pytest.importorskip("torch", reason="torch.max(dim) comes from the torch frontend")
    from tensorkiln.frontends.torch import from_exported_program

    class MaxAlong(torch.nn.Module):
        def forward(self, x):
            values, indices = torch.max(x, dim=1)
            return values, indices, torch.argmin(x, dim=1)

    x = torch.randint(-5, 6, (4, 700)).float()
    module = from_exported_program(torch.export.export(MaxAlong(), (x,)))
    assert "one_thread_per_element" not in _strategies(module).values(), _strategies(module)
    for got, want in zip(build_emulated(module)(x.numpy()), MaxAlong()(x)):
        np.testing.assert_array_equal(got, want.numpy())
