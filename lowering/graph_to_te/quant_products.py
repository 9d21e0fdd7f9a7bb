"""TE rules of qdense and qconv2d: the packed form the int8 kernels run, when the weight
and the quantization parameters are constants; else the plain form (``quant.py``).

The packed form computes the same numbers as the definition, rearranged at compile
time (numpy) so that the reduction is a chain of ``lowp.dot4_u8s8`` ops, each a dot
product of 4 activation bytes (one 32-bit word, the same for a whole vector of output
channels) with 4 weight bytes of one channel (VNNI's layout):

* the weight, minus its zero point, becomes int8 words ``P[o / 16, k / 4, o % 16]``
  (4 consecutive k per word; channels padded to 16 and k to 4 with zeros). Weights
  whose centered values leave [-128, 127] keep the plain form;
* the activation is read as unsigned bytes: int8 ones are flipped to uint8 by
  ``xor 0x80`` per byte (+128), the zero point with them;
* ``sum (x - zx) * w = sum x * w - zx * sum w``: the second term, one number per
  channel, is folded with the bias into ``bias'[o] = bias[o] - zx * colsum[o]``;
* the float32 multiplier ``(x_scale * w_scale[o]) / y_scale`` is a constant vector.

Convolutions take this form in NHWC (what ``convert-layout`` gives CPU targets) without
groups: words run along the input channels of one tap, ``P[o / 16, ky, kx, c / 4, o % 16]``;
a padding tap reads the input zero point (its centered value is 0). The reduction's
``acc + dot(0, a, w)`` becomes ``dot(acc, a, w)`` when a strategy schedules the kernel
(``schedule/strategies/lowp_gemm.py``): one ``vpdpbusd`` per vector of accumulators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, f32, i32
from xdsl.ir import SSAValue

from ...dialects.graph import ConstantOp, quant
from ...dialects.graph.layout import weight_to_oihw
from ...dialects.graph.types import shape_of, tensor_type
from ...dialects.lowp import Dot4U8S8Op
from .. import lowp_to_llvm  # noqa: F401  (the lowp ops this form makes get their LLVM conversions)
from ..te_builder import Scalar, TEBuilder
from .quant import qconv2d as plain_qconv2d
from .quant import qdense as plain_qdense
from .quant import requantize
from .registry import compute_rule

#: output channels per block of the packed weight: a register tile's columns (4 vectors
#: of 16 int32 sums: the tile's weight words of one k step are contiguous, one stream)
#: where the channels are a multiple of it, else one vector
CHANNEL_BLOCK = 64
VECTOR_BLOCK = 16
#: int8 values per word
WORD = 4
#: the byte flip that reads an int8 as uint8 + 128, on a whole word
FLIP_WORD = np.int32(np.uint32(0x80808080).view(np.int32))


def _constant(value: SSAValue) -> np.ndarray | None:
    return value.owner.array() if isinstance(value.owner, ConstantOp) else None


@dataclass
class PackedProduct:
    """A quantized product's constants rearranged for ``lowp.dot4_u8s8`` (module doc)."""

    #: int32 words (o blocks, ..., k words, block)
    words: np.ndarray
    #: bias minus the activation zero point times each channel's weight sum (int32, (O,))
    bias: np.ndarray
    #: (x_scale * w_scale[o]) / y_scale, float32 (O,)
    multiplier: np.ndarray
    #: the result's zero point (its value)
    y_zero_point: int
    #: whether the activation is int8 (read with its bytes flipped)
    flip: bool
    #: per-channel weight zero points left in the product (int32 (O,)), or None: set when
    #: the centered weight leaves int8 (an int8 weight whose zero point is not 0, a uint8
    #: one whose zero point is not 128), then the words hold the weight as it is (uint8
    #: minus 128, its zero point with it) and the epilogue subtracts ``zw[o] * sum_k x``
    row_zero_points: np.ndarray | None = None

    @staticmethod
    def of(op: quant.QuantizedProductOp, centered_w: np.ndarray, raw_w: np.ndarray | None = None) -> PackedProduct | None:
        """``centered_w``: the weight minus its zero point, (O, ..., K) int64 with K last;
        ``raw_w``: the weight's values in the same layout, uint8 ones minus 128 (int8 values
        either way, for the row-sum form), or None."""
        params = [_constant(v) for v in op.params()]
        bias = _constant(op.bias) if op.bias is not None else np.zeros(centered_w.shape[0], np.int32)
        if any(p is None for p in params) or bias is None:
            return None
        x_scale, x_zp, w_scale, w_zp, y_scale, y_zp = params
        flip = op.x_dtype.data == "i8"
        zero = int(quant.as_values(x_zp, op.x_dtype.data).reshape(-1)[0]) + (128 if flip else 0)
        channels = centered_w.shape[0]
        row_zero_points = None
        if centered_w.min(initial=0) < -128 or centered_w.max(initial=0) > 127:
            if raw_w is None or raw_w.min(initial=0) < -128 or raw_w.max(initial=0) > 127:
                return None
            # sum (x - zx)(w - zw) = sum x w - zx sum w - zw sum x + k zx zw: the words hold w
            k = raw_w.reshape(channels, -1).shape[1]
            row_zero_points = (raw_w - centered_w).reshape(channels, -1)[:, 0]
            column_sums = raw_w.reshape(channels, -1).sum(axis=1)
            folded = bias.astype(np.int64) - zero * column_sums + k * zero * row_zero_points
            centered_w = raw_w
        else:
            column_sums = centered_w.reshape(channels, -1).sum(axis=1)
            folded = bias.astype(np.int64) - zero * column_sums
        if np.abs(folded).max(initial=0) >= 2**31:
            return None
        multiplier = np.broadcast_to(quant.requant_multiplier(x_scale, w_scale, y_scale), (channels,))
        y_zero = int(quant.as_values(y_zp, op.y_dtype.data).reshape(-1)[0])
        return PackedProduct(
            pack_words(centered_w), folded.astype(np.int32), np.ascontiguousarray(multiplier, np.float32), y_zero, flip,
            None if row_zero_points is None else row_zero_points.astype(np.int32),
        )


