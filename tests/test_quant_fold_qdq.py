"""fold-qdq: QDQ islands become quantized products with the same numbers (interpreter
before vs compiled after); products it cannot turn stay float32 with the reason
attached; convert-layout keeps chains of quantized convolutions channels-last."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph import quant
from tensorkiln.dialects.graph.linalg import DenseOp, MatMulOp
from tensorkiln.dialects.graph.nn import Conv2dOp
from tensorkiln.dialects.graph.shape import TransposeOp
from tensorkiln.passes.fold_qdq import SKIPPED_ATTR, fold_qdq
from tensorkiln.passes.pipeline import PassContext, run_pipeline


def ops_of(module, cls):
    return [op for op in module.walk() if isinstance(op, cls)]


class QDQ:
    """Builds QDQ graphs: activations quantized uint8 per tensor, weights int8 per channel."""

    def __init__(self, rng):
        self.rng, self.b = rng, tk.GraphBuilder()

    def qdq(self, x, scale=0.05, zero_point=128, dtype=np.uint8):
        s, z = self.b.constant(np.float32(scale)), self.b.constant(np.asarray(zero_point, dtype))
        return self.b.dequantize(self.b.quantize(x, s, z), s, z)

    def weight(self, shape, axis):
        q = self.rng.integers(-127, 128, shape).astype(np.int8)
        scale = self.rng.uniform(0.005, 0.02, shape[axis]).astype(np.float32)
        return self.b.dequantize(self.b.constant(q), self.b.constant(scale), self.b.constant(np.zeros(shape[axis], np.int8)), axis=axis)


def check_folded(module, x, folded_cls, count=1):
    """fold-qdq leaves ``count`` quantized products and the same results, then the
    compiled model computes them too."""
    want = tk.create_executor("interpreter", module).evaluate()(x)
    folded = module.clone()
    assert fold_qdq(folded) == []
    folded.verify()
    assert len(ops_of(folded, folded_cls)) == count
    assert not ops_of(folded, DenseOp) and not ops_of(folded, Conv2dOp) and not ops_of(folded, MatMulOp)
    got = tk.create_executor("interpreter", folded).evaluate()(x)
    # the float island rounds the bias at the product's scale: at most one step off
    np.testing.assert_allclose(got, want, atol=0.05 * 1.0001)
    assert np.mean(got != want) < 0.02
    np.testing.assert_array_equal(tk.build(folded)(x), got)


def test_conv_relu_island(rng):
    g = QDQ(rng)
    x = g.b.input("x", (2, 5, 9, 7))
    bias = g.b.constant(rng.normal(size=8).astype(np.float32))
    y = g.b.relu(g.b.conv2d(g.qdq(x), g.weight((8, 5, 3, 3), 0), bias, strides=2, padding=1))
    module = g.b.finish(g.qdq(y, 0.1, 0))
    check_folded(module, rng.normal(size=(2, 5, 9, 7)).astype(np.float32), quant.QConv2dOp)


def test_dense_and_matmul_islands(rng):
    g = QDQ(rng)
    x = g.b.input("x", (6, 19))
    d = g.qdq(g.b.dense(g.qdq(x), g.weight((11, 19), 0), g.b.constant(rng.normal(size=11).astype(np.float32))), 0.2, 3, np.int8)
    m = g.qdq(g.b.matmul(d, g.weight((11, 5), 1)), 0.3, 100)
    module = g.b.finish(m)
    check_folded(module, rng.normal(size=(6, 19)).astype(np.float32), quant.QDenseOp, count=2)


def test_dequantized_int32_bias_is_used(rng):
    g = QDQ(rng)
    x = g.b.input("x", (3, 4))
    w_scale = np.float32([0.01, 0.02])
    bias_q = np.int32([7, -9])
    bias = g.b.dequantize(g.b.constant(bias_q), g.b.constant(np.float32(0.05) * w_scale), g.b.constant(np.zeros(2, np.int32)), axis=0)
    w = g.b.dequantize(g.b.constant(np.ones((2, 4), np.int8)), g.b.constant(w_scale), g.b.constant(np.zeros(2, np.int8)), axis=0)
    module = g.b.finish(g.qdq(g.b.dense(g.qdq(x), w, bias), 0.1, 0))
    fold_qdq(module)
    (dense,) = ops_of(module, quant.QDenseOp)
    np.testing.assert_array_equal(dense.bias.owner.array(), bias_q)


@pytest.mark.parametrize(
    "case, reason",
    [
        ("runtime_weight", "the weight is not a constant"),
        ("float_result", "the result is not quantized"),
        ("two_users", "the result is not quantized"),
        ("wrong_axis", "per-channel axis is not its output-channel axis 0"),
        ("input_per_channel", "the input is quantized per channel"),
    ],
)
def test_left_in_float32_with_a_reason(rng, case, reason):
    g = QDQ(rng)
    x = g.b.input("x", (3, 4))
    xd = g.qdq(x)
    if case == "input_per_channel":
        s, z = g.b.constant(np.float32([0.1, 0.2, 0.3, 0.4])), g.b.constant(np.zeros(4, np.uint8))
        xd = g.b.dequantize(g.b.quantize(x, s, z, axis=1), s, z, axis=1)
    w = g.weight((5, 4), 0) if case != "wrong_axis" else g.weight((5, 4), 1)
    if case == "runtime_weight":
        w = g.qdq(g.b.input("w", (5, 4)))
    y = g.b.dense(xd, w)
    outputs = [y] if case == "float_result" else [g.qdq(y)]
    if case == "two_users":
        outputs.append(g.b.relu(y))
    module = g.b.finish(*outputs)
    skipped = fold_qdq(module)
    assert skipped == [("graph.dense", pytest.approx(skipped[0][1]))] and reason in skipped[0][1]
    (dense,) = ops_of(module, DenseOp)
    assert reason in dense.attributes[SKIPPED_ATTR].data
    assert not ops_of(module, quant.QDenseOp)


def test_convolution_chain_stays_channels_last(rng):
    """qconv2d -> dequantize -> add -> quantize -> qconv2d: converted to NHWC; no
    transpose between the two convolutions (the add reads the first one's NHWC result)."""
    g = QDQ(rng)
    x = g.b.input("x", (1, 8, 10, 10))
    xd = g.qdq(x)
    a = g.qdq(g.b.conv2d(xd, g.weight((8, 8, 3, 3), 0), padding=1), 0.1, 120)
    s = g.qdq(g.b.add(a, xd), 0.1, 120)
    y = g.qdq(g.b.conv2d(s, g.weight((8, 8, 1, 1), 0)), 0.1, 120)
    module = g.b.finish(y)
    xv = rng.normal(size=(1, 8, 10, 10)).astype(np.float32)
    fold_qdq(module)
    want = tk.create_executor("interpreter", module).evaluate()(xv)
    passes = ["cse", "fold-constants", "simplify", "convert-layout", "fold-constants", "simplify", "dce", "fuse-ops"]
    run_pipeline(module, passes, PassContext(opt_level=2, dump_ir=False))
    assert {op.layout.data for op in ops_of(module, quant.QConv2dOp)} == {"NHWC"}
    first, second = ops_of(module, quant.QConv2dOp)
    assert not isinstance(second.input.owner, TransposeOp)
    assert any(v is first.result for v in second.input.owner.operands)  # the fused dequantize-add-quantize
    np.testing.assert_array_equal(tk.create_executor("interpreter", module).evaluate()(xv), want)


def test_batch_matmul_by_a_constant_matrix_and_attention(rng):
    """ONNX's MatMul of a (B, S, K) activation by a (K, N) weight arrives as a batch matmul
    with the weight reshaped to (1, K, N): a qdense. A product of two activations
    (attention's Q K^T) stays float32, with the reason."""
    g = QDQ(rng)
    x = g.b.input("x", (2, 5, 12))
    w = g.b.reshape(g.weight((12, 7), 1), (1, 12, 7))
    y = g.qdq(g.b.batch_matmul(g.qdq(x), w), 0.2, 120)
    k = g.b.input("k", (2, 7, 5))
    scores = g.qdq(g.b.batch_matmul(y, g.qdq(k)), 0.3, 100)
    module = g.b.finish(scores)
    xv, kv = rng.normal(size=(2, 5, 12)).astype(np.float32), rng.normal(size=(2, 7, 5)).astype(np.float32)
    want = tk.create_executor("interpreter", module).evaluate()(xv, kv)
    skipped = fold_qdq(module)
    assert skipped == [("graph.batch_matmul", "the right operand is not a matrix (both operands are run-time activations: computed in float32)")]
    (dense,) = ops_of(module, quant.QDenseOp)
    assert dense.result.type.get_shape() == (2, 5, 7) and dense.weight.type.get_shape() == (7, 12)
    got = tk.create_executor("interpreter", module).evaluate()(xv, kv)
    assert np.mean(got != want) < 0.05 and np.abs(got - want).max() <= 0.3 * 2 + 1e-6


def test_weight_quantized_in_the_graph(rng):
    """A quantizer that quantizes a shared float weight in the graph (dequantize(quantize(W))):
    the int8 weight is computed at fold time."""
    g = QDQ(rng)
    x = g.b.input("x", (3, 8))
    w = rng.normal(size=(5, 8)).astype(np.float32)
    scale = np.abs(w).max(axis=1).astype(np.float32) / 127
    s, z = g.b.constant(scale), g.b.constant(np.zeros(5, np.int8))
    wd = g.b.dequantize(g.b.quantize(g.b.constant(w), s, z, axis=0), s, z, axis=0)
    module = g.b.finish(g.qdq(g.b.dense(g.qdq(x), wd), 0.1, 128))
    xv = rng.normal(size=(3, 8)).astype(np.float32)
    want = tk.create_executor("interpreter", module).evaluate()(xv)
    assert fold_qdq(module) == []
    (dense,) = ops_of(module, quant.QDenseOp)
    np.testing.assert_array_equal(dense.weight.owner.array(), np.clip(np.rint(w / scale[:, None]), -128, 127).astype(np.int8))
    np.testing.assert_allclose(tk.create_executor("interpreter", module).evaluate()(xv), want, atol=0.1 + 1e-6)


def pooled_conv_chain(g, x, shape, pool_zero_point=128, pool_scale=0.08, output_pooled=False):
    """conv -> quantize (uint8) -> dequantize -> max pool -> quantize (same scale and zero
    point) -> dequantize -> conv -> quantize: ONNX Runtime's ResNet stem."""
    c = shape[1]
    y = g.b.conv2d(g.qdq(x), g.weight((6, c, 3, 3), 0), g.b.constant(g.rng.normal(size=6).astype(np.float32)), padding=1)
    s, z = g.b.constant(np.float32(pool_scale)), g.b.constant(np.uint8(pool_zero_point))
    q = g.b.quantize(g.b.relu(y), s, z)
    pooled = g.b.quantize(g.b.max_pool2d(g.b.dequantize(q, s, z), kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1)), s, z)
    out = g.b.conv2d(g.b.dequantize(pooled, s, z), g.weight((5, 6, 1, 1), 0))
    outputs = [g.qdq(out, 0.1, 7)] + ([pooled] if output_pooled else [])
    return g.b.finish(*outputs)


