"""matmul, batch_matmul and dense compiled with ``tk.build``, checked against numpy
(in float64, or exactly for integers) and against the interpreter."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorkiln as tk

F32, F64, I32, I64 = np.dtype("float32"), np.dtype("float64"), np.dtype("int32"), np.dtype("int64")

_COMPILED: dict = {}


def compiled(key, inputs, body):
    """(compiled, interpreter) for a graph with ``inputs`` [(name, shape, dtype)] and
    outputs ``body(builder, *values)``; cached by ``key``."""
    if key not in _COMPILED:
        b = tk.GraphBuilder()
        values = [b.input(name, shape, dtype) for name, shape, dtype in inputs]
        out = body(b, *values)
        module = b.finish(*(out if isinstance(out, tuple) else (out,)))
        _COMPILED[key] = (tk.build(module), tk.create_executor("interpreter", module).evaluate())
    return _COMPILED[key]


def case_rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def operand(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 10, size=shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def product_tolerance(dtype, k: int) -> dict:
    """Sums of k products of values in [-1, 1]: f32 error grows with k (and may be
    reassociated), f64 is near exact, integers are exact."""
    if dtype == F32:
        return {"rtol": 1e-5, "atol": 2e-6 * max(k, 1)}
    if dtype == F64:
        return {"rtol": 1e-12, "atol": 1e-13 * max(k, 1)}
    return {}


def assert_close(got, want: np.ndarray, what: str, **tol) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if tol:
        np.testing.assert_allclose(got, want, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def reference_product(fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` in float64 (or the integer type itself), rounded to the inputs' type."""
    dtype = arrays[0].dtype
    if dtype.kind == "f":
        return np.asarray(fn(*(a.astype(np.float64) for a in arrays))).astype(dtype)
    return np.asarray(fn(*arrays)).astype(dtype)


def check(lib, interp, args, want, k, what=""):
    tol = product_tolerance(want.dtype, k)
    assert_close(lib(*args), want, f"compiled {what}", **tol)
    assert_close(interp(*args), want, f"interpreter {what}", **tol)


# ---------------------------------------------------------------------------
# matmul

MATMUL_SIZES = [(1, 1, 1), (3, 5, 7), (17, 31, 13), (64, 128, 96), (1, 7, 1), (9, 1, 4), (2, 300, 3), (33, 2, 65)]


@pytest.mark.parametrize("mkn", MATMUL_SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [F32, F64, I32], ids=str)
def test_matmul(dtype, mkn):
    m, k, n = mkn
    key = ("matmul", dtype, mkn)
    lib, interp = compiled(key, [("a", (m, k), dtype), ("b", (k, n), dtype)], lambda g, a, b: g.matmul(a, b))
    rng = case_rng(*key)
    a, b = operand(rng, (m, k), dtype), operand(rng, (k, n), dtype)
    check(lib, interp, [a, b], reference_product(np.matmul, a, b), k, "matmul")


def test_matmul_int64_wraps_like_numpy():
    """Integer products are exact, and wrap on overflow as numpy does."""
    a = np.array([[2**40, 3], [-(2**62), 1]], I64)
    b = np.array([[2**30, 1], [5, 2**62]], I64)
    lib, interp = compiled(("matmul-i64",), [("a", (2, 2), I64), ("b", (2, 2), I64)], lambda g, x, y: g.matmul(x, y))
    want = np.matmul(a, b)
    assert_close(lib(a, b), want, "compiled")
    assert_close(interp(a, b), want, "interpreter")


def test_matmul_with_constant_weight_and_epilogue():
    """relu(x @ W + bias) with W and bias held as constants."""
    rng = case_rng("mm-const")
    w = operand(rng, (13, 6), F32)
    bias = operand(rng, (6,), F32)
    lib, interp = compiled(("mm-const",), [("x", (5, 13), F32)], lambda g, x: g.relu(g.add(g.matmul(x, w), bias)))
    x = operand(rng, (5, 13), F32)
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + bias, 0).astype(F32)
    check(lib, interp, [x], want, 13)


@pytest.mark.parametrize("mkn", [(3, 0, 4), (0, 5, 2), (2, 3, 0)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_empty_dims(mkn):
    """A zero contraction dim gives zeros; zero M or N gives an empty result."""
    m, k, n = mkn
    lib, interp = compiled(("matmul", F32, mkn), [("a", (m, k), F32), ("b", (k, n), F32)], lambda g, a, b: g.matmul(a, b))
    a, b = np.ones((m, k), F32), np.ones((k, n), F32)
    check(lib, interp, [a, b], np.zeros((m, n), F32), k)


def test_matmul_special_values():
    """inf and NaN propagate through the sum as in numpy (inf * 0 is NaN)."""
    a = np.array([[1.0, np.inf], [np.nan, 1.0], [1.0, 2.0]], F32)
    b = np.array([[1.0, 0.0], [0.0, 1.0]], F32)
    lib, interp = compiled(("matmul", F32, (3, 2, 2)), [("a", (3, 2), F32), ("b", (2, 2), F32)],
                           lambda g, x, y: g.matmul(x, y))  # fmt: skip
    with np.errstate(invalid="ignore"):
        want = a @ b
        got_interp = interp(a, b)
    assert_close(lib(a, b), want, "compiled")
    assert_close(got_interp, want, "interpreter")


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 24), k=st.integers(1, 40), n=st.integers(1, 24), seed=st.integers(0, 2**32 - 1))
def test_matmul_property(m, k, n, seed):
    lib, interp = compiled(("matmul", F32, (m, k, n)), [("a", (m, k), F32), ("b", (k, n), F32)],
                           lambda g, a, b: g.matmul(a, b))  # fmt: skip
    rng = np.random.default_rng(seed)
    a, b = operand(rng, (m, k), F32), operand(rng, (k, n), F32)
    check(lib, interp, [a, b], reference_product(np.matmul, a, b), k)


