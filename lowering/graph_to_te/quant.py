"""TE rules of quantize, dequantize and the quantized products (``dialects/graph/quant.py``).

Every rule here is the plain arithmetic of the op's definition, correct on any target
and for any operands (run-time scales and zero points included): int32 products and
sums, then the float32 requantization. Float steps use no fast-math flags, so that no
multiply-add is contracted: results match the numpy references bit for bit.

uint8 tensors arrive stored as int8 bytes (``legalize-unsigned`` ran before): their
values are read as ``extsi(byte) & 255``; the ops' ``dtype`` properties say which.

qdense and qconv2d with a constant weight and constant quantization parameters take
another form, the one the int8 kernels run (``quant_products.py`` registers their rules).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from ...dialects.graph import quant
from ...dialects.graph.layout import spatial_axes, to_layout, to_nchw, weight_from_oihw, weight_to_oihw
from ..te_builder import Scalar, TEBuilder
from .registry import compute_rule


def int_value(s: Scalar, byte: SSAValue, dtype: str) -> SSAValue:
    """A quantized element's value as i32 (uint8: the stored byte read unsigned)."""
    value = s.cast(byte, i32)
    if dtype == "ui8":
        value = s._insert(arith.AndIOp(value, s.const(255, i32)))
    return value


def param(s: Scalar, tensor: SSAValue, channel: SSAValue | None) -> SSAValue:
    """A per-tensor (rank 0 or one value) or per-channel (at ``channel``) parameter."""
    shape = tensor.type.get_shape()
    if not shape:
        return s.read(tensor, [])
    if shape[0] == 1 or channel is None:
        return s.read(tensor, [s.index(0)])
    return s.read(tensor, [channel])


def int_param(s: Scalar, tensor: SSAValue, channel: SSAValue | None, dtype: str) -> SSAValue:
    return int_value(s, param(s, tensor, channel), dtype)


#: 1.5 * 2**23: added to a float32 of magnitude below 2**22, the sum is rounded to an
#: integer (nearest, ties to even) and its bits minus this constant's are that integer
_MAGIC = 12582912.0
_MAGIC_BITS = 0x4B400000


def _clamp_below(s: Scalar, x: SSAValue, bound: SSAValue) -> SSAValue:
    """``x < bound ? bound : x``: one ``vmaxps`` (arith's maximumf propagates NaN: three)."""
    return s.select(s.math(arith.CmpfOp, x, bound, "olt"), bound, x)


def _clamp_above(s: Scalar, x: SSAValue, bound: SSAValue) -> SSAValue:
    return s.select(s.math(arith.CmpfOp, x, bound, "ogt"), bound, x)


def saturate_to(s: Scalar, value: SSAValue, zero_point: SSAValue, dtype: str, low_at_zero_point: bool, element) -> SSAValue:
    """``saturate(round_half_even(value) + zero_point)`` (value float32, zero point i32),
    clamped to the dtype's range (from the zero point up with relu), stored as ``element``.

    The value is clamped to ``[low - zp, high - zp]`` first (integers: rounding is monotone,
    so clamping before or after it is the same) and rounded by adding ``1.5 * 2**23``:
    float32 addition rounds to the nearest integer, ties to even, and the sum's bits minus
    ``1.5 * 2**23``'s are that integer (the zero point is added after: before, it would move
    the ties). No ``roundeven`` and no ``fptosi`` (LLVM turns
    the saturating conversion of a vector into a branchy conversion per lane on x86). NaN
    stays NaN through the clamps; callers that can see one select their result."""
    low, high = quant.qrange(dtype)
    zp = s.cast(zero_point, f32)
    lowest = s.const(float(low), f32)
    if low_at_zero_point:
        lowest = s.max(lowest, zp)
    value = _clamp_below(s, value, s.math(arith.SubfOp, lowest, zp))
    value = _clamp_above(s, value, s.math(arith.SubfOp, s.const(float(high), f32), zp))
    shifted = s.math(arith.AddfOp, value, s.const(_MAGIC, f32))
    rounded = s.sub(s._insert(arith.BitcastOp(shifted, i32)), s.const(_MAGIC_BITS, i32))
    return s.cast(s.add(rounded, zero_point), element)


def requantize(
    s: Scalar, acc: SSAValue, multiplier: SSAValue, zero_point: SSAValue, dtype: str, relu: bool, element
) -> SSAValue:
    """``saturate(round_half_even(float32(acc) * multiplier) + zero_point)`` (acc: i32)."""
    return saturate_to(s, s.math(arith.MulfOp, s.cast(acc, f32), multiplier), zero_point, dtype, relu, element)


def _channel_index(idx, axis: int | None):
    return None if axis is None else idx[axis]


@compute_rule(quant.QuantizeOp)
def quantize(t: TEBuilder, op: quant.QuantizeOp) -> SSAValue:
    axis = op.channel_axis(op.input.type.get_shape())
    dtype, element = op.dtype.data, op.result.type.element_type

    def body(s: Scalar, idx, ins):
        x, scale, zero_point = ins
        channel = _channel_index(idx, axis)
        ratio = s.math(arith.DivfOp, s.read(x, list(idx)), param(s, scale, channel))
        zp = int_param(s, zero_point, channel, dtype)
        stored = saturate_to(s, ratio, zp, dtype, False, element)
        is_nan = s.math(arith.CmpfOp, ratio, ratio, "uno")
        return s.select(is_nan, s.cast(zp, element), stored)

    return t.compute("quantize", op.result.type, [op.input, op.scale, op.zero_point], body)


