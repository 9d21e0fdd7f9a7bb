"""Special functions of ATen: digamma and polygamma, the Hurwitz zeta function, the modified
Bessel functions (i0, i0e, i1, i1e, k0, k1 and the scaled k0, k1), the Bessel functions j0, j1,
y0, y1 and the spherical j0, ndtri, erfcx; with them the NaN-ignoring fmin/fmax, dist, nextafter
and angle (real inputs).

Each composes graph ops into one elementwise function (it fuses into one kernel) and follows
torch's own algorithm (ATen/native/Math.h, after Cephes): the same Chebyshev tables and rational
approximations, ranges, special values and working precision (the Hurwitz zeta in float64 for
float32, as torch's CPU kernel; the digamma reflection term too). A branch is a ``where`` between
both sides, computed everywhere. No intermediate is read twice along a chain: the fused kernel
inlines every read of an intermediate, so a recurrence reading its previous value twice (Clenshaw's,
or a masked loop's state) would grow exponentially in the kernel. Hence:

* Chebyshev series are evaluated by Horner's scheme on their monomial form (converted exactly
  from Cephes' tables, rounded once; as accurate as Clenshaw's recurrence on the tables' range);
* loops that run until a condition holds become fixed sums of terms computed from the loop's
  closed form: digamma's ``psi(x) = psi(x + 1) - 1/x`` while ``x < 10`` (at most 10 steps for
  ``x > 0``) sums ``1/(x + k)`` over the steps it would take; zeta adds its 9 direct terms, then
  Euler-Maclaurin's 12 nested (``t_0 (1 + r_1 (1 + ...))``) unless the last direct term is
  below MACHEP of the sum (where torch's loop returns early) -- torch also stops Euler-Maclaurin
  at the first term below MACHEP of the sum; the later ones are smaller still and change
  nothing at that precision.

The other differences from torch's code:

* zeta(x, q) for ``q < 0`` (integer ``x``), where torch sums ``(q + k)**-x`` until ``q + k > 9``
  (as many terms as ``-q``), splits the sum at ``k = m = -floor(q)``:
  ``zeta(x, q) = zeta(x, q + m) + (-1)**x (zeta(x, 1 - m - q) - zeta(x, 1 - q))``, three sums
  of positive arguments;
* erfcx, torch's a lookup of 100 Chebyshev polynomials, is ``exp(x*x) * erfc(x)`` with ``x*x``
  split exactly (``x`` into 20 fraction bits and the rest) below 5 and Laplace's continued
  fraction (20 terms, within 2e-16) above, computed in float64;
* nextafter steps to the neighbouring float without reading its bits (there is no bitcast):
  ``x + e`` rounds to the successor exactly when ``e`` is between half an ulp and one and a
  half (``e = |x| * u * (1 + 2u)``, Rump et al. 2009), scaled by ``2**p`` below ``2**(emin + p)``
  where ``e`` would be denormal, and ``x +- eta`` (the smallest denormal) below
  ``2**(emin + 1)``.

Integer inputs are promoted to the float result dtype; float16 and bfloat16 compute in float32.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import is_float_dtype, numpy_dtype
from ..context import ImportContext, opmath_dtype
from ..registry import converter
from .elementwise import _operand
from .math import _polynomial
from .reduce import vector_norm

F64 = np.dtype(np.float64)


# ---------------------------------------------------------------------------
# helpers


def _working(ctx: ImportContext, node, x: SSAValue, dtype=None) -> tuple[SSAValue, np.dtype]:
    """``x`` in the type the op computes in (``dtype``, by default the result's opmath type), and
    the result dtype to cast back to."""
    result = ctx.dtype(node)
    return ctx.cast(x, np.dtype(dtype) if dtype is not None else opmath_dtype(result)), result


def _dtype_of(x: SSAValue) -> np.dtype:
    return np.dtype(numpy_dtype(x.type.element_type))


def _const(ctx: ImportContext, like: SSAValue):
    return lambda value: ctx.scalar(value, like)


def _and(ctx: ImportContext, a: SSAValue, b: SSAValue) -> SSAValue:
    return ctx.b.where(a, b, a)


def _or(ctx: ImportContext, a: SSAValue, b: SSAValue) -> SSAValue:
    return ctx.b.where(a, a, b)


def _select(ctx: ImportContext, cases: list[tuple[SSAValue, SSAValue]], default: SSAValue) -> SSAValue:
    """The value of the first case whose condition holds, else ``default``."""
    for condition, value in reversed(cases):
        default = ctx.b.where(condition, value, default)
    return default


def _isnan(ctx: ImportContext, x: SSAValue) -> SSAValue:
    return ctx.b.compare(x, x, "ne")


@functools.cache
def _monomials(coefficients: tuple[float, ...]) -> tuple[float, ...]:
    """A Chebyshev series as Cephes' ``chbevl(y)`` sums it, ``sum' c_k T_k(y/2)`` (the
    coefficients from the highest order down, the constant term halved), as a polynomial in
    ``y`` (highest degree first), converted exactly (rationals) and rounded once."""
    c = [Fraction(v) for v in reversed(coefficients)]
    c[0] /= 2
    t_prev, t_k = [Fraction(1)], [Fraction(0), Fraction(1, 2)]  # T_0(y/2), T_1(y/2)
    out = [Fraction(0)] * len(c)
    out[0] += c[0]
    for k in range(1, len(c)):
        for i, a in enumerate(t_k):
            out[i] += c[k] * a
        t_prev, t_k = t_k, [-(t_prev[i] if i < len(t_prev) else 0) + (t_k[i - 1] if i else 0) for i in range(len(t_k) + 1)]
    return tuple(float(v) for v in reversed(out))


def _chebyshev(ctx: ImportContext, y: SSAValue, coefficients) -> SSAValue:
    """Cephes' ``chbevl(y, coefficients)``, by Horner's scheme on its monomial form: as
    accurate (measured against 200-bit sums: within the same few ulp on [-2, 2]), and each
    partial sum read once, where Clenshaw's recurrence reads each twice -- which the fused
    kernel, inlining every read, would expand exponentially."""
    return _polynomial(ctx, y, _monomials(tuple(coefficients)))


def _unary(*names: str):
    """Register a unary special function ``fn(ctx, x)`` on the result's opmath type; integer
    inputs are promoted to the float result."""

    def register(fn):
        def convert(ctx: ImportContext, node, x):
            x, dtype = _working(ctx, node, x)
            return ctx.cast(fn(ctx, x), dtype)

        convert.__name__ = convert.__qualname__ = fn.__name__
        convert.__doc__ = fn.__doc__
        converter(*names)(convert)
        return fn

    return register


# ---------------------------------------------------------------------------
# fmin, fmax, dist, angle, nextafter


def _nan_ignoring(method: str):
    def convert(ctx: ImportContext, node, a, b):
        """min/max of the two, the other where one is NaN (NaN only where both are)."""
        a, b = _operand(ctx, node, a, b), _operand(ctx, node, b, a)
        extreme = getattr(ctx.b, method)(a, b)
        if not is_float_dtype(ctx.dtype(node)):
            return extreme
        return ctx.b.where(_isnan(ctx, a), b, ctx.b.where(_isnan(ctx, b), a, extreme))

    return convert


converter("aten.fmin.default")(_nan_ignoring("min"))
converter("aten.fmax.default")(_nan_ignoring("max"))


@converter("aten.dist.default", scalars_as_vectors=True)
def dist(ctx: ImportContext, node, a, b, p=2):
    """``||a - b||_p`` over every element of the broadcast difference (torch.norm's rules: p = 0
    counts the nonzero differences, +-inf the largest/smallest magnitude)."""
    dtype = ctx.dtype(node)
    if not is_float_dtype(dtype):
        raise NotImplementedError(f"dist with result dtype {dtype} is not supported (float only)")
    difference = ctx.b.sub(_operand(ctx, node, a, b), _operand(ctx, node, b, a))
    return vector_norm(ctx, difference, float(p), list(range(ctx.rank(difference))), False)


@converter("aten.angle.default")
def angle(ctx: ImportContext, node, x):
    """The argument of a real number: pi for negatives, 0 otherwise, NaN for NaN."""
    x, dtype = _working(ctx, node, x)
    g, c = ctx.b, _const(ctx, x)
    y = g.where(g.compare(x, c(0), "lt"), c(math.pi), c(0.0))
    return ctx.cast(g.where(_isnan(ctx, x), x, y), dtype)


@converter("aten.nextafter.default")
def nextafter(ctx: ImportContext, node, x, y):
    """The float after ``x`` in the direction of ``y`` (``y`` where they are equal, NaN where
    either is); see the module docstring for the arithmetic."""
    dtype = ctx.dtype(node)
    if not is_float_dtype(dtype):
        raise NotImplementedError(f"nextafter of dtype {dtype} is not supported (float only)")
    g = ctx.b
    x, y = ctx.cast(x, opmath_dtype(dtype)), ctx.cast(y, opmath_dtype(dtype))
    c = _const(ctx, x)
    info = ml_dtypes.finfo(dtype)
    precision = info.nmant + 1  # p
    u = 2.0**-precision
    smallest_normal = float(info.smallest_normal)
    eta = float(info.smallest_subnormal)
    phi = u * (1 + 2 * u)
    up = g.compare(y, x, "gt")

    magnitude = g.abs(x)
    direct = g.mul(magnitude, c(phi))
    scale = 2.0**precision
    scaled_x = g.mul(x, c(scale))
    scaled_step = g.mul(g.abs(scaled_x), c(phi))
    scaled = g.mul(g.where(up, g.add(scaled_x, scaled_step), g.sub(scaled_x, scaled_step)), c(1.0 / scale))
    stepped = g.where(up, g.add(x, direct), g.sub(x, direct))
    tiny = g.where(up, g.add(x, c(eta)), g.sub(x, c(eta)))
    tiny = g.where(g.compare(tiny, c(0.0), "eq"), g.copysign(c(0.0), x), tiny)  # -eta up: -0, as C
    result = _select(
        ctx,
        [(g.compare(magnitude, c(2 * smallest_normal), "lt"), tiny),
         (g.compare(magnitude, c(smallest_normal * scale), "lt"), scaled)],
        stepped,
    )  # fmt: skip
    infinite = g.compare(magnitude, c(np.inf), "eq")
    result = g.where(infinite, g.copysign(c(float(info.max)), x), result)
    result = g.where(g.compare(x, y, "eq"), y, result)
    unordered = _or(ctx, _isnan(ctx, x), _isnan(ctx, y))
    return ctx.cast(g.where(unordered, c(np.nan), result), dtype)


# ---------------------------------------------------------------------------
# digamma, trigamma, polygamma, zeta

#: psi(10), and the asymptotic series' coefficients in 1/x**2 (Cephes)
_PSI_10 = 2.25175258906672110764
_DIGAMMA_ASYMPTOTIC = (
    8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3, -4.16666666666666666667e-3,
    3.96825396825396825397e-3, -8.33333333333333333333e-3, 8.33333333333333333333e-2,
)  # fmt: skip
#: digamma's recurrence steps x -> x + 1 until x >= 10: at most 10 from x > 0
_DIGAMMA_STEPS = 10


def _digamma_positive(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """psi(x) for x > 0 as torch's calc_digamma: ``psi(x) = psi(x + 1) - 1/x`` while x < 10,
    then the asymptotic series (psi(10) itself at 10). The loop as a fixed sum: step k
    (x + k < 10) subtracts 1/(x + k); the series is taken at x + n, n the number of steps."""
    g, c = ctx.b, _const(ctx, x)
    steps = g.min(g.max(g.ceil(g.sub(c(10.0), x)), c(0.0)), c(float(_DIGAMMA_STEPS)))
    result = None
    for k in range(_DIGAMMA_STEPS):
        term = g.where(g.compare(c(float(k)), steps, "lt"), g.div(c(1.0), g.add(x, c(float(k)))), c(0.0))
        result = term if result is None else g.add(result, term)
    y = g.add(x, steps)
    z = g.div(c(1.0), g.mul(y, y))
    series = g.where(g.compare(y, c(1e17), "lt"), g.mul(z, _polynomial(ctx, z, _DIGAMMA_ASYMPTOTIC)), c(0.0))
    asymptotic = g.sub(g.sub(g.log(y), g.div(c(0.5), y)), series)
    return g.sub(g.where(g.compare(y, c(10.0), "eq"), c(_PSI_10), asymptotic), result)


def _digamma(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """psi(x): for x < 0 ``psi(1 - x) - pi / tan(pi * frac(x))`` (the term in float64, as
    torch), NaN at the negative integers, -+inf at +-0."""
    g, c = ctx.b, _const(ctx, x)
    negative = g.compare(x, c(0), "lt")
    wide = ctx.cast(x, F64)
    fraction = g.sub(wide, g.trunc(wide))
    pi = ctx.scalar(math.pi, wide)
    reflection = ctx.cast(g.div(pi, g.tan(g.mul(pi, fraction))), _dtype_of(x))
    psi = _digamma_positive(ctx, g.where(negative, g.sub(c(1.0), x), x))
    value = g.sub(psi, g.where(negative, reflection, c(0.0)))
    integer = g.compare(x, g.trunc(x), "eq")
    return _select(
        ctx,
        [(g.compare(x, c(0), "eq"), g.copysign(c(np.inf), g.neg(x))), (_and(ctx, negative, integer), c(np.nan))],
        value,
    )  # fmt: skip


_unary("aten.digamma.default", "aten.special_digamma.default", "aten.special_psi.default")(_digamma)

#: trigamma's recurrence steps (fixed, as torch's)
_TRIGAMMA_STEPS = 6


def _trigamma(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """psi'(x) as torch: reflected below 1/2 (``pi**2 / sin(pi x)**2``), 6 recurrence steps,
    then the asymptotic series."""
    g, c = ctx.b, _const(ctx, x)
    dtype = _dtype_of(x)
    pi = dtype.type(math.pi)
    reflect = g.compare(x, c(0.5), "lt")
    sine = g.sin(g.mul(c(pi), x))
    result = g.where(reflect, g.neg(g.div(c(pi * pi), g.mul(sine, sine))), c(0.0))
    x0 = g.where(reflect, g.sub(c(1.0), x), x)
    for k in range(_TRIGAMMA_STEPS):
        xk = g.add(x0, c(float(k)))
        result = g.add(result, g.div(c(1.0), g.mul(xk, xk)))
    x = g.add(x0, c(float(_TRIGAMMA_STEPS)))
    ixx = g.div(c(1.0), g.mul(x, x))
    series = g.mul(ixx, g.sub(c(1 / 30), g.mul(ixx, c(1 / 42))))
    series = g.add(g.add(c(1.0), g.div(c(1.0), g.mul(c(2.0), x))), g.mul(ixx, g.sub(c(1 / 6), series)))
    result = g.add(result, g.div(series, x))
    return g.mul(g.where(reflect, c(-1.0), c(1.0)), result)


@converter("aten.polygamma.default", "aten.special_polygamma.default")
def polygamma(ctx: ImportContext, node, n, x):
    """The n-th derivative of digamma: digamma, trigamma, else
    ``(-1)**(n+1) n! zeta(n + 1, x)`` (zeta in float64, as torch's CPU kernel)."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma(n, x) takes an integer n >= 0, got {n!r}")
    x, dtype = _working(ctx, node, x)
    if n == 0:
        return ctx.cast(_digamma(ctx, x), dtype)
    if n == 1:
        return ctx.cast(_trigamma(ctx, x), dtype)
    wide = ctx.cast(x, F64)
    z = ctx.cast(_zeta(ctx, ctx.scalar(n + 1.0, wide), wide), _dtype_of(x))
    factor = (1.0 if n % 2 else -1.0) * float(math.factorial(n))
    return ctx.cast(ctx.b.mul(ctx.scalar(factor, z), z), dtype)


#: Euler-Maclaurin's denominators (2k)! / B_2k (Cephes' zeta)
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10, -2.950130727918164224e12,
    1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18,
)  # fmt: skip
_ZETA_DIRECT_TERMS = 9
_MACHEP = 1.11022302462515654042e-16


def _zeta_positive(ctx: ImportContext, x: SSAValue, q: SSAValue) -> SSAValue:
    """Cephes' zeta for q > 0 in float64: ``sum_{k<=9} (q + k)**-x``, then (unless the last
    term is below MACHEP of the sum, where torch's loop stopped early) Euler-Maclaurin's tail
    ``b w/(x - 1) - b/2 + sum_j t_j`` at ``w = q + 9``, ``b = w**-x``. The 12 ``t_j`` are summed
    nested (``t_0 (1 + r_1 (1 + r_2 ...))``, ``r_j = t_j / t_{j-1}``) rather than stopping at
    the first below MACHEP of the sum as torch does: the ones after it are smaller still (the
    terms decrease over all 12 wherever the direct sum did not stop early)."""
    g, c = ctx.b, _const(ctx, q)
    minus_x = g.neg(x)
    s = g.pow(q, minus_x)
    for k in range(1, _ZETA_DIRECT_TERMS + 1):
        s = g.add(s, g.pow(g.add(q, c(float(k))), minus_x))
    w = g.add(q, c(float(_ZETA_DIRECT_TERMS)))
    b = g.pow(w, minus_x)
    converged = g.compare(b, g.mul(c(_MACHEP), s), "lt")
    w2 = g.mul(w, w)
    nested = c(1.0)
    for j in range(len(_ZETA_A) - 1, 0, -1):
        ratio = g.div(g.mul(g.add(x, c(2.0 * j - 1)), g.add(x, c(2.0 * j))), g.mul(w2, c(_ZETA_A[j] / _ZETA_A[j - 1])))
        nested = g.add(c(1.0), g.mul(ratio, nested))
    first = g.div(g.mul(x, g.div(b, w)), c(_ZETA_A[0]))
    tail = g.add(g.sub(g.div(g.mul(b, w), g.sub(x, c(1.0))), g.mul(c(0.5), b)), g.mul(first, nested))
    return g.add(s, g.where(converged, c(0.0), tail))


def _zeta(ctx: ImportContext, x: SSAValue, q: SSAValue) -> SSAValue:
    """Hurwitz zeta in float64 with torch's special values: inf at x = 1 and at q = 0, -1, ...;
    NaN for x < 1 and for q < 0 with x not an integer; q < 0 split into sums of positive q."""
    g, c = ctx.b, _const(ctx, q)
    whole = g.floor(q)  # -m for q < 0
    positive = g.compare(q, c(0.0), "gt")
    half = c(0.5)  # a harmless argument where a sum is not needed
    main = _zeta_positive(ctx, x, g.where(positive, q, g.sub(q, whole)))  # zeta(x, q + m)
    # sum_{i<m} (-(q + i))**-x = zeta(x, 1 - m - q) - zeta(x, 1 - q); 1 - m - q is exact (Sterbenz)
    lower = _zeta_positive(ctx, x, g.where(positive, half, g.sub(g.add(whole, c(1.0)), q)))
    upper = _zeta_positive(ctx, x, g.where(positive, half, g.sub(c(1.0), q)))
    odd = g.compare(g.fmod(x, c(2.0)), c(0.0), "ne")
    head = g.sub(lower, upper)  # (-1)**x times the sum of (q + i)**-x for i < m
    negative_q = g.add(main, g.where(odd, g.neg(head), head))
    value = g.where(positive, main, negative_q)
    return _select(
        ctx,
        [(g.compare(x, c(1.0), "eq"), c(np.inf)),
         (g.compare(x, c(1.0), "lt"), c(np.nan)),
         (_and(ctx, g.compare(q, c(0.0), "le"), g.compare(q, whole, "eq")), c(np.inf)),
         (_and(ctx, g.compare(q, c(0.0), "le"), g.compare(x, g.floor(x), "ne")), c(np.nan))],
        value,
    )  # fmt: skip


@converter("aten.special_zeta.default", "aten.special_zeta.self_scalar", "aten.special_zeta.other_scalar")
def special_zeta(ctx: ImportContext, node, x, q):
    """The Hurwitz zeta function ``sum_k (q + k)**-x``, in float64 (torch's CPU kernel too)."""
    dtype = ctx.dtype(node)
    x, q = _operand(ctx, node, x, q), _operand(ctx, node, q, x)
    return ctx.cast(_zeta(ctx, ctx.cast(x, F64), ctx.cast(q, F64)), dtype)


# ---------------------------------------------------------------------------
# modified Bessel functions: Cephes' Chebyshev series on [0, 8] (in x/2 - 2) and (8, inf) (in
# 32/x - 2) for i0 and i1, on [0, 2] (in x*x - 2) and (2, inf) (in 8/x - 2) for k0 and k1

_I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
    -1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
    -1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
    -4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
    -5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
    -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)  # fmt: skip
