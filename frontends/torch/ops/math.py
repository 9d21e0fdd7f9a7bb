"""Elementwise math ATen ops: trigonometry, hyperbolic functions, exp/log variants, erfc/erfinv,
lgamma, rounding, remainders, sign, NaN/inf tests.

Those with a graph op of their own (sin, cos, tan, atan, atan2, asin, acos, sinh, cosh, asinh,
acosh, atanh, log1p, expm1, exp2, log2, log10, erfc, lgamma, ceil, trunc, fmod, copysign) map to
it: each is the C library's function, accurate where a composition of exp/log/sqrt would
cancel (asin/acos near +-1, sinh/asinh/atanh near 0, erfc for large x). The rest compose graph
ops with torch's exact semantics: ``remainder`` takes the divisor's sign (``fmod`` plus the
divisor where the signs differ, as torch computes it), ``sign(0) = sign(nan) = 0``, ``hypot``
neither overflows nor underflows, ``nan_to_num`` defaults to the dtype's largest and smallest
values, ``round(x, decimals)`` scales by ``10**decimals`` as torch does, ``erfinv`` refines a
rational first guess by Newton steps on erf (erfc in the tails). Integer remainders are exact;
torch raises for an integer divisor of 0, where these give 0.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import is_float_dtype, numpy_dtype
from ..context import ImportContext, opmath_dtype
from ..registry import converter
from .elementwise import _operand


def _floating(ctx: ImportContext, node) -> bool:
    return is_float_dtype(ctx.dtype(node))


# ---------------------------------------------------------------------------
# graph ops of their own

_UNARY = {
    "sin": "sin", "cos": "cos", "tan": "tan", "atan": "atan", "log1p": "log1p", "expm1": "expm1",
    "exp2": "exp2", "log2": "log2", "log10": "log10", "asin": "asin", "acos": "acos", "sinh": "sinh",
    "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erfc": "erfc", "lgamma": "lgamma",
}  # fmt: skip

for _aten, _method in _UNARY.items():
    # integer operands give floats (torch.sin(int_tensor) is float32): cast to the result first
    converter(f"aten.{_aten}.default")(
        (lambda method: lambda ctx, node, x: getattr(ctx.b, method)(ctx.cast(x, ctx.dtype(node))))(_method)
    )


def _rounding(method: str):
    def convert(ctx: ImportContext, node, x):
        # integers are already whole: torch returns them unchanged
        return getattr(ctx.b, method)(x) if _floating(ctx, node) else x

    return convert


converter("aten.ceil.default")(_rounding("ceil"))
converter("aten.trunc.default")(_rounding("trunc"))


@converter("aten.atan2.default")
def atan2(ctx: ImportContext, node, y, x):
    return ctx.b.atan2(_operand(ctx, node, y, x), _operand(ctx, node, x, y))


@converter("aten.fmod.Tensor", "aten.fmod.Scalar")
def fmod(ctx: ImportContext, node, a, b):
    return ctx.b.fmod(_operand(ctx, node, a, b), _operand(ctx, node, b, a))


@converter("aten.copysign.Tensor", "aten.copysign.Scalar")
def copysign(ctx: ImportContext, node, a, b):
    # integer operands give floats (torch promotes them to the default float type)
    return ctx.b.copysign(_operand(ctx, node, a, b), _operand(ctx, node, b, a))


# ---------------------------------------------------------------------------
# compositions


@converter("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor")
def remainder(ctx: ImportContext, node, a, b):
    """Python's ``%``: ``r = fmod(a, b)``, plus ``b`` where ``r`` is non-zero and its sign
    differs from ``b``'s (torch's own kernel, exact for floats and integers)."""
    g = ctx.b
    a, b = _operand(ctx, node, a, b), _operand(ctx, node, b, a)
    r = g.fmod(a, b)
    zero = ctx.scalar(0, r)
    signs_differ = g.compare(g.compare(r, zero, "lt"), g.compare(b, zero, "lt"), "ne")
    nonzero = g.compare(r, zero, "ne")
    return g.where(g.where(nonzero, signs_differ, nonzero), g.add(r, b), r)


def _euclid_steps(dtype: np.dtype) -> int:
    """Steps of Euclid's algorithm enough for any pair of ``dtype``: consecutive Fibonacci
    numbers take the most, one per Fibonacci number up to the largest value."""
    largest, previous, current, steps = int(np.iinfo(dtype).max), 1, 1, 1
    while current <= largest:
        previous, current, steps = current, previous + current, steps + 1
    return steps + 1


def _gcd(ctx: ImportContext, a: SSAValue, b: SSAValue) -> SSAValue:
    """torch's loop ``while a != 0: a, b = b % a, a`` on the absolute values (result ``b``),
    unrolled for the type's worst case, each step kept only while ``a != 0``."""
    g = ctx.b
    zero = ctx.scalar(0, a)
    a, b = g.abs(a), g.abs(b)
    for _ in range(_euclid_steps(numpy_dtype(a.type.element_type))):
        running = g.compare(a, zero, "ne")
        a, b = g.where(running, g.fmod(b, a), a), g.where(running, a, b)
    return b


