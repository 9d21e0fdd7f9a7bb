"""Op-level numeric tests of the special-function converters (frontends/torch/ops/special.py):
fmin/fmax, dist, angle, nextafter, digamma/polygamma, the Hurwitz zeta, the modified Bessel
functions (i0, i0e, i1, i1e, k0, k1, scaled k0/k1), the Bessel functions (j0, j1, y0, y1,
spherical j0), ndtri and erfcx.

As in test_torch_ops_math.py, each case is a tiny module calling the torch functions that export to
the ATen overloads it names (checked), exported, imported, compiled with tk.build and compared with
torch eager on fresh random inputs with odd shapes: float32 within 1e-5 (relative L2 and every
element within ``rtol=1e-5, atol=1e-6``), float64 within 1e-12, ints exactly, NaN and inf where
torch has them. The inputs cover the ranges each algorithm switches between (digamma's poles and
reflection, i0's |x| <= 8 and > 8, k0's 2, j0's 5, ndtri's exp(-2) and 1 - exp(-2) and its ends,
erfcx's continued fraction above 5, zeta's negative q), with NaN and infinities sprinkled in.
``test_every_special_overload_has_a_case`` checks that every overload registered in special.py is
named by some case. nextafter is checked bit for bit against torch on the float types' edges.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
special = torch.special

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.registry import CONVERTERS  # noqa: E402
from torch_op_cases import CaseTable, Fn  # noqa: E402
from torch_op_cases import check as shared_check  # noqa: E402

# -- inputs: each maker is rng -> a fresh torch tensor --------------------------------------------


def points(*shape, low, high, specials=(), dtype=np.float32, share=0.3):
    """Uniform in [low, high) with about ``share`` of the elements drawn from ``specials``."""
    specials = np.array(specials, np.float64)

    def make(rng):
        v = rng.uniform(low, high, shape)
        if specials.size:
            mask = rng.random(shape) < share
            v[mask] = rng.choice(specials, int(mask.sum()))
        return torch.from_numpy(v.astype(dtype))

    return make


def ints(*shape, low=-20, high=21, dtype=torch.int64):
    return lambda rng: torch.from_numpy(rng.integers(low, high, shape)).to(dtype)


def integers(*shape, low, high, dtype=np.float32):
    """Whole numbers as floats (zeta's x where q < 0)."""
    return lambda rng: torch.from_numpy(rng.integers(low, high, shape).astype(dtype))


NONFINITE = [np.nan, np.inf, -np.inf]
#: digamma's poles (0, negative integers), its switch to the asymptotic series at 10, tiny and
#: huge arguments (the series is dropped from 1e17)
DIGAMMA_EDGES = [0.0, -0.0, -1.0, -2.0, -7.0, 1e-30, 1e-6, -1e-6, 10.0, 9.999, 1e17, 1e20, -0.5, 0.5, *NONFINITE]
#: the modified Bessel functions' switch at |x| = 8 (i) and 2 (k), and their poles
BESSEL_I_EDGES = [0.0, -0.0, 8.0, -8.0, 7.999, 1e-20, 2.0, 1e-6, *NONFINITE]
BESSEL_K_EDGES = [0.0, 2.0, 1.999, 2.001, 1e-20, -1.0, 700.0, *NONFINITE]
#: j/y: the switch at 5, j0's series below 1e-5, y's pole and negative arguments
BESSEL_J_EDGES = [0.0, -0.0, 5.0, -5.0, 4.999, 1e-6, -1e-6, 0.3, -0.3, 1e3, *NONFINITE]
#: airy_ai: its switches at -2.09 and 2.09, 8.32 and 103.892 (0 above), the series' zero of f, huge negatives
AIRY_EDGES = [-2.09, -2.0899999, 2.09, 2.0899999, 8.3203353, 103.89, 103.9, 0.0, -1.0, -1e6, 1e-30, *NONFINITE]
#: ndtri: its ends, the switch at exp(-2) and 1 - exp(-2), tiny tails (z = 8 near 1.3e-14), outside
NDTRI_EDGES = [0.0, 1.0, 0.5, 0.1353352832366127, 0.8646647167633873, 1e-14, 1e-10, 1e-30, 1 - 1e-7, 1.5, -0.5, np.nan]


def check(fn, makers, rng, expect=(), *, decompose=True, runs=2):
    """torch_op_cases.check, every element within the tolerance as well."""
    shared_check(fn, makers, rng, expect, decompose=decompose, runs=runs, elementwise=True)


#: the cases below; ``COVERED``: the overloads (without "aten.") they name
case = CaseTable()
COVERED = case.covered


# -- the cases -----------------------------------------------------------------------------------


def _fmin_fmax(x, y):
    return torch.fmin(x, y), torch.fmax(x, y), torch.fmax(y, x[0]), torch.fmin(x, torch.full_like(x, float("nan")))


def _dist(a, b):
    return tuple(torch.dist(a, b, p) for p in (2, 0, 1, 3, 0.5, 1.7, float("inf"), -float("inf"), -1.5))


def _digamma(x):
    return torch.digamma(x), torch.polygamma(0, x), torch.angle(x)


def _polygamma(x):
    return tuple(torch.polygamma(n, x) for n in range(1, 6))


def _zeta(s, q, t):
    """s integers (q may be negative), t non-integers (q < 0 gives NaN), scalar overloads."""
    return special.zeta(s, q), special.zeta(t, q), special.zeta(3.0, q), special.zeta(t, 2.5), special.zeta(s, q.abs() + 1)


def _bessel_i(x):
    return (
        torch.i0(x), special.i0e(x), special.i1(x), special.i1e(x), special.modified_bessel_i0(x),
        special.modified_bessel_i1(x),
    )  # fmt: skip


def _bessel_k(x):
    return (
        special.modified_bessel_k0(x), special.modified_bessel_k1(x), special.scaled_modified_bessel_k0(x),
        special.scaled_modified_bessel_k1(x),
    )  # fmt: skip


def _bessel_jy(x):
    return special.bessel_j0(x), special.bessel_j1(x), special.bessel_y0(x), special.bessel_y1(x), special.spherical_bessel_j0(x)


def _airy(x):
    return (special.airy_ai(x),)


def _ndtri_erfcx(p, x):
    return special.ndtri(p), special.erfcx(x)


def _nextafter(x, y):
    return torch.nextafter(x, y), torch.nextafter(y, x), torch.nextafter(x, torch.zeros_like(x))


def _int_inputs(i, j):
    """Integer operands: float results (fmax of ints stays an int)."""
    return (
        torch.digamma(i), torch.polygamma(1, i), torch.polygamma(2, j), torch.i0(i), special.i1e(i), special.erfcx(i),
        special.bessel_j0(i), special.modified_bessel_k1(j), special.ndtri(i), torch.angle(i), torch.fmax(i, j),
        torch.fmin(i, j), special.zeta(j, j), special.spherical_bessel_j0(i),
    )  # fmt: skip


def _aliases(x):
    """Overloads that torch's decompositions rename (kept whole without them)."""
    return special.digamma(x), special.psi(x), special.polygamma(2, x), special.i0(x)


def _f32_and_f64(name, fn, makers, *expect):
    """The case in float32 and in float64 (the makers take ``dtype``)."""
    return [
        case(f"{name}-f32", fn, tuple(m(np.float32) for m in makers), *expect),
        case(f"{name}-f64", fn, tuple(m(np.float64) for m in makers), *expect),
    ]


CASES = [
    *_f32_and_f64("fmin-fmax", _fmin_fmax,
                  (lambda d: points(3, 7, 5, low=-4, high=4, specials=[*NONFINITE, 0.0], dtype=d),
                   lambda d: points(7, 5, low=-4, high=4, specials=[np.nan, 1.0], dtype=d)),
                  "fmin.default", "fmax.default"),
    *_f32_and_f64("dist", _dist,
                  (lambda d: points(3, 7, 5, low=-3, high=3, specials=[0.0], share=0.1, dtype=d),
                   lambda d: points(7, 5, low=-3, high=3, dtype=d)),
                  "dist.default"),
    *_f32_and_f64("digamma", _digamma, (lambda d: points(3, 7, 5, low=-30, high=30, specials=DIGAMMA_EDGES, dtype=d),),
                  "digamma.default", "polygamma.default", "angle.default"),
    *_f32_and_f64("polygamma", _polygamma,
                  (lambda d: points(3, 7, 5, low=-12, high=30, specials=[0.0, -1.0, -3.0, 0.5, 1e-3, -0.5, *NONFINITE], dtype=d),),
                  "polygamma.default"),
    *_f32_and_f64("zeta", _zeta,
                  (lambda d: integers(3, 7, 5, low=1, high=9, dtype=d),
                   lambda d: points(7, 5, low=-25, high=25, specials=[0.0, -1.0, -2.0, 1.0, 1e-6, -0.25, -1e-30, np.nan], dtype=d),
                   lambda d: points(7, 5, low=0.5, high=12, specials=[1.0, 1.5, 0.99, np.nan], dtype=d)),
                  "special_zeta.default", "special_zeta.self_scalar", "special_zeta.other_scalar"),
    *_f32_and_f64("bessel-i", _bessel_i, (lambda d: points(3, 7, 5, low=-30, high=30, specials=BESSEL_I_EDGES, dtype=d),),
                  "i0.default", "special_i0e.default", "special_i1.default", "special_i1e.default",
                  "special_modified_bessel_i0.default", "special_modified_bessel_i1.default"),
    *_f32_and_f64("bessel-k", _bessel_k, (lambda d: points(3, 7, 5, low=0, high=40, specials=BESSEL_K_EDGES, dtype=d),),
                  "special_modified_bessel_k0.default", "special_modified_bessel_k1.default",
                  "special_scaled_modified_bessel_k0.default", "special_scaled_modified_bessel_k1.default"),
    *_f32_and_f64("bessel-jy", _bessel_jy, (lambda d: points(3, 7, 5, low=-40, high=40, specials=BESSEL_J_EDGES, dtype=d),),
                  "special_bessel_j0.default", "special_bessel_j1.default", "special_bessel_y0.default",
                  "special_bessel_y1.default", "special_spherical_bessel_j0.default"),
    *_f32_and_f64("airy", _airy, (lambda d: points(3, 7, 5, low=-30, high=12, specials=AIRY_EDGES, dtype=d),),
                  "special_airy_ai.default"),
    # erfcx in float32 from -3: below, torch's 2*exp(x*x) rounds x*x to float32 first, ~x*x*6e-8
    # relative (4e-6 at -9); this computes exp(x*x) exactly split in float64 (float64 checks -26)
    case("ndtri-erfcx-f32", _ndtri_erfcx,
         (points(3, 7, 5, low=0, high=1, specials=NDTRI_EDGES),
          points(7, 5, low=-3, high=40, specials=[0.0, 5.0, 4.999, 1e8, 1e30, *NONFINITE])),
         "special_ndtri.default", "special_erfcx.default"),
    case("ndtri-erfcx-f64", _ndtri_erfcx,
         (points(3, 7, 5, low=0, high=1, specials=[*NDTRI_EDGES, 1e-300], dtype=np.float64),
          # from -18: beyond, erfcx's 1e150 would overflow the check's L2 norm (-27 is inf, checked)
          points(7, 5, low=-18, high=40, specials=[0.0, 5.0, 4.999, -18.5, -27.0, 1e8, 1e300, *NONFINITE], dtype=np.float64))),
    *_f32_and_f64("nextafter", _nextafter,
                  (lambda d: points(3, 7, 5, low=-3, high=3, specials=[0.0, -0.0, 1.0, 1e-30, *NONFINITE], dtype=d),
                   lambda d: points(7, 5, low=-3, high=3, specials=[0.0, 1.0, *NONFINITE], dtype=d)),
                  "nextafter.default"),
    case("int64", _int_inputs, (ints(3, 7, 5, low=-12, high=30), ints(7, 5, low=2, high=9)),
         "digamma.default", "polygamma.default", "i0.default", "special_i1e.default", "special_erfcx.default",
         "special_bessel_j0.default", "special_ndtri.default", "angle.default", "fmax.default", "fmin.default"),
    case("aliases-undecomposed", _aliases, (points(3, 7, 5, low=-5, high=20, specials=[0.0, -1.0, *NONFINITE]),),
         "special_digamma.default", "special_psi.default", "special_polygamma.default", "special_i0.default",
         decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "makers", "expect", "decompose"), CASES)
def test_special_ops(rng, fn, makers, expect, decompose):
    check(fn, makers, rng, expect, decompose=decompose)


def test_every_special_overload_has_a_case():
    """Every overload registered in special.py is named by a case above (and each case checks
    that its program uses them)."""
    registered = {name for name, fn in CONVERTERS.items() if fn.__module__ == "tensorkiln.frontends.torch.ops.special"}
    assert len(registered) >= 30
    assert not registered - {f"aten.{e}" for e in COVERED}, sorted(registered - {f"aten.{e}" for e in COVERED})


# -- nextafter, bit for bit -----------------------------------------------------------------------


def _edges(dtype) -> np.ndarray:
    """The float type's edges with both signs: zeros, denormals, the smallest normals and their
    neighbours, powers of two and their neighbours, the largest finite, infinities, NaN; and
    random normals."""
    info = np.finfo(dtype)
    tiny, eta = float(info.smallest_normal), float(info.smallest_subnormal)
    p = info.nmant + 1
    magnitudes = [0.0, eta, 2 * eta, 3 * eta, tiny - eta, tiny, tiny + eta, 2 * tiny, 2 * tiny - eta, 2 * tiny + eta,
                  tiny * 2.0**p, tiny * 2.0**p * 1.5, tiny * 2.0 ** (p - 1), 0.5, 1.0, 1.5, 3.0, 1024.0, float(info.max),
                  float(info.max) / 2, np.inf]  # fmt: skip
    values = np.array([s * m for m in magnitudes for s in (1.0, -1.0)] + [np.nan]).astype(dtype)
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_nextafter_is_torch_bit_for_bit(rng, dtype):
    """Every pair of edge values (and random normals toward random targets): the same bits as
    torch, signed zeros, infinities and NaN included."""
    edges = _edges(dtype)
    x, y = (a.ravel() for a in np.meshgrid(edges, edges))
    randoms = (rng.standard_normal(500) * 10.0 ** rng.uniform(-30, 30, 500)).astype(dtype)
    x = np.concatenate([x, randoms])
    y = np.concatenate([y, np.roll(randoms, 1)])
    fn = lambda a, b: (torch.nextafter(a, b), torch.nextafter(b, a))  # noqa: E731
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    got = tk.build(from_exported_program(torch.export.export(Fn(fn).eval(), (tx, ty))))(x, y)
    unsigned = np.uint32 if dtype == np.float32 else np.uint64
    for g, w in zip(got, fn(tx, ty)):
        w = w.numpy()
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(g), nan)
        np.testing.assert_array_equal(g[~nan].view(unsigned), w[~nan].view(unsigned))