_I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
    -2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
    -9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
    1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
    2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)  # fmt: skip
_I1E_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
    7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
    1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7, -8.56872026469545474066e-7,
    3.47025130813767847674e-6, -1.32731636560394358279e-5, 4.78156510755005422638e-5, -1.61760815825896745588e-4,
    5.12285956168575772895e-4, -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1, -1.76416518357834055153e-1,
    2.52587186443633654823e-1,
)  # fmt: skip
_I1E_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
    2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
    1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
    -1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-9, -2.63146884688951950684e-8,
    -2.51223623787020892529e-7, -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1,
)  # fmt: skip
#: torch's float32 i1/i1e (not modified_bessel_i1) drop the smallest coefficients
_I1E_FLOAT32 = (_I1E_A[12:], _I1E_B[18:])
_K0_A = (
    1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11, 1.90451637722020886025e-9,
    2.53479107902614945675e-7, 2.28621210311945178607e-5, 1.26461541144692592338e-3, 3.59799365153615016266e-2,
    3.44289899924628486886e-1, -5.35327393233902768720e-1,
)  # fmt: skip
_K0_B = (
    5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17, -1.67823109680541210385e-16,
    5.51205597852431940784e-16, -1.84859337734377901440e-15, 6.34007647740507060557e-15, -2.22751332699166985548e-14,
    8.03289077536357521100e-14, -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10, -1.69753450938905987466e-9,
    8.57403401741422608519e-9, -4.66048989768794782956e-8, 2.76681363944501510342e-7, -1.83175552271911948767e-6,
    1.39498137188764993662e-5, -1.28495495816278026384e-4, 1.56988388573005337491e-3, -3.14481013119645005427e-2,
    2.44030308206595545468e0,
)  # fmt: skip
_K1_A = (
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13, -1.41148839263352776110e-10,
    -2.21338763073472585583e-8, -2.43340614156596823496e-6, -1.73028895751305206302e-4, -6.97572385963986435018e-3,
    -1.22611180822657148235e-1, -3.53155960776544875667e-1, 1.52530022733894777053e0,
)  # fmt: skip
_K1_B = (
    -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17, 1.83809354436663880070e-16,
    -6.05704724837331885336e-16, 2.03870316562433424052e-15, -7.01983709041831346144e-15, 2.47715442448130437068e-14,
    -8.97670518232499435011e-14, 3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10, 2.01504975519703286596e-9,
    -1.03457624656780970260e-8, 5.74108412545004946722e-8, -3.50196060308781257119e-7, 2.40648494783721712015e-6,
    -1.93619797416608296024e-5, 1.95215518471351631108e-4, -2.85781685962277938680e-3, 1.03923736576817238437e-1,
    2.72062619048444266945e0,
)  # fmt: skip


