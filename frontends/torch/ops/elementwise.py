"""Elementwise ATen ops: arithmetic with tensor or scalar operands, math, comparisons."""

from __future__ import annotations

import math

import numpy as np

from ....dialects.graph.types import is_float_dtype
from ..context import ImportContext, numpy_dtype_of_torch, opmath_dtype
from ..registry import converter


def _operand(ctx: ImportContext, node, value, like):
    """A tensor operand in the type the op computes in: the result's dtype, float32 for
    a 16-bit float result (torch's opmath; the importer rounds the result); a Python
    scalar as a constant of that type (``x * 0.3`` on bfloat16 multiplies by 0.3, not by
    0.3 rounded to bfloat16, as torch); a size (a SymInt: its expression) computed at
    run time."""
    dtype = opmath_dtype(ctx.dtype(node))
    if isinstance(value, bool | int | float):
        return ctx.b.constant(np.asarray(value, dtype=dtype))
    if isinstance(value, str):
        return ctx.cast(ctx.size_value(value), dtype)
    return ctx.cast(value, dtype)


def _binary(method: str):
    def convert(ctx: ImportContext, node, a, b, alpha=1):
        a, b = _operand(ctx, node, a, b), _operand(ctx, node, b, a)
        if alpha != 1:
            b = ctx.b.mul(b, _operand(ctx, node, alpha, b))
        return getattr(ctx.b, method)(a, b)

    return convert


for _aten in ("add", "sub", "mul"):
    converter(f"aten.{_aten}.Tensor", f"aten.{_aten}.Scalar")(_binary(_aten))
converter("aten.maximum.default")(_binary("max"))
converter("aten.minimum.default")(_binary("min"))


@converter("aten.div.Tensor", "aten.div.Scalar")
def div(ctx: ImportContext, node, a, b):
    # true division: integer operands are promoted to the (float) result dtype first
    return ctx.b.div(_operand(ctx, node, a, b), _operand(ctx, node, b, a))


@converter("aten.div.Tensor_mode")
def div_mode(ctx: ImportContext, node, a, b, rounding_mode=None):
    a, b = _operand(ctx, node, a, b), _operand(ctx, node, b, a)
    q = ctx.b.div(a, b)
    if rounding_mode == "floor" and is_float_dtype(ctx.dtype(node)):
        return ctx.b.floor(q)
    if rounding_mode == "trunc" and is_float_dtype(ctx.dtype(node)):
        negative = ctx.b.compare(q, ctx.scalar(0, q), "lt")
        return ctx.b.where(negative, ctx.b.neg(ctx.b.floor(ctx.b.neg(q))), ctx.b.floor(q))
    if rounding_mode == "floor":
        # integers: q truncates; floor is one less where the remainder is nonzero and its sign
        # (the dividend's) differs from the divisor's
        remainder = ctx.b.sub(a, ctx.b.mul(q, b))
        zero = ctx.scalar(0, q)
        inexact = ctx.b.compare(remainder, zero, "ne")
        signs_differ = ctx.b.compare(ctx.b.compare(remainder, zero, "lt"), ctx.b.compare(b, zero, "lt"), "ne")
        return ctx.b.where(ctx.b.where(inexact, signs_differ, inexact), ctx.b.sub(q, ctx.scalar(1, q)), q)
    return q


@converter("aten.rsub.Scalar", "aten.rsub.Tensor")
def rsub(ctx: ImportContext, node, a, b, alpha=1):
    return _binary("sub")(ctx, node, b, a, alpha)