def test_max_pool_between_quantized_convs_compares_int8(rng):
    """The uint8 pool island of a ResNet stem becomes a max pool on the quantized bytes,
    moved to int8 (zero point - 128) from the first conv's result to the second conv's
    input: no dequantize between them, exact vs the float island (odd sizes, padding taps)."""
    g = QDQ(rng)
    shape = (1, 3, 11, 9)
    module = pooled_conv_chain(g, g.b.input("x", shape), shape)
    x = rng.normal(size=shape).astype(np.float32)
    want = tk.create_executor("interpreter", module).evaluate()(x)
    folded = module.clone()
    fold_qdq(folded)
    folded.verify()
    (pool,) = [op for op in folded.walk() if op.name == "graph.max_pool2d"]
    assert str(pool.input.type) == "tensor<1x6x11x9xi8>" and str(pool.result.type) == "tensor<1x6x6x5xi8>"
    first, second = ops_of(folded, quant.QConv2dOp)
    assert [use.operation for use in first.result.uses] == [pool] and second.input is pool.result
    assert (first.y_dtype.data, second.x_dtype.data) == ("i8", "i8")
    assert int(first.y_zero_point.owner.array()) == 0 and int(second.x_zero_point.owner.array()) == 0
    np.testing.assert_array_equal(tk.create_executor("interpreter", folded).evaluate()(x), want)
    np.testing.assert_array_equal(tk.build(module)(x), want)


