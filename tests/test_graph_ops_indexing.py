"""graph.take, graph.gather, graph.cumsum, graph.argmax/argmin, graph.argsort, graph.flip,
graph.pad, graph.full, graph.arange: result type inference, verifier errors, textual round
trip, numpy reference (out-of-range indices clamp), and compiled code vs the reference."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import f32, i1, i32, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph import Graph, OpPatternKind
from tensorkiln.dialects.graph import indexing as indexing_family
from tensorkiln.dialects.graph.indexing import (
    ArangeOp,
    ArgMaxOp,
    ArgMinOp,
    ArgsortOp,
    CumprodOp,
    CumsumOp,
    FlipOp,
    FullOp,
    GatherOp,
    PadOp,
    TakeOp,
)
from tensorkiln.dialects.graph.types import shape_of

from graph_op_helpers import args, assert_round_trip, check_doc_example, doc_examples, parse_and_verify, t


def rand(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


_BUILT: dict = {}


def compiled_and_interpreted(key, inputs, body):
    """(compiled, interpreter) of ``body(builder, *values)`` over ``inputs`` [(shape, dtype)]; cached."""
    if key not in _BUILT:
        b = tk.GraphBuilder()
        values = [b.input(f"x{k}", shape, dtype) for k, (shape, dtype) in enumerate(inputs)]
        out = body(b, *values)
        module = b.finish(*(out if isinstance(out, tuple) else (out,)))
        _BUILT[key] = (tk.build(module), tk.create_executor("interpreter", module).evaluate())
    return _BUILT[key]


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# docstrings, pattern kinds, registration


@pytest.mark.parametrize("line", doc_examples(indexing_family))
def test_doc_examples_parse_and_verify(line):
    check_doc_example(line)


def test_doc_examples_cover_every_op():
    names = {re.match(r"%\w+ = (graph\.\w+)", line).group(1) for line in doc_examples(indexing_family)}
    assert names == {op.name for op in indexing_family.INDEXING_OPS}


def test_pattern_kinds_and_registration():
    for op in (TakeOp, GatherOp, FlipOp, PadOp, FullOp, ArangeOp):
        assert op.PATTERN_KIND == OpPatternKind.INJECTIVE
    assert ArgMaxOp.PATTERN_KIND == ArgMinOp.PATTERN_KIND == OpPatternKind.COMM_REDUCE
    assert CumsumOp.PATTERN_KIND == CumprodOp.PATTERN_KIND == ArgsortOp.PATTERN_KIND == OpPatternKind.OPAQUE
    names = {op.name for op in Graph.operations}
    assert {op.name for op in indexing_family.INDEXING_OPS} <= names
    from tensorkiln.lowering.graph_to_te import COMPUTE_RULES

    assert set(indexing_family.INDEXING_OPS) <= set(COMPUTE_RULES)


# ---------------------------------------------------------------------------
# take


@pytest.mark.parametrize(
    "x_shape, idx_shape, axis, expected",
    [
        ((10, 4), (2, 3), 0, (2, 3, 4)),
        ((10, 4), (5,), -1, (10, 5)),
        ((3, 10, 4), (), 1, (3, 4)),
        ((3, 10, 4), (2, 1, 6), -2, (3, 2, 1, 6, 4)),
        (("n", 7), (3,), 1, ("n", 3)),
        ((7, 5), ("n", 2), 0, ("n", 2, 5)),
        (("n", 5), (4,), 0, (4, 5)),
        ((0, 5), (0,), 0, (0, 5)),
    ],
)
def test_take_result_type(x_shape, idx_shape, axis, expected):
    x, idx = args(t(x_shape), t(idx_shape, i64))
    op = TakeOp(x, idx, axis)
    assert shape_of(op.result.type) == expected
    assert op.result.type.element_type == f32
    assert 0 <= op.axis.value.data < len(x_shape)


@pytest.mark.parametrize(
    "x_shape, idx_type, axis, message",
    [
        ((10, 4), t((3,), f32), 0, r"indices must be an integer tensor \(i8, i32 or i64\), got tensor<3xf32>"),
        ((10, 4), t((3,), i1), 0, r"indices must be an integer tensor"),
        ((10, 4), t((3,), i64), 2, r"axis 2 is out of range \[0, 2\) for shape \(10, 4\)"),
        ((10, 4), t((3,), i64), -3, r"axis -3 is out of range"),
        ((), t((3,), i64), 0, r"axis 0 is out of range \[0, 0\)"),
        ((0, 4), t((3,), i64), 0, r"cannot take from axis 0 of size 0"),
    ],
)
def test_take_errors(x_shape, idx_type, axis, message):
    x, idx = args(t(x_shape), idx_type)
    with pytest.raises(VerifyException, match=message):
        TakeOp(x, idx, axis)


def test_take_reference_wraps_negative_and_clamps():
    x = rand((5, 3))
    (xv, iv) = args(t((5, 3)), t((2, 3), i32))
    idx = np.array([[0, -1, 4], [-5, 7, -9]], np.int32)
    got = TakeOp(xv, iv, 0).reference(x, idx)
    # -1 -> 4, -5 -> 0; 7 clamps to 4, -9 (still negative after wrapping) clamps to 0
    np.testing.assert_array_equal(got, x[[[0, 4, 4], [0, 4, 0]]])
    empty = TakeOp(*args(t((5, 3)), t((0,), i64)), 1).reference(x, np.zeros(0, np.int64))
    assert empty.shape == (5, 0)


@pytest.mark.parametrize("index_dtype", ["int64", "int32", "int8"])
def test_take_compiled(rng, index_dtype):
    lib, ref = compiled_and_interpreted(
        ("take", index_dtype), [((7, 4, 3), "float32"), ((2, 5), index_dtype)], lambda b, x, i: (b.take(x, i, 1), b.take(x, i, 0), b.take(x, i, -1))
    )
    x = rng.standard_normal((7, 4, 3)).astype("f4")
    idx = rng.integers(-12, 12, (2, 5)).astype(index_dtype)  # out of range on purpose
    for got, want in zip(lib(x, idx), ref(x, idx)):
        assert_same(got, want)
    assert_same(lib(x, idx)[0], np.take(x, np.clip(np.where(idx < 0, idx + 4, idx), 0, 3), axis=1))


def test_take_symbolic_compiled(rng):
    lib, ref = compiled_and_interpreted(
        "take-symbolic", [(("n", 6), "float32"), (("m",), "int64")], lambda b, x, i: b.take(x, i, 0)
    )
    for n, m in [(1, 3), (4, 7), (9, 1)]:
        x = rng.standard_normal((n, 6)).astype("f4")
        idx = rng.integers(-2 * n, 2 * n, m)
        assert_same(lib(x, idx), ref(x, idx))


# ---------------------------------------------------------------------------
# gather


@pytest.mark.parametrize(
    "x_shape, idx_shape, axis",
    [((4, 5), (4, 2), 1), ((4, 5), (2, 5), 0), ((4, 5, 6), (3, 7, 2), 1), ((4, 5, 6), (1, 1, 1), -1), (("n", 5), ("n", 3), 1)],
)
def test_gather_result_type(x_shape, idx_shape, axis):
    x, idx = args(t(x_shape), t(idx_shape, i64))
    op = GatherOp(x, idx, axis)
    assert shape_of(op.result.type) == idx_shape


@pytest.mark.parametrize(
    "x_shape, idx_shape, axis, message",
    [
        ((4, 5), (4,), 0, r"indices \(4,\) must have the rank of the input \(4, 5\)"),
        ((4, 5), (5, 2), 1, r"indices dim 0 is 5, expected at most input dim 0 = 4"),
        (("n", 5), (3, 2), 1, r"indices dim 0 is 3, expected at most input dim 0 = n"),
        ((4, 5), (4, 2), 2, r"axis 2 is out of range"),
        ((4, 0), (4, 2), 1, r"cannot gather from axis 1 of size 0"),
    ],
)
def test_gather_errors(x_shape, idx_shape, axis, message):
    x, idx = args(t(x_shape), t(idx_shape, i64))
    with pytest.raises(VerifyException, match=message):
        GatherOp(x, idx, axis)


def test_gather_reference():
    x = rand((3, 4))
    xv, iv = args(t((3, 4)), t((2, 3), i64))
    idx = np.array([[0, 3, -1], [9, -2, 1]])
    got = GatherOp(xv, iv, 1).reference(x, idx)
    np.testing.assert_array_equal(got, np.array([[x[0, 0], x[0, 3], x[0, 3]], [x[1, 3], x[1, 2], x[1, 1]]]))


def test_gather_compiled(rng):
    lib, ref = compiled_and_interpreted(
        "gather",
        [((5, 6, 4), "float32"), ((3, 9, 2), "int64"), ((7, 2, 4), "int32")],
        lambda b, x, i, j: (b.gather(x, i, 1), b.gather(x, j, 0)),
    )
    x = rng.standard_normal((5, 6, 4)).astype("f4")
    idx = rng.integers(-8, 8, (3, 9, 2))
    jdx = rng.integers(-8, 8, (7, 2, 4)).astype("i4")
    for got, want in zip(lib(x, idx, jdx), ref(x, idx, jdx)):
        assert_same(got, want)


# ---------------------------------------------------------------------------
# cumsum, cumprod, argmax, argmin, argsort


@pytest.mark.parametrize("op_class, numpy_fn", [(CumsumOp, np.cumsum), (CumprodOp, np.cumprod)])
def test_scan_type_errors_reference(op_class, numpy_fn):
    (x,) = args(t((4, "n")))
    assert op_class(x, -1).result.type == x.type and op_class(x, -1).axis.value.data == 1
    with pytest.raises(VerifyException, match="input must be numeric"):
        op_class(args(t((3,), i1))[0], 0)
    with pytest.raises(VerifyException, match=r"axis 1 is out of range"):
        op_class(args(t((3,)))[0], 1)
    data = rand((3, 4), np.int32)
    got = op_class(args(t((3, 4), i32))[0], 0).reference(data)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, numpy_fn(data, 0, dtype=np.int32))


def test_cumprod_integers_wrap():
    """int64 prefix products wrap (as torch's): against exact Python integers mod 2**64."""
    data = rand((23,), np.int64)
    exact, out = 1, []
    for v in data:
        exact = exact * int(v) % (1 << 64)
        out.append(exact - (1 << 64) if exact >= 1 << 63 else exact)
    assert [int(v) for v in CumprodOp(args(t((23,), i64))[0], 0).reference(data)] == out


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_cumsum_compiled(rng, dtype):
    lib, ref = compiled_and_interpreted(
        ("cumsum", dtype), [((5, 9, 3), dtype)], lambda b, x: (b.cumsum(x, 1), b.cumsum(x, 0), b.cumsum(x, -1))
    )
    x = (rng.standard_normal((5, 9, 3)) * 10).astype(dtype)
    for got, want in zip(lib(x), ref(x)):
        assert_same(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_cumprod_compiled(rng, dtype):
    """Integers wrap exactly as the interpreter's (rows of 9 values up to 30 overflow int32)."""
    lib, ref = compiled_and_interpreted(
        ("cumprod", dtype), [((5, 9, 3), dtype)], lambda b, x: (b.cumprod(x, 1), b.cumprod(x, 0), b.cumprod(x, -1))
    )
    x = (rng.standard_normal((5, 9, 3)) * 30 if dtype.startswith("int") else 1 + rng.standard_normal((5, 9, 3)) / 4)
    x = x.astype(dtype)
    for got, want, axis in zip(lib(x), ref(x), (1, 0, -1)):
        assert_same(got, want)
        assert_same(got, np.cumprod(x, axis, dtype=x.dtype))


def test_cumprod_symbolic_compiled(rng):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 6))
    module = b.finish(b.cumprod(x, 0), b.cumprod(x, 1))
    lib = tk.build(module)
    for n in (1, 4):
        data = (1 + rng.standard_normal((n, 6)) / 4).astype(np.float32)
        for got, axis in zip(lib(data), (0, 1)):
            assert_same(got, np.cumprod(data, axis))