@converter("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def pow_(ctx: ImportContext, node, a, b):
    if np.issubdtype(ctx.dtype(node), np.integer):
        return _integer_pow(ctx, node, a, b)
    if isinstance(b, int | float) and b == 2:
        a = _operand(ctx, node, a, None)
        return ctx.b.mul(a, a)
    return ctx.b.pow(_operand(ctx, node, a, b), _operand(ctx, node, b, a))


def _integer_pow(ctx: ImportContext, node, a, b):
    """Integer powers (graph.pow is float only): a non-negative integer constant exponent by
    repeated squaring (wrapping on overflow as torch does); otherwise through float64, rounded
    (exact while the result is below 2**53)."""
    if isinstance(b, int) and not isinstance(b, bool) and b >= 0:
        base, result = _operand(ctx, node, a, None), None
        while b:
            if b & 1:
                result = base if result is None else ctx.b.mul(result, base)
            b >>= 1
            if b:
                base = ctx.b.mul(base, base)
        return result if result is not None else ctx.b.broadcast_to(ctx.scalar(1, base), ctx.shape(node))
    f64 = np.dtype(np.float64)
    a, b = (ctx.b.constant(np.asarray(v, f64)) if isinstance(v, int | float) else ctx.cast(v, f64) for v in (a, b))
    return ctx.cast(ctx.b.round(ctx.b.pow(a, b)), ctx.dtype(node))


_UNARY = {
    "neg": "neg", "abs": "abs", "relu": "relu", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "tanh": "tanh", "sigmoid": "sigmoid", "erf": "erf", "floor": "floor",
    "round": "round",
}  # fmt: skip

for _aten, _method in _UNARY.items():
    converter(f"aten.{_aten}.default")(
        (lambda method: lambda ctx, node, x: getattr(ctx.b, method)(ctx.cast(x, ctx.dtype(node))))(_method)
    )


@converter("aten.reciprocal.default")
def reciprocal(ctx: ImportContext, node, x):
    x = ctx.cast(x, ctx.dtype(node))
    return ctx.b.div(ctx.scalar(1.0, x), x)


@converter("aten.gelu.default")
def gelu(ctx: ImportContext, node, x, approximate="none"):
    b = ctx.b
    half = b.mul(x, ctx.scalar(0.5, x))
    if approximate == "tanh":
        inner = b.mul(b.add(x, b.mul(b.mul(b.mul(x, x), x), ctx.scalar(0.044715, x))), ctx.scalar(math.sqrt(2 / math.pi), x))
        return b.mul(half, b.add(b.tanh(inner), ctx.scalar(1.0, x)))
    return b.mul(half, b.add(b.erf(b.mul(x, ctx.scalar(1 / math.sqrt(2), x))), ctx.scalar(1.0, x)))


@converter("aten.silu.default")
def silu(ctx: ImportContext, node, x):
    return ctx.b.mul(x, ctx.b.sigmoid(x))


@converter("aten.hardtanh.default", "aten.clamp.default")
def clamp(ctx: ImportContext, node, x, low=None, high=None):
    x = ctx.cast(x, opmath_dtype(ctx.dtype(node)))  # an integer tensor clamped to float bounds gives floats
    if low is not None:
        x = ctx.b.max(x, _operand(ctx, node, low, x))
    if high is not None:
        x = ctx.b.min(x, _operand(ctx, node, high, x))
    return x


@converter("aten.clamp.Tensor")
def clamp_tensor(ctx: ImportContext, node, x, low=None, high=None):
    return clamp(ctx, node, x, low, high)


_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}

for _aten, _predicate in _COMPARE.items():

    def _compare(ctx, node, a, b, predicate=_predicate):
        import torch

        # compare in the operands' promoted type (the result is bool): int64 < float32 compares
        # floats, float32 == float64 compares doubles, as torch does
        operands = [v.meta["val"] if isinstance(v, torch.fx.Node) else v for v in node.args[:2]]
        dtype = numpy_dtype_of_torch(torch.result_type(*operands), f"{node.name}: ")
        a = ctx.b.constant(np.asarray(a, dtype)) if isinstance(a, bool | int | float) else ctx.cast(a, dtype)
        b = ctx.b.constant(np.asarray(b, dtype)) if isinstance(b, bool | int | float) else ctx.cast(b, dtype)
        return ctx.b.compare(a, b, predicate)

    converter(f"aten.{_aten}.Tensor", f"aten.{_aten}.Scalar")(_compare)


@converter("aten.where.self")
def where(ctx: ImportContext, node, condition, a, b):
    return ctx.b.where(condition, _operand(ctx, node, a, b), _operand(ctx, node, b, a))


@converter("aten._to_copy.default", "aten.to.dtype", "prims.convert_element_type.default")
def to_copy(ctx: ImportContext, node, x, *args, dtype=None, **kwargs):
    return ctx.cast(x, ctx.dtype(node))


@converter(
    "aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default",
    "aten.alias_copy.default", "aten.detach_copy.default",
)  # fmt: skip
def identity(ctx: ImportContext, node, x, *args, **kwargs):
    return x