@converter("aten.gcd.default")
def gcd(ctx: ImportContext, node, a, b):
    """The greatest common divisor of integers (``gcd(0, 0) = 0``)."""
    return _gcd(ctx, _operand(ctx, node, a, b), _operand(ctx, node, b, a))


@converter("aten.lcm.default")
def lcm(ctx: ImportContext, node, a, b):
    """``|a / gcd(a, b) * b|``, 0 where the gcd is (torch's, wrapping on overflow)."""
    g = ctx.b
    a, b = _operand(ctx, node, a, b), _operand(ctx, node, b, a)
    divisor = _gcd(ctx, a, b)
    zero = ctx.scalar(0, divisor)
    nonzero = g.compare(divisor, zero, "ne")
    dtype = numpy_dtype(a.type.element_type)
    # C's integer promotion: types narrower than int compute in int, then wrap back
    wide = np.dtype(np.int32) if dtype.itemsize < 4 else dtype
    quotient = ctx.cast(g.div(a, g.where(nonzero, divisor, ctx.scalar(1, divisor))), wide)
    product = ctx.cast(g.abs(g.mul(quotient, ctx.cast(b, wide))), dtype)
    return g.where(nonzero, product, zero)


@converter("aten.sign.default", "aten.sgn.default")
def sign(ctx: ImportContext, node, x):
    """``(x > 0) - (x < 0)`` in the input's type: 0 for zeros and NaN, as torch."""
    dtype = ctx.dtype(node)
    if dtype == np.bool_:
        return x
    zero = ctx.scalar(0, x)
    return ctx.b.sub(ctx.cast(ctx.b.compare(x, zero, "gt"), dtype), ctx.cast(ctx.b.compare(x, zero, "lt"), dtype))


@converter("aten.frac.default")
def frac(ctx: ImportContext, node, x):
    return ctx.b.sub(x, ctx.b.trunc(x))


@converter("aten.hypot.default")
def hypot(ctx: ImportContext, node, a, b):
    """``sqrt(a*a + b*b)`` as ``m * sqrt(1 + (n/m)**2)`` with ``m, n`` the larger and smaller
    magnitude, so that it neither overflows nor underflows; 0 where both are 0, inf where
    either is infinite (even if the other is NaN, as C's hypot)."""
    g = ctx.b
    a, b = g.abs(_operand(ctx, node, a, b)), g.abs(_operand(ctx, node, b, a))
    larger, smaller = g.max(a, b), g.min(a, b)
    ratio = g.div(smaller, larger)
    h = g.mul(larger, g.sqrt(g.add(ctx.scalar(1.0, ratio), g.mul(ratio, ratio))))
    inf, zero = ctx.scalar(np.inf, h), ctx.scalar(0.0, h)
    h = g.where(g.compare(larger, zero, "eq"), zero, h)
    return g.where(g.compare(a, inf, "eq"), inf, g.where(g.compare(b, inf, "eq"), inf, h))


@converter("aten.isnan.default")
def isnan(ctx: ImportContext, node, x):
    return ctx.b.compare(x, x, "ne")  # only NaN differs from itself (never true for integers)


@converter("aten.isinf.default")
def isinf(ctx: ImportContext, node, x):
    from ....dialects.graph.types import is_float

    if not is_float(x.type.element_type):
        return ctx.b.broadcast_to(ctx.b.constant(np.asarray(False)), ctx.shape(node))
    return ctx.b.compare(ctx.b.abs(x), ctx.scalar(np.inf, x), "eq")


