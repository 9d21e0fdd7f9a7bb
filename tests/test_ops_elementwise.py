"""Elementwise graph ops compiled with ``tk.build``, checked against numpy directly and
against the interpreter (the ops' numpy reference semantics).

Expected values are computed here, independently of the ops' ``reference()``: in
float64 and rounded to the tested type for float math, exactly for integer ops, and
from first principles (Python ints) for casts and integer division.
"""

from __future__ import annotations

import gc
import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorkiln as tk
from tensorkiln.dialects.graph.types import element_type_of

F32, F64, F16 = np.dtype("float32"), np.dtype("float64"), np.dtype("float16")
I8, I32, I64, BOOL = np.dtype("int8"), np.dtype("int32"), np.dtype("int64"), np.dtype("bool")

# ---------------------------------------------------------------------------
# helpers

_COMPILED: dict = {}


def compiled(key, inputs, body):
    """(compiled module, interpreter) of a graph with ``inputs`` [(name, shape, dtype)],
    whose outputs are ``body(builder, *input_values)``; cached by ``key``."""
    if key not in _COMPILED:
        b = tk.GraphBuilder()
        values = [b.input(name, shape, dtype) for name, shape, dtype in inputs]
        out = body(b, *values)
        module = b.finish(*(out if isinstance(out, tuple) else (out,)))
        _COMPILED[key] = (tk.build(module), tk.create_executor("interpreter", module).evaluate())
    return _COMPILED[key]


def case_rng(*key) -> np.random.Generator:
    """A generator seeded from a case key: the same inputs on every run and worker."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_array(rng: np.random.Generator, shape, dtype, low=-4.0, high=4.0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return np.asarray(rng.uniform(low, high, size=shape)).astype(dtype)


def assert_same(got, want: np.ndarray, *, rtol: float = 0.0, atol: float = 0.0, what: str = "") -> None:
    """Same dtype and shape; values exactly equal (NaN == NaN) or within tolerance."""
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check(lib, interp, args, want, **tol) -> None:
    """Compiled and interpreted results both match ``want``."""
    with np.errstate(all="ignore"):
        got_interp = interp(*args)
    assert_same(lib(*args), want, what="compiled", **tol)
    assert_same(got_interp, want, what="interpreter", **tol)


def in_f64(fn):
    """Compute ``fn`` in float64 and round to the input's type."""

    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)

    return run


def wrap(value: int, dtype: np.dtype) -> int:
    """A Python int wrapped into ``dtype``'s range (two's complement)."""
    bits = np.iinfo(dtype).bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


# ---------------------------------------------------------------------------
# unary ops

_erf = np.vectorize(math.erf, otypes=[np.float64])

#: name -> (expected function, allowed on integers, domain, f32 rtol, f64 rtol)
UNARY = {
    "neg": (np.negative, True, "any", 0, 0),
    "abs": (np.abs, True, "any", 0, 0),
    "relu": (lambda x: np.maximum(x, np.zeros((), x.dtype)), True, "any", 0, 0),
    "exp": (in_f64(np.exp), False, "any", 1e-5, 1e-12),
    "log": (in_f64(np.log), False, "positive", 1e-5, 1e-12),
    "sqrt": (in_f64(np.sqrt), False, "positive", 1e-6, 1e-14),
    "rsqrt": (in_f64(lambda x: 1.0 / np.sqrt(x)), False, "positive", 1e-6, 1e-14),
    "tanh": (in_f64(np.tanh), False, "any", 1e-5, 1e-12),
    "sigmoid": (in_f64(lambda x: 1.0 / (1.0 + np.exp(-x))), False, "any", 1e-5, 1e-12),
    "erf": (in_f64(_erf), False, "any", 1e-5, 1e-12),
    "floor": (np.floor, False, "any", 0, 0),
    "round": (np.rint, False, "any", 0, 0),
}

UNARY_CASES = [(op, dt) for op, (_, ints, *_) in UNARY.items() for dt in [F32, F64] + ([I32, I64] if ints else [])]


def _unary_input(rng, op, shape, dtype):
    if dtype.kind == "i":
        return random_array(rng, shape, dtype, -1000, 1000)
    if UNARY[op][2] == "positive":
        return random_array(rng, shape, dtype, 0.01, 20.0)
    return random_array(rng, shape, dtype, -6.0, 6.0)


def _unary_tol(op, dtype):
    _, _, _, rtol32, rtol64 = UNARY[op]
    if dtype.kind == "i":
        return {}
    rtol = rtol32 if dtype == F32 else rtol64
    return {"rtol": rtol, "atol": rtol * 0.1} if rtol else {}


