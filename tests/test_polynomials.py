"""torch.special's orthogonal polynomials (``graph.orthogonal_polynomial``): every family
against torch on float32 and float64 -- random ``x`` inside and outside ``[-1, 1]`` (the
closed forms and the recurrence), random degrees, torch's special values (``|x| = 1``,
``x = 0``, negative, fractional, NaN and infinite degrees, the Hermite degree limits) --
scalar and integer operands, broadcasting, the early stop of a recurrence gone NaN, the
interpreter, the emulated GPU and nvcc, and the verifier."""

from __future__ import annotations

import time

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from nvcc import compile_ptx
from tensorkiln.driver.cuda import build_emulated
from tensorkiln.dialects.graph.polynomials import POLYNOMIALS

torch = pytest.importorskip("torch")
from torch_compile import compile_torch_fn  # noqa: E402

KINDS = list(POLYNOMIALS)
RTOL = {"float32": 2e-4, "float64": 1e-10}


def _all_kinds(x, n):
    return tuple(getattr(torch.special, kind)(x, n) for kind in KINDS)


def _check(got, want, dtype: str, skip=None) -> None:
    """Each result equal to torch's, relative to the element's magnitude; ``skip``: elements
    where torch's value is undefined."""
    for kind, g, w in zip(KINDS, got, want):
        g, w = np.asarray(g), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape, (kind, g.dtype, w.dtype, g.shape, w.shape)
        if skip is not None:
            g, w = g[~skip], w[~skip]
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype], equal_nan=True, err_msg=kind)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_family_matches_torch(rng, dtype):
    x = np.concatenate([
        rng.uniform(-1.0, 1.0, 60), rng.uniform(-2.5, 2.5, 40), rng.uniform(0.0, 1.0, 20),  # shifted: [0, 1]
        [1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.3, 2.0, np.nan, np.nan],
    ]).astype(dtype)  # fmt: skip
    n = np.concatenate([
        rng.integers(-2, 24, 120).astype(float),
        [7, 7, 4, 5, 0, 1, np.nan, np.inf, -np.inf, 1e20, 3.7, -0.5, 200, 300, 0, 1],
    ]).astype(dtype)  # fmt: skip
    got = compile_torch_fn(_all_kinds, x, n)(x, n)
    want = _all_kinds(torch.from_numpy(x), torch.from_numpy(n))
    # torch returns an uninitialized variable for a NaN x whose recurrence would run
    _check(got, want, dtype, skip=np.isnan(x) & (n >= 2))
    for g in got:
        assert np.isnan(g[np.isnan(x) & (n >= 2)]).all()
    hermite = dict(zip(KINDS, got))["hermite_polynomial_h"]
    assert np.isnan(hermite[-4]) == (dtype == "float32") and np.isnan(hermite[-3])  # degree 200, 300: f32 limit 128, f64 512


def test_scalars_integers_and_broadcasting(rng):
    x = rng.uniform(-1.2, 1.2, (4, 1)).astype(np.float32)
    n = np.arange(0, 9, dtype=np.int64)  # integer degrees: float32 results

    def fn(x, n):
        s = torch.special
        return (
            s.legendre_polynomial_p(x, n), s.hermite_polynomial_he(x, 5), s.chebyshev_polynomial_u(0.3, n),
            s.laguerre_polynomial_l(x.double(), n), s.shifted_chebyshev_polynomial_w(n, n),
        )  # fmt: skip

    got = compile_torch_fn(fn, x, n)(x, n)
    want = fn(torch.from_numpy(x), torch.from_numpy(n))
    for g, w in zip(got, want):
        assert g.dtype == w.numpy().dtype and g.shape == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=2e-5, atol=1e-5)


def test_a_recurrence_gone_nan_stops_early():
    """torch stops a recurrence once its value is NaN; so do we (a degree of 1e15 would run
    for days): |x| > 1 overflows to inf, then inf - inf."""
    x = np.array([3.0, -2.5, 1.5, 0.5], np.float64)
    n = np.array([1e15, 1e12, 4e9, 1e3], np.float64)

    def fn(x, n):
        return torch.special.chebyshev_polynomial_t(x, n), torch.special.legendre_polynomial_p(x, n)

    lib = compile_torch_fn(fn, x, n)
    start = time.perf_counter()
    got = lib(x, n)
    assert time.perf_counter() - start < 5.0
    for g, w in zip(got, fn(torch.from_numpy(x), torch.from_numpy(n))):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-9, equal_nan=True)
    assert np.isnan(got[0][:3]).all()


def _graph_module():
    b = tk.GraphBuilder()
    x, n = b.input("x", ("k", 6), "float64"), b.input("n", (6,), "float64")
    return b.finish(*(b.orthogonal_polynomial(x, n, kind) for kind in KINDS))


def _graph_inputs(rng, size: int, dtype=np.float64):
    x = rng.uniform(-1.5, 1.5, (size, 6)).astype(dtype)
    x[0, :3] = [1.0, -1.0, 0.0]
    return x, np.array([0, 1, 2, 5, 9, 13], dtype)


def test_compiled_matches_the_interpreter(rng):
    """The interpreter runs the numpy reference: the same definitions, the same roundings."""
    module = _graph_module()
    inputs = _graph_inputs(rng, 5)
    compiled = tk.build(module)(*inputs)
    interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for kind, got, want in zip(KINDS, compiled, interpreted):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=kind)


def test_gpu_kernels_emulated_and_through_nvcc(rng, tmp_path):
    """One kernel per family, all alike: four of them (closed forms with a fallback, the
    shifted argument, the Hermite limit, a division)."""
    kinds = ["chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "hermite_polynomial_h", "laguerre_polynomial_l"]
    b = tk.GraphBuilder()
    x, n = b.input("x", ("k", 6)), b.input("n", (6,))
    module = b.finish(*(b.orthogonal_polynomial(x, n, kind) for kind in kinds))
    inputs = _graph_inputs(rng, 3, np.float32)
    for kind, got, want in zip(kinds, build_emulated(module)(*inputs), tk.build(module)(*inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=kind)
    ptx = compile_ptx(tk.emit_source(module, target="cuda -arch=sm_90"), tmp_path, "polynomials")
    assert ".entry orthogonal_polynomial_" in ptx


def test_errors():
    b = tk.GraphBuilder()
    x = b.input("x", (3,))
    with pytest.raises(VerifyException, match="unknown polynomial 'jacobi_polynomial'"):
        b.orthogonal_polynomial(x, x, "jacobi_polynomial")
    with pytest.raises(VerifyException, match="float tensors"):
        b.orthogonal_polynomial(b.input("i", (3,), "int32"), b.input("j", (3,), "int32"), "legendre_polynomial_p")