# ---------------------------------------------------------------------------
# batch_matmul

BATCH_SHAPES = [
    ((2, 3, 5), (2, 5, 4)),
    ((1, 5, 7), (4, 7, 3)),
    ((4, 5, 7), (1, 7, 3)),
    ((3, 1, 1), (3, 1, 1)),
    ((2, 3, 4, 5), (2, 3, 5, 6)),
    ((2, 1, 4, 5), (1, 3, 5, 6)),
    ((1, 1, 9, 17), (3, 2, 17, 5)),
    ((2, 1, 3, 2, 4), (1, 2, 1, 4, 3)),
]


@pytest.mark.parametrize(("sa", "sb"), BATCH_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [F32, I32], ids=str)
def test_batch_matmul(dtype, sa, sb):
    key = ("bmm", dtype, sa, sb)
    lib, interp = compiled(key, [("a", sa, dtype), ("b", sb, dtype)], lambda g, a, b: g.batch_matmul(a, b))
    rng = case_rng(*key)
    a, b = operand(rng, sa, dtype), operand(rng, sb, dtype)
    check(lib, interp, [a, b], reference_product(np.matmul, a, b), sa[-1], "batch_matmul")


# ---------------------------------------------------------------------------
# dense


DENSE_CASES = [
    # input shape, (N, K), bias
    ((3, 7), (5, 7), False),
    ((3, 7), (5, 7), True),
    ((7,), (5, 7), True),
    ((7,), (1, 7), False),
    ((2, 3, 7), (5, 7), True),
    ((2, 1, 3, 16), (33, 16), True),
    ((1, 1), (1, 1), True),
    ((8, 100), (10, 100), False),
    # token grids: the row loops fuse into one (49 and 90 rows in tiles of 6 or 8, shifted last)
    ((1, 7, 7, 24), (70, 24), True),
    ((2, 5, 9, 33), (40, 33), False),
]


@pytest.mark.parametrize(("xs", "ws", "bias"), DENSE_CASES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else ("bias" if v else "nobias"))  # fmt: skip
@pytest.mark.parametrize("weights", ["input", "constant"])
def test_dense(weights, xs, ws, bias):
    """y = x @ W.T (+ b), W and b either function inputs or constants."""
    key = ("dense", weights, xs, ws, bias)
    rng = case_rng(*key)
    x, w = operand(rng, xs, F32), operand(rng, ws, F32)
    b = operand(rng, (ws[0],), F32) if bias else None
    args = [x]
    inputs = [("x", xs, F32)]
    if weights == "input":
        inputs.append(("w", ws, F32))
        args.append(w)
        if bias:
            inputs.append(("bias", (ws[0],), F32))
            args.append(b)

    def body(g, xv, *rest):
        if weights == "input":
            return g.dense(xv, *rest)
        return g.dense(xv, g.constant(w), g.constant(b)) if bias else g.dense(xv, g.constant(w))

    lib, interp = compiled(key, inputs, body)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + (b if bias else 0)
    check(lib, interp, args, want.astype(F32), ws[1], "dense")


@pytest.mark.parametrize("bias", [False, True])
def test_dense_int32_exact(bias):
    rng = case_rng("dense-int", bias)
    x, w, b = operand(rng, (4, 9), I32), operand(rng, (6, 9), I32), operand(rng, (6,), I32)
    inputs = [("x", (4, 9), I32), ("w", (6, 9), I32)] + ([("b", (6,), I32)] if bias else [])
    lib, interp = compiled(("dense-int", bias), inputs, lambda g, *v: g.dense(*v))
    args = [x, w] + ([b] if bias else [])
    want = x @ w.T + (b if bias else 0)
    assert_close(lib(*args), want.astype(I32), "compiled")
    assert_close(interp(*args), want.astype(I32), "interpreter")


def test_mlp_two_layers_f64():
    """dense -> tanh -> dense in float64: tight agreement with numpy."""
    rng = case_rng("mlp64")
    w1, b1, w2 = operand(rng, (20, 11), F64), operand(rng, (20,), F64), operand(rng, (3, 20), F64)
    lib, interp = compiled(("mlp64",), [("x", (6, 11), F64)],
                           lambda g, x: g.dense(g.tanh(g.dense(x, w1, b1)), w2))  # fmt: skip
    x = operand(rng, (6, 11), F64)
    want = np.tanh(x @ w1.T + b1) @ w2.T
    check(lib, interp, [x], want, 20)