@pytest.mark.parametrize(
    "op_class, axis, keepdims, expected",
    [
        (ArgMaxOp, 1, False, (4, 6)),
        (ArgMaxOp, -1, True, (4, 5, 1)),
        (ArgMinOp, 0, True, (1, 5, 6)),
        (ArgMinOp, 2, False, (4, 5)),
    ],
)
def test_arg_reduce_result_type(op_class, axis, keepdims, expected):
    (x,) = args(t((4, 5, 6)))
    op = op_class(x, axis, keepdims)
    assert shape_of(op.result.type) == expected and op.result.type.element_type == i64


def test_arg_reduce_errors():
    with pytest.raises(VerifyException, match=r"cannot reduce over axis 1 of size 0"):
        ArgMaxOp(args(t((3, 0)))[0], 1)
    with pytest.raises(VerifyException, match=r"input must be numeric"):
        ArgMinOp(args(t((3,), i1))[0], 0)
    with pytest.raises(VerifyException, match=r"axis 3 is out of range"):
        ArgMinOp(args(t((3,)))[0], 3)


def test_arg_reduce_reference_first_tie_and_nan():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 5.0, np.nan], [0.0, 0.0, -1.0, -1.0]], np.float32)
    (xv,) = args(t(x.shape))
    np.testing.assert_array_equal(ArgMaxOp(xv, 1).reference(x), [1, 1, 0])
    np.testing.assert_array_equal(ArgMinOp(xv, 1).reference(x), [3, 1, 2])


