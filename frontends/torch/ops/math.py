"""Elementwise math ATen ops: trigonometry, exp/log variants, rounding, remainders, sign, NaN/inf tests.

Those with a graph op of their own (sin, cos, tan, atan, atan2, log1p, expm1, exp2, log2, log10,
ceil, trunc, fmod) map to it; the rest compose graph ops with torch's exact semantics:
``remainder`` takes the divisor's sign (``fmod`` plus the divisor where the signs differ, as
torch computes it), ``sign(0) = sign(nan) = 0``, ``hypot`` neither overflows nor underflows,
``nan_to_num`` defaults to the dtype's largest and smallest values. Integer remainders are
exact; torch raises for an integer divisor of 0, where these give 0.
"""

from __future__ import annotations

import numpy as np

from ..context import ImportContext
from ..registry import converter
from .elementwise import _operand


def _floating(ctx: ImportContext, node) -> bool:
    return bool(np.issubdtype(ctx.dtype(node), np.floating))


# ---------------------------------------------------------------------------
# graph ops of their own

_UNARY = {
    "sin": "sin", "cos": "cos", "tan": "tan", "atan": "atan", "log1p": "log1p", "expm1": "expm1",
    "exp2": "exp2", "log2": "log2", "log10": "log10",
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
    if not np.issubdtype(dtype, np.floating):
        return x
    info = np.finfo(dtype)
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