# ---------------------------------------------------------------------------
# logical and bitwise ops (bool), masked_fill, where and clamp with scalar operands


def _as_bool(ctx: ImportContext, x):
    """A bool tensor: bools as they are, numbers as ``x != 0`` (torch's logical ops)."""
    from ....dialects.graph.types import is_bool

    if isinstance(x, bool | int | float):
        return ctx.b.constant(np.asarray(bool(x)))
    if is_bool(x.type.element_type):
        return x
    return ctx.b.compare(x, ctx.scalar(0, x), "ne")


def _true(ctx: ImportContext, value: bool):
    return ctx.b.constant(np.asarray(value))


@converter("aten.logical_and.default")
def logical_and(ctx: ImportContext, node, a, b):
    return ctx.b.where(_as_bool(ctx, a), _as_bool(ctx, b), _true(ctx, False))


@converter("aten.logical_or.default")
def logical_or(ctx: ImportContext, node, a, b):
    return ctx.b.where(_as_bool(ctx, a), _true(ctx, True), _as_bool(ctx, b))


@converter("aten.logical_xor.default")
def logical_xor(ctx: ImportContext, node, a, b):
    return ctx.b.compare(_as_bool(ctx, a), _as_bool(ctx, b), "ne")


@converter("aten.logical_not.default")
def logical_not(ctx: ImportContext, node, x):
    return ctx.b.compare(_as_bool(ctx, x), _true(ctx, False), "eq")


# integers bit by bit, booleans logically: one graph op each
for _name in ("and", "or", "xor"):
    converter(f"aten.bitwise_{_name}.Tensor", f"aten.bitwise_{_name}.Scalar")(_binary(f"bitwise_{_name}"))


@converter("aten.bitwise_not.default")
def bitwise_not(ctx: ImportContext, node, x):
    dtype = ctx.dtype(node)
    if dtype == np.bool_:
        return logical_not(ctx, node, x)
    if np.issubdtype(dtype, np.integer):
        return ctx.b.sub(ctx.scalar(-1, x), x)  # two's complement: ~x = -1 - x
    raise NotImplementedError(f"bitwise_not on {dtype} tensors")


def _shift_amount(ctx: ImportContext, node, amount) -> int:
    bits = np.dtype(ctx.dtype(node)).itemsize * 8
    if not np.issubdtype(ctx.dtype(node), np.integer) or not isinstance(amount, int) or not 0 <= amount < bits - 1:
        raise NotImplementedError(
            f"bit shifts of {ctx.dtype(node)} tensors by {amount!r}: only integer tensors by a constant in [0, {bits - 1})"
        )
    return amount


@converter("aten.__lshift__.Scalar", "aten.bitwise_left_shift.Tensor_Scalar")
def left_shift(ctx: ImportContext, node, x, amount):
    # two's complement: x << k wraps exactly as x * 2**k does
    return ctx.b.mul(x, ctx.scalar(1 << _shift_amount(ctx, node, amount), x))


@converter("aten.__rshift__.Scalar", "aten.bitwise_right_shift.Tensor_Scalar")
def right_shift(ctx: ImportContext, node, x, amount):
    # arithmetic shift: x >> k is floor(x / 2**k), also for negative x
    return div_mode(ctx, node, x, 1 << _shift_amount(ctx, node, amount), rounding_mode="floor")


@converter("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def masked_fill(ctx: ImportContext, node, x, mask, value):
    x = ctx.cast(x, opmath_dtype(ctx.dtype(node)))
    return ctx.b.where(mask, _operand(ctx, node, value, x), x)


converter("aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")(where)


@converter("aten.clamp_min.default", "aten.clamp_min.Tensor")
def clamp_min(ctx: ImportContext, node, x, low):
    return clamp(ctx, node, ctx.cast(x, ctx.dtype(node)), low, None)


@converter("aten.clamp_max.default", "aten.clamp_max.Tensor")
def clamp_max(ctx: ImportContext, node, x, high):
    return clamp(ctx, node, ctx.cast(x, ctx.dtype(node)), None, high)


@converter("aten._assert_tensor_metadata.default")
def assert_tensor_metadata(ctx: ImportContext, node, *args, **kwargs):
    # emitted before dtype conversions (x.int(), x.to(...)); export has already checked it
    return None