def test_arg_reduce_compiled(rng):
    lib, ref = compiled_and_interpreted(
        "argmax",
        [((5, 7, 3), "float32")],
        lambda b, x: (b.argmax(x, 1), b.argmin(x, -1, keepdims=True), b.argmax(x, 0, keepdims=True), b.argmin(x, 1)),
    )
    x = rng.integers(0, 3, (5, 7, 3)).astype("f4")  # many ties
    x[1, 2, 0] = x[3, 5, 2] = x[3, 6, 2] = np.nan
    for got, want in zip(lib(x), ref(x)):
        assert_same(got, want)
    assert_same(lib(x)[0], np.argmax(x, 1))


def test_argsort_type_errors():
    (x,) = args(t((4, 5)))
    assert shape_of(ArgsortOp(x, 1, True, 3).result.type) == (4, 3)
    assert shape_of(ArgsortOp(x, 0).result.type) == (4, 5)
    (s,) = args(t(("n", 5)))
    assert shape_of(ArgsortOp(s, 0).result.type) == ("n", 5)
    with pytest.raises(VerifyException, match=r"k needs a static axis, axis 0 is symbolic \(n\)"):
        ArgsortOp(s, 0, k=2)
    with pytest.raises(VerifyException, match=r"k = 6 is out of range \[0, 5\]"):
        ArgsortOp(x, 1, k=6)


