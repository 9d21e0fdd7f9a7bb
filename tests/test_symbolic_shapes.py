"""Models with symbolic dims (``"n"``, ``"m"``): compiled once, called at many sizes,
matching numpy and the interpreter at each."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorkiln as tk
from tensorkiln.dialects.graph.types import element_type_of

F32, F64, I32, BOOL = np.dtype("float32"), np.dtype("float64"), np.dtype("int32"), np.dtype("bool")

SIZES = [1, 2, 3, 17]

_COMPILED: dict = {}


def compiled(key, inputs, body):
    """(compiled, interpreter, module) for ``inputs`` [(name, shape, dtype)] and outputs
    ``body(builder, *values)``; cached by ``key``."""
    if key not in _COMPILED:
        b = tk.GraphBuilder()
        values = [b.input(name, shape, dtype) for name, shape, dtype in inputs]
        out = body(b, *values)
        module = b.finish(*(out if isinstance(out, tuple) else (out,)))
        _COMPILED[key] = (tk.build(module), tk.create_executor("interpreter", module).evaluate(), module)
    return _COMPILED[key]


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def rand(rng, shape, dtype=F32):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 21, size=shape).astype(dtype)
    return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)


def assert_matches(got, want, *, rtol=1e-5, atol=1e-6, what=""):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "ib":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def check(lib, interp, args, want, **tol):
    assert_matches(lib(*args), want, what="compiled", **tol)
    assert_matches(interp(*args), want, what="interpreter", **tol)


# ---------------------------------------------------------------------------
# one symbol

W = rng_for("w").uniform(-1, 1, (5, 7)).astype(F32)
BIAS = rng_for("bias").uniform(-1, 1, (5,)).astype(F32)


def _mlp(b, x):
    return b.mul(b.relu(b.dense(x, W, BIAS)), 2.0)


def test_dense_symbolic_batch_one_build_many_sizes():
    """relu(dense(x, W, b)) * 2 with x: (n, 7), built once, run at n = 1, 2, 3, 17 and
    again at the first size (no state kept between calls)."""
    lib, interp, module = compiled("mlp", [("x", ("n", 7), F32)], _mlp)
    assert "#graph.dims<n, _>" in str(module)
    outputs = {}
    for n in [*SIZES, SIZES[0]]:
        x = rand(rng_for("mlp", n), (n, 7))
        want = (np.maximum(x.astype(F64) @ W.T.astype(F64) + BIAS, 0) * 2).astype(F32)
        got = lib(x)
        check(lib, interp, [x], want)
        assert got.shape == (n, 5)
        outputs[n] = got
    assert all(not np.shares_memory(outputs[a], outputs[b]) for a in outputs for b in outputs if a != b)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 64))
def test_dense_symbolic_batch_any_size(n):
    lib, interp, _ = compiled("mlp", [("x", ("n", 7), F32)], _mlp)
    x = rand(np.random.default_rng(n), (n, 7))
    want = (np.maximum(x.astype(F64) @ W.T.astype(F64) + BIAS, 0) * 2).astype(F32)
    check(lib, interp, [x], want)


def test_symbolic_batch_of_zero_rows():
    """n = 0 is a valid size: an empty (0, 5) result."""
    lib, interp, _ = compiled("mlp", [("x", ("n", 7), F32)], _mlp)
    x = np.zeros((0, 7), F32)
    check(lib, interp, [x], np.zeros((0, 5), F32))


@pytest.mark.parametrize("n", SIZES)
def test_symbol_shared_by_two_inputs(n):
    """x: (n, 4) and y: (n, 4) bind the same n; elementwise and compare/where over it."""

    def body(b, x, y):
        return b.where(b.compare(x, y, predicate="lt"), b.sub(y, x), b.exp(b.neg(x)))

    lib, interp, _ = compiled("shared-n", [("x", ("n", 4), F32), ("y", ("n", 4), F32)], body)
    rng = rng_for("shared-n", n)
    x, y = rand(rng, (n, 4)), rand(rng, (n, 4))
    want = np.where(x < y, y - x, np.exp(-x.astype(F64)).astype(F32))
    check(lib, interp, [x, y], want)


BROADCAST_CASES = [
    # x shape, y shape, result shape for n
    (("n", 1, 4), (3, 1), lambda n: (n, 3, 4)),
    (("n", 5), ("n", 1), lambda n: (n, 5)),
    (("n",), (1,), lambda n: (n,)),
    ((2, "n"), (), lambda n: (2, n)),
    (("n", 1), (1, "n"), lambda n: (n, n)),
    ((3, 1, "n"), ("n",), lambda n: (3, 1, n)),
]


@pytest.mark.parametrize(("xs", "ys", "out"), BROADCAST_CASES, ids=[f"{a}-{b}" for a, b, _ in BROADCAST_CASES])
def test_broadcasting_with_symbolic_dims(xs, ys, out):
    key = ("bcast", xs, ys)
    lib, interp, module = compiled(key, [("x", xs, F32), ("y", ys, F32)],
                                   lambda b, x, y: (b.add(x, y), b.max(x, y)))  # fmt: skip
    for n in SIZES:
        shape_x = tuple(n if d == "n" else d for d in xs)
        shape_y = tuple(n if d == "n" else d for d in ys)
        rng = rng_for(key, n)
        x, y = rand(rng, shape_x), rand(rng, shape_y)
        got, got_interp = lib(x, y), interp(x, y)
        for k, fn in enumerate([np.add, np.maximum]):
            want = fn(x, y)
            assert want.shape == out(n)
            assert_matches(got[k], want, what=f"compiled {fn.__name__} n={n}")
            assert_matches(got_interp[k], want, what=f"interpreter {fn.__name__} n={n}")


def test_cast_and_integer_ops_with_symbolic_dim():
    def body(b, x):
        i = b.cast(x, to=element_type_of(I32))
        return b.div(i, 3), b.cast(b.compare(i, 0, predicate="ge"), to=element_type_of(F64))

    lib, interp, _ = compiled("cast-sym", [("x", ("n", 3), F32)], body)
    for n in SIZES:
        x = rand(rng_for("cast-sym", n), (n, 3)) * 10
        i = np.trunc(x).astype(I32)
        want_div = (np.abs(i) // 3 * np.sign(i)).astype(I32)
        want_ge = (i >= 0).astype(F64)
        for got, what in [(lib(x), "compiled"), (interp(x), "interpreter")]:
            assert_matches(got[0], want_div, what=f"{what} div n={n}")
            assert_matches(got[1], want_ge, what=f"{what} cast n={n}")


# ---------------------------------------------------------------------------
# two or more symbols


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (3, 2), (17, 5), (4, 17)])
def test_two_symbols_matmul_and_broadcast(n, m):
    """a: (n, 8) @ b: (8, m) + c: (m,), then a row-broadcast of an (n, 1) input."""

    def body(g, a, b, c, d):
        return g.mul(g.add(g.matmul(a, b), c), d)

    inputs = [("a", ("n", 8), F32), ("b", (8, "m"), F32), ("c", ("m",), F32), ("d", ("n", 1), F32)]
    lib, interp, module = compiled("two-symbols", inputs, body)
    rng = rng_for("two-symbols", n, m)
    a, b, c, d = rand(rng, (n, 8)), rand(rng, (8, m)), rand(rng, (m,)), rand(rng, (n, 1))
    want = ((a.astype(F64) @ b + c) * d).astype(F32)
    check(lib, interp, [a, b, c, d], want)


@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (3, 5, 2), (17, 2, 3), (2, 17, 1)])
def test_symbolic_contraction_dim(n, k, m):
    """matmul and dense whose contraction dim k is itself a symbol."""

    def body(g, a, b, w):
        return g.matmul(a, b), g.dense(a, w)

    inputs = [("a", ("n", "k"), F32), ("b", ("k", "m"), F32), ("w", (4, "k"), F32)]
    lib, interp, _ = compiled("sym-k", inputs, body)
    rng = rng_for("sym-k", n, k, m)
    a, b, w = rand(rng, (n, k)), rand(rng, (k, m)), rand(rng, (4, k))
    for got, what in [(lib(a, b, w), "compiled"), (interp(a, b, w), "interpreter")]:
        assert_matches(got[0], (a.astype(F64) @ b).astype(F32), what=f"{what} matmul")
        assert_matches(got[1], (a.astype(F64) @ w.T).astype(F32), what=f"{what} dense")


@pytest.mark.parametrize("batch", SIZES)
def test_batch_matmul_symbolic_batch(batch):
    inputs = [("a", ("b", 3, 4), F32), ("b", ("b", 4, 5), F32)]
    lib, interp, _ = compiled("bmm-sym", inputs, lambda g, a, b: g.batch_matmul(a, b))
    rng = rng_for("bmm-sym", batch)
    a, b = rand(rng, (batch, 3, 4)), rand(rng, (batch, 4, 5))
    check(lib, interp, [a, b], np.matmul(a.astype(F64), b).astype(F32))


@pytest.mark.parametrize("n", SIZES)
def test_dense_symbolic_rank3_and_int(n):
    """dense on (n, t, 7) with symbolic n and t, and an int32 dense with symbolic batch."""
    wi = rng_for("wi").integers(-5, 6, (3, 7)).astype(I32)

    def body(g, x, xi):
        return g.dense(x, W, BIAS), g.dense(xi, wi)

    lib, interp, _ = compiled("dense-r3", [("x", ("n", "t", 7), F32), ("xi", ("n", 7), I32)], body)
    rng = rng_for("dense-r3", n)
    t = n + 1
    x, xi = rand(rng, (n, t, 7)), rand(rng, (n, 7), I32)
    for got, what in [(lib(x, xi), "compiled"), (interp(x, xi), "interpreter")]:
        assert_matches(got[0], (x.astype(F64) @ W.T + BIAS).astype(F32), what=f"{what} dense")
        assert_matches(got[1], xi @ wi.T, what=f"{what} int dense")


def test_signature_reports_symbols():
    _, _, module = compiled("two-symbols-sig", [("x", ("n", "m"), F32), ("y", ("m",), F32)],
                            lambda b, x, y: b.add(x, y))  # fmt: skip
    lib, _, _ = _COMPILED["two-symbols-sig"]
    (spec,) = lib.signature.outputs
    assert spec.shape == ("n", "m")
    assert [s.shape for s in lib.signature.inputs] == [("n", "m"), ("m",)]