def _scaled_i(ctx: ImportContext, x: SSAValue, tables) -> SSAValue:
    """``exp(-|x|) I(|x|)`` from a pair of Chebyshev tables, without the factor |x| of i1's
    small range: the series on [0, 8], the series over sqrt(|x|) beyond."""
    g, c = ctx.b, _const(ctx, x)
    a = g.abs(x)
    small = _chebyshev(ctx, g.sub(g.div(a, c(2.0)), c(2.0)), tables[0])
    large = g.div(_chebyshev(ctx, g.sub(g.div(c(32.0), a), c(2.0)), tables[1]), g.sqrt(a))
    return g.where(g.compare(a, c(8.0), "le"), small, large)


def _i0e(ctx: ImportContext, x: SSAValue) -> SSAValue:
    return _scaled_i(ctx, x, (_I0E_A, _I0E_B))


def _i0(ctx: ImportContext, x: SSAValue) -> SSAValue:
    return ctx.b.mul(ctx.b.exp(ctx.b.abs(x)), _i0e(ctx, x))


def _i1_tables(x: SSAValue, full: bool):
    return (_I1E_A, _I1E_B) if full or _dtype_of(x) != np.float32 else _I1E_FLOAT32


def _i1_magnitude(ctx: ImportContext, x: SSAValue, full: bool) -> SSAValue:
    """``exp(-|x|) I1(|x|)``: the small range's series times |x|."""
    g, c = ctx.b, _const(ctx, x)
    a = g.abs(x)
    scaled = _scaled_i(ctx, x, _i1_tables(x, full))
    return g.where(g.compare(a, c(8.0), "le"), g.mul(scaled, a), scaled)


