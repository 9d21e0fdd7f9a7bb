"""conv2d's default strategy (schedule/strategies/conv.py): after convert-layout every conv
is an NHWC implicit GEMM, register-tiled; numbers right on odd shapes, any groups, at
any thread count."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.driver.pipelines import optimize_graph
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.runtime.threads import num_threads
from tensorkiln.schedule import kernels
from tensorkiln.schedule.strategies.conv import conv_rows

torch = pytest.importorskip("torch", reason="torch is the oracle for convolutions")
F = torch.nn.functional

# (NCHW input, out channels, kernel, stride, padding, dilation, groups)
CASES = [
    ((1, 3, 13, 11), 5, 3, 1, 1, 1, 1),  # prime sizes, fewer channels than a vector
    ((2, 16, 9, 9), 33, 3, 2, 1, 1, 1),  # 33 channels: 2 full vectors + 1 lane
    ((1, 24, 10, 7), 24, 3, 1, 1, 1, 24),  # depthwise
    ((1, 12, 8, 9), 18, 3, 1, 2, 2, 3),  # grouped, dilated
    ((3, 17, 5, 6), 40, 1, 1, 0, 1, 1),  # pointwise (a GEMM)
    ((2, 12, 9, 8), 20, 1, 2, 0, 1, 1),  # strided pointwise (every second pixel, then a GEMM)
    ((1, 8, 15, 15), 64, 5, 2, 2, 1, 1),
    ((1, 1, 1, 1), 1, 1, 1, 0, 1, 1),
    # groups narrower than a vector: 8 (RegNet), 4 (ResNeXt), 24 and 12 channels, fewer
    # inputs than outputs per group, grouped pointwise (ShuffleNet), strided
    ((1, 104, 9, 11), 104, 3, 1, 1, 1, 13),
    ((1, 48, 6, 5), 48, 3, 1, 1, 1, 12),
    ((1, 72, 5, 7), 72, 3, 2, 1, 1, 3),
    ((2, 32, 7, 10), 64, 3, 2, 1, 1, 8),
    ((1, 36, 7, 3), 36, 3, 1, 1, 1, 3),
    ((1, 48, 7, 9), 96, 1, 1, 0, 1, 4),
]


def _conv_relu_module(rng, shape, out_c, kernel, stride, padding, dilation, groups):
    weight = rng.standard_normal((out_c, shape[1] // groups, kernel, kernel)).astype("f4")
    bias = rng.standard_normal(out_c).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    conv = b.conv2d(x, weight, bias, strides=stride, padding=padding, dilation=dilation, groups=groups)
    module = b.finish(b.relu(conv))

    def expected(data):
        t = lambda a: torch.from_numpy(a)  # noqa: E731
        return F.relu(F.conv2d(t(data), t(weight), t(bias), stride, padding, dilation, groups)).numpy()

    return module, expected


def _strategies(module) -> dict[str, str]:
    work = module.clone()
    optimize_graph(work, PassContext(dump_ir=False))
    loops = lower_to_loops(work)
    run_pipeline(loops, ("default-schedule{vector_bits=512}",), PassContext(opt_level=0, dump_ir=False))
    return {k.attributes["tk.kernel"].data: k.attributes["tk.strategy"].data for k in kernels(loops) if "tk.strategy" in k.attributes}


@pytest.mark.parametrize("shape, out_c, kernel, stride, padding, dilation, groups", CASES)
def test_conv_strategy_matches_torch(rng, shape, out_c, kernel, stride, padding, dilation, groups):
    module, expected = _conv_relu_module(rng, shape, out_c, kernel, stride, padding, dilation, groups)
    strategies = _strategies(module)
    convs = {tag: name for tag, name in strategies.items() if tag.startswith("conv2d")}
    if kernel == 1 and padding == 0 and groups == 1:  # a GEMM over pixels: conv1x1-to-dense
        assert not convs and any(tag.startswith("dense") for tag in strategies), strategies
    else:
        # groups wider than a vector and no whole number of vectors: grouped_conv.py
        assert list(convs.values()) in (["conv2d_register_tile"], ["grouped_conv2d_by_group"]), convs
    data = rng.standard_normal(shape).astype("f4")
    got = tk.build(module)(data)
    want = expected(data)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels, groups, lanes", [(104, 13, 8), (48, 12, 4), (72, 3, 16), (256, 8, 16)])
def test_grouped_conv_has_no_gathers(rng, channels, groups, lanes):
    """Each vector of output channels lies in one group: its input channel is one
    broadcast load, not a per-lane gather."""
    from tensorkiln.dialects import loop
    from tensorkiln.lowering.vectorize import analyze

    module, _ = _conv_relu_module(rng, (1, channels, 9, 9), channels, 3, 1, 1, 1, groups)
    work = module.clone()
    optimize_graph(work, PassContext(dump_ir=False))
    loops = lower_to_loops(work)
    run_pipeline(loops, ("default-schedule{vector_bits=512}",), PassContext(opt_level=0, dump_ir=False))
    (conv,) = [k for k in kernels(loops) if k.attributes["tk.kernel"].data.startswith("conv2d")]
    vectorized = [op for op in conv.walk() if isinstance(op, loop.ForOp) and op.kind.data == "vectorized"]
    assert vectorized
    for for_op in vectorized:
        plan = analyze(for_op, 512)
        assert plan.lanes == lanes
        for load in (op for op in for_op.walk() if isinstance(op, loop.LoadOp)):
            assert plan.access(load.indices) != "gather", for_op.loop_name.data


def test_conv_same_result_at_any_thread_count(rng):
    module, expected = _conv_relu_module(rng, (2, 16, 23, 19), 48, 3, 1, 1, 1, 1)
    lib = tk.build(module)
    data = rng.standard_normal((2, 16, 23, 19)).astype("f4")
    with num_threads(1):
        one = lib(data)
    with num_threads(2):
        two = lib(data)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, expected(data), rtol=1e-4, atol=1e-4)


def test_conv_symbolic_batch(rng):
    weight = rng.standard_normal((20, 6, 3, 3)).astype("f4")
    b = tk.GraphBuilder()
    module = b.finish(b.conv2d(b.input("x", ("n", 6, 9, 11)), weight, padding=1))
    lib = tk.build(module)
    for batch in (1, 3):
        data = rng.standard_normal((batch, 6, 9, 11)).astype("f4")
        want = F.conv2d(torch.from_numpy(data), torch.from_numpy(weight), padding=1).numpy()
        np.testing.assert_allclose(lib(data), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "registers, vectors, rows", [(32, 4, 6), (32, 2, 8), (32, 1, 8), (32, 3, 8), (16, 3, 4), (16, 2, 6), (16, 1, 8)]
)
def test_rows_keep_accumulators_in_flight(registers, vectors, rows):
    """Up to 24 accumulators on AVX-512 (at most 8 rows); on AVX2 the tile, a row of B's
    vectors and A's broadcast fit the 16 registers."""
    info = SimpleNamespace(vector_registers=registers)
    assert conv_rows(info, vectors) == rows
    if registers == 16:
        assert rows * vectors + vectors + 1 <= registers
