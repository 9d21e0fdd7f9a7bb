"""Quantized ONNX ops: QuantizeLinear / DequantizeLinear (QDQ models, what ONNX Runtime's
``quantize_static`` writes by default), QLinearConv / QLinearMatMul (its QOperator form),
MatMulInteger / ConvInteger / DynamicQuantizeLinear (``quantize_dynamic``), and
com.microsoft's QLinearAdd.

Quantize and dequantize become ``graph.quantize`` / ``graph.dequantize`` (int8 and uint8,
per tensor or per axis); ``fold-qdq`` then turns the islands around products into int8
kernels. Their dequantize of a constant weight is kept as an op (``ctx.b.unfolded``), not
folded into a float32 constant at import as the builder folds other small constant
computations: that would lose the int8 weight. QLinearConv / QLinearMatMul map to ``graph.qconv2d`` /
``graph.qmatmul`` directly. MatMulInteger and ConvInteger (int32 results) are computed in
int32 arithmetic, exactly.

16-, 4- and 2-bit, float8 and float4 quantized types and blocked quantization (``block_size``)
are computed by plain arithmetic (``quantized_wide.py``). Refused, naming the node: per-axis
scales of the wrong length, scales that are not float32/float16/bfloat16.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import bfloat16_dtype
from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..held import HeldType, held_type
from ..registry import converter
from . import quantized_wide
from .quantized_wide import QuantizedType
from .linalg import matmul
from .windows import window

#: the quantized element types we compile
QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8))


def _scale(ctx: OnnxContext, node: OnnxNode, k: int) -> SSAValue:
    scale = node.input(k)
    dtype = ctx.dtype(scale)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float16), bfloat16_dtype()):
        raise refuse(f"a {dtype} scale (quantization scales are float32, float16 or bfloat16)")
    return ctx.cast(scale, np.float32)


def _zero_point(ctx: OnnxContext, node: OnnxNode, k: int, scale: SSAValue, default: np.dtype) -> SSAValue:
    """The zero point input ``k``, or 0 of ``default`` shaped like the scale."""
    zero_point = node.input(k)
    if zero_point is None:
        return ctx.constant(np.zeros(ctx.shape(scale), default))
    return zero_point


def _check_scheme(ctx: OnnxContext, node: OnnxNode, quantized: np.dtype, scale: SSAValue, x: SSAValue, allowed=QUANTIZED) -> int:
    """The node's axis (normalized); refuses blocked and non-8-bit schemes, and per-axis
    scales whose length is not the axis's size."""
    if node.attr("block_size", 0):
        raise refuse(f"blocked quantization (block_size={node.attr('block_size')}): only per-tensor and per-axis scales are supported")
    if quantized not in allowed:
        names = ", ".join(str(d) for d in allowed)
        raise refuse(f"quantization to {quantized} (supported: {names})")
    rank = ctx.rank(x)
    shape = ctx.shape(scale)
    if len(shape) > 1:
        raise refuse(f"a scale of shape {shape} (per-tensor: a scalar; per-axis: 1-d)")
    if len(shape) == 0 or shape[0] == 1:
        return 1  # per tensor: the axis is not read
    axis = ctx.axis(node.attr("axis", 1), max(rank, 1), node)
    if rank == 0 or shape[0] != ctx.shape(x)[axis]:
        raise refuse(f"per-axis scales: {shape[0]} scales for axis {axis} of size {ctx.shape(x)[axis] if rank else 0}")
    return axis


def _graph_scheme(node: OnnxNode, kind: QuantizedType, allowed: tuple[np.dtype, ...] = QUANTIZED) -> bool:
    """Whether graph.quantize / graph.dequantize take ``kind`` (else: quantized_wide.py)."""
    return not isinstance(kind, HeldType) and kind in allowed and not node.attr("block_size", 0)


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    if node.input(2) is not None:
        kind = ctx.held.get(node.input(2)) or ctx.dtype(node.input(2))
    elif node.attr("output_dtype", 0):
        kind = held_type(node.attr("output_dtype")) or ctx.onnx_dtype(node.attr("output_dtype"), node, "output_dtype")
    else:
        kind = np.dtype(np.uint8)
    if not _graph_scheme(node, kind):
        return quantized_wide.quantize(ctx, node, kind)
    scale = _scale(ctx, node, 1)
    output_dtype = node.attr("output_dtype", 0)
    default = ctx.onnx_dtype(output_dtype, node, "output_dtype") if output_dtype else np.dtype(np.uint8)
    zero_point = _zero_point(ctx, node, 2, scale, default)
    if node.attr("saturate", 1) != 1 and ctx.dtype(zero_point).kind == "f":
        raise refuse("float8 quantization")
    axis = _check_scheme(ctx, node, ctx.dtype(zero_point), scale, x)
    return ctx.b.unfolded("quantize")(ctx.cast(x, np.float32), scale, zero_point, axis=axis)