def _odd(ctx: ImportContext, x: SSAValue, out: SSAValue) -> SSAValue:
    """``out`` with the sign of ``x`` (torch's ``x < 0 ? -out : out``)."""
    negative = ctx.b.compare(x, ctx.scalar(0.0, x), "lt")
    return ctx.b.mul(ctx.b.where(negative, ctx.scalar(-1.0, x), ctx.scalar(1.0, x)), out)


def _i1e(ctx: ImportContext, x: SSAValue, full: bool = False) -> SSAValue:
    return _odd(ctx, x, _i1_magnitude(ctx, x, full))


def _i1(ctx: ImportContext, x: SSAValue, full: bool = False) -> SSAValue:
    return _odd(ctx, x, ctx.b.mul(ctx.b.exp(ctx.b.abs(x)), _i1_magnitude(ctx, x, full)))


_unary("aten.i0.default", "aten.special_i0.default", "aten.special_modified_bessel_i0.default")(_i0)
_unary("aten.special_i0e.default")(_i0e)
_unary("aten.special_i1.default")(_i1)
_unary("aten.special_i1e.default")(_i1e)


@_unary("aten.special_modified_bessel_i1.default")
def _modified_bessel_i1(ctx: ImportContext, x: SSAValue) -> SSAValue:
    return _i1(ctx, x, full=True)


