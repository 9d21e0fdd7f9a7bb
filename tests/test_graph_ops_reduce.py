"""graph.reduce_sum/mean/max/min/prod, graph.softmax, graph.log_softmax:
result type inference, verifier errors, textual round trip, numpy/torch reference."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.dialects.builtin import f16, f32, f64, i1, i32, i64
from xdsl.utils.exceptions import VerifyException

from tensorkiln.dialects.graph import Graph, OpPatternKind
from tensorkiln.dialects.graph import reduce as reduce_family
from tensorkiln.dialects.graph.base import ints
from tensorkiln.dialects.graph.reduce import (
    REDUCE_OPS,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceProdOp,
    ReduceSumOp,
    SoftmaxOp,
)
from tensorkiln.dialects.graph.types import shape_of
from graph_op_helpers import args, t, assert_round_trip, parse_and_verify, doc_examples, check_doc_example

# ---------------------------------------------------------------------------
# docstrings and pattern kinds


@pytest.mark.parametrize("line", doc_examples(reduce_family))
def test_doc_examples_parse_and_verify(line):
    check_doc_example(line)


def test_pattern_kinds_and_names():
    assert [op.name for op in REDUCE_OPS] == [
        "graph.reduce_sum", "graph.reduce_mean", "graph.reduce_max", "graph.reduce_min", "graph.reduce_prod"
    ]
    for op in REDUCE_OPS:
        assert op.PATTERN_KIND == OpPatternKind.COMM_REDUCE
    assert SoftmaxOp.PATTERN_KIND == LogSoftmaxOp.PATTERN_KIND == OpPatternKind.OPAQUE
    names = {op.name for op in Graph.operations}
    assert {op.name for op in (*REDUCE_OPS, SoftmaxOp, LogSoftmaxOp)} <= names
    assert {"graph.max", "graph.min"} <= names  # the elementwise ops are still there


# ---------------------------------------------------------------------------
# reductions: types

REDUCE_CASES = [
    # shape, axes, keepdims, expected shape, stored axes
    ((3, 5, 7), 1, False, (3, 7), (1,)),
    ((3, 5, 7), (0, 2), False, (5,), (0, 2)),
    ((3, 5, 7), (-1, 0), True, (1, 5, 1), (0, 2)),
    ((3, 5, 7), (), False, (), (0, 1, 2)),
    ((3, 5, 7), (), True, (1, 1, 1), (0, 1, 2)),
    ((3, 5, 7), (0, 1, 2), False, (), (0, 1, 2)),
    ((), (), False, (), ()),
    ((9,), -1, True, (1,), (0,)),
    (("n", 5, 7), (1, 2), False, ("n",), (1, 2)),
    (("n", 5, "m"), -2, True, ("n", 1, "m"), (1,)),
    (("n", 5), 0, False, (5,), (0,)),
]


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize("x_shape, axes, keepdims, expected, stored", REDUCE_CASES)
def test_reduce_result_type(op_type, x_shape, axes, keepdims, expected, stored):
    (x,) = args(t(x_shape))
    op = op_type(x, axes, keepdims=keepdims)
    assert shape_of(op.result.type) == expected
    assert op.result.type.element_type == f32
    assert ints(op.axes) == stored and op.reduced_axes() == stored
    assert bool(op.keepdims.value.data) == keepdims


@pytest.mark.parametrize(
    "op_type, x_shape, element, axes, message",
    [
        (ReduceSumOp, (3, 5), f32, (2,), r"reduction axis 2 is out of range for rank 2"),
        (ReduceSumOp, (3, 5), f32, (-3,), r"reduction axis -3 is out of range for rank 2"),
        (ReduceMaxOp, (3, 5), f32, (1, -1), r"axes \[1, -1\] name an axis twice"),
        (ReduceMeanOp, (3, 5), i32, (1,), r"input must be a float tensor, got tensor<3x5xi32>"),
        (ReduceSumOp, (3, 5), i1, (1,), r"input must be numeric, got tensor<3x5xi1>"),
        (ReduceMaxOp, (3, 0), f32, (1,), r"cannot reduce over axis 1 of size 0 \(shape \(3, 0\)\)"),
        (ReduceMinOp, (0, 2), f32, (), r"cannot reduce over axis 0 of size 0"),
    ],
)
def test_reduce_errors(op_type, x_shape, element, axes, message):
    (x,) = args(t(x_shape, element))
    with pytest.raises(VerifyException, match=message):
        op_type(x, axes)


def test_reduce_integer_inputs():
    (x,) = args(t((3, 5), i32))
    for op_type in (ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp):
        assert op_type(x, 1).result.type == t((3,), i32)
    assert ReduceSumOp(args(t((3, 0)))[0], 1).result.type == t((3,))  # sum over nothing is 0
    empty = ReduceProdOp(args(t((3, 0), i32))[0], 1)  # the product over nothing is 1
    np.testing.assert_array_equal(empty.reference(np.zeros((3, 0), np.int32)), np.ones(3, np.int32))
    with pytest.raises(VerifyException, match=r"input must be numeric, got tensor<3x5xi1>"):
        ReduceProdOp(args(t((3, 5), i1))[0], 1)


def test_reduce_stored_axes():
    head = "builtin.module {\n func.func @f(%x: tensor<3x5x7xf32>) {\n  %y = graph.reduce_sum %x "
    tail = "\n  func.return\n }\n}"
    module = parse_and_verify(head + "{axes = array<i64>} : tensor<3x5x7xf32> -> tensor<f32>" + tail)
    op = module.body.block.first_op.body.block.first_op
    assert op.reduced_axes() == (0, 1, 2) and not op.keepdims.value.data
    x = rand((3, 5, 7))
    np.testing.assert_allclose(op.reference(x), x.sum(), rtol=1e-5)
    with pytest.raises(VerifyException, match=r"axes \[-1\] must be strictly increasing and in \[0, 3\) for shape \(3, 5, 7\) \(normalised"):
        parse_and_verify(head + "{axes = array<i64: -1>} : tensor<3x5x7xf32> -> tensor<3x5xf32>" + tail)
    with pytest.raises(VerifyException, match=r"axes \[2, 0\] must be strictly increasing"):
        parse_and_verify(head + "{axes = array<i64: 2, 0>} : tensor<3x5x7xf32> -> tensor<5xf32>" + tail)
    with pytest.raises(VerifyException, match=r"does not match the inferred type tensor<3x1x7xf32>"):
        parse_and_verify(head + "{axes = array<i64: 1>, keepdims = true} : tensor<3x5x7xf32> -> tensor<3x7xf32>" + tail)


# ---------------------------------------------------------------------------
# reductions: reference vs numpy


def rand(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


NUMPY_REDUCE = {ReduceSumOp: np.sum, ReduceMeanOp: np.mean, ReduceMaxOp: np.max, ReduceMinOp: np.min, ReduceProdOp: np.prod}


@pytest.mark.parametrize("op_type", REDUCE_OPS)
@pytest.mark.parametrize(
    "shape, axes, keepdims",
    [((3, 5, 7), 1, False), ((3, 5, 7), (0, 2), True), ((3, 5, 7), (), False), ((4, 1, 6, 3), (-1, 1), False), ((11,), 0, True)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_reduce_reference(op_type, shape, axes, keepdims, dtype):
    if op_type is ReduceMeanOp and np.issubdtype(dtype, np.integer):
        pytest.skip("mean is float only")
    if op_type is ReduceProdOp and np.issubdtype(dtype, np.integer):
        pytest.skip("integer products wrap: test_reduce_prod_integers_wrap")
    x = rand(shape, dtype, seed=len(shape))
    element = {np.float32: f32, np.float64: f64, np.int32: i32, np.int64: i64}[dtype]
    (xv,) = args(t(shape, element))
    op = op_type(xv, axes, keepdims=keepdims)
    y = op.reference(x)
    np_axes = tuple(range(len(shape))) if axes == () else axes
    expected = NUMPY_REDUCE[op_type](x.astype(np.float64), axis=np_axes, keepdims=keepdims)
    assert y.dtype == dtype
    assert y.shape == tuple(op.result.type.get_shape())
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(y, expected.astype(dtype))
    else:
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype, bits", [(np.int64, 64), (np.int32, 32)])
def test_reduce_prod_integers_wrap(dtype, bits):
    """Integer products wrap in their own type (torch's int64 prod): against exact Python
    integers reduced modulo 2**bits."""
    x = rand((4, 30), dtype, seed=3)
    (xv,) = args(t((4, 30), {np.int64: i64, np.int32: i32}[dtype]))

    def wrapped(values) -> int:
        product = 1
        for v in values:
            product *= int(v)
        product %= 1 << bits
        return product - (1 << bits) if product >= 1 << (bits - 1) else product

    y = ReduceProdOp(xv, 1).reference(x)
    assert y.dtype == dtype
    assert [int(v) for v in y] == [wrapped(row) for row in x]
    assert int(ReduceProdOp(xv).reference(x)) == wrapped(x.ravel())


def test_reduce_reference_nan_and_symbolic():
    x = rand((4, 6))
    x[1, 2] = np.nan
    (xv,) = args(t(("n", 6)))
    y = ReduceMaxOp(xv, 1).reference(x)
    assert np.isnan(y[1]) and not np.isnan(np.delete(y, 1)).any()
    np.testing.assert_allclose(ReduceMeanOp(xv, 0).reference(x[[0, 2, 3]]), x[[0, 2, 3]].mean(0), rtol=1e-6)


# ---------------------------------------------------------------------------
# softmax / log_softmax


@pytest.mark.parametrize("op_type", [SoftmaxOp, LogSoftmaxOp])
@pytest.mark.parametrize(
    "shape, axis, stored", [((4, 10), None, 1), ((4, 10), 0, 0), ((2, 3, 5), -2, 1), (("n", 7), 1, 1), ((9,), -1, 0)]
)
def test_softmax_result_type(op_type, shape, axis, stored):
    (x,) = args(t(shape))
    op = op_type(x) if axis is None else op_type(x, axis)
    assert op.result.type == x.type
    assert op.axis.value.data == stored


@pytest.mark.parametrize("op_type", [SoftmaxOp, LogSoftmaxOp])
def test_softmax_errors(op_type):
    x, xi = args(t((4, 10)), t((4, 10), i32))
    with pytest.raises(VerifyException, match=r"input must be a float tensor, got tensor<4x10xi32>"):
        op_type(xi)
    with pytest.raises(VerifyException, match=r"axis 2 is out of range \[0, 2\) for shape \(4, 10\)"):
        op_type(x, 2)
    with pytest.raises(VerifyException, match=r"axis -3 is out of range"):
        op_type(x, -3)


@pytest.mark.parametrize(
    "shape, axis, dtype",
    [((4, 10), -1, np.float32), ((3, 5, 7), 1, np.float32), ((3, 5, 7), 0, np.float64), ((2, 9), 1, np.float16)],
)
def test_softmax_reference_vs_torch(shape, axis, dtype):
    torch = pytest.importorskip("torch")
    x = (rand(shape, np.float32, seed=5) * 4).astype(dtype)
    x.flat[0] = 30  # large values must not overflow
    element = {np.float16: f16, np.float32: f32, np.float64: f64}[dtype]
    (xv,) = args(t(shape, element))
    xt = torch.from_numpy(x.astype(np.float64))
    for op_type, fn in ((SoftmaxOp, torch.softmax), (LogSoftmaxOp, torch.log_softmax)):
        y = op_type(xv, axis).reference(x)
        assert y.dtype == dtype
        tol = 1e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(y, fn(xt, axis).numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# round trip


def test_reduce_ops_round_trip():
    x, s, xi = args(t((3, 5, 7)), t(("n", 5, 7), f64), t((3, 5), i32))
    text = assert_round_trip(
        [
            ReduceSumOp(x, (0, -1)),
            ReduceMeanOp(x, -1, keepdims=True),
            ReduceMaxOp(s, 1),
            ReduceMinOp(xi),
            ReduceSumOp(xi, 1, keepdims=True),
            ReduceProdOp(s, (0, 2), keepdims=True),
            SoftmaxOp(x, 1),
            LogSoftmaxOp(s),
        ]
    )
    assert "graph.reduce_sum %0 {axes = array<i64: 0, 2>} : tensor<3x5x7xf32> -> tensor<5xf32>" in text
    assert "graph.reduce_mean %0 {axes = array<i64: 2>, keepdims = true} : tensor<3x5x7xf32> -> tensor<3x5x1xf32>" in text
    assert "graph.softmax %0 {axis = 1 : i64} : tensor<3x5x7xf32>" in text
    assert "graph.reduce_prod %1 {axes = array<i64: 0, 2>, keepdims = true} : tensor<?x5x7xf64, #graph.dims<n, _, _>> -> tensor<1x5x1xf64>" in text
