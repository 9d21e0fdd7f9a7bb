"""Calling a compiled module (or the interpreter) with bad arguments: a ValueError that
names the argument and says what was expected and what was given, raised before any
native code runs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorkiln as tk

F32, F64, I32, I64 = np.dtype("float32"), np.dtype("float64"), np.dtype("int32"), np.dtype("int64")

EXECUTORS = ["build", "aot", "interpreter"]


def _module():
    """main(x: f32[n, 4], y: f32[n, 4], idx: i32[3], s: f32[]) -> (f32[n, 4], i32[3])."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 4), F32)
    y = b.input("y", ("n", 4), F32)
    idx = b.input("idx", (3,), I32)
    s = b.input("s", (), F32)
    return b.finish(b.mul(b.add(x, y), s), b.neg(idx))


_CALLABLES: dict = {}


def executor(kind: str):
    if kind not in _CALLABLES:
        module = _module()
        if kind == "build":
            _CALLABLES[kind] = tk.build(module)
        else:
            _CALLABLES[kind] = tk.create_executor(kind, module).evaluate()
    return _CALLABLES[kind]


def good_args(n: int = 3):
    rng = np.random.default_rng(n)
    return [
        rng.random((n, 4), dtype=F32),
        rng.random((n, 4), dtype=F32),
        np.array([1, -2, 3], I32),
        np.array(2.0, F32),
    ]


def with_arg(k: int, value, n: int = 3):
    args = good_args(n)
    args[k] = value
    return args


@pytest.fixture(params=EXECUTORS)
def f(request):
    return executor(request.param)


def test_good_call_works(f):
    x, y, idx, s = args = good_args(5)
    out, neg = f(*args)
    np.testing.assert_allclose(out, (x + y) * s, rtol=1e-6)
    np.testing.assert_array_equal(neg, -idx)


# ---------------------------------------------------------------------------
# argument count


@pytest.mark.parametrize("count", [0, 3, 5])
def test_wrong_argument_count(f, count):
    args = (good_args() + [np.zeros(1, F32)])[:count]
    with pytest.raises(ValueError, match=rf"expected 4 arguments \(x, y, idx, s\), got {count}"):
        f(*args)


# ---------------------------------------------------------------------------
# dtype


@pytest.mark.parametrize(
    ("k", "value", "message"),
    [
        (0, np.zeros((3, 4), F64), "argument 'x': expected dtype float32, got float64"),
        (1, np.zeros((3, 4), I32), "argument 'y': expected dtype float32, got int32"),
        (2, np.array([1, 2, 3], I64), "argument 'idx': expected dtype int32, got int64"),
        (2, np.array([1.0, 2.0, 3.0], F32), "argument 'idx': expected dtype int32, got float32"),
        (0, np.zeros((3, 4), bool), "argument 'x': expected dtype float32, got bool"),
        (0, np.zeros((3, 4), ">f4"), "argument 'x': expected dtype float32, got >f4"),
        (3, 2.0, "argument 's': expected dtype float32, got float64"),  # a Python float is f64
    ],
    ids=["f64-for-f32", "i32-for-f32", "i64-for-i32", "f32-for-i32", "bool-for-f32", "big-endian", "py-float"],
)
def test_wrong_dtype(f, k, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        f(*with_arg(k, value))


# ---------------------------------------------------------------------------
# rank and shape


@pytest.mark.parametrize(
    ("k", "shape", "message"),
    [
        (0, (12,), "argument 'x': expected rank 2 (shape float32[n, 4]), got rank 1 (shape [12])"),
        (0, (3, 4, 1), "argument 'x': expected rank 2 (shape float32[n, 4]), got rank 3 (shape [3, 4, 1])"),
        (3, (1,), "argument 's': expected rank 0 (shape float32[]), got rank 1 (shape [1])"),
    ],
    ids=["rank1", "rank3", "scalar-as-1d"],
)
def test_wrong_rank(f, k, shape, message):
    dtype = good_args()[k].dtype
    with pytest.raises(ValueError, match=re.escape(message)):
        f(*with_arg(k, np.zeros(shape, dtype)))


@pytest.mark.parametrize(
    ("k", "shape", "message"),
    [
        (0, (3, 5), "argument 'x': expected shape float32[n, 4], got [3, 5] (dim 1: expected 4, got 5)"),
        (2, (4,), "argument 'idx': expected shape int32[3], got [4] (dim 0: expected 3, got 4)"),
        (1, (3, 0), "argument 'y': expected shape float32[n, 4], got [3, 0] (dim 1: expected 4, got 0)"),
    ],
    ids=["x-static-dim", "idx-length", "y-empty"],
)
def test_wrong_static_dim(f, k, shape, message):
    dtype = good_args()[k].dtype
    with pytest.raises(ValueError, match=re.escape(message)):
        f(*with_arg(k, np.zeros(shape, dtype)))


def test_symbol_bound_inconsistently(f):
    """x says n = 3, y says n = 5: the message names y, the symbol, both values and
    where the first came from."""
    args = good_args(3)
    args[1] = np.zeros((5, 4), F32)
    with pytest.raises(ValueError, match=re.escape("argument 'y': dim 0 is 'n' = 3 (from 'x' dim 0), got 5")):
        f(*args)


def test_symbol_bound_inconsistently_in_other_position():
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 4), F32)
    y = b.input("y", (4, "n"), F32)
    module = b.finish(b.matmul(x, y))
    for f in (tk.build(module), tk.create_executor("interpreter", module).evaluate()):
        np.testing.assert_allclose(f(np.ones((2, 4), F32), np.ones((4, 2), F32)), np.full((2, 2), 4, F32))
        with pytest.raises(ValueError, match=re.escape("argument 'y': dim 1 is 'n' = 2 (from 'x' dim 0), got 3")):
            f(np.ones((2, 4), F32), np.ones((4, 3), F32))


# ---------------------------------------------------------------------------
# not an array


@pytest.mark.parametrize(
    ("value", "type_name"),
    [([[1.0] * 4] * 3, "list"), ("x", "str"), (None, "NoneType"), ({"x": 1}, "dict"), ((1, 2), "tuple")],
    ids=["list", "str", "None", "dict", "tuple"],
)
def test_non_array_argument(f, value, type_name):
    with pytest.raises(ValueError, match=re.escape(f"argument 'x': expected a numpy array, got {type_name}")):
        f(*with_arg(0, value))


def test_errors_leave_module_usable(f):
    """After a rejected call, a good call still gives the right answer."""
    with pytest.raises(ValueError):
        f(*with_arg(0, np.zeros((3, 5), F32)))
    x, y, idx, s = args = good_args(2)
    out, _ = f(*args)
    np.testing.assert_allclose(out, (x + y) * s, rtol=1e-6)


def test_accepts_non_contiguous_and_fortran_arrays(f):
    x, y, idx, s = good_args(4)
    xf = np.asfortranarray(x)
    ys = np.asarray(np.repeat(y, 2, axis=0), order="C")[::2]
    assert not xf.flags.c_contiguous and not ys.flags.c_contiguous
    out, _ = f(xf, ys, idx, s)
    np.testing.assert_allclose(out, (x + y) * s, rtol=1e-6)


def test_unknown_executor_kind():
    with pytest.raises(ValueError, match=r"unknown executor kind 'graphx' \(available: .*interpreter"):
        tk.create_executor("graphx", _module())