@pytest.mark.parametrize(("op", "dtype"), UNARY_CASES, ids=[f"{o}-{d}" for o, d in UNARY_CASES])
def test_unary(op, dtype):
    shape = (3, 5, 37)
    lib, interp = compiled(("unary", op, dtype, shape), [("x", shape, dtype)], lambda b, x: getattr(b, op)(x))
    x = _unary_input(case_rng(op, dtype), op, shape, dtype)
    check(lib, interp, [x], UNARY[op][0](x), **_unary_tol(op, dtype))


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (257,), (2, 3, 4, 5), (0,), (3, 0, 2)], ids=str)
@pytest.mark.parametrize(("op", "dtype"), [("exp", F32), ("neg", I32), ("sigmoid", F64)])
def test_unary_shapes(op, dtype, shape):
    lib, interp = compiled(("unary", op, dtype, shape), [("x", shape, dtype)], lambda b, x: getattr(b, op)(x))
    x = _unary_input(case_rng(op, dtype, shape), op, shape, dtype)
    check(lib, interp, [x], UNARY[op][0](x), **_unary_tol(op, dtype))


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e-300, 0.5, -0.5, 1.5, -2.5, 88.0, 100.0,
            -100.0, 710.0, 1e30, -1e30, 1e300]  # fmt: skip


@pytest.mark.parametrize(("op", "dtype"), [(o, d) for o in UNARY for d in (F32, F64)],
                         ids=[f"{o}-{d}" for o in UNARY for d in ("float32", "float64")])  # fmt: skip
def test_unary_special_values(op, dtype):
    """Zeros, infinities, NaN, subnormals, overflowing and huge inputs (outside log/sqrt
    domains too): IEEE results as numpy gives them."""
    with np.errstate(all="ignore"):
        x = np.array(SPECIALS, dtype)
    shape = x.shape
    lib, interp = compiled(("unary", op, dtype, shape), [("x", shape, dtype)], lambda b, x: getattr(b, op)(x))
    want = UNARY[op][0](x)
    tol = _unary_tol(op, dtype)
    if tol:  # tiny results (sigmoid(-100) in f32 is subnormal) are held to an absolute bound
        tol = {"rtol": tol["rtol"], "atol": 1e-30}
    check(lib, interp, [x], want, **tol)


@pytest.mark.parametrize("dtype", [I32, I64, I8], ids=str)
@pytest.mark.parametrize("op", ["neg", "abs", "relu"])
def test_unary_integer_extremes(op, dtype):
    """neg and abs of MIN wrap to MIN (as numpy); relu keeps the type."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype)
    lib, interp = compiled(("unary", op, dtype, x.shape), [("x", x.shape, dtype)], lambda b, v: getattr(b, op)(v))
    with np.errstate(all="ignore"):
        want = UNARY[op][0](x)
    check(lib, interp, [x], want)


@pytest.mark.parametrize("op", ["exp", "neg", "tanh", "floor", "relu"])
def test_unary_float16(op):
    x = random_array(case_rng(op, "f16"), (4, 9), F16, -3, 3)
    lib, interp = compiled(("unary", op, F16, x.shape), [("x", x.shape, F16)], lambda b, v: getattr(b, op)(v))
    want = in_f64(UNARY[op][0])(x)
    check(lib, interp, [x], want, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------
# binary ops


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Round toward zero, x/0 = 0, MIN/-1 wraps: element by element with Python ints."""
    a_b = np.broadcast_arrays(a, b)
    out = np.empty(a_b[0].shape, a.dtype)
    for idx in np.ndindex(out.shape):
        x, y = int(a_b[0][idx]), int(a_b[1][idx])
        q = 0 if y == 0 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
        out[idx] = wrap(q, a.dtype)
    return out


def _divide(a, b):
    if a.dtype.kind == "i":
        return _int_divide(a, b)
    with np.errstate(all="ignore"):
        return a / b


ARITH = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _divide,
    "max": np.maximum,
    "min": np.minimum,
}

BROADCAST_SHAPES = [
    ((3, 1, 5), (4, 1)),
    ((7,), (2, 3, 7)),
    ((), (5, 3)),
    ((5, 3), ()),
    ((4, 6), (4, 6)),
    ((2, 1, 3), (1, 5, 1)),
    ((1,), (3, 1)),
]
_SHAPE_IDS = ["x".join(map(str, a)) + "_" + "x".join(map(str, b)) for a, b in BROADCAST_SHAPES]