def test_max_pool_island_kept_where_its_bytes_are_read_as_uint8(rng):
    """A pooled uint8 value that is also the model's output must stay uint8 (the caller
    reads those bytes): the island stays float32; different scales never fold."""
    g = QDQ(rng)
    shape = (1, 2, 7, 6)
    module = pooled_conv_chain(g, g.b.input("x", shape), shape, output_pooled=True)
    fold_qdq(module)
    assert [op for op in module.walk() if op.name == "graph.max_pool2d"][0].input.type.element_type.name == "f32"
    x = rng.normal(size=shape).astype(np.float32)
    want = tk.create_executor("interpreter", module).evaluate()(x)
    got = tk.build(module)(x)
    assert got[1].dtype == np.uint8
    for value, expected in zip(got, want):
        np.testing.assert_array_equal(value, expected)


def test_int8_reshape_and_pool_fold_without_moving(rng):
    """int8 values need no move: quantize(op(dequantize(q))) is op(q) for a reshape and a
    max pool at one scale and zero point, and not at another scale."""
    b = tk.GraphBuilder()
    q = b.input("q", (1, 3, 5, 7), np.int8)
    s, z, s2 = b.constant(np.float32(0.1)), b.constant(np.int8(-5)), b.constant(np.float32(0.2))
    pooled = b.quantize(b.max_pool2d(b.dequantize(q, s, z), kernel=(2, 2), padding=(1, 1, 1, 1)), s, z)
    flat = b.quantize(b.reshape(b.dequantize(q, s, z), (1, 105)), s, z)
    other = b.quantize(b.max_pool2d(b.dequantize(q, s, z), kernel=(2, 2)), s2, z)
    module = b.finish(pooled, flat, other)
    x = rng.integers(-128, 128, (1, 3, 5, 7)).astype(np.int8)
    want = tk.create_executor("interpreter", module).evaluate()(x)
    fold_qdq(module)
    assert len(ops_of(module, quant.QuantizeOp)) == 1  # the other scale's
    for got, expected in zip(tk.create_executor("interpreter", module).evaluate()(x), want):
        np.testing.assert_array_equal(got, expected)