def test_argsort_reference_is_stable_with_nan_largest():
    x = np.array([2.0, np.nan, 1.0, 2.0, np.nan, 1.0], np.float32)
    (xv,) = args(t(x.shape))
    np.testing.assert_array_equal(ArgsortOp(xv, 0).reference(x), [2, 5, 0, 3, 1, 4])
    np.testing.assert_array_equal(ArgsortOp(xv, 0, True).reference(x), [1, 4, 0, 3, 2, 5])
    np.testing.assert_array_equal(ArgsortOp(xv, 0, True, 3).reference(x), [1, 4, 0])


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_argsort_compiled(rng, dtype):
    lib, ref = compiled_and_interpreted(
        ("argsort", dtype),
        [((4, 9), dtype)],
        lambda b, x: (b.argsort(x, 1), b.argsort(x, 1, True), b.argsort(x, 0, True, 2), b.argsort(x, -1, False, 4)),
    )
    x = rng.integers(-3, 3, (4, 9)).astype(dtype)  # ties: stability matters
    if dtype == "float32":
        x[0, 3] = x[0, 5] = x[2, 0] = np.nan
    for got, want in zip(lib(x), ref(x)):
        assert_same(got, want)


# ---------------------------------------------------------------------------
# flip and pad


def test_flip():
    (x,) = args(t((3, "n", 5)))
    op = FlipOp(x, [-1, 0])
    assert list(op.axes.get_values()) == [0, 2] and op.result.type == x.type
    with pytest.raises(VerifyException, match="name an axis twice"):
        FlipOp(x, [0, -3])
    with pytest.raises(VerifyException, match=r"axes \[3\] must be strictly increasing and in \[0, 3\)"):
        FlipOp(x, [3])
    data = rand((3, 4, 5))
    np.testing.assert_array_equal(op.reference(data), data[::-1, :, ::-1])