def channel_block(channels: int) -> int:
    """Output channels per block of the packed weight (see :data:`CHANNEL_BLOCK`)."""
    return CHANNEL_BLOCK if channels % CHANNEL_BLOCK == 0 else VECTOR_BLOCK


def pack_words(centered_w: np.ndarray) -> np.ndarray:
    """(O, ..., K) int8 values -> int32 words (ceil(O/b), ..., ceil(K/4), b) with b
    = :func:`channel_block`, zero padded: word ``[o // b, ..., k // 4, o % b]`` holds
    ``w[o, ..., k : k + 4]``, k lowest."""
    channels, *middle, k = centered_w.shape
    block = channel_block(channels)
    blocks, words = -(-channels // block), -(-k // WORD)
    padded = np.zeros((blocks * block, *middle, words * WORD), np.int8)
    padded[:channels, ..., :k] = centered_w
    grouped = padded.reshape(blocks, block, *middle, words, WORD)
    order = [0, *range(2, 2 + len(middle)), 2 + len(middle), 1, 3 + len(middle)]
    return np.ascontiguousarray(grouped.transpose(order)).view(np.int32).reshape(blocks, *middle, words, block)


class _Emitter:
    """The packed constants as graph constants before the op, and the shared TE pieces."""

    def __init__(self, t: TEBuilder, op: quant.QuantizedProductOp, packed: PackedProduct):
        self.op, self.packed = op, packed

        def constant(array: np.ndarray, name: str) -> SSAValue:
            return t.builder.insert(ConstantOp.from_array(array, f"{op.name.removeprefix('graph.')}.{name}")).result

        self.words = constant(packed.words, "words")
        self.bias = constant(packed.bias, "bias")
        self.multiplier = constant(packed.multiplier, "multiplier")
        self.row_zero_points = None if packed.row_zero_points is None else constant(packed.row_zero_points, "row_zero_points")

    def inputs(self) -> list[SSAValue]:
        return [self.op.input, self.words, self.bias, self.multiplier]

    def word(self, r: Scalar, data: SSAValue, index, axis: int, padded: list[int], pad: SSAValue | None) -> SSAValue:
        """The 4 activation bytes at ``index`` .. ``index + 3`` along ``axis`` as one
        uint8 word (bytes outside ``padded`` axes' bounds read ``pad``)."""
        word = None
        for j in range(WORD):
            at = list(index)
            at[axis] = r.add(r.mul(index[axis], r.index(WORD)), r.index(j))
            byte = r.read_padded(data, at, padded, pad) if padded else r.read(data, at)
            value = r._insert(arith.ExtUIOp(byte, i32))
            if j:
                value = r._insert(arith.ShLIOp(value, r.const(8 * j, i32)))
            word = value if word is None else r._insert(arith.OrIOp(word, value))
        if self.packed.flip:
            word = r._insert(arith.XOrIOp(word, r.const(int(FLIP_WORD), i32)))
        return word

    def dot(self, r: Scalar, word: SSAValue, weight: SSAValue) -> SSAValue:
        return r._insert(Dot4U8S8Op(r.const(0, i32), word, weight))

    def epilogue(self, s: Scalar, acc: SSAValue, channel: SSAValue, bias: SSAValue, multiplier: SSAValue) -> SSAValue:
        op, packed = self.op, self.packed
        total = s.add(acc, s.read(bias, [channel]))
        zero_point = s.const(packed.y_zero_point, i32)
        return requantize(
            s, total, s.read(multiplier, [channel]), zero_point, op.y_dtype.data, bool(op.relu.value.data),
            op.result.type.element_type,
        )  # fmt: skip


def _block_and_lane(r: Scalar, channel: SSAValue, block: int) -> tuple[SSAValue, SSAValue]:
    """(channel // block, channel % block): the unsigned forms the vectorizer reads as a
    uniform block and a linear lane."""
    return r._insert(arith.DivUIOp(channel, r.index(block))), r._insert(arith.RemUIOp(channel, r.index(block)))


def _row_sums(t: TEBuilder, op: quant.QDenseOp, flip: bool) -> SSAValue:
    """``sum_k x[..., k]`` of the activation read as uint8 (int8 flipped: + 128), i32: its
    own kernel before the product's (the row-sum form of :class:`PackedProduct`)."""
    shape = shape_of(op.input.type)

    def body(s: Scalar, idx, ins):
        (x,) = ins

        def term(r: Scalar, axes):
            value = r._insert(arith.ExtUIOp(r.read(x, [*idx, axes[0]]), i32))
            return r._insert(arith.XOrIOp(value, r.const(128, i32))) if flip else value

        return s.reduce("add", [s.dim(x, len(shape) - 1)], 0, term, i32)

    return t.compute("qdense_row_sums", tensor_type(shape[:-1], i32), [op.input], body)


@compute_rule(quant.QDenseOp)
def qdense(t: TEBuilder, op: quant.QDenseOp) -> SSAValue:
    weight, zero_point = _constant(op.weight), _constant(op.w_zero_point)
    packed = None
    if weight is not None and zero_point is not None:
        raw = quant.as_values(weight, op.w_dtype.data) - (128 if op.w_dtype.data == "ui8" else 0)
        packed = PackedProduct.of(op, op.weight_values(weight, zero_point), raw)
    if packed is None:
        return plain_qdense(t, op)
    e = _Emitter(t, op, packed)
    k = op.input.type.get_shape()[-1]
    words = -(-k // WORD)
    inputs = e.inputs()
    if e.row_zero_points is not None:
        inputs += [_row_sums(t, op, packed.flip), e.row_zero_points]

    def body(s: Scalar, idx, ins):
        x, w, bias, multiplier, *row_form = ins
        *rows, n = idx
        padded = [len(idx) - 1] if k % WORD else []

        def term(r: Scalar, axes):
            block, lane = _block_and_lane(r, n, packed.words.shape[-1])
            word = e.word(r, x, [*rows, axes[0]], len(idx) - 1, padded, r.const(0, x.type.element_type))
            return e.dot(r, word, r.read(w, [block, axes[0], lane]))

        acc = s.reduce("add", [words], 0, term, i32)
        if row_form:  # - zw[n] * sum_k x[rows, k]
            row_sums, row_zero_points = row_form
            acc = s.sub(acc, s.mul(s.read(row_zero_points, [n]), s.read(row_sums, rows)))
        return e.epilogue(s, acc, n, bias, multiplier)

    return t.compute("qdense", op.result.type, inputs, body)


def _tap(s: Scalar, out: SSAValue, k: SSAValue, stride: int, pad: int, dilation: int) -> SSAValue:
    return s.add(s.sub(s.mul(out, s.index(stride)), s.index(pad)), s.mul(k, s.index(dilation)))


@compute_rule(quant.QConv2dOp)
def qconv2d(t: TEBuilder, op: quant.QConv2dOp) -> SSAValue:
    (sh, sw), (top, left, bottom, right), (dh, dw), groups = op.window()
    weight, zero_point = _constant(op.weight), _constant(op.w_zero_point)
    packed = None
    if op.layout.data == "NHWC" and groups == 1 and weight is not None and zero_point is not None:
        centered = op.weight_values(weight, zero_point)  # HWIO
        packed = PackedProduct.of(op, np.ascontiguousarray(centered.transpose(3, 0, 1, 2)))  # OHWI: k = I last
    if packed is None:
        return plain_qconv2d(t, op)
    e = _Emitter(t, op, packed)
    _, channels, kh, kw = weight_to_oihw(op.weight.type.get_shape(), "NHWC")
    words = -(-channels // WORD)
    pad_byte = _constant(op.x_zero_point).reshape(-1)[0]
    spatial = [axis for axis, pads in ((1, (top, bottom)), (2, (left, right))) if any(pads)]
    padded = spatial + ([3] if channels % WORD else [])

    def body(s: Scalar, idx, ins):
        x, w, bias, multiplier = ins
        n, y, col, o = idx
        pad = s.const(int(pad_byte), x.type.element_type) if padded else None

        def term(r: Scalar, axes):
            ky, kx, c = axes
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, col, kx, sw, left, dw)
            block, lane = _block_and_lane(r, o, packed.words.shape[-1])
            word = e.word(r, x, [n, iy, ix, c], 3, padded, pad)
            return e.dot(r, word, r.read(w, [block, ky, kx, c, lane]))

        return e.epilogue(s, s.reduce("add", [kh, kw, words], 0, term, i32), o, bias, multiplier)

    return t.compute("qconv2d", op.result.type, e.inputs(), body)


__all__ = ["CHANNEL_BLOCK", "PackedProduct", "channel_block", "pack_words", "qconv2d", "qdense"]
