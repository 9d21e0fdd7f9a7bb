"""The regularized incomplete gamma functions (``torch.special.gammainc``/``gammaincc``,
``graph.incomplete_gamma``) against torch on float32 and float64: inputs chosen to reach
each of torch's methods (the lower series, the upper series, the continued fraction,
Temme's expansion for ``a`` in (20, 200) and above 200) and every boundary value (zeros,
negatives, infinities, NaN); broadcasting and float16; a Gamma distribution's cdf; the
interpreter, the emulated GPU and nvcc; the verifier."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from nvcc import compile_ptx
from tensorkiln.driver.cuda import build_emulated

torch = pytest.importorskip("torch")
from torch_compile import compile_torch_fn  # noqa: E402

# float32: torch's own float32 algorithm is accurate to a few 1e-7
ATOL = {"float32": 3e-6, "float64": 1e-13}


def _both(a, x):
    return torch.special.gammainc(a, x), torch.special.gammaincc(a, x)


def _inputs(rng, dtype):
    """``(a, x)`` pairs: small ``x`` (upper series), ``x`` around small ``a`` (the lower series
    and the continued fraction), ``x`` near ``a`` for ``a`` in (20, 200) and beyond 200
    (Temme), far tails, and the boundaries."""
    small_a = rng.uniform(0.05, 6.0, 60)
    mid_a, large_a = rng.uniform(21.0, 199.0, 40), 10 ** rng.uniform(2.4, 7.0, 40)
    wide_a = 10 ** rng.uniform(-3.0, 4.0, 60)
    a = np.concatenate([small_a, small_a, mid_a, large_a, wide_a, [
        0.0, 0.0, 0.0, 2.0, np.inf, np.inf, -1.0, 2.0, np.nan, 1.0, 3.0, 1e-20, 200.0, 30.0, 1e4,
    ]])  # fmt: skip
    x = np.concatenate([
        rng.uniform(0.0, 1.0, 60), small_a * rng.uniform(0.3, 3.0, 60), mid_a * rng.uniform(0.75, 1.25, 40),
        large_a + rng.uniform(-4.0, 4.0, 40) * np.sqrt(large_a), 10 ** rng.uniform(-3.0, 4.0, 60),
        [2.0, 0.0, -1.0, 0.0, 3.0, np.inf, 1.0, -0.5, 1.0, np.nan, np.inf, 1e-3, 201.0, 60.0, 5e3],
    ])  # fmt: skip
    return a.astype(dtype), x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch_in_every_region(rng, dtype):
    a, x = _inputs(rng, dtype)
    got = compile_torch_fn(_both, a, x)(a, x)
    want = _both(torch.from_numpy(a), torch.from_numpy(x))
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=ATOL[dtype], equal_nan=True)
    lower, upper = got
    finite = np.isfinite(lower)
    np.testing.assert_allclose(lower[finite] + upper[finite], 1.0, atol=10 * ATOL[dtype])
    # a = 0 < x: P 1; a = x = 0, a < 0: NaN; x = 0: P 0, Q 1; a = inf: P 0; x = inf: P 1
    assert lower[-15] == 1.0 and np.isnan(lower[[-14, -10, -9]]).all() and (lower[-12], upper[-12]) == (0.0, 1.0)
    assert lower[-11] == 0.0 and lower[-5] == 1.0


def test_broadcasting_half_precision_and_a_distribution(rng):
    concentration = rng.uniform(0.5, 40.0, (3, 1)).astype(np.float32)
    value = rng.uniform(0.01, 60.0, (5,)).astype(np.float32)

    def fn(c, v):
        gamma = torch.distributions.Gamma(c, torch.tensor(1.5), validate_args=False)  # (checks cannot export)
        return gamma.cdf(v), torch.special.gammaincc(c.half(), v.half()), torch.distributions.Chi2(2 * c, validate_args=False).cdf(v)

    got = compile_torch_fn(fn, concentration, value)(concentration, value)
    for g, w in zip(got, fn(torch.from_numpy(concentration), torch.from_numpy(value))):
        assert g.dtype == w.numpy().dtype and g.shape == tuple(w.shape)
        np.testing.assert_allclose(g.astype(np.float32), w.float().numpy(), atol=2e-3 if g.dtype == np.float16 else 3e-6)


def _graph_module(element: str):
    b = tk.GraphBuilder()
    a, x = b.input("a", ("k",), element), b.input("x", ("k",), element)
    return b.finish(b.incomplete_gamma(a, x, "lower"), b.incomplete_gamma(a, x, "upper"))


def test_compiled_matches_the_interpreter(rng):
    """The interpreter runs the numpy reference: the same definition and steps."""
    module = _graph_module("float64")
    inputs = _inputs(rng, np.float64)
    compiled = tk.build(module)(*inputs)
    interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for got, want in zip(compiled, interpreted):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15, equal_nan=True)


def test_gpu_kernels_emulated_and_through_nvcc(rng, tmp_path):
    module = _graph_module("float32")
    a, x = _inputs(rng, np.float32)
    for got, want in zip(build_emulated(module)(a, x), tk.build(module)(a, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    ptx = compile_ptx(tk.emit_source(module, target="cuda -arch=sm_90"), tmp_path, "incomplete_gamma")
    assert ".entry incomplete_gamma_" in ptx


def test_errors():
    b = tk.GraphBuilder()
    a = b.input("a", (3,))
    with pytest.raises(VerifyException, match="unknown incomplete gamma function 'middle' \\(expected one of lower, upper\\)"):
        b.incomplete_gamma(a, a, "middle")
    with pytest.raises(VerifyException, match="float tensors"):
        b.incomplete_gamma(b.input("i", (3,), "int32"), b.input("j", (3,), "int32"), "lower")