def test_flip_compiled(rng):
    lib, ref = compiled_and_interpreted("flip", [((3, "n", 5), "int32")], lambda b, x: (b.flip(x, [0, 2]), b.flip(x, 1)))
    for n in (1, 4):
        x = rng.integers(-9, 9, (3, n, 5)).astype("i4")
        got = lib(x)
        assert_same(got[0], x[::-1, :, ::-1])
        assert_same(got[1], x[:, ::-1])


@pytest.mark.parametrize(
    "shape, low, high, expected",
    [
        ((4, 5), (1, 0), (2, 3), (7, 8)),
        ((4, 5), (0, -1), (0, -2), (4, 2)),
        ((4, 5), (-4, 1), (0, 1), (0, 7)),
        (("n", 5), (0, 2), (0, -1), ("n", 6)),
        ((0, 2), (1, 0), (1, 0), (2, 2)),
    ],
)
def test_pad_result_type(shape, low, high, expected):
    (x,) = args(t(shape))
    op = PadOp(x, low, high, 1.5)
    assert shape_of(op.result.type) == expected
    assert op.value.type == f32


@pytest.mark.parametrize(
    "shape, low, high, message",
    [
        ((4, 5), (1,), (2,), r"low \(1\) and high \(1\) must give one pad per axis of \(4, 5\)"),
        ((4, 5), (-3, 0), (-2, 0), r"axis 0: pads -3 and -2 crop more than its 4 elements"),
        ((4, 5), (0, -6), (0, 3), r"axis 1: pads -6 and 3 crop more than its 5 elements"),
    ],
)
def test_pad_errors(shape, low, high, message):
    (x,) = args(t(shape))
    with pytest.raises(VerifyException, match=message):
        PadOp(x, low, high)


def test_pad_value_type_checked_when_parsed():
    text = (
        "builtin.module {\n func.func @f(%x: tensor<4xf32>) {\n  %p = graph.pad %x {low = array<i64: 1>, "
        "high = array<i64: 0>, value = 1 : i32} : tensor<4xf32> -> tensor<5xf32>\n  func.return\n }\n}"
    )
    with pytest.raises(VerifyException, match=r"value 1 : i32 must have the element type f32"):
        parse_and_verify(text)


def test_pad_reference_crops_and_pads():
    x = rand((4, 5), np.int32)
    (xv,) = args(t((4, 5), i32))
    got = PadOp(xv, (1, -2), (-1, 3), 7).reference(x)
    want = np.pad(x[:3, 2:], ((1, 0), (0, 3)), constant_values=7)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32


def test_pad_compiled(rng):
    lib, ref = compiled_and_interpreted(
        "pad",
        [((4, 5, 3), "float32"), ((0, 3), "float32")],
        lambda b, x, e: (b.pad(x, (1, -2, 0), (-1, 3, 2), -2.5), b.pad(x, (0, 0, 0), (0, 0, 0)), b.pad(e, (2, 1), (1, 0), 4.0)),
    )
    x = rng.standard_normal((4, 5, 3)).astype("f4")
    e = np.zeros((0, 3), "f4")
    got = lib(x, e)
    for g, w in zip(got, ref(x, e)):
        assert_same(g, w)
    assert_same(got[2], np.full((3, 4), 4.0, "f4"))


# ---------------------------------------------------------------------------
# full and arange