def _k(ctx: ImportContext, x: SSAValue, order: int, scaled: bool) -> SSAValue:
    """K0/K1 (``exp(x) K`` where ``scaled``): on (0, 2] a series in x*x - 2 less/plus
    ``log(x/2) I(x)``, beyond ``exp(-x)`` times a series over sqrt(x); inf at 0, NaN below."""
    g, c = ctx.b, _const(ctx, x)
    small_table, large_table = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    log_half = g.log(g.mul(c(0.5), x))
    series = _chebyshev(ctx, g.sub(g.mul(x, x), c(2.0)), small_table)
    if order == 0:
        small = g.sub(series, g.mul(log_half, _i0(ctx, x)))
    else:
        small = g.add(g.mul(log_half, _i1(ctx, x, full=True)), g.div(series, x))
    large = g.div(_chebyshev(ctx, g.sub(g.div(c(8.0), x), c(2.0)), large_table), g.sqrt(x))
    if scaled:
        small = g.mul(small, g.exp(x))
    else:
        large = g.mul(g.exp(g.neg(x)), large)
    value = g.where(g.compare(x, c(2.0), "le"), small, large)
    return _select(ctx, [(g.compare(x, c(0.0), "eq"), c(np.inf)), (g.compare(x, c(0.0), "lt"), c(np.nan))], value)


for _name, _order, _scaled in (("modified_bessel_k0", 0, False), ("modified_bessel_k1", 1, False),
                               ("scaled_modified_bessel_k0", 0, True), ("scaled_modified_bessel_k1", 1, True)):  # fmt: skip
    _unary(f"aten.special_{_name}.default")(
        (lambda order, scaled: lambda ctx, x: _k(ctx, x, order, scaled))(_order, _scaled)
    )


# ---------------------------------------------------------------------------
# Bessel functions of the first and second kind (Cephes j0, j1, y0, y1): a rational function
# of x*x up to 5 (with its zeros factored out), beyond it the Hankel asymptotic form
# sqrt(2/(pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)), P and Q rational in 25/x**2

_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e00, 5.44725003058768775090e00,
          8.74716500199817011941e00, 5.30324038235394892183e00, 9.99999999999999997821e-01)  # fmt: skip
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e00, 5.47097740330417105182e00,
          8.76190883237069594232e00, 5.30605288235394617618e00, 1.00000000000000000218e00)  # fmt: skip
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e00, -1.95539544257735972385e01, -9.32060152123768231369e01,
          -1.77681167980488050595e02, -1.47077505154951170175e02, -5.14105326766599330220e01, -6.05014350600728481186e00)  # fmt: skip
_J0_QQ = (6.43178256118178023184e01, 8.56430025976980587198e02, 3.88240183605401609683e03, 7.24046774195652478189e03,
          5.93072701187316984827e03, 2.06209331660327847417e03, 2.42005740240291393179e02)  # fmt: skip
_J0_RP = (-4.79443220978201773821e09, 1.95617491946556577543e12, -2.49248344360967716204e14, 9.70862251047306323952e15)
_J0_RQ = (4.99563147152651017219e02, 1.73785401676374683123e05, 4.84409658339962045305e07, 1.11855537045356834862e10,
          2.11277520115489217587e12, 3.10518229857422583814e14, 3.18121955943204943306e16, 1.71086294081043136091e18)  # fmt: skip
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e00, 5.11207951146807644818e00,
          8.42404590141772420927e00, 5.21451598682361504063e00, 1.00000000000000000254e00)  # fmt: skip
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e00, 5.07386386128601488557e00,
          8.39985554327604159757e00, 5.20982848682361821619e00, 9.99999999999999997461e-01)  # fmt: skip
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e00, 7.58238284132545283818e01, 3.66779609360150777800e02,
          7.10856304998926107277e02, 5.97489612400613639965e02, 2.11688757100572135698e02, 2.52070205858023719784e01)  # fmt: skip
_J1_QQ = (7.42373277035675149943e01, 1.05644886038262816351e03, 4.98641058337653607651e03, 9.56231892404756170795e03,
          7.99704160447350683650e03, 2.82619278517639096600e03, 3.36093607810698293419e02)  # fmt: skip
