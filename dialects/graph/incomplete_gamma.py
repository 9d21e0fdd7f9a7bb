"""The regularized incomplete gamma functions ``P(a, x)`` (``kind = "lower"``,
``torch.special.gammainc``, ``aten.igamma``) and ``Q(a, x) = 1 - P(a, x)`` (``"upper"``,
``gammaincc``, ``aten.igammac``), following torch's CPU algorithm (ATen/native/Math.h,
after SciPy and Cephes) step for step: the same boundary values, the same choice between
four methods by ``(a, x)`` and the same iteration limits and tolerances per dtype:

* ``P`` by its power series (DLMF 8.11.4) for ``x`` up to about ``a``;
* ``Q`` by a series avoiding cancellation (DLMF 8.7.3) for small ``x``, by Legendre's
  continued fraction (DLMF 8.9.2) for ``x > 1.1`` above ``a``; the other one as ``1 -`` it;
* Temme's uniform asymptotic expansion (DLMF 8.12.3/8.12.4) where ``a > 20`` and ``x`` is
  near ``a``, its coefficients generated exactly by ``tools/temme_coefficients.py``.

The prefactor ``x^a e^-x / Gamma(a)`` uses Boost's Lanczos approximation near ``x = a``.
Differences from torch's code: Temme's ``c_k(eta)`` is summed to its last term (torch stops
at the first term below the working precision: a difference in the last bits); a float32
computes in float32 throughout (torch mixes in a few double constants).

Each element runs one of the three loops (the others get no steps; see
``iterative.py``) and the asymptotic expansion only where it is chosen::

    %p = graph.incomplete_gamma %a, %x {kind = "lower"} : tensor<7xf64>, tensor<7xf64> -> tensor<7xf64>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.irdl import irdl_op_definition

from .iterative import Arithmetic, IterativeOp, Value, any_of, first_case, isinf, only_where
from .temme_coefficients import D

MAX_ITERATIONS = 2000
#: per dtype: the series' and continued fraction's relative tolerance, ``log`` of the
#: smallest normal, and the continued fraction's rescaling bound and its inverse
_MACHEP = {np.dtype(np.float64): 1.11022302462515654042e-16, np.dtype(np.float32): 5.9604644775390625e-8}
_MAXLOG = {np.dtype(np.float64): 7.09782712893383996843e2, np.dtype(np.float32): 88.72283905206835}
_BIG = {np.dtype(np.float64): 4.503599627370496e15, np.dtype(np.float32): 16777216.0}
_BIG_INVERSE = {np.dtype(np.float64): 2.22044604925031308085e-16, np.dtype(np.float32): 5.9604644775390625e-8}

_LANCZOS_G = 6.024680040776729583740234375
#: Boost's Lanczos sum ``L(a) e^g / ...`` (lanczos13m53) as a ratio of polynomials in ``a``
_LANCZOS_NUMERATOR = (
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859,
)  # fmt: skip
_LANCZOS_DENOMINATOR = (
    1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0, 150917976.0,
    120543840.0, 39916800.0, 0.0,
)  # fmt: skip
#: the terms of Temme's sum that can matter: where it is used (``a > 20``, ``|eta| < 0.34``),
#: ``|c_k(eta)| a^-k`` is below 2e-18 from ``k = 13`` on (2e-10 from ``k = 7``) while the sum
#: is about 1/3 (measured over the range; torch's loop would add them, changing nothing)
_TEMME_TERMS = {np.dtype(np.float64): 13, np.dtype(np.float32): 7}
#: ``2 pi`` as torch computes it (``2 * c10::pi<float>``: float's pi, also for double)
_TWO_PI = 2.0 * float(np.float32(math.pi))


def _horner(coefficients, y: Value) -> Value:
    """``c[0] y^(n-1) + ... + c[n-1]`` (at least two coefficients)."""
    result = y * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        result = result * y + c
    return result


def _lanczos_sum(m: Arithmetic, a: Value) -> Value:
    """The Lanczos ratio at ``a > 0``: in powers of ``1/a`` above 1 (Cephes' ``ratevl``)."""
    inverse = 1.0 / a
    large = _horner(_LANCZOS_NUMERATOR[::-1], inverse) / _horner(_LANCZOS_DENOMINATOR[::-1], inverse)
    small = _horner(_LANCZOS_NUMERATOR, a) / _horner(_LANCZOS_DENOMINATOR, a)
    return m.where(abs(a) > 1.0, large, small)


def _prefactor(m: Arithmetic, a: Value, x: Value) -> Value:
    """``x^a e^-x / Gamma(a)``: directly away from ``x = a``, by the Lanczos approximation near it."""
    direct = a * m.log(x) - x - m.lgamma(a)
    direct = m.where(direct < -_MAXLOG[m.dtype], 0.0, m.exp(direct))
    fac = a + _LANCZOS_G - 0.5
    res = m.sqrt(fac / math.e) / _lanczos_sum(m, a)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    near = m.where(
        (a < 200.0) & (x < 200.0),
        res * (m.exp(a - x) * m.pow(x / fac, a)),
        res * m.exp(a * (m.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac),
    )
    return m.where(abs(a - x) > 0.4 * abs(a), direct, near)


def _lower_series(m: Arithmetic, a: Value, x: Value, ax: Value, run: Value) -> Value:
    """``P`` by ``ax / a * sum_k x^k / ((a + 1) ... (a + k))`` (where ``run``)."""
    machep = _MACHEP[m.dtype]

    def step(k, r, c, total):
        r = r + 1.0
        c = c * (x / r)
        return r, c, total + c

    _, _, total = m.iterate(
        (a, 1.0, 1.0), step, m.where(run, float(MAX_ITERATIONS), 0.0), lambda r, c, total: c <= machep * total,
        MAX_ITERATIONS,
    )  # fmt: skip
    return m.where(ax == 0.0, 0.0, total * ax / a)


def _upper_series(m: Arithmetic, a: Value, x: Value, run: Value) -> Value:
    """``Q`` by DLMF 8.7.3, its sum ``sum_n (-x)^n / (n! (a + n))`` (where ``run``)."""
    machep = _MACHEP[m.dtype]

    def step(n, fac, term, total):
        fac = fac * (-x / n)
        return fac, fac / (a + n), total + fac / (a + n)

    _, _, total = m.iterate(
        (1.0, 1.0, 0.0), step, m.where(run, float(MAX_ITERATIONS - 1), 0.0),
        lambda fac, term, total: abs(term) <= machep * abs(total), MAX_ITERATIONS,
    )  # fmt: skip
    log_x = m.log(x)
    return -m.expm1(a * log_x - m.lgamma(1.0 + a)) - m.exp(a * log_x - m.lgamma(a)) * total


def _upper_continued_fraction(m: Arithmetic, a: Value, x: Value, ax: Value, run: Value) -> Value:
    """``Q`` by Legendre's continued fraction, its convergents ``p_k / q_k`` rescaled when
    ``|p_k|`` grows past BIG (where ``run``)."""
    machep, big, big_inverse = _MACHEP[m.dtype], _BIG[m.dtype], _BIG_INVERSE[m.dtype]

    def step(k, c, y, z, pkm2, pkm1, qkm2, qkm1, ans, t):
        c, y, z = c + 1.0, y + 1.0, z + 2.0
        yc = y * c
        pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
        nonzero = qk != 0.0
        r = pk / qk
        t = m.where(nonzero, abs((ans - r) / r), 1.0)
        ans = m.where(nonzero, r, ans)
        scale = m.where(abs(pk) > big, big_inverse, 1.0)
        return c, y, z, pkm1 * scale, pk * scale, qkm1 * scale, qk * scale, ans, t

    y = 1.0 - a
    z = x + y + 1.0
    state = (0.0, y, z, 1.0, x + 1.0, x, z * x, (x + 1.0) / (z * x), 1.0)
    *_, ans, _ = m.iterate(state, step, m.where(run, float(MAX_ITERATIONS), 0.0), lambda *s: s[-1] <= machep, MAX_ITERATIONS)
    return m.where(ax == 0.0, 0.0, ans * ax)


def _asymptotic(m: Arithmetic, a: Value, x: Value, lower: bool) -> Value:
    """Temme's expansion: ``1/2 erfc(s eta sqrt(a/2)) + s e^(-a eta^2/2) / sqrt(2 pi a) sum_k c_k(eta) a^-k``
    (``s`` -1 for ``P``, 1 for ``Q``), the sum stopped where its terms grow or stop mattering."""
    machep, sign = _MACHEP[m.dtype], (-1.0 if lower else 1.0)
    sigma = (x - a) / a
    lam = x / a
    magnitude = m.sqrt(-2.0 * (m.log1p(sigma) - sigma))
    eta = m.where(lam > 1.0, magnitude, m.where(lam < 1.0, -magnitude, 0.0))
    terms = (_horner(row[::-1], eta) for row in D[: _TEMME_TERMS[m.dtype]])
    total = next(terms)
    # torch's checks after the first term (of |term| growing past inf, of it being below
    # MACHEP of the sum that is itself): never true, but values of the arithmetic's kind
    done, previous, afac = abs(total) < machep * abs(total), abs(total), 1.0 / a
    for ck in terms:
        term = ck * afac
        grows = abs(term) > previous
        total = m.where(done | grows, total, total + term)
        done = done | grows | (abs(term) < machep * abs(total))
        previous, afac = abs(term), afac / a
    res = 0.5 * m.erfc(sign * eta * m.sqrt(a / 2.0))
    return res + sign * m.exp(-0.5 * a * eta * eta) * total / m.sqrt(_TWO_PI * a)


def _near_the_mean(m: Arithmetic, a: Value, x: Value) -> Value:
    """Where Temme's expansion is used: ``a`` large and ``x`` within ``O(a)`` (``O(sqrt a)``) of it."""
    distance = abs(x - a) / a
    return ((a > 20.0) & (a < 200.0) & (distance < 0.3)) | ((a > 200.0) & (distance < 4.5 / m.sqrt(a)))


def incomplete_gamma(m: Arithmetic, a: Value, x: Value, upper: bool) -> Value:
    """``Q(a, x)`` if ``upper`` else ``P(a, x)``, elementwise in the arithmetic ``m``."""
    nan = math.nan
    boundary = [
        ((x < 0.0) | (a < 0.0), nan),
        (a == 0.0, m.where(x > 0.0, 0.0 if upper else 1.0, nan)),
        (x == 0.0, 1.0 if upper else 0.0),
        (isinf(m, a), m.where(isinf(m, x), nan, 1.0 if upper else 0.0)),
        (isinf(m, x), 0.0 if upper else 1.0),
        (m.isnan(a) | m.isnan(x), nan),  # (a NaN reaches torch's methods, which give NaN)
    ]
    asymptotic = _near_the_mean(m, a, x)
    # which side each element computes directly (torch's calc_igamma / calc_igammac past the
    # above): Q by its continued fraction or series, or P by its series
    if upper:
        upper_side = m.where(x > 1.1, ~(x < a), m.where(x <= 0.5, ~(-0.4 / m.log(x) < a), ~(x * 1.1 < a)))
    else:
        upper_side = (x > 1.0) & (x > a)
    fraction = upper_side & (x > 1.1)
    loops = ~any_of([asymptotic, *(condition for condition, _ in boundary)])
    # each method, its prefactor and closing terms only where it is chosen
    by_fraction, by_upper_series, by_lower_series = loops & fraction, loops & upper_side & ~fraction, loops & ~upper_side
    q = m.where(
        fraction,
        only_where(m, by_fraction, lambda: _upper_continued_fraction(m, a, x, _prefactor(m, a, x), by_fraction)),
        only_where(m, by_upper_series, lambda: _upper_series(m, a, x, by_upper_series)),
    )
    p = only_where(m, by_lower_series, lambda: _lower_series(m, a, x, _prefactor(m, a, x), by_lower_series))
    value = m.where(upper_side, q, 1.0 - p) if upper else m.where(upper_side, 1.0 - q, p)
    value = m.where(asymptotic, only_where(m, asymptotic, lambda: _asymptotic(m, a, x, lower=not upper)), value)
    return first_case(m, boundary, value)


@irdl_op_definition
class IncompleteGammaOp(IterativeOp):
    """The regularized incomplete gamma function of ``kind`` ``"lower"`` (``P(a, x)``) or
    ``"upper"`` (``Q(a, x)``) for each ``a`` and ``x``, broadcast together; float element types.

    Example: ``%q = graph.incomplete_gamma %a, %x {kind = "upper"} : tensor<5xf32>, tensor<f32> -> tensor<5xf32>``
    """

    name = "graph.incomplete_gamma"
    KINDS: ClassVar[Sequence[str]] = ("lower", "upper")
    KIND_NOUN: ClassVar[str] = "incomplete gamma function"

    @classmethod
    def evaluate(cls, kind: str, m: Arithmetic, a: Value, x: Value) -> Value:
        return incomplete_gamma(m, a, x, upper=kind == "upper")


__all__ = ["IncompleteGammaOp", "incomplete_gamma"]