def test_full_and_arange_types():
    (x,) = args(t(("n", 5)))
    f = FullOp(("n", 3), 2.0, f32, [x])
    assert shape_of(f.result.type) == ("n", 3) and f.result.type.element_type == f32
    assert shape_of(FullOp((2, 3), True, i1).result.type) == (2, 3)
    a = ArangeOp("n", 1, 2, i64, [x])
    assert shape_of(a.result.type) == ("n",) and a.result.type.element_type == i64
    with pytest.raises(VerifyException, match=r"symbolic dim 'm' of the result \(m, 3\) is a dim of no operand"):
        FullOp(("m", 3), 0.0, f32, [x])
    with pytest.raises(VerifyException, match=r"arange must have a numeric element type"):
        ArangeOp(4, 0, 1, i1)
    data = rand((3, 5))
    np.testing.assert_array_equal(f.reference(data), np.full((3, 3), 2.0, np.float32))
    np.testing.assert_array_equal(a.reference(data), [1, 3, 5])
    np.testing.assert_allclose(ArangeOp(4, 0.5, 0.1, f32).reference(), [0.5, 0.6, 0.7, 0.8], rtol=1e-6)


def test_full_and_arange_compiled(rng):
    lib, ref = compiled_and_interpreted(
        "full-arange",
        [(("n", 5), "float32")],
        lambda b, x: (
            b.add(x, b.full(("n", 5), 1.5, f32, [x])),
            b.full((2, "n"), 7, i32, [x]),
            b.arange("n", -2, 3, i64, [x]),
            b.arange("n", 0.25, 0.5, f32, [x]),
            b.full((3,), True, i1),
        ),
    )
    for n in (1, 6):
        x = rng.standard_normal((n, 5)).astype("f4")
        got = lib(x)
        for g, w in zip(got, ref(x)):
            assert_same(g, w)
        assert_same(got[2], -2 + 3 * np.arange(n))


# ---------------------------------------------------------------------------
# round trip


def test_round_trip_every_op():
    block = Block(arg_types=[t((6, 5)), t((2, 3), i64), t(("n", 5)), t((6, 2), i32)])
    x, idx, s, g = block.args
    ops = [
        TakeOp(x, idx, 1),
        GatherOp(x, g, -1),
        CumsumOp(x, 0),
        ArgMaxOp(x, 1, True),
        ArgMinOp(s, 0),
        ArgsortOp(x, 1, True, 2),
        ArgsortOp(s, 0),
        FlipOp(s, [0, 1]),
        PadOp(x, (1, -1), (0, 2), -1.0),
        FullOp(("n", 2), 3, i32, [s]),
        FullOp((2,), False, i1),
        ArangeOp("n", 0.5, 2.0, f32, [s]),
    ]
    text = assert_round_trip(ops, block)
    assert "graph.take %0, %1 {axis = 1 : i64}" in text
    assert "graph.argmax %0 {axis = 1 : i64, keepdims = true}" in text
    assert "graph.full {value = false, shape = array<i64: 2>} : () -> tensor<2xi1>" in text


# ---------------------------------------------------------------------------
# fused with their neighbours (fuse-ops inlines producers into one loop nest)


def test_fused_groups_keep_the_numbers(rng):
    from tensorkiln.dialects.graph import FusedOp
    from tensorkiln.passes.fuse_ops import FuseOpsPass

    b = tk.GraphBuilder()
    x, idx = b.input("x", (6, 5)), b.input("i", (2, 3), "int64")
    outs = (
        b.relu(b.take(b.exp(x), idx, 0)),  # exp -> take -> relu
        b.add(b.argmax(b.neg(x), 1), b.argmin(b.abs(x), 1)),  # two anchors: two groups
        b.exp(b.pad(b.relu(x), (1, -2), (2, 3), 1.5)),
        b.mul(b.gather(b.exp(x), b.argsort(x, 1, True, 2), 1), 2.0),
        b.add(x, b.full((6, 5), 2.0, f32)),
        b.flip(b.sigmoid(x), 0),
    )
    module = b.finish(*outs)
    data = rng.standard_normal((6, 5)).astype("f4")
    ids = rng.integers(-8, 8, (2, 3))
    before = tk.create_executor("interpreter", module).evaluate()(data, ids)
    fused = module.clone()
    FuseOpsPass().apply(Context(), fused)
    fused.verify()
    assert sum(isinstance(op, FusedOp) for op in fused.walk()) >= 5
    for got, want in zip(tk.build(fused)(data, ids), before):
        assert_same(got, want)