def quantized_sum(scales, zero_points=(120, 100, 7)):
    """quantize(dequantize(a) + dequantize(b)) over uint8 inputs (a residual add in QDQ)."""
    b = tk.GraphBuilder()
    a, c = b.input("a", (256, 256), np.uint8), b.input("c", (256, 256), np.uint8)
    sa, sc, s = (b.constant(np.float32(v)) for v in scales)
    za, zc, z = (b.constant(np.uint8(v)) for v in zero_points)
    return b.finish(b.quantize(b.add(b.dequantize(a, sa, za), b.dequantize(c, sc, zc)), s, z))


def every_byte_pair():
    a, c = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8), indexing="ij")
    return np.ascontiguousarray(a), np.ascontiguousarray(c)


def test_quantized_sum_multiplies_by_the_reciprocal_where_exact(rng):
    """The quantize of a sum of two dequantized bytes multiplies by 1/scale (no vdivps)
    when that rounds every one of the 65536 sums as the division does: the folded
    graph and the compiled kernel give the division's numbers on all of them."""
    module = quantized_sum((0.05, 0.04, 0.07))
    inputs = every_byte_pair()
    want = tk.create_executor("interpreter", module).evaluate()(*inputs)
    folded = module.clone()
    fold_qdq(folded)
    folded.verify()
    (mul,) = [op for op in folded.walk() if op.name == "graph.mul"]
    assert mul.rhs.owner.array() == np.float32(1) / np.float32(0.07)
    (q,) = ops_of(folded, quant.QuantizeOp)
    assert q.scale.owner.array() == 1 and q.input is mul.result
    np.testing.assert_array_equal(tk.create_executor("interpreter", folded).evaluate()(*inputs), want)
    np.testing.assert_array_equal(tk.build(module)(*inputs), want)


def test_quantized_sum_keeps_the_division_where_one_sum_would_round_otherwise():
    """Scales where x * (1/s) rounds one of the 65536 sums to another integer than
    x / s (found by search): the quantize keeps dividing."""
    module = quantized_sum((0.011620428413152695, 0.0392802469432354, 0.034574929624795914), (120, 100, 0))
    fold_qdq(module)
    assert not [op for op in module.walk() if op.name == "graph.mul"]
    (q,) = ops_of(module, quant.QuantizeOp)
    assert np.isclose(q.scale.owner.array(), 0.034574929624795914)
    inputs = every_byte_pair()
    np.testing.assert_array_equal(tk.build(module)(*inputs), tk.create_executor("interpreter", module).evaluate()(*inputs))
