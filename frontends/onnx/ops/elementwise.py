"""Elementwise ONNX ops: unary math, arithmetic with broadcasting, comparisons, logic, casts."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce as fold

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.bitcast import bitcastable
from ....dialects.graph.types import broadcast_shapes, element_type_of

from ..context import OnnxContext, OnnxNode, refuse
from ..held import HeldType, cast_to_held, held_type
from ..registry import converter

# ---------------------------------------------------------------------------
# unary ops that are one graph op

_UNARY = {
    "Abs": "abs", "Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh", "Sigmoid": "sigmoid",
    "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sin": "sin", "Cos": "cos", "Tan": "tan",
    "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh",
    "Acosh": "acosh", "Atanh": "atanh", "Relu": "relu",
}  # fmt: skip

#: ops whose graph op takes floats only, though ONNX also defines them on integers
_INTEGER_IDENTITY = {"Floor", "Ceil", "Round"}


def _unary(graph_op: str, op_type: str) -> Callable[[OnnxContext, OnnxNode], SSAValue]:
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        x = node.input(0)
        if op_type in _INTEGER_IDENTITY and not ctx.is_float(x):
            return x
        return getattr(ctx.b, graph_op)(x)

    convert.__name__ = op_type.lower()
    return convert


for _op_type, _graph_op in _UNARY.items():
    converter(_op_type)(_unary(_graph_op, _op_type))


@converter("Identity")
def identity(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return node.input(0)


@converter("Reciprocal")
def reciprocal(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.div(ctx.scalar(1, x), x)


@converter("Sign", since=9)
def sign(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    zero = ctx.scalar(0, x)
    signs = b.where(b.compare(x, zero, "gt"), ctx.scalar(1, x), b.where(b.compare(x, zero, "lt"), ctx.scalar(-1, x), zero))
    return b.where(b.compare(x, x, "ne"), x, signs) if ctx.is_float(x) else signs  # NaN stays NaN


@converter("Not")
def logical_not(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.bitwise_xor(x, ctx.scalar(True, x))


@converter("BitwiseNot", since=18)
def bitwise_not(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.bitwise_xor(x, ctx.constant(np.asarray(-1).astype(ctx.dtype(x))))


@converter("IsNaN", since=9)
def is_nan(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.compare(x, x, "ne")


@converter("IsInf", since=10)
def is_inf(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    positive, negative = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    found = ctx.constant(np.zeros(ctx.shape(x), np.bool_)) if not (positive or negative) else None
    if positive:
        found = b.compare(x, ctx.scalar(np.inf, x), "eq")
    if negative:
        at_minus = b.compare(x, ctx.scalar(-np.inf, x), "eq")
        found = at_minus if found is None else b.bitwise_or(found, at_minus)
    return found


# ---------------------------------------------------------------------------
# binary arithmetic (numpy broadcasting; opsets before 7 broadcast by attribute)


def broadcast_legacy(ctx: OnnxContext, node: OnnxNode, a: SSAValue, b: SSAValue) -> SSAValue:
    """Before opset 7, ``broadcast=1`` aligned ``b`` at ``axis`` of ``a`` (default: the end)."""
    if node.version >= 7 or not node.attr("broadcast", 0) or not node.has_attr("axis"):
        return b
    rank_a, rank_b = ctx.rank(a), ctx.rank(b)
    axis = ctx.axis(node.attr("axis"), rank_a, node)
    trailing = rank_a - axis - rank_b
    return ctx.b.reshape(b, (*ctx.shape(b), *([1] * trailing))) if trailing > 0 else b


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}


def _binary(graph_op: str) -> Callable[[OnnxContext, OnnxNode], SSAValue]:
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        a, b = node.input(0), node.input(1)
        return getattr(ctx.b, graph_op)(a, broadcast_legacy(ctx, node, a, b))

    return convert


for _op_type, _graph_op in _BINARY.items():
    converter(_op_type)(_binary(_graph_op))


def integer_power(ctx: OnnxContext, x: SSAValue, y: SSAValue) -> SSAValue:
    """``x ** y`` for integers, exactly (wrapping as the type does): square and multiply over
    the exponent's bits. A negative exponent gives 0 (1 or -1 for a base of 1 or -1)."""
    g = ctx.b
    one, zero = ctx.scalar(1, x), ctx.scalar(0, x)
    result, base, exponent = g.broadcast_to(one, broadcast_shapes(ctx.shape(x), ctx.shape(y))), x, y
    for _ in range(ctx.dtype(y).itemsize * 8 - 1):
        odd = g.compare(g.bitwise_and(exponent, ctx.scalar(1, y)), ctx.scalar(1, y), "eq")
        result = g.where(odd, g.mul(result, base), result)
        base = g.mul(base, base)
        exponent = g.div(exponent, ctx.scalar(2, y))
    negative_exponent = g.compare(y, ctx.scalar(0, y), "lt")
    minus_one_odd = g.bitwise_and(g.compare(x, ctx.scalar(-1, x), "eq"), g.compare(g.fmod(y, ctx.scalar(2, y)), ctx.scalar(0, y), "ne"))
    unit = g.where(g.bitwise_or(g.compare(x, one, "eq"), g.compare(x, ctx.scalar(-1, x), "eq")), g.where(minus_one_odd, ctx.scalar(-1, x), one), zero)
    return g.where(negative_exponent, unit, result)