_J1_RP = (-8.99971225705559398224e08, 4.52228297998194034323e11, -7.27494245221818276015e13, 3.68295732863852883286e15)
_J1_RQ = (6.20836478118054335476e02, 2.56987256757748830383e05, 8.35146791431949253037e07, 2.21511595479792499675e10,
          4.74914122079991414898e12, 7.84369607876235854894e14, 8.95222336184627338078e16, 5.32278620332680085395e18)  # fmt: skip
_Y0_YP = (1.55924367855235737965e04, -1.46639295903971606143e07, 5.43526477051876500413e09, -9.82136065717911466409e11,
          8.75906394395366999549e13, -3.46628303384729719441e15, 4.42733268572569800351e16, -1.84950800436986690637e16)  # fmt: skip
_Y0_YQ = (1.04128353664259848412e03, 6.26107330137134956842e05, 2.68919633393814121987e08, 8.64002487103935000337e10,
          2.02979612750105546709e13, 3.17157752842975028269e15, 2.50596256172653059228e17)  # fmt: skip
_Y1_YP = (1.26320474790178026440e09, -6.47355876379160291031e11, 1.14509511541823727583e14, -8.12770255501325109621e15,
          2.02439475713594898196e17, -7.78877196265950026825e17)  # fmt: skip
_Y1_YQ = (5.94301592346128195359e02, 2.35564092943068577943e05, 7.34811944459721705660e07, 1.87601316108706159478e10,
          3.88231277496238566008e12, 6.20557727146953693363e14, 6.87141087355300489866e16, 3.97270608116560655612e18)  # fmt: skip
#: J0's and J1's first two zeros squared
_J0_ZEROS = (5.78318596294678452118e00, 3.04712623436620863991e01)
_J1_ZEROS = (1.46819706421238932572e01, 4.92184563216946036703e01)
_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448


def _hankel(ctx: ImportContext, x: SSAValue, order: int, second_kind: bool) -> SSAValue:
    """The asymptotic form for x > 5 (x = |x| for J): J has ``P cos - 5/x Q sin``, Y
    ``P sin + 5/x Q cos``, both at ``x - pi/4`` (order 0) or ``x - 3 pi/4`` (order 1)."""
    g, c = ctx.b, _const(ctx, x)
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    # torch's 25/(x*x) for order 0, (5/x)*(5/x) for order 1
    z = g.div(c(25.0), g.mul(x, x)) if order == 0 else g.mul(g.div(c(5.0), x), g.div(c(5.0), x))
    p = g.div(_polynomial(ctx, z, pp), _polynomial(ctx, z, pq))
    q = g.mul(g.div(c(5.0), x), g.div(_polynomial(ctx, z, qp), _polynomial(ctx, z, qq)))
    phase = g.sub(x, c(math.pi / 4 if order == 0 else 3 * math.pi / 4))
    sin, cos = g.sin(phase), g.cos(phase)
    wave = g.add(g.mul(p, sin), g.mul(q, cos)) if second_kind else g.sub(g.mul(p, cos), g.mul(q, sin))
    return g.div(g.mul(wave, c(_SQRT_2_OVER_PI)), g.sqrt(x))


def _bessel_j0(ctx: ImportContext, x: SSAValue) -> SSAValue:
    g, c = ctx.b, _const(ctx, x)
    x = g.abs(x)
    xx = g.mul(x, x)
    rational = g.div(_polynomial(ctx, xx, _J0_RP), _polynomial(ctx, xx, _J0_RQ))
    small = g.mul(g.mul(g.sub(xx, c(_J0_ZEROS[0])), g.sub(xx, c(_J0_ZEROS[1]))), rational)
    small = g.where(g.compare(x, c(1e-5), "lt"), g.sub(c(1.0), g.div(xx, c(4.0))), small)
    return g.where(g.compare(x, c(5.0), "le"), small, _hankel(ctx, x, 0, second_kind=False))


def _bessel_j1(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """Odd: J1(-x) = -J1(x)."""
    g, c = ctx.b, _const(ctx, x)
    a = g.abs(x)
    xx = g.mul(a, a)
    rational = g.div(_polynomial(ctx, xx, _J1_RP), _polynomial(ctx, xx, _J1_RQ))
    small = g.mul(g.mul(g.mul(rational, a), g.sub(xx, c(_J1_ZEROS[0]))), g.sub(xx, c(_J1_ZEROS[1])))
    return _odd(ctx, x, g.where(g.compare(a, c(5.0), "le"), small, _hankel(ctx, a, 1, second_kind=False)))


def _bessel_y(ctx: ImportContext, x: SSAValue, order: int) -> SSAValue:
    """Y0 = R(x*x) + 2/pi log(x) J0(x) and Y1 = x R(x*x) + 2/pi (J1(x) log(x) - 1/x) up to 5;
    -inf at 0, NaN below."""
    g, c = ctx.b, _const(ctx, x)
    xx = g.mul(x, x)
    if order == 0:
        rational = g.div(_polynomial(ctx, xx, _Y0_YP), _polynomial(ctx, xx, _Y0_YQ))
        small = g.add(rational, g.mul(g.mul(c(_TWO_OVER_PI), g.log(x)), _bessel_j0(ctx, x)))
    else:
        rational = g.mul(x, g.div(_polynomial(ctx, xx, _Y1_YP), _polynomial(ctx, xx, _Y1_YQ)))
        j1_log = g.sub(g.mul(_bessel_j1(ctx, x), g.log(x)), g.div(c(1.0), x))
        small = g.add(rational, g.mul(c(_TWO_OVER_PI), j1_log))
    value = g.where(g.compare(x, c(5.0), "le"), small, _hankel(ctx, x, order, second_kind=True))
    return _select(ctx, [(g.compare(x, c(0.0), "eq"), c(-np.inf)), (g.compare(x, c(0.0), "lt"), c(np.nan))], value)


_unary("aten.special_bessel_j0.default")(_bessel_j0)
_unary("aten.special_bessel_j1.default")(_bessel_j1)
_unary("aten.special_bessel_y0.default")(lambda ctx, x: _bessel_y(ctx, x, 0))
_unary("aten.special_bessel_y1.default")(lambda ctx, x: _bessel_y(ctx, x, 1))

#: sin(x)/x's Taylor series in x*x, below |x| = 0.5
_SINC_SERIES = tuple(float((-1) ** k / math.factorial(2 * k + 1)) for k in range(6, -1, -1))


@_unary("aten.special_spherical_bessel_j0.default")
def _spherical_bessel_j0(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """sin(x)/x: its series below 0.5, 0 at +-inf."""
    g, c = ctx.b, _const(ctx, x)
    a = g.abs(x)
    series = _polynomial(ctx, g.mul(x, x), _SINC_SERIES)
    value = g.where(g.compare(a, c(0.5), "lt"), series, g.div(g.sin(x), x))
    return g.where(g.compare(a, c(np.inf), "eq"), c(0.0), value)


# ---------------------------------------------------------------------------
# ndtri, erfcx

_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1, 1.39312609387279679503e1,
             -1.23916583867381258016e0)  # fmt: skip
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1, -2.25462687854119370527e2,
             2.00260212380060660359e2, -8.20372256168333339912e1, 1.59056225126211695515e1, -1.18331621121330003142e0)  # fmt: skip
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1, 4.40805073893200834700e1,
             1.46849561928858024014e1, 2.18663306850790267539e0, -1.40256079171354495875e-1, -3.50424626827848203418e-2,
             -8.57456785154685413611e-4)  # fmt: skip
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1, 1.50425385692907503408e1,
             2.50464946208309415979e0, -1.42182922854787788574e-1, -3.80806407691578277194e-2, -9.33259480895457427372e-4)  # fmt: skip
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0, 1.33303460815807542389e0,
             2.01485389549179081538e-1, 1.23716634817820021358e-2, 3.01581553508235416007e-4, 2.65806974686737550832e-6,
             6.23974539184983293730e-9)  # fmt: skip
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0, 2.16236993594496635890e-1,
             1.34204006088543189037e-2, 3.28014464682127739104e-4, 2.89247864745380683936e-6, 6.79019408009981274425e-9)  # fmt: skip