def _all_arith(b, x, y):
    return tuple(getattr(b, op)(x, y) for op in ARITH)


def _binary_inputs(key, sa, sb, dtype):
    rng = case_rng(*key)
    if dtype.kind == "i":
        x = random_array(rng, sa, dtype, -100, 100)
        y = random_array(rng, sb, dtype, -7, 7)  # includes 0 and -1
    else:
        x = random_array(rng, sa, dtype)
        y = random_array(rng, sb, dtype)
    return x, y


@pytest.mark.parametrize(("sa", "sb"), BROADCAST_SHAPES, ids=_SHAPE_IDS)
@pytest.mark.parametrize("dtype", [F32, F64, I32, I64], ids=str)
@pytest.mark.parametrize("op", list(ARITH))
def test_binary(op, dtype, sa, sb):
    """add sub mul div max min with numpy broadcasting; float results are IEEE-exact."""
    key = ("arith", dtype, sa, sb)
    lib, interp = compiled(key, [("x", sa, dtype), ("y", sb, dtype)], _all_arith)
    x, y = _binary_inputs(key, sa, sb, dtype)
    k = list(ARITH).index(op)
    want = ARITH[op](x, y)
    with np.errstate(all="ignore"):
        got, got_interp = lib(x, y)[k], interp(x, y)[k]
    assert_same(got, want, what=f"compiled {op}")
    assert_same(got_interp, want, what=f"interpreter {op}")


@pytest.mark.parametrize(("sa", "sb"), BROADCAST_SHAPES, ids=_SHAPE_IDS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_pow(dtype, sa, sb):
    key = ("pow", dtype, sa, sb)
    lib, interp = compiled(key, [("x", sa, dtype), ("y", sb, dtype)], lambda b, x, y: b.pow(x, y))
    rng = case_rng(*key)
    x = random_array(rng, sa, dtype, 0.05, 5.0)
    y = random_array(rng, sb, dtype, -3.0, 3.0)
    want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
    check(lib, interp, [x, y], want, rtol=1e-5 if dtype == F32 else 1e-12)


@pytest.mark.parametrize("dtype", [I32, I64, I8], ids=str)
def test_binary_integer_extremes(dtype):
    """Wrapping add/sub/mul, and division at the edges: MIN/-1 wraps (no SIGFPE), x/0 = 0."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min, info.max, info.max, info.min, 7, -7, 7, -7, 0, info.max], dtype)
    y = np.array([-1, 1, 1, -1, 0, 2, 2, -2, -2, 0, info.max], dtype)
    lib, interp = compiled(("arith", dtype, x.shape, y.shape), [("x", x.shape, dtype), ("y", y.shape, dtype)], _all_arith)
    with np.errstate(all="ignore"):
        got, got_interp = lib(x, y), interp(x, y)
    for k, op in enumerate(ARITH):
        with np.errstate(all="ignore"):
            want = ARITH[op](x, y)
        assert_same(got[k], want, what=f"compiled {op}")
        assert_same(got_interp[k], want, what=f"interpreter {op}")


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_binary_float_special_values(dtype):
    """Division by +-0, inf - inf, 0 * inf and NaN everywhere; max/min propagate NaN."""
    vals = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], dtype)
    x, y = vals[:, None], vals[None, :]
    lib, interp = compiled(("arith", dtype, x.shape, y.shape), [("x", x.shape, dtype), ("y", y.shape, dtype)], _all_arith)
    with np.errstate(all="ignore"):
        got, got_interp = lib(x, y), interp(x, y)
        for k, op in enumerate(ARITH):
            want = ARITH[op](x, y)
            assert_same(got[k], want, what=f"compiled {op}")
            assert_same(got_interp[k], want, what=f"interpreter {op}")


def test_binary_python_scalar_operand():
    """A Python number operand becomes a constant of the tensor's type."""
    lib, interp = compiled(("scalar-operand",), [("x", (3, 4), I32)], lambda b, x: b.div(b.mul(x, 3), -2))
    x = np.arange(-6, 6, dtype=I32).reshape(3, 4)
    check(lib, interp, [x], _int_divide(x * 3, np.array(-2, I32)))


@pytest.mark.parametrize("dtype", [F32, BOOL, I64], ids=str)
def test_max_min_add_mul_of_boolean_values(dtype):
    """max/min/add on booleans follow numpy (False < True, True + True = True)."""
    x = np.array([True, True, False, False]).astype(dtype)
    y = np.array([True, False, True, False]).astype(dtype)
    lib, interp = compiled(
        ("bool-maxminadd", dtype), [("x", (4,), dtype), ("y", (4,), dtype)],
        lambda b, x, y: (b.max(x, y), b.min(x, y), b.add(x, y), b.mul(x, y)),
    )  # fmt: skip
    got, got_interp = lib(x, y), interp(x, y)
    for k, fn in enumerate([np.maximum, np.minimum, np.add, np.multiply]):
        assert_same(got[k], fn(x, y), what=f"compiled {fn.__name__}")
        assert_same(got_interp[k], fn(x, y), what=f"interpreter {fn.__name__}")


BINARY_OPS = [*ARITH]


@settings(max_examples=15, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=6),
    op=st.sampled_from(BINARY_OPS),
    dtype=st.sampled_from([F32, I32, I64]),
    seed=st.integers(0, 2**32 - 1),
)
def test_binary_broadcast_property(shapes, op, dtype, seed):
    """Any pair of broadcast-compatible shapes: result shape and values match numpy."""
    sa, sb = shapes.input_shapes
    lib, interp = compiled(("prop", op, dtype, sa, sb), [("x", sa, dtype), ("y", sb, dtype)],
                           lambda b, x, y: getattr(b, op)(x, y))  # fmt: skip
    rng = np.random.default_rng(seed)
    x = random_array(rng, sa, dtype, -50, 50)
    y = random_array(rng, sb, dtype, -50, 50)
    want = ARITH[op](x, y)
    assert want.shape == shapes.result_shape
    check(lib, interp, [x, y], want)