@converter("aten.nan_to_num.default")
def nan_to_num(ctx: ImportContext, node, x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by default with 0 and the dtype's largest and smallest
    finite values); integer tensors unchanged."""
    dtype = ctx.dtype(node)
    if not is_float_dtype(dtype):
        return x
    info = ml_dtypes.finfo(dtype)
    g = ctx.b
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    y = g.where(g.compare(x, ctx.scalar(-np.inf, x), "eq"), ctx.scalar(neginf, x), x)
    y = g.where(g.compare(x, ctx.scalar(np.inf, x), "eq"), ctx.scalar(posinf, x), y)
    return g.where(isnan(ctx, node, x), ctx.scalar(nan, x), y)


@converter("aten.logit.default")
def logit(ctx: ImportContext, node, x, eps=None):
    """``log(x / (1 - x))``, with ``x`` first clamped to ``[eps, 1 - eps]`` when ``eps`` is
    given (NaN stays NaN)."""
    g = ctx.b
    x = ctx.cast(x, ctx.dtype(node))
    if eps is not None:
        x = g.min(g.max(x, ctx.scalar(eps, x)), ctx.scalar(1.0 - eps, x))
    return g.log(g.div(x, g.sub(ctx.scalar(1.0, x), x)))


@converter("aten.signbit.default")
def signbit(ctx: ImportContext, node, x):
    """The sign bit: true for -0.0 and for NaNs with it set, as torch (``copysign(1, x) < 0``);
    integers: ``x < 0``."""
    from ....dialects.graph.types import is_bool, is_float

    element = x.type.element_type
    if is_bool(element):
        return ctx.b.broadcast_to(ctx.b.constant(np.asarray(False)), ctx.shape(node))
    if is_float(element):
        x = ctx.b.copysign(ctx.scalar(1.0, x), x)
    return ctx.b.compare(x, ctx.scalar(0, x), "lt")


@converter("aten.ldexp.Tensor")
def ldexp(ctx: ImportContext, node, x, exponent):
    """``x * 2**exponent`` in the result's float type, as torch computes it (one product:
    ``2**exponent`` past the type's range is inf or 0 first)."""
    x = ctx.cast(x, ctx.dtype(node))
    return ctx.b.mul(x, ctx.b.exp2(ctx.cast(exponent, ctx.dtype(node))))


@converter("aten.frexp.Tensor")
def frexp(ctx: ImportContext, node, x):
    """``(m, e)`` with ``x = m * 2**e`` and ``0.5 <= |m| < 1`` (int32 ``e``); zeros give
    (0, 0), infinities and NaN themselves and 0, as C's frexp. ``e`` from ``log2|x|`` is
    corrected by one where that rounded across a power of two."""
    g = ctx.b
    magnitude = g.abs(x)
    e = g.add(g.floor(g.log2(magnitude)), ctx.scalar(1.0, x))
    finite = g.compare(magnitude, ctx.scalar(np.inf, x), "lt")
    nonzero = g.compare(magnitude, ctx.scalar(0.0, x), "gt")
    regular = g.bitwise_and(finite, nonzero)  # NaN compares false: not regular
    e = g.where(regular, e, ctx.scalar(0.0, x))

    def scaled(e):  # |x| * 2**-e, the power in two halves (2**149 overflows float32)
        half = g.trunc(g.div(e, ctx.scalar(2.0, e)))
        return g.mul(g.mul(magnitude, g.exp2(g.neg(half))), g.exp2(g.sub(half, e)))

    m = scaled(e)
    e = g.where(g.compare(m, ctx.scalar(1.0, m), "ge"), g.add(e, ctx.scalar(1.0, e)), e)
    e = g.where(g.compare(m, ctx.scalar(0.5, m), "lt"), g.sub(e, ctx.scalar(1.0, e)), e)
    e = g.where(regular, e, ctx.scalar(0.0, x))
    m = g.where(regular, g.copysign(scaled(e), x), x)
    return m, ctx.cast(e, np.dtype(np.int32))