_EXP_MINUS_2 = 0.13533528323661269189
_SQRT_2PI = 2.50662827463100050242


@_unary("aten.special_ndtri.default")
def _ndtri(ctx: ImportContext, y0: SSAValue) -> SSAValue:
    """The inverse of the standard normal CDF (Cephes): a rational function of (y - 1/2)**2 in
    the middle, ``t - log(t)/t - R(1/t)`` with ``t = sqrt(-2 log y)`` in the tails (y or 1 - y
    below exp(-2)), two tables split at t = 8; -inf at 0, inf at 1, NaN outside [0, 1]."""
    g, c = ctx.b, _const(ctx, y0)
    upper = g.compare(y0, c(1.0 - _EXP_MINUS_2), "gt")
    y = g.where(upper, g.sub(c(1.0), y0), y0)
    middle = g.sub(y0, c(0.5))
    m2 = g.mul(middle, middle)
    ratio = g.div(g.mul(m2, _polynomial(ctx, m2, _NDTRI_P0)), _polynomial(ctx, m2, _NDTRI_Q0))
    central = g.mul(g.add(middle, g.mul(middle, ratio)), c(_SQRT_2PI))
    t = g.sqrt(g.mul(c(-2.0), g.log(y)))
    t0 = g.sub(t, g.div(g.log(t), t))
    z = g.div(c(1.0), t)
    near = g.div(g.mul(z, _polynomial(ctx, z, _NDTRI_P1)), _polynomial(ctx, z, _NDTRI_Q1))
    far = g.div(g.mul(z, _polynomial(ctx, z, _NDTRI_P2)), _polynomial(ctx, z, _NDTRI_Q2))
    tail = g.sub(t0, g.where(g.compare(t, c(8.0), "lt"), near, far))
    tail = g.where(upper, tail, g.neg(tail))
    value = g.where(g.compare(y, c(_EXP_MINUS_2), "gt"), central, tail)
    outside = _or(ctx, g.compare(y0, c(0.0), "lt"), g.compare(y0, c(1.0), "gt"))
    return _select(
        ctx,
        [(g.compare(y0, c(0.0), "eq"), c(-np.inf)), (g.compare(y0, c(1.0), "eq"), c(np.inf)), (outside, c(np.nan))],
        value,
    )  # fmt: skip


#: erfcx: exp(x*x) erfc(x) below this, the continued fraction (this many terms) above
_ERFCX_SPLIT = 5.0
_ERFCX_FRACTION_TERMS = 20
#: x = high + low with high on a grid of 2**-20: high*high is exact below 2**5
_ERFCX_GRID = 2.0**20