# ---------------------------------------------------------------------------
# compare

PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal}  # fmt: skip


def _all_compares(b, x, y):
    return tuple(b.compare(x, y, predicate=p) for p in PREDICATES)


def _compare_inputs(key, sa, sb, dtype):
    """Small values, so that many pairs are equal; NaNs among floats."""
    rng = case_rng(*key)
    x = random_array(rng, sa, I32, -2, 2).astype(dtype)
    y = random_array(rng, sb, I32, -2, 2).astype(dtype)
    if dtype.kind == "f":
        x[rng.random(sa) < 0.2] = np.nan
        y[rng.random(sb) < 0.2] = np.nan
    return x, y


@pytest.mark.parametrize(("sa", "sb"), [((3, 1, 5), (4, 1)), ((6,), (6,)), ((), (2, 7))], ids=["bcast", "same", "scalar"])
@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, BOOL], ids=str)
@pytest.mark.parametrize("predicate", list(PREDICATES))
def test_compare(predicate, dtype, sa, sb):
    key = ("compare", dtype, sa, sb)
    lib, interp = compiled(key, [("x", sa, dtype), ("y", sb, dtype)], _all_compares)
    x, y = _compare_inputs(key, sa, sb, dtype)
    k = list(PREDICATES).index(predicate)
    want = PREDICATES[predicate](x, y)
    assert_same(lib(x, y)[k], want, what=f"compiled {predicate}")
    assert_same(interp(x, y)[k], want, what=f"interpreter {predicate}")


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_compare_nan_and_infinities(dtype):
    """Ordered comparisons: NaN is false for everything but ne; -0 == 0; inf == inf."""
    vals = np.array([np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf], dtype)
    x, y = vals[:, None], vals[None, :]
    lib, interp = compiled(("compare", dtype, x.shape, y.shape), [("x", x.shape, dtype), ("y", y.shape, dtype)],
                           _all_compares)  # fmt: skip
    got, got_interp = lib(x, y), interp(x, y)
    for k, (p, fn) in enumerate(PREDICATES.items()):
        assert_same(got[k], fn(x, y), what=f"compiled {p}")
        assert_same(got_interp[k], fn(x, y), what=f"interpreter {p}")


# ---------------------------------------------------------------------------
# where

WHERE_SHAPES = [
    ((3, 1, 5), (4, 1), ()),
    ((5,), (2, 5), (2, 1)),
    ((), (3, 4), (3, 4)),
    ((2, 3), (2, 3), (2, 3)),
    ((4, 1), (1, 6), (6,)),
]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=lambda s: "_".join("x".join(map(str, d)) or "s" for d in s))
@pytest.mark.parametrize("dtype", [F32, I32, I64, BOOL], ids=str)
def test_where(dtype, shapes):
    sc, sa, sb = shapes
    key = ("where", dtype, shapes)
    lib, interp = compiled(key, [("c", sc, BOOL), ("a", sa, dtype), ("b", sb, dtype)],
                           lambda b, c, x, y: b.where(c, x, y))  # fmt: skip
    rng = case_rng(*key)
    c, x, y = random_array(rng, sc, BOOL), random_array(rng, sa, dtype, -9, 9), random_array(rng, sb, dtype, -9, 9)
    check(lib, interp, [c, x, y], np.where(c, x, y))