@compute_rule(quant.DequantizeOp)
def dequantize(t: TEBuilder, op: quant.DequantizeOp) -> SSAValue:
    axis = op.channel_axis(op.input.type.get_shape())
    dtype = op.dtype.data

    def body(s: Scalar, idx, ins):
        q, scale, zero_point = ins
        channel = _channel_index(idx, axis)
        centered = s.sub(int_value(s, s.read(q, list(idx)), dtype), int_param(s, zero_point, channel, dtype))
        return s.math(arith.MulfOp, s.cast(centered, f32), param(s, scale, channel))

    return t.compute("dequantize", op.result.type, [op.input, op.scale, op.zero_point], body)


# ---------------------------------------------------------------------------
# the products, in plain arithmetic


class ProductOperands:
    """The block arguments of a quantized product's compute: data, weight, bias, params."""

    def __init__(self, op: quant.QuantizedProductOp, ins):
        ins = list(ins)
        self.op = op
        self.x, self.w = ins[0], ins[1]
        self.bias = ins[2] if op.bias is not None else None
        self.x_scale, self.x_zp, self.w_scale, self.w_zp, self.y_scale, self.y_zp = ins[-6:]

    @staticmethod
    def of(op: quant.QuantizedProductOp) -> list[SSAValue]:
        """The compute's inputs, in the order :class:`ProductOperands` reads them."""
        return [op.input, op.weight] + ([op.bias] if op.bias is not None else []) + list(op.params())

    def epilogue(self, s: Scalar, acc: SSAValue, channel: SSAValue) -> SSAValue:
        """Bias, multiplier ``(x_scale * w_scale[o]) / y_scale`` and the saturating store."""
        op = self.op
        if self.bias is not None:
            acc = s.add(acc, s.read(self.bias, [channel]))
        product = s.math(arith.MulfOp, param(s, self.x_scale, None), param(s, self.w_scale, channel))
        multiplier = s.math(arith.DivfOp, product, param(s, self.y_scale, None))
        zp = int_param(s, self.y_zp, None, op.y_dtype.data)
        return requantize(s, acc, multiplier, zp, op.y_dtype.data, bool(op.relu.value.data), op.result.type.element_type)

    def term(self, r: Scalar, x_byte: SSAValue, w_byte: SSAValue, channel: SSAValue) -> SSAValue:
        """``(x - x_zp) * (w - w_zp[o])`` in i32."""
        op = self.op
        x = r.sub(int_value(r, x_byte, op.x_dtype.data), int_param(r, self.x_zp, None, op.x_dtype.data))
        w = r.sub(int_value(r, w_byte, op.w_dtype.data), int_param(r, self.w_zp, channel, op.w_dtype.data))
        return r.mul(x, w)


def qdense(t: TEBuilder, op: quant.QDenseOp) -> SSAValue:
    """The plain form (registered with the packed one: ``quant_products.py``)."""
    def body(s: Scalar, idx, ins):
        p = ProductOperands(op, ins)
        *rows, n = idx
        k_extent = s.dim(p.x, len(idx) - 1)
        acc = s.reduce(
            "add", [k_extent], 0, lambda r, k: p.term(r, r.read(p.x, [*rows, k[0]]), r.read(p.w, [n, k[0]]), n), i32
        )
        return p.epilogue(s, acc, n)

    return t.compute("qdense", op.result.type, ProductOperands.of(op), body)


@compute_rule(quant.QMatMulOp)
def qmatmul(t: TEBuilder, op: quant.QMatMulOp) -> SSAValue:
    def body(s: Scalar, idx, ins):
        p = ProductOperands(op, ins)
        *rows, n = idx
        k_extent = s.dim(p.x, len(idx) - 1)
        acc = s.reduce(
            "add", [k_extent], 0, lambda r, k: p.term(r, r.read(p.x, [*rows, k[0]]), r.read(p.w, [k[0], n]), n), i32
        )
        return p.epilogue(s, acc, n)

    return t.compute("qmatmul", op.result.type, ProductOperands.of(op), body)


def _tap(s: Scalar, out: SSAValue, k: SSAValue, stride: int, pad: int, dilation: int) -> SSAValue:
    return s.add(s.sub(s.mul(out, s.index(stride)), s.index(pad)), s.mul(k, s.index(dilation)))


def qconv2d(t: TEBuilder, op: quant.QConv2dOp) -> SSAValue:
    """As graph.conv2d's rule (reduction innermost along the contiguous axis); a padding
    tap reads the input zero point. The plain form (see ``quant_products.py``)."""
    (sh, sw), (top, left, bottom, right), (dh, dw), groups = op.window()
    layout = op.layout.data
    out_channels, in_per_group, kh, kw = weight_to_oihw(op.weight.type.get_shape(), layout)
    per_group = out_channels // groups
    channels_last = layout == "NHWC"
    padded = [axis for axis, pads in zip(spatial_axes(layout), ((top, bottom), (left, right))) if any(pads)]

    def body(s: Scalar, idx, ins):
        p = ProductOperands(op, ins)
        n, o, y, x = to_nchw(idx, layout)
        pad_byte = param(s, p.x_zp, None)

        def term(r: Scalar, axes):
            ky, kx, c = axes if channels_last else (axes[1], axes[2], axes[0])
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, x, kx, sw, left, dw)
            channel = c if groups == 1 else r.add(r.mul(r.floordiv(o, r.index(per_group)), r.index(in_per_group)), c)
            pixel = r.read_padded(p.x, to_layout([n, channel, iy, ix], layout), padded, pad_byte)
            return p.term(r, pixel, r.read(p.w, weight_from_oihw([o, c, ky, kx], layout)), o)

        extents = [kh, kw, in_per_group] if channels_last else [in_per_group, kh, kw]
        return p.epilogue(s, s.reduce("add", extents, 0, term, i32), o)

    return t.compute("qconv2d", op.result.type, ProductOperands.of(op), body)