def _exp_square(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """``exp(x*x)`` without the rounding of ``x*x`` (which would cost ``x*x`` ulp): ``x`` split
    into ``high`` (20 fraction bits) and ``low``; ``high**2`` is exact, the rest small."""
    g, c = ctx.b, _const(ctx, x)
    high = g.div(g.floor(g.mul(x, c(_ERFCX_GRID))), c(_ERFCX_GRID))
    low = g.sub(x, high)
    rest = g.mul(low, g.add(g.mul(c(2.0), high), low))
    return g.mul(g.exp(g.mul(high, high)), g.exp(rest))


def _erfcx_positive(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """erfcx(x) for x >= 0 (NaN kept)."""
    g, c = ctx.b, _const(ctx, x)
    near = g.mul(_exp_square(ctx, g.min(x, c(_ERFCX_SPLIT))), g.erfc(x))
    t = x
    for k in range(_ERFCX_FRACTION_TERMS, 0, -1):
        t = g.add(x, g.div(c(k / 2), t))
    far = g.div(c(1 / math.sqrt(math.pi)), t)
    return g.where(g.compare(x, c(_ERFCX_SPLIT), "lt"), near, far)


def _erfcx(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """``exp(x*x) erfc(x)``, in float64; for x < 0 ``2 exp(x*x) - erfcx(-x)`` (inf below
    about -26.6, where exp(x*x) overflows)."""
    wide = ctx.cast(x, F64)
    g, c = ctx.b, _const(ctx, wide)
    a = g.abs(wide)
    positive = _erfcx_positive(ctx, a)
    negative = g.sub(g.mul(c(2.0), _exp_square(ctx, g.min(a, c(30.0)))), positive)
    value = g.where(g.compare(wide, c(0.0), "lt"), negative, positive)
    return ctx.cast(value, _dtype_of(x))


_unary("aten.special_erfcx.default")(_erfcx)


# ---------------------------------------------------------------------------
# Airy's Ai: Cephes' rational asymptotic forms outside [-2.09, 2.09), the power series
# f(z) - c g(z) (z = x^3) inside, its loop unrolled

_AIRY_AN = (
    3.46538101525629032477e-01, 1.20075952739645805542e01, 7.62796053615234516538e01, 1.68089224934630576269e02,
    1.59756391350164413639e02, 7.05360906840444183113e01, 1.40264691163389668864e01, 9.99999999999999995305e-01,
)  # fmt: skip
_AIRY_AD = (
    5.67594532638770212846e-01, 1.47562562584847203173e01, 8.45138970141474626562e01, 1.77318088145400459522e02,
    1.64234692871529701831e02, 7.14778400825575695274e01, 1.40959135607834029598e01, 1.00000000000000000470e00,
)  # fmt: skip
_AIRY_AFN = (
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01, -2.79779981545119124951e-01,
    -4.91900132609500318020e-02, -4.06265923594885404393e-03, -1.59276496239262096340e-04, -2.77649108155232920844e-06,
    -1.67787698489114633780e-08,
)  # fmt: skip
_AIRY_AFD = (
    1.33560420706553243746e01, 3.26825032795224613948e01, 2.67367040941499554804e01, 9.18707402907259625840e00,
    1.47529146771666414581e00, 1.15687173795188044134e-01, 4.40291641615211203805e-03, 7.54720348287414296618e-05,
    4.51850092970580378464e-07,
)  # fmt: skip
_AIRY_AGN = (
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e00, 9.39169229816650230044e-01,
    3.51465656105547619242e-01, 6.33888919628925490927e-02, 5.85804113048388458567e-03, 2.82851600836737019778e-04,
    6.98793669997260967291e-06, 8.11789239554389293311e-08, 3.41551784765923618484e-10,
)  # fmt: skip
_AIRY_AGD = (
    9.30892908077441974853e00, 1.98352928718312140417e01, 1.55646628932864612953e01, 5.47686069422975497931e00,
    9.54293611618961883998e-01, 8.64580826352392193095e-02, 4.12656523824222607191e-03, 1.01259085116509135510e-04,
    1.17166733214413521882e-06, 4.91834570062930015649e-09,
)  # fmt: skip
_FRAC_1_SQRT_PI = 5.64189583547756286948e-01
#: the power series' steps: torch's loop (until a term is below 1.1e-16 of the sum) takes at
#: most 14 on [-2.09, 2.09] in float32 and float64 (measured on 20001 points)
_AIRY_SERIES_STEPS = 16


@_unary("aten.special_airy_ai.default")
def _airy_ai(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """Ai(x) by torch's algorithm (Cephes): for ``x < -2.09`` a modulus-phase form
    (``sin``/``cos`` of ``2/3 |x|^1.5 + pi/4`` with rationals in ``z^2``), for ``x >= 2.09`` the
    decaying form ``an/ad / (2 x^(1/4) e^zeta)``, else Maclaurin's series
    ``0.355 f - 0.259 g`` summed until a term is below 1.1e-16 of ``f``; infinities NaN,
    0 above 103.892 (where ``e^-zeta`` underflows)."""
    g, c = ctx.b, _const(ctx, x)
    root = g.sqrt(g.abs(x))
    # x < -2.09
    zeta_neg = g.div(g.mul(g.mul(c(-2.0), x), root), c(3.0))
    z = g.div(c(1.0), zeta_neg)
    zz = g.mul(z, z)
    afn, afd = _polynomial(ctx, zz, _AIRY_AFN), _polynomial(ctx, zz, _AIRY_AFD)
    agn, agd = _polynomial(ctx, zz, _AIRY_AGN), _polynomial(ctx, zz, _AIRY_AGD)
    t = g.add(zeta_neg, c(0.25 * 3.14159265358979323846))
    wave = g.sub(
        g.mul(g.sin(t), g.add(c(1.0), g.div(g.mul(zz, afn), afd))), g.mul(g.cos(t), g.mul(z, g.div(agn, agd)))
    )
    negative = g.mul(g.div(c(_FRAC_1_SQRT_PI), g.sqrt(root)), wave)
    # x >= 2.09
    zeta = g.div(g.mul(g.mul(c(2.0), x), root), c(3.0))
    inverse = g.div(c(1.0), zeta)
    ratio = g.div(_polynomial(ctx, inverse, _AIRY_AN), _polynomial(ctx, inverse, _AIRY_AD))
    positive = g.div(g.mul(c(_FRAC_1_SQRT_PI), ratio), g.mul(g.mul(c(2.0), g.sqrt(root)), g.exp(zeta)))
    # the series: each step runs while the last term is not below 1.1e-16 of f (torch's loop)
    f, s, k, m, n, done = c(1.0), x, c(1.0), c(1.0), x, g.compare(c(1.0), c(0.0), "lt")
    cube = g.mul(g.mul(x, x), x)
    for _ in range(_AIRY_SERIES_STEPS):
        m = g.div(g.mul(m, cube), g.add(k, c(1.0)))
        n = g.div(g.mul(n, cube), g.add(k, c(2.0)))
        m = g.div(m, g.add(k, c(2.0)))
        n = g.div(n, g.add(k, c(3.0)))
        f, s = g.where(done, f, g.add(f, m)), g.where(done, s, g.add(s, n))
        k = g.add(k, c(3.0))
        done = _or(ctx, done, g.compare(g.abs(g.div(m, f)), c(1.11022302462515654042e-16), "le"))
    series = g.sub(g.mul(c(0.355028053887817239260), f), g.mul(c(0.258819403792806798405), s))
    value = g.where(g.compare(x, c(-2.09), "lt"), negative, g.where(g.compare(x, c(2.09), "ge"), positive, series))
    infinite = g.compare(g.abs(x), c(np.inf), "eq")
    return _select(ctx, [(infinite, c(np.nan)), (g.compare(x, c(103.892), "gt"), c(0.0))], value)