def test_where_of_compare_with_nan():
    """relu written as where(x > 0, x, 0): NaN > 0 is false, so NaN -> 0."""
    def body(b, x):
        zero = b.constant(np.float32(0))  # (a bare 0.0 would take the condition's type, i1)
        return b.where(b.compare(x, 0.0, predicate="gt"), x, zero)

    lib, interp = compiled(("where-cmp",), [("x", (2, 9), F32)], body)
    x = random_array(case_rng("where-cmp"), (2, 9), F32)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    check(lib, interp, [x], np.where(x > 0, x, np.float32(0)))


@settings(max_examples=15, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, max_side=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_where_broadcast_property(shapes, seed):
    sc, sa, sb = shapes.input_shapes
    lib, interp = compiled(("where-prop", sc, sa, sb), [("c", sc, BOOL), ("a", sa, F32), ("b", sb, F32)],
                           lambda b, c, x, y: b.where(c, x, y))  # fmt: skip
    rng = np.random.default_rng(seed)
    c, x, y = random_array(rng, sc, BOOL), random_array(rng, sa, F32), random_array(rng, sb, F32)
    want = np.where(c, x, y)
    assert want.shape == shapes.result_shape
    check(lib, interp, [c, x, y], want)


# ---------------------------------------------------------------------------
# cast

CAST_TYPES = [F16, F32, F64, I8, I32, I64, BOOL]
CAST_PAIRS = [(a, b) for a in CAST_TYPES for b in CAST_TYPES]

_FLOAT_SOURCE = [
    0.0, -0.0, 0.4, -0.4, 0.5, -0.5, 0.99, -0.99, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 126.9, 127.0, 127.5, 128.0,
    -128.0, -128.9, -129.0, 255.0, 1e4, -1e4, 65504.0, 1e5, 2.0**24 + 1, 2.0**31 - 1, 2.0**31, -(2.0**31), -(2.0**31) - 1,
    -(2.0**31) - 1000, 3e9, -3e9, 2.0**62, 2.0**63, -(2.0**63), 1e19, -1e19, 1e30, -1e30, 3e38, 1e300, -1e300,
    1e-30, -1e-30, 1e-300, np.inf, -np.inf, np.nan,
]  # fmt: skip


def _cast_source(dtype: np.dtype) -> np.ndarray:
    if dtype == BOOL:
        return np.array([True, False, False, True])
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        vals = [info.min, info.min + 1, -129, -128, -127, -2, -1, 0, 1, 2, 127, 128, 255, 256, 2**24 + 1,
                2**31 - 1, 2**31, 2**53 + 1, info.max - 1, info.max]  # fmt: skip
        return np.array([wrap(v, dtype) for v in vals], dtype)
    with np.errstate(all="ignore"):
        return np.array(_FLOAT_SOURCE, np.float64).astype(dtype)


def expected_cast(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """What graph.cast should give: float->int rounds toward zero and saturates, NaN -> 0;
    int->int wraps; anything->bool is != 0 (NaN is true); bool -> 0/1; floats round to nearest."""
    if to == BOOL:
        return x != 0
    if to.kind == "i" and x.dtype.kind == "f":
        info = np.iinfo(to)
        out = []
        for v in x.astype(np.float64).tolist():
            out.append(0 if math.isnan(v) else info.max if v >= 2**63 else info.min if v <= -(2**63) else
                       min(max(int(v), info.min), info.max))  # fmt: skip
        return np.array(out, to)
    if to.kind == "i" and x.dtype.kind == "i":
        return np.array([wrap(int(v), to) for v in x.tolist()], to)
    with np.errstate(all="ignore"):
        return x.astype(to)


@pytest.mark.parametrize(("src", "dst"), CAST_PAIRS, ids=[f"{a}-to-{b}" for a, b in CAST_PAIRS])
def test_cast(src, dst):
    x = _cast_source(src)
    lib, interp = compiled(("cast", src, dst, x.shape), [("x", x.shape, src)],
                           lambda b, v: b.cast(v, to=element_type_of(dst)))  # fmt: skip
    check(lib, interp, [x], expected_cast(x, dst))


def test_cast_f64_to_f16_rounds_once():
    """f64 -> f16 is correctly rounded (ties to even), not rounded twice through f32:
    values a hair off a tie between two halves round away from the tie."""
    h = np.arange(0x0001, 0x7BFF, 97, dtype=np.uint16).view(F16)  # positive finite halves
    mid = (h.astype(F64) + np.nextafter(h, np.float16(np.inf)).astype(F64)) / 2
    x = np.concatenate([mid, mid * (1 + 1e-12), mid * (1 - 1e-12), -mid, [65519.99, 65520.0, 1e300, 2.0**-25]])
    lib, interp = compiled(("cast-f16-ties", x.shape), [("x", x.shape, F64)],
                           lambda b, v: b.cast(v, to=element_type_of(F16)))  # fmt: skip
    with np.errstate(over="ignore"):
        want = x.astype(F16)
    check(lib, interp, [x], want)


@pytest.mark.parametrize("dst", [I32, I64, F64], ids=str)
def test_cast_random_f32(dst):
    x = random_array(case_rng("cast-random", dst), (6, 11), F32, -1e6, 1e6)
    lib, interp = compiled(("cast", F32, dst, x.shape), [("x", x.shape, F32)],
                           lambda b, v: b.cast(v, to=element_type_of(dst)))  # fmt: skip
    check(lib, interp, [x], expected_cast(x.reshape(-1), dst).reshape(x.shape))


# ---------------------------------------------------------------------------
# chains and runtime robustness


def test_elementwise_chain_against_numpy():
    """A small chain mixing ops and dtypes: float math, compare, where, cast."""

    def body(b, x, y):
        s = b.sigmoid(b.add(b.mul(x, y), 0.5))
        mask = b.compare(s, 0.6, predicate="ge")
        r = b.where(mask, b.tanh(x), b.neg(b.abs(y)))
        return b.cast(b.floor(b.mul(r, 10.0)), to=element_type_of(I32))

    lib, interp = compiled(("chain",), [("x", (5, 1, 7), F32), ("y", (3, 7), F32)], body)
    rng = case_rng("chain")
    x, y = random_array(rng, (5, 1, 7), F32), random_array(rng, (3, 7), F32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    s = 1 / (1 + np.exp(-(x64 * y64 + 0.5)))
    r = np.where(s >= 0.6, np.tanh(x64), -np.abs(y64))
    want = np.floor(r * 10).astype(np.int32)
    got = lib(x, y)
    # Values at exact integer boundaries of r*10 may round either way in f32.
    assert got.dtype == np.int32 and got.shape == want.shape
    assert np.abs(got - want).max() <= 1 and np.mean(got == want) > 0.97
    np.testing.assert_array_equal(got, interp(x, y))


def test_building_after_freeing_compiled_modules():
    """Compiled modules may be dropped at any time; later builds still work (an engine
    freeing a shared target machine once made the next build segfault)."""
    x = np.arange(6, dtype=F32)
    for k in range(4):
        b = tk.GraphBuilder()
        v = b.input("x", (6,), F32)
        lib = tk.build(b.finish(b.add(v, float(k))))
        np.testing.assert_array_equal(lib(x), x + k)
        del lib
        gc.collect()


def test_compiled_module_reusable_and_inputs_untouched():
    lib, _ = compiled(("arith", F32, (4, 6), (4, 6)), [("x", (4, 6), F32), ("y", (4, 6), F32)], _all_arith)
    x, y = random_array(case_rng("reuse"), (4, 6), F32), random_array(case_rng("reuse2"), (4, 6), F32)
    x0, y0 = x.copy(), y.copy()
    first = lib(x, y)
    second = lib(x, y)
    for a, c in zip(first, second):
        np.testing.assert_array_equal(a, c)
        assert not np.shares_memory(a, x) and not np.shares_memory(a, y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


def test_non_contiguous_inputs():
    """Strided and transposed views are read by value, not by their memory layout."""
    lib, interp = compiled(("arith", F32, (4, 6), (4, 6)), [("x", (4, 6), F32), ("y", (4, 6), F32)], _all_arith)
    base = random_array(case_rng("strided"), (6, 8), F32)
    x = base.T[::2, :6]  # (4, 6) view with odd strides
    y = base[:4, 1:7][:, ::-1]
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    got = lib(x, y)
    np.testing.assert_array_equal(got[0], x + y)
    np.testing.assert_array_equal(got[2], x * y)
