"""TE rules of convolution and pooling (NCHW). Padding reads are bounds-checked
(``Scalar.read_padded``): out-of-range taps read the pad value, never outside the buffer."""

from __future__ import annotations

from xdsl.ir import SSAValue

from ...dialects.graph import nn
from ...dialects.graph.base import ints
from ..te_builder import Scalar, TEBuilder, lowest_value
from .registry import compute_rule


def _tap(s: Scalar, out: SSAValue, k: SSAValue, stride: int, pad: int, dilation: int) -> SSAValue:
    """Input coordinate of kernel tap ``k`` for output coordinate ``out``."""
    return s.add(s.sub(s.mul(out, s.index(stride)), s.index(pad)), s.mul(k, s.index(dilation)))


@compute_rule(nn.Conv2dOp)
def conv2d(t: TEBuilder, op: nn.Conv2dOp) -> SSAValue:
    (sh, sw), (top, left, _, _), (dh, dw) = ints(op.strides), ints(op.padding), ints(op.dilation)
    groups = op.groups.value.data
    out_channels, in_per_group, kh, kw = op.weight.type.get_shape()
    per_group = out_channels // groups
    inputs = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])

    def element(s: Scalar, idx, ins):
        n, o, y, x = idx
        data, weight, *bias = ins
        first_channel = s.mul(s.floordiv(o, s.index(per_group)), s.index(in_per_group))
        zero = s.const(0, data.type.element_type)

        def term(r: Scalar, axes):
            c, ky, kx = axes
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, x, kx, sw, left, dw)
            pixel = r.read_padded(data, [n, r.add(first_channel, c), iy, ix], [2, 3], zero)
            return r.mul(pixel, r.read(weight, [o, c, ky, kx]))

        acc = s.reduce("add", [in_per_group, kh, kw], 0, term, data.type.element_type)
        return s.add(acc, s.read(bias[0], [o])) if bias else acc

    return t.compute("conv2d", op.result.type, inputs, element)


@compute_rule(nn.MaxPool2dOp)
def max_pool2d(t: TEBuilder, op: nn.MaxPool2dOp) -> SSAValue:
    (kh, kw), (sh, sw), (top, left, _, _), (dh, dw) = op.window()
    element_type = op.input.type.element_type

    def element(s: Scalar, idx, ins):
        n, c, y, x = idx
        low = s.lowest(element_type)

        def term(r: Scalar, axes):
            ky, kx = axes
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, x, kx, sw, left, dw)
            return r.read_padded(ins[0], [n, c, iy, ix], [2, 3], low)

        return s.reduce("max", [kh, kw], lowest_value(element_type), term, element_type)

    return t.compute("max_pool2d", op.result.type, [op.input], element)


@compute_rule(nn.AvgPool2dOp)
def avg_pool2d(t: TEBuilder, op: nn.AvgPool2dOp) -> SSAValue:
    (kh, kw), (sh, sw), (top, left, bottom, right), _ = op.window()
    include_pad = bool(op.count_include_pad.value.data)
    element_type = op.input.type.element_type

    def element(s: Scalar, idx, ins):
        n, c, y, x = idx
        data = ins[0]
        zero = s.const(0, element_type)

        def term(r: Scalar, axes):
            ky, kx = axes
            iy, ix = _tap(r, y, ky, sh, top, 1), _tap(r, x, kx, sw, left, 1)
            return r.read_padded(data, [n, c, iy, ix], [2, 3], zero)

        total = s.reduce("add", [kh, kw], 0, term, element_type)

        def window_length(out, stride, pad_begin, pad_end, kernel, axis):
            # torch: the window may cover padding, but not past the end padding (ceil_mode)
            size = s.dim(data, axis)
            start = s.sub(s.mul(out, s.index(stride)), s.index(pad_begin))
            end = s.min(s.add(start, s.index(kernel)), s.add(size, s.index(pad_end)))
            if not include_pad:
                start, end = s.max(start, s.index(0)), s.min(end, size)
            return s.sub(end, start)

        count = s.mul(window_length(y, sh, top, bottom, kh, 2), window_length(x, sw, left, right, kw, 3))
        return s.div(total, s.index_to(count, element_type))

    return t.compute("avg_pool2d", op.result.type, [op.input], element)


@compute_rule(nn.AdaptiveAvgPool2dOp)
def adaptive_avg_pool2d(t: TEBuilder, op: nn.AdaptiveAvgPool2dOp) -> SSAValue:
    out_h, out_w = ints(op.output_size)
    height, width = op.input.type.get_shape()[2:]
    element_type = op.input.type.element_type

    def element(s: Scalar, idx, ins):
        n, c, y, x = idx

        def bin_(i, size, out):
            """[floor(i*size/out), ceil((i+1)*size/out))"""
            start = s.floordiv(s.mul(i, s.index(size)), s.index(out))
            end = s.floordiv(s.add(s.mul(s.add(i, s.index(1)), s.index(size)), s.index(out - 1)), s.index(out))
            return start, s.sub(end, start)

        y0, rows = bin_(y, height, out_h)
        x0, cols = bin_(x, width, out_w)

        def term(r: Scalar, axes):
            return r.read(ins[0], [n, c, r.add(y0, axes[0]), r.add(x0, axes[1])])

        total = s.reduce("add", [rows, cols], 0, term, element_type)
        return s.div(total, s.index_to(s.mul(rows, cols), element_type))

    return t.compute("adaptive_avg_pool2d", op.result.type, [op.input], element)