@converter("Pow")
def power(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, y = node.input(0), node.input(1)
    y = broadcast_legacy(ctx, node, x, y)
    if ctx.is_float(x):
        return ctx.b.pow(x, ctx.cast(y, ctx.dtype(x)))
    if not ctx.is_float(y):
        return integer_power(ctx, x, ctx.cast(y, ctx.dtype(x)))
    # an integer base with a float exponent: computed in float64, truncated back
    wide = np.float64
    return ctx.cast(ctx.b.pow(ctx.cast(x, wide), ctx.cast(y, wide)), ctx.dtype(x))


@converter("Mod", since=10)
def mod(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b = ctx.b
    x, y = node.input(0), node.input(1)
    remainder = b.fmod(x, y)
    if node.attr("fmod", 0):
        return remainder
    # Python's modulo (numpy's mod, what ONNX's reference computes also for floats): the sign of the divisor
    zero = ctx.scalar(0, x)
    fix = b.bitwise_and(b.compare(remainder, zero, "ne"), b.compare(b.compare(remainder, zero, "lt"), b.compare(y, zero, "lt"), "ne"))
    return b.where(fix, b.add(remainder, y), remainder)


def _variadic(graph_op: str) -> Callable[[OnnxContext, OnnxNode], SSAValue]:
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        values = [v for v in node.inputs() if v is not None]
        return fold(getattr(ctx.b, graph_op), values)

    return convert


for _op_type, _graph_op in {"Sum": "add", "Max": "max", "Min": "min"}.items():
    converter(_op_type)(_variadic(_graph_op))


@converter("Mean")
def mean(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    values = [v for v in node.inputs() if v is not None]
    total = fold(ctx.b.add, values)
    return ctx.b.div(total, ctx.scalar(len(values), total))


# ---------------------------------------------------------------------------
# comparisons and logic

_COMPARE = {"Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le", "GreaterOrEqual": "ge"}


def _compare(predicate: str) -> Callable[[OnnxContext, OnnxNode], SSAValue]:
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        a, b = node.input(0), node.input(1)
        return ctx.b.compare(a, broadcast_legacy(ctx, node, a, b), predicate)

    return convert


for _op_type, _predicate in _COMPARE.items():
    converter(_op_type)(_compare(_predicate))

_LOGIC = {"And": "bitwise_and", "Or": "bitwise_or", "Xor": "bitwise_xor"}
_BITWISE = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}

for _op_type, _graph_op in _LOGIC.items():
    converter(_op_type)(_binary(_graph_op))
for _op_type, _graph_op in _BITWISE.items():
    converter(_op_type, since=18)(_binary(_graph_op))


@converter("BitShift", since=11)
def bit_shift(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Shifts as products and floor quotients by powers of two (computed in int64, the left
    shift wrapped back to the type's bits); a shift below 0 or of the type's width or more
    leaves only the sign (-1 for a right shift of a negative value, else 0)."""
    g = ctx.b
    x, amount = node.input(0), node.input(1)
    dtype = ctx.dtype(x)
    bits = dtype.itemsize * 8
    wide = np.dtype(np.int64)
    value, shift = ctx.cast(x, wide), ctx.cast(amount, wide)
    powers = ctx.constant(np.left_shift(np.int64(1), np.arange(64, dtype=np.int64)))
    in_range = g.bitwise_and(g.compare(shift, ctx.scalar(0, shift), "ge"), g.compare(shift, ctx.scalar(bits, shift), "lt"))
    factor = g.take(powers, g.min(g.max(shift, ctx.scalar(0, shift)), ctx.scalar(63, shift)), 0)
    negative = g.compare(value, ctx.scalar(0, value), "lt")
    direction = node.attr("direction")
    if direction == "LEFT":
        shifted, outside = g.mul(value, factor), ctx.scalar(0, value)
    elif direction == "RIGHT":
        quotient = g.div(value, factor)  # rounds toward zero: one less where a negative value leaves a remainder
        inexact = g.compare(g.mul(quotient, factor), value, "ne")
        shifted = g.where(g.bitwise_and(negative, inexact), g.sub(quotient, ctx.scalar(1, value)), quotient)
        outside = g.where(negative, ctx.scalar(-1, value), ctx.scalar(0, value))
    else:
        raise refuse(f"direction '{direction}' (expected LEFT or RIGHT)")
    return ctx.cast(g.where(in_range, shifted, outside), dtype)


@converter("Where", since=9)
def where(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return ctx.b.where(node.input(0), node.input(1), node.input(2))


# ---------------------------------------------------------------------------
# casts


@converter("Cast", since=6)
def cast(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    held = held_type(node.attr("to"))
    if held is not None:  # (uint32, float8, int4, ...: held in a graph type, held.py)
        return cast_to_held(ctx, node, node.input(0), held)
    return ctx.cast(node.input(0), ctx.onnx_dtype(node.attr("to"), node, "to"))


@converter("BitCast", since=26)
def bitcast(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """The bits of each element as another type of the same width. Between integer types
    (and bool) that is a wrapping Cast; a float's bits go through ``graph.bitcast`` to or from
    the signed integer of its width."""
    x = node.input(0)
    source_held, target_held = ctx.held.get(x), held_type(node.attr("to"))
    if any(h is not None and h.float_format for h in (source_held, target_held)):
        raise refuse("BitCast of float8/float4 values (held as float32 values of the format, not as their bits)")
    source = source_held.numpy if source_held else ctx.dtype(x)
    target = target_held.numpy if target_held else ctx.onnx_dtype(node.attr("to"), node, "to")

    def to_target(value: SSAValue) -> SSAValue:
        return cast_to_held(ctx, node, value, target_held) if isinstance(target_held, HeldType) else ctx.cast(value, target)

    if source.kind in "iub" and target.kind in "iub":
        return to_target(x)
    if not (bitcastable(source) and bitcastable(target)):
        raise refuse(f"BitCast {source} -> {target} (floats of 32 or 64 bits only)")
    signed = np.dtype(f"i{source.itemsize}")
    value = x if source.kind == "f" else ctx.cast(x, signed)  # (a held uint32's int64 wraps to its bits)
    bits = ctx.b.bitcast(value, element_type_of(target if target.kind == "f" else signed))
    return bits if target.kind == "f" else to_target(bits)


@converter("CastLike", since=15)
def cast_like(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    held = ctx.held.get(node.input(1))
    if held is not None:
        return cast_to_held(ctx, node, node.input(0), held)
    return ctx.cast(node.input(0), ctx.dtype(node.input(1)))
