"""QuantizeLinear / DequantizeLinear by plain arithmetic, for what ``graph.quantize`` /
``graph.dequantize`` (int8 and uint8, per tensor or per axis) do not take: 16-, 4- and
2-bit integers, float8 and float4 (held in wider graph types: ``held.py``), and blocked
quantization (``block_size``: a scale per block of an axis). The arithmetic is ONNX's
reference's: ``x / scale`` rounded half to even, plus the zero point, saturated; float
formats rounded to the format (float8 without a zero point); dequantized
``(x - zero_point) * scale`` in float32, then the scale's type (or ``output_dtype``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..held import HeldType, mark, round_to

#: a quantized type: a graph dtype, or an ONNX type held in one
QuantizedType = np.dtype | HeldType


def holding(kind: QuantizedType) -> np.dtype:
    """The graph dtype that carries values of ``kind``."""
    return kind.held if isinstance(kind, HeldType) else kind


def is_float_format(kind: QuantizedType) -> bool:
    return isinstance(kind, HeldType) and kind.float_format


def broadcast_param(ctx: OnnxContext, node: OnnxNode, value: SSAValue, x: SSAValue, what: str) -> SSAValue:
    """A scale or zero point shaped to broadcast against ``x``: per tensor (0-d or one
    element), per axis (1-d along ``axis``), or blocked (``x``'s rank; each element repeated
    ``block_size`` times along ``axis``, the last block cut to ``x``'s size)."""
    g = ctx.b
    shape, rank = ctx.shape(value), ctx.rank(x)
    block = node.attr("block_size", 0)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1 and not block):
        return g.reshape(value, ()) if shape else value
    axis = ctx.axis(node.attr("axis", 1), max(rank, 1), node)
    size = ctx.shape(x)[axis]
    if not block:
        if len(shape) != 1 or shape[0] != size:
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): {what} of shape {shape} for axis {axis} of size {size}")
        dims = [1] * rank
        dims[axis] = size
        return g.reshape(value, dims)
    if block < 0 or len(shape) != rank or not isinstance(size, int) or shape[axis] * block < size:
        raise OnnxImportError(f"node '{node.name}' ({node.op_type}): {what} of shape {shape} for blocks of {block} along axis {axis} of {ctx.shape(x)}")
    return g.take(value, ctx.constant(np.arange(size, dtype=np.int64) // block), axis)


def quantize(ctx: OnnxContext, node: OnnxNode, kind: QuantizedType) -> SSAValue:
    """QuantizeLinear of input 0 to ``kind``, as ONNX's reference computes it."""
    g = ctx.b
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    types = (ctx.dtype(x), ctx.dtype(scale))  # (numpy's promotion: float16 / float16 stays float16)
    common = types[0] if types[0] == types[1] else np.dtype(np.float64 if np.dtype(np.float64) in types else np.float32)
    q = g.div(ctx.cast(x, common), broadcast_param(ctx, node, ctx.cast(scale, common), x, "y_scale"))
    if is_float_format(kind):
        if kind.name == "float4e2m1" and zero_point is not None:  # (float8: the reference adds no zero point)
            q = g.add(ctx.cast(q, np.float32), broadcast_param(ctx, node, zero_point, x, "y_zero_point"))
        return mark(ctx, round_to(ctx, node, q, kind), kind)
    info = ml_dtypes.iinfo(kind.numpy if isinstance(kind, HeldType) else kind)
    xi = ctx.cast(g.round(q), np.int32)
    if zero_point is not None:
        xi = g.add(xi, ctx.cast(broadcast_param(ctx, node, zero_point, x, "y_zero_point"), np.int32))
    xi = g.min(g.max(xi, ctx.scalar(info.min, xi)), ctx.scalar(info.max, xi))
    result = ctx.cast(xi, holding(kind))
    return mark(ctx, result, kind) if isinstance(kind, HeldType) else result


def dequantize(ctx: OnnxContext, node: OnnxNode, kind: QuantizedType) -> SSAValue:
    """DequantizeLinear of input 0 (of ``kind``), as ONNX's reference computes it."""
    g = ctx.b
    x, scale, zero_point = node.input(0), node.input(1), node.input(2)
    dx = ctx.cast(x, np.float32)
    if zero_point is not None and is_float_format(kind) and kind.name != "float4e2m1":
        if np.any(ctx.need_const(node, 2, f"x_zero_point (a {kind.name} zero point must be 0)") != 0):
            raise refuse(f"a {kind.name} zero point that is not 0 (float8 zero points must be 0)")
    elif zero_point is not None and not is_float_format(kind):
        dx = g.sub(dx, ctx.cast(broadcast_param(ctx, node, zero_point, x, "x_zero_point"), np.float32))
    y = g.mul(dx, broadcast_param(ctx, node, ctx.cast(scale, np.float32), x, "x_scale"))
    output = node.attr("output_dtype", 0)
    return ctx.cast(y, ctx.onnx_dtype(output, node, "output_dtype") if output else ctx.dtype(scale))