@converter("aten.round.decimals")
def round_decimals(ctx: ImportContext, node, x, *, decimals=0):
    """torch's kernel, bit for bit: ``rint(x * 10**d) / 10**d`` (``rint(x / 10**-d) * 10**-d``
    for negative ``d``), ties to even after scaling, with ``10**d`` and the arithmetic in the
    "opmath" type (float32 for float16 and bfloat16)."""
    g = ctx.b
    dtype = ctx.dtype(node)
    opmath = opmath_dtype(dtype)
    wide = ctx.cast(x, opmath)
    with np.errstate(over="ignore"):  # 10**400: inf, as C's pow (then NaN or 0, as torch)
        scale = ctx.scalar(np.power(10.0, abs(decimals)), wide)
    if decimals >= 0:
        y = g.div(g.round(g.mul(wide, scale)), scale)
    else:
        y = g.mul(g.round(g.div(wide, scale)), scale)
    return ctx.cast(y, dtype)


# erfinv's first guess (Pavlis's rational approximations, as torch's calc_erfinv):
# y * P(y*y) / Q(y*y) for |y| <= 0.7, else C(t) / D(t) with t = sqrt(-log((1 - |y|) / 2));
# coefficients from the highest degree down, Q and D with a constant term of 1.
_ERFINV_CENTRAL = (
    (-0.140543331, 0.914624893, -1.645349621, 0.886226899),
    (0.012229801, -0.329097515, 1.442710462, -2.118377725, 1.0),
)
_ERFINV_TAIL = ((1.641345311, 3.429567803, -1.624906493, -1.970840454), (1.637067800, 3.543889200, 1.0))
_ERFINV_CENTRAL_RANGE = 0.7
#: Newton steps after the first guess (about 1e-3 off): 2 reach float32's precision, 3 float64's
_ERFINV_NEWTON_STEPS = {np.dtype(np.float32): 2, np.dtype(np.float64): 3}


def _polynomial(ctx: ImportContext, t, coefficients):
    """Horner's scheme."""
    g = ctx.b
    p = ctx.scalar(coefficients[0], t)
    for c in coefficients[1:]:
        p = g.add(g.mul(p, t), ctx.scalar(c, t))
    return p


@converter("aten.erfinv.default")
def erfinv(ctx: ImportContext, node, y):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside); libm has none. A rational
    first guess refined by Newton steps on ``erf(x) = y`` for ``|y| <= 0.7`` and, in the tails,
    on ``erfc(x) = 1 - |y|`` (exact there), which keeps full relative accuracy up to
    ``|y| = 1 - eps`` where ``erf(x) - y`` would cancel. Measured against scipy over 1e6
    points (a third near +-1, a third tiny): within 1.5 ulp in float32, 3 ulp in float64."""
    g = ctx.b
    dtype = ctx.dtype(node)
    opmath = np.dtype(np.float64 if dtype == np.float64 else np.float32)  # 16-bit floats in float32, as torch
    y = ctx.cast(y, opmath)
    a = g.abs(y)
    one = ctx.scalar(1.0, y)
    q = g.sub(one, a)  # exact for |y| >= 0.5 (Sterbenz)
    z = g.mul(y, y)
    central_guess = g.div(g.mul(y, _polynomial(ctx, z, _ERFINV_CENTRAL[0])), _polynomial(ctx, z, _ERFINV_CENTRAL[1]))
    t = g.sqrt(g.neg(g.log(g.mul(q, ctx.scalar(0.5, q)))))
    tail_guess = g.div(_polynomial(ctx, t, _ERFINV_TAIL[0]), _polynomial(ctx, t, _ERFINV_TAIL[1]))
    central = g.compare(a, ctx.scalar(_ERFINV_CENTRAL_RANGE, a), "le")
    x = g.where(central, central_guess, tail_guess)  # the tail solves for |x|
    two_over_sqrt_pi = ctx.scalar(2.0 / np.sqrt(np.pi), y)
    for _ in range(_ERFINV_NEWTON_STEPS[opmath]):
        residual = g.where(central, g.sub(g.erf(x), y), g.sub(q, g.erfc(x)))  # erf(x) - y, erf(|x|) - |y|
        slope = g.mul(two_over_sqrt_pi, g.exp(g.neg(g.mul(x, x))))
        x = g.sub(x, g.div(residual, slope))
    x = g.where(central, x, g.copysign(x, y))
    x = g.where(g.compare(a, one, "eq"), g.copysign(ctx.scalar(np.inf, y), y), x)
    return ctx.cast(g.where(g.compare(a, one, "gt"), ctx.scalar(np.nan, y), x), dtype)