@converter("DequantizeLinear", since=10)
def dequantize_linear(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    kind = ctx.held.get(x) or ctx.dtype(x)
    if not _graph_scheme(node, kind, (*QUANTIZED, np.dtype(np.int32))):
        return quantized_wide.dequantize(ctx, node, kind)
    scale = _scale(ctx, node, 1)
    zero_point = _zero_point(ctx, node, 2, scale, ctx.dtype(x))
    axis = _check_scheme(ctx, node, ctx.dtype(x), scale, x, (*QUANTIZED, np.dtype(np.int32)))
    y = ctx.b.unfolded("dequantize")(x, scale, zero_point, axis=axis)
    output = node.attr("output_dtype", 0)
    return ctx.cast(y, ctx.onnx_dtype(output, node, "output_dtype")) if output else y


def _product_params(ctx: OnnxContext, node: OnnxNode, order: tuple[int, ...]) -> list[SSAValue]:
    """(x_scale, x_zp, w_scale, w_zp, y_scale, y_zp) from the node's inputs at ``order``."""
    values = []
    for k in order:
        value = node.input(k)
        values.append(_scale(ctx, node, k) if k in (order[0], order[2], order[4]) else value)
    return values


@converter("QLinearConv", since=10)
def qlinear_conv(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, weight, bias = node.input(0), node.input(3), node.input(8)
    params = _product_params(ctx, node, (1, 2, 4, 5, 6, 7))
    for value, what in ((x, "input"), (weight, "weight")):
        if ctx.dtype(value) not in QUANTIZED:
            raise refuse(f"a {ctx.dtype(value)} {what} (int8 or uint8)")
    kernel = list(ctx.shape(weight)[2:])
    if len(kernel) != 2:
        raise refuse(f"a {len(kernel)}-d QLinearConv (2-d only)")
    w = window(ctx, node, x, kernel)
    padding = (w.begin[0], w.begin[1], w.end[0], w.end[1])
    # (the window by keyword: the builder turns numbers at operand positions, which count the
    # six quantization parameters, into constants)
    return ctx.b.unfolded("qconv2d")(x, weight, bias, params, strides=list(w.strides), padding=padding,
                                     dilation=list(w.dilations), groups=node.attr("group", 1))  # fmt: skip


@converter("QLinearMatMul", since=10)
def qlinear_matmul(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    a, b = node.input(0), node.input(3)
    params = _product_params(ctx, node, (1, 2, 4, 5, 6, 7))
    if ctx.rank(b) != 2 or ctx.rank(a) < 2:
        return _batched_qlinear_matmul(ctx, node)
    for value in params[1::2]:
        if ctx.shape(value) not in ((), (1,)) and value is not params[3]:
            raise refuse("per-axis scales on an activation")
    return ctx.b.unfolded("qmatmul")(a, b, None, params)


def _batched_qlinear_matmul(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """QLinearMatMul of operands ``graph.qmatmul`` does not take (a batched right operand, a
    1-d one): the product of the centered values in int32 (exact), requantized as ONNX's
    reference does: times ``a_scale * b_scale / y_scale`` (in the scales' type) in float64,
    plus the output zero point, rounded half to even and saturated."""
    g = ctx.b
    a, b, y_zero_point = node.input(0), node.input(3), node.input(7)
    for k in (1, 2, 6, 7):
        if ctx.shape(node.input(k)) not in ((), (1,)):
            raise refuse(f"QLinearMatMul of ranks {ctx.rank(a)} x {ctx.rank(b)} with a per-axis input {k}")
    if ctx.rank(a) < 1 or ctx.rank(b) < 1:
        raise OnnxImportError(f"node '{node.name}' (QLinearMatMul): operands of ranks {ctx.rank(a)} x {ctx.rank(b)}")
    product = matmul(ctx, _centered_int32(ctx, a, node.input(2), None), _centered_int32(ctx, b, node.input(5), ctx.rank(b) - 1))
    a_scale, b_scale, y_scale = (node.input(k) for k in (1, 4, 6))
    multiplier = g.div(g.mul(a_scale, ctx.cast(b_scale, ctx.dtype(a_scale))), ctx.cast(y_scale, ctx.dtype(a_scale)))
    y = g.mul(ctx.cast(product, np.float64), ctx.cast(multiplier, np.float64))
    out = ctx.dtype(y_zero_point) if y_zero_point is not None else ctx.dtype(a)
    if y_zero_point is not None:
        y = g.add(y, ctx.cast(y_zero_point, np.float64))
    info = np.iinfo(out)
    y = g.min(g.max(g.round(y), ctx.scalar(info.min, y)), ctx.scalar(info.max, y))
    y = g.reshape(y, ctx.shape(product)) if ctx.shape(y) != ctx.shape(product) else y  # ((1,) scales of a 0-d product)
    return ctx.cast(y, out)


def _centered_int32(ctx: OnnxContext, value: SSAValue, zero_point: SSAValue | None, axis: int | None) -> SSAValue:
    """``value - zero_point`` in int32 (a per-row zero point along ``axis``)."""
    g = ctx.b
    wide = ctx.cast(value, np.int32)
    if zero_point is None:
        return wide
    zp = ctx.cast(zero_point, np.int32)
    if ctx.shape(zero_point) not in ((), (1,)):
        shape = [1] * ctx.rank(value)
        shape[axis] = ctx.shape(zero_point)[0]
        zp = g.reshape(zp, shape)
    return g.sub(wide, zp)


@converter("MatMulInteger", since=10)
def matmul_integer(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    a = _centered_int32(ctx, node.input(0), node.input(2), max(ctx.rank(node.input(0)) - 2, 0))
    b = _centered_int32(ctx, node.input(1), node.input(3), ctx.rank(node.input(1)) - 1)
    return matmul(ctx, a, b)


@converter("ConvInteger", since=10)
def conv_integer(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = _centered_int32(ctx, node.input(0), node.input(2), 1)
    weight = _centered_int32(ctx, node.input(1), node.input(3), 0)
    kernel = list(ctx.shape(weight)[2:])
    if len(kernel) != 2:
        raise refuse(f"a {len(kernel)}-d ConvInteger (2-d only)")
    w = window(ctx, node, x, kernel)
    padding = (w.begin[0], w.begin[1], w.end[0], w.end[1])  # (x centered: padding is its zero point)
    return ctx.b.conv2d(x, weight, None, list(w.strides), padding, list(w.dilations), node.attr("group", 1))


@converter("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, SSAValue, SSAValue]:
    """uint8 with the scale and zero point of the tensor's range (0 included), as ONNX
    defines them: ``scale = (max - min) / 255``, ``zero_point = saturate(round(-min / scale))``."""
    g = ctx.b
    x = ctx.cast(node.input(0), np.float32)
    axes = list(range(ctx.rank(x)))
    zero = ctx.scalar(0.0, x)
    high = g.max(g.reduce_max(x, axes), zero)
    low = g.min(g.reduce_min(x, axes), zero)
    scale = g.div(g.sub(high, low), ctx.scalar(255.0, x))
    scale = g.where(g.compare(scale, zero, "eq"), ctx.scalar(1.0, x), scale)
    rounded = g.round(g.div(g.neg(low), scale))
    clipped = g.min(g.max(rounded, zero), ctx.scalar(255.0, x))
    zero_point = ctx.cast(clipped, np.uint8)
    return g.quantize(x, scale, zero_point), scale, zero_point


@converter("QLinearAdd", since=1, domain="com.microsoft")
def qlinear_add(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Both operands dequantized, added in float32, quantized (fused into one kernel)."""
    g = ctx.b
    a = g.dequantize(node.input(0), _scale(ctx, node, 1), _zero_point(ctx, node, 2, node.input(1), ctx.dtype(node.input(0))))
    b = g.dequantize(node.input(3), _scale(ctx, node, 4), _zero_point(ctx, node, 5, node.input(4), ctx.dtype(node.input(3))))
    y_scale = _scale(ctx, node, 6)
    return g.quantize(g.add(a, b), y_scale, _zero_point(ctx, node, 7, y_scale, ctx.dtype(node.input(0))))
