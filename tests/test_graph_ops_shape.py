"""graph.reshape, graph.transpose, graph.broadcast_to, graph.concat, graph.slice:
result type inference, verifier errors, textual round trip, numpy reference."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.dialects.builtin import i1, i32, i64
from xdsl.utils.exceptions import VerifyException

from tensorkiln.dialects.graph import Graph, OpPatternKind
from tensorkiln.dialects.graph import shape as shape_family
from tensorkiln.dialects.graph.base import ints
from tensorkiln.dialects.graph.shape import BroadcastToOp, ConcatOp, ReshapeOp, SliceOp, TransposeOp
from tensorkiln.dialects.graph.types import shape_of
from graph_op_helpers import args, t, assert_round_trip, parse_and_verify, doc_examples, check_doc_example

# ---------------------------------------------------------------------------
# docstrings and pattern kinds


@pytest.mark.parametrize("line", doc_examples(shape_family))
def test_doc_examples_parse_and_verify(line):
    check_doc_example(line)


def test_pattern_kinds():
    for op in (ReshapeOp, TransposeOp, ConcatOp, SliceOp):
        assert op.PATTERN_KIND == OpPatternKind.INJECTIVE
    assert BroadcastToOp.PATTERN_KIND == OpPatternKind.BROADCAST
    names = {op.name for op in Graph.operations}
    assert {"graph.reshape", "graph.transpose", "graph.broadcast_to", "graph.concat", "graph.slice"} <= names


def rand(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------
# reshape


@pytest.mark.parametrize(
    "x_shape, new_shape, expected",
    [
        ((3, 10), (5, 6), (5, 6)),
        ((3, 10), (-1,), (30,)),
        ((2, 3, 5, 7), (6, -1, 5), (6, 7, 5)),
        ((7, 30), (5, 6, 7), (5, 6, 7)),
        ((1, 9), (), None),  # error: 9 elements into 1
        ((1, 1), (), ()),
        ((), (1, 1, -1), (1, 1, 1)),
        ((4, 0, 3), (0, 5), (0, 5)),
        (("n", 3, 4), ("n", 12), ("n", 12)),
        (("n", 3, 4), ("n", -1), ("n", 12)),
        (("n", 3, 4), (2, "n", 6), (2, "n", 6)),
        ((2, "n", 6), (12, "n"), (12, "n")),
        (("b", "s", 12), ("b", "s", 3, -1), ("b", "s", 3, 4)),
    ],
)
def test_reshape_result_type(x_shape, new_shape, expected):
    (x,) = args(t(x_shape))
    if expected is None:
        with pytest.raises(VerifyException, match=r"9 vs 1 elements"):
            ReshapeOp(x, new_shape)
        return
    op = ReshapeOp(x, new_shape)
    assert shape_of(op.result.type) == expected
    assert op.target_shape() == expected
    assert all(d >= 0 or d == -1 for d in ints(op.shape))


@pytest.mark.parametrize(
    "x_shape, new_shape, message",
    [
        ((3, 10), (4, 8), r"cannot reshape \(3, 10\) to \(4, 8\): 30 vs 32 elements"),
        ((3, 10), (-1, -1), r"at most one -1"),
        ((3, 10), (-1, 7), r"cannot infer -1 in \[-1, 7\]: input \(3, 10\) has 30 static elements, not a multiple of 7"),
        (("n", 3, 4), (-1, 12), r"must keep the input's symbolic dims \['n'\] in order, got \[\]"),
        (("n", 3, 4), ("m", 12), r"keep the input's symbolic dims \['n'\] in order, got \['m'\]"),
        (("n", "m", 4), ("m", "n", 4), r"\['n', 'm'\] in order, got \['m', 'n'\]"),
        (("n", 4), (2, "n", 3), r"4 vs 6 static elements \(besides the symbolic dims\)"),
        ((3, 4), (-2, -6), r"shape\[0\] = -2 is negative"),
    ],
)
def test_reshape_errors(x_shape, new_shape, message):
    (x,) = args(t(x_shape))
    with pytest.raises(VerifyException, match=message):
        ReshapeOp(x, new_shape)


def test_reshape_stored_shape_errors():
    head = "builtin.module {\n func.func @f(%x: tensor<?x12xf32, #graph.dims<n, _>>) {\n  %y = graph.reshape %x "
    tail = "\n  func.return\n }\n}"
    ok = head + "{shape = array<i64: -1, 3, 4>, dims = #graph.dims<n, _, _>} : tensor<?x12xf32, #graph.dims<n, _>> -> tensor<?x3x4xf32, #graph.dims<n, _, _>>" + tail
    parse_and_verify(ok)
    with pytest.raises(VerifyException, match=r"shape\[0\] is -1 \(a symbolic dim\) but dims gives it no name"):
        parse_and_verify(ok.replace(", dims = #graph.dims<n, _, _>", ""))
    with pytest.raises(VerifyException, match=r"dims names 2 dims but shape has 3"):
        parse_and_verify(ok.replace("dims = #graph.dims<n, _, _>}", "dims = #graph.dims<n, _>}"))
    with pytest.raises(VerifyException, match=r"dims names shape\[1\] 'k' but the shape gives it the static size 3"):
        parse_and_verify(ok.replace("dims = #graph.dims<n, _, _>}", "dims = #graph.dims<n, k, _>}"))


def test_reshape_reference():
    x = rand((2, 3, 5, 7))
    (xv,) = args(t(x.shape))
    y = ReshapeOp(xv, (6, -1, 5)).reference(x)
    np.testing.assert_array_equal(y, x.reshape(6, 7, 5))
    xs = rand((4, 3, 4), seed=1)
    (xsv,) = args(t(("n", 3, 4)))
    np.testing.assert_array_equal(ReshapeOp(xsv, (2, "n", 6)).reference(xs), xs.reshape(2, 4, 6))
    xi = rand((3, 10), np.int32)
    (xiv,) = args(t((3, 10), i32))
    yi = ReshapeOp(xiv, (5, 2, 3)).reference(xi)
    assert yi.dtype == np.int32 and np.array_equal(yi, xi.reshape(5, 2, 3))


# ---------------------------------------------------------------------------
# transpose


@pytest.mark.parametrize(
    "x_shape, perm, expected",
    [
        ((2, 3, 5), (2, 0, 1), (5, 2, 3)),
        ((2, 3, 5), None, (5, 3, 2)),
        ((2, 3, 5), (0, -1, 1), (2, 5, 3)),
        ((7,), (0,), (7,)),
        ((), (), ()),
        (("n", 3, 5, "m"), (3, 0, 2, 1), ("m", "n", 5, 3)),
    ],
)
def test_transpose_result_type(x_shape, perm, expected):
    (x,) = args(t(x_shape))
    op = TransposeOp(x, perm)
    assert shape_of(op.result.type) == expected
    assert all(p >= 0 for p in ints(op.perm))


@pytest.mark.parametrize(
    "perm, message",
    [
        ((0, 1), r"perm \[0, 1\] is not a permutation of the 3 axes of \(2, 3, 5\)"),
        ((0, 1, 1), r"perm \[0, 1, 1\] is not a permutation"),
        ((0, 1, 3), r"perm \[0, 1, 3\] is not a permutation"),
    ],
)
def test_transpose_errors(perm, message):
    (x,) = args(t((2, 3, 5)))
    with pytest.raises(VerifyException, match=message):
        TransposeOp(x, perm)


def test_transpose_reference():
    x = rand((2, 3, 5, 4))
    (xv,) = args(t(x.shape))
    for perm in [(3, 1, 0, 2), (0, 1, 2, 3), None]:
        y = TransposeOp(xv, perm).reference(x)
        np.testing.assert_array_equal(y, np.transpose(x, perm))
        assert y.flags.c_contiguous


# ---------------------------------------------------------------------------
# broadcast_to


@pytest.mark.parametrize(
    "x_shape, target, expected",
    [
        ((3, 1), (4, 3, 5), (4, 3, 5)),
        ((3, 1), (3, 1), (3, 1)),
        ((), (2, 7), (2, 7)),
        ((1, 5, 1), (9, 5, 3), (9, 5, 3)),
        ((1, 5, 1), (2, -1, -1, 3), (2, 1, 5, 3)),
        (("n", 1, 4), ("n", 6, 4), ("n", 6, 4)),
        (("n", 1, 4), (-1, 6, -1), ("n", 6, 4)),
        ((1, 768), ("b", 1, 768), ("b", 1, 768)),
        ((1, 3), ("b", "s", 3), ("b", "s", 3)),
    ],
)
def test_broadcast_to_result_type(x_shape, target, expected):
    (x,) = args(t(x_shape))
    op = BroadcastToOp(x, target)
    assert shape_of(op.result.type) == expected
    assert op.target_shape() == expected
    # numpy agrees on static shapes
    if all(isinstance(d, int) for d in expected):
        assert np.broadcast_to(np.zeros(x_shape), expected).shape == expected


@pytest.mark.parametrize(
    "x_shape, target, message",
    [
        ((3, 2), (3, 5), r"cannot broadcast \(3, 2\) to \(3, 5\): input dim 1 is 2, target dim 1 is 5"),
        ((3, 2), (2,), r"cannot broadcast \(3, 2\) to \(2,\): fewer dims"),
        (("n", 2), (4, 2), r"input dim 0 is n, target dim 0 is 4"),
        (("n", 2), ("m", 2), r"input dim 0 is n, target dim 0 is m"),
        ((3, 2), (-1, 3, 2), r"-1 at new leading axis 0"),
    ],
)
def test_broadcast_to_errors(x_shape, target, message):
    (x,) = args(t(x_shape))
    with pytest.raises(VerifyException, match=message):
        BroadcastToOp(x, target)


def test_broadcast_to_reference():
    x = rand((1, 5, 1), np.int32)
    (xv,) = args(t(x.shape, i32))
    y = BroadcastToOp(xv, (2, 4, 5, 3)).reference(x)
    np.testing.assert_array_equal(y, np.broadcast_to(x, (2, 4, 5, 3)))
    assert y.flags.c_contiguous and y.dtype == np.int32
    xs = rand((3, 1, 4), seed=2)
    (xsv,) = args(t(("n", 1, 4)))
    np.testing.assert_array_equal(BroadcastToOp(xsv, ("n", 6, 4)).reference(xs), np.broadcast_to(xs, (3, 6, 4)))
    (cls,) = args(t((1, 4)))
    op = BroadcastToOp(cls, ("b", 1, 4))
    c = rand((1, 4), seed=3)
    np.testing.assert_array_equal(op.reference(c, sizes={"b": 5}), np.broadcast_to(c, (5, 1, 4)))
    with pytest.raises(ValueError, match="new symbolic dim 'b'"):
        op.reference(c)


# ---------------------------------------------------------------------------
# concat


@pytest.mark.parametrize(
    "shapes, axis, expected",
    [
        ([(2, 3), (2, 5)], 1, (2, 8)),
        ([(2, 3), (2, 1), (2, 5)], -1, (2, 9)),
        ([(2, 3), (4, 3), (1, 3)], 0, (7, 3)),
        ([(2, 3, 5)], 2, (2, 3, 5)),
        ([(2, 0, 5), (2, 3, 5)], -2, (2, 3, 5)),
        ([("n", 3, 5), ("n", 4, 5)], 1, ("n", 7, 5)),
    ],
)
def test_concat_result_type(shapes, axis, expected):
    values = args(*(t(s) for s in shapes))
    op = ConcatOp(values, axis)
    assert shape_of(op.result.type) == expected
    assert 0 <= op.axis.value.data < len(expected)


@pytest.mark.parametrize(
    "shapes, axis, message",
    [
        ([(2, 3), (3, 5)], 1, r"input 1 has dim 0 = 3, expected 2 like input 0 \(shapes \(2, 3\) and \(3, 5\), concat axis 1\)"),
        ([(2, 3), (2, 3, 1)], 0, r"input 1 has shape \(2, 3, 1\), expected rank 2 like input 0"),
        ([(2, 3), (2, 3)], 2, r"axis 2 is out of range \[0, 2\) for rank 2"),
        ([(2, 3), (2, 3)], -3, r"axis -3 is out of range"),
        ([("n", 3), ("m", 3)], 1, r"input 1 has dim 0 = m, expected n"),
        ([], 0, r"needs at least one input"),
    ],
)
def test_concat_errors(shapes, axis, message):
    values = args(*(t(s) for s in shapes))
    with pytest.raises(VerifyException, match=message):
        ConcatOp(values, axis)


def test_concat_element_type_error():
    a, b = args(t((2, 3)), t((2, 3), i32))
    with pytest.raises(VerifyException, match="inputs must have one element type"):
        ConcatOp([a, b], 0)


def test_concat_reference():
    xs = [rand((2, k, 5), seed=k) for k in (3, 1, 4)]
    values = args(*(t(x.shape) for x in xs))
    y = ConcatOp(values, -2).reference(*xs)
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=1))


# ---------------------------------------------------------------------------
# slice

SLICE_CASES = [
    # shape, starts, ends, axes, steps
    ((9,), [1], [7], None, [2]),
    ((9,), [-3], [None], None, None),
    ((9,), [-100], [100], None, [4]),
    ((9,), [5], [2], None, None),
    ((9,), [7], [-1], None, [3]),
    ((5, 4, 7), [1, 0], [None, 7], [0, -1], [1, 3]),
    ((5, 4, 7), [0, -2], [-1, 2**63 - 1], [2, 1], None),
    ((5, 4, 7), [2], [3], [1], None),
    ((6, 11), [None, 3], [None, None], None, [5, 4]),
]


@pytest.mark.parametrize("shape, starts, ends, axes, steps", SLICE_CASES)
def test_slice_matches_python_slicing(shape, starts, ends, axes, steps):
    x = rand(shape, np.int32, seed=len(shape))
    (xv,) = args(t(shape, i32))
    op = SliceOp(xv, starts, ends, axes, steps)
    index = [slice(None)] * len(shape)
    for a, s, e, st in zip(axes or range(len(starts)), starts, ends, steps or [1] * len(starts)):
        index[a] = slice(s, e, st)
    expected = x[tuple(index)]
    assert shape_of(op.result.type) == expected.shape
    np.testing.assert_array_equal(op.reference(x), expected)
    # stored normalised
    axes_n, starts_n, ends_n, steps_n = (ints(p) for p in (op.axes, op.starts, op.ends, op.steps))
    assert list(axes_n) == sorted(set(axes_n))
    for a, s, e, st in zip(axes_n, starts_n, ends_n, steps_n):
        assert 0 <= s <= e <= shape[a] and st >= 1


def test_slice_symbolic():
    (x,) = args(t(("n", 9, 4)))
    op = SliceOp(x, [0, 2], [None, -2], axes=[0, 1])  # whole symbolic axis: dropped
    assert shape_of(op.result.type) == ("n", 5, 4)
    assert ints(op.axes) == (1,)
    a = rand((3, 9, 4))
    np.testing.assert_array_equal(op.reference(a), a[:, 2:-2])


@pytest.mark.parametrize(
    "shape, starts, ends, axes, steps, message",
    [
        ((9,), [0], [5], None, [-1], r"steps must be >= 1, got -1 on axis 0"),
        ((9,), [0], [5], None, [0], r"steps must be >= 1, got 0"),
        ((9, 3), [0, 0], [5, 2], [1, -1], None, r"axis 1 is sliced twice"),
        ((9, 3), [0], [5], [2], None, r"slice axis 2 is out of range for rank 2"),
        ((9, 3), [0], [5, 1], None, None, r"axes, starts, ends and steps must have one length, got 1, 1, 2, 1"),
    ],
)
def test_slice_errors(shape, starts, ends, axes, steps, message):
    (x,) = args(t(shape))
    with pytest.raises(VerifyException, match=message):
        SliceOp(x, starts, ends, axes, steps)


def test_slice_stored_form_errors():
    head = "builtin.module {\n func.func @f(%x: tensor<5x9xf32>) {\n  %y = graph.slice %x "
    tail = " : tensor<5x9xf32> -> tensor<5x3xf32>\n  func.return\n }\n}"
    props = "{axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 7>, steps = array<i64: 2>}"
    parse_and_verify(head + props + tail)
    with pytest.raises(VerifyException, match=r"axis 1: start -8 and end 7 are not normalised, expected 0 <= start <= end <= 9"):
        parse_and_verify(head + props.replace("starts = array<i64: 1>", "starts = array<i64: -8>") + tail)
    with pytest.raises(VerifyException, match=r"axes \[1, 0\] must be strictly increasing"):
        parse_and_verify(
            head
            + "{axes = array<i64: 1, 0>, starts = array<i64: 1, 0>, ends = array<i64: 7, 5>, steps = array<i64: 2, 1>}"
            + tail
        )
    with pytest.raises(VerifyException, match=r"does not match the inferred type tensor<5x3xf32>"):
        parse_and_verify(head + props + tail.replace("-> tensor<5x3xf32>", "-> tensor<5x4xf32>"))


# ---------------------------------------------------------------------------
# round trip


def test_shape_ops_round_trip():
    a, b, s, c, i = args(t((2, 3, 5)), t((2, 4, 5)), t(("n", 3, 4)), t((3, 1), i64), t((1, 768), i1))
    text = assert_round_trip(
        [
            ReshapeOp(a, (6, -1)),
            ReshapeOp(s, ("n", -1)),
            TransposeOp(a, (2, 0, 1)),
            TransposeOp(s),
            BroadcastToOp(c, (4, 3, 5)),
            BroadcastToOp(c, ("n", 3, 7)),
            BroadcastToOp(i, ("b", 1, 768)),
            ConcatOp([a, b, a], -2),
            ConcatOp([s], 2),
            SliceOp(a, [1, -4], [None, -1], axes=[0, 2], steps=[1, 2]),
            SliceOp(s, [0, 1], [None, 3], axes=[0, 1]),
        ]
    )
    assert "graph.reshape %2 {shape = array<i64: -1, 12>, dims = #graph.dims<n, _>}" in text
    assert "graph.concat %0, %1, %0 {axis = 1 : i64} : tensor<2x3x5xf32>, tensor<2x4x5xf32>, tensor<2x3x5xf32> -> tensor<2x10x5xf32>" in text
    assert "graph.slice %0 {axes = array<i64: 0, 2>, starts = array<i64: 1, 1>, ends = array<i64: 2, 4>, steps = array<i64: 1, 2>}" in text
