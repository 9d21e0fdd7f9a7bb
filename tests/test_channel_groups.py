"""Channel groups on CPU targets: grouped convolutions whose groups are wider than a
vector but not a whole number of vectors (ShuffleNet v1's 28, 34, 68 and 136 channels:
``schedule/strategies/grouped_conv.py``), and channel shuffles (reshape -> transpose of
the channel axes -> reshape) between NHWC convolutions, compiled."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.dialects import loop
from tensorkiln.driver.pipelines import optimize_graph
from tensorkiln.lowering.vectorize import analyze
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.schedule import kernels
from tensorkiln.schedule.strategies.grouped_conv import group_vectors

torch = pytest.importorskip("torch", reason="torch is the oracle for convolutions")
F = torch.nn.functional

LAYOUT_PASSES = ("convert-layout", "fold-constants", "simplify", "dce")


def _scheduled(module):
    work = module.clone()
    optimize_graph(work, PassContext(dump_ir=False))
    loops = lower_to_loops(work)
    run_pipeline(loops, ("default-schedule{vector_bits=512}",), PassContext(opt_level=0, dump_ir=False))
    return loops


# (NCHW input, out channels, kernel, stride, padding, groups): groups of 34 (ShuffleNet's
# 136 / 4, once 2-lane vectors and a gather per lane), 28, 24 with 12 inputs each, 20 strided
GROUPED = [
    ((1, 136, 7, 9), 136, 1, 1, 0, 4),
    ((1, 112, 11, 6), 112, 3, 1, 1, 4),
    ((2, 48, 7, 9), 96, 1, 1, 0, 4),
    ((1, 60, 9, 5), 60, 3, 2, 1, 3),
    ((1, 68, 3, 3), 136, 3, 1, 1, 2),
]


@pytest.mark.parametrize("shape, out_c, kernel, stride, padding, groups", GROUPED)
def test_wide_groups_match_torch_without_gathers(rng, shape, out_c, kernel, stride, padding, groups):
    weight = rng.standard_normal((out_c, shape[1] // groups, kernel, kernel)).astype("f4")
    bias = rng.standard_normal(out_c).astype("f4")
    b = tk.GraphBuilder()
    conv = b.conv2d(b.input("x", shape), weight, bias, strides=stride, padding=padding, groups=groups)
    module = b.finish(b.relu(conv))

    loops = _scheduled(module)
    (kernel_op,) = [k for k in kernels(loops) if k.attributes["tk.kernel"].data.startswith("conv2d")]
    assert kernel_op.attributes["tk.strategy"].data == "grouped_conv2d_by_group"
    vectorized = [op for op in kernel_op.walk() if isinstance(op, loop.ForOp) and op.kind.data == "vectorized"]
    assert vectorized
    for for_op in vectorized:
        plan = analyze(for_op, 512)
        assert plan.lanes == 16, for_op.loop_name.data
        for load in (op for op in for_op.walk() if isinstance(op, loop.LoadOp)):
            assert plan.access(load.indices) != "gather", for_op.loop_name.data

    data = rng.standard_normal(shape).astype("f4")
    got = tk.build(module)(data)
    t = torch.from_numpy
    want = F.relu(F.conv2d(t(data), t(weight), t(bias), stride, padding, 1, groups)).numpy()
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width, vectors", [(34, 1), (28, 1), (68, 1), (136, 3), (24, 1), (40, 1), (100, 1)])
def test_group_vectors_compute_fewest_columns(width, vectors):
    """Shifted tiles of full vectors, never wider than the group: 34 -> 3 vectors of 16
    (48 columns), 136 -> 3 tiles of 3 vectors (144)."""
    assert group_vectors(width, 16) == vectors


def _shuffle_module(rng, shape, splits, perm, out_c=None):
    """conv 1x1 -> relu -> reshape (channels split into ``splits``) -> transpose ``perm``
    -> reshape back -> depthwise 3x3 conv."""
    n, c, h, w = shape
    out_c = out_c or c
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    y = b.relu(b.conv2d(x, rng.standard_normal((out_c, c, 1, 1)).astype("f4")))
    y = b.reshape(y, (n, *splits, h, w))
    y = b.transpose(y, perm)
    y = b.reshape(y, (n, out_c, h, w))
    y = b.conv2d(y, rng.standard_normal((out_c, 1, 3, 3)).astype("f4"), padding=1, groups=out_c)
    return b.finish(y)


@pytest.mark.parametrize(
    "shape, splits, perm",
    [
        ((1, 12, 5, 7), (4, 3), (0, 2, 1, 3, 4)),  # ShuffleNet's shuffle, 4 groups
        ((2, 10, 3, 9), (2, 5), (0, 2, 1, 3, 4)),  # 2 groups (ShuffleNet v2), a batch of 2
        ((1, 30, 4, 3), (2, 3, 5), (0, 3, 1, 2, 4, 5)),  # three channel axes
    ],
)
def test_channel_shuffle_between_nhwc_convs(rng, shape, splits, perm):
    """Same numbers after convert-layout (interpreter) and compiled as in NCHW."""
    module = _shuffle_module(rng, shape, splits, perm)
    converted = module.clone()
    run_pipeline(converted, LAYOUT_PASSES, PassContext(dump_ir=False))

    data = rng.standard_normal(shape).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(data)
    np.testing.assert_allclose(tk.create_executor("interpreter", converted).evaluate()(data), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tk.build(module)(data), expected, rtol=1e-4, atol=1e-4)


def test_reshapes_that_move_pixels_stay_nchw(rng):
    """A transpose that moves a spatial axis as well: same numbers."""
    n, c, h, w = 1, 6, 4, 5
    b = tk.GraphBuilder()
    x = b.input("x", (n, c, h, w))
    y = b.relu(b.conv2d(x, rng.standard_normal((c, c, 1, 1)).astype("f4")))
    y = b.reshape(y, (n, 2, 3, h, w))
    y = b.transpose(y, (0, 3, 2, 1, 4))  # a channel axis swapped with H
    y = b.reshape(y, (n, h * 3, 2, w))
    module = b.finish(b.relu(y))
    converted = module.clone()
    run_pipeline(converted, LAYOUT_PASSES, PassContext(dump_ir=False))
    data = rng.standard_normal((n, c, h, w)).astype("f4")
    expected = tk.create_executor("interpreter", module).evaluate()(data)
    np.testing.assert_allclose(tk.create_executor("interpreter", converted).evaluate()(data), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tk.build(module)(data), expected, rtol=1e-4, atol=1e-4)

