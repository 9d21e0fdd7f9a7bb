"""TE rules of convolution, transposed convolution, pooling and resizing (NCHW; conv2d and
pooling also NHWC, written once over NCHW indices mapped by ``layout.py``). Padding reads
are bounds-checked (``Scalar.read_padded``): out-of-range taps read the pad value, never outside
the buffer; computed source indices are clamped to the input."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, f32, f64, i64
from xdsl.ir import SSAValue

from ...dialects.graph import nn
from ...dialects.graph.base import ints
from ...dialects.graph.layout import spatial_axes, to_layout, to_nchw, weight_from_oihw, weight_to_oihw
from ..te_builder import Scalar, TEBuilder, lowest_value
from .registry import compute_rule


def _tap(s: Scalar, out: SSAValue, k: SSAValue, stride: int, pad: int, dilation: int) -> SSAValue:
    """Input coordinate of kernel tap ``k`` for output coordinate ``out``."""
    return s.add(s.sub(s.mul(out, s.index(stride)), s.index(pad)), s.mul(k, s.index(dilation)))


def _input_channel(s: Scalar, o: SSAValue, c: SSAValue, groups: int, per_group: int, in_per_group: int):
    """Input channel of reduction channel ``c`` for output channel ``o``: plain ``c`` without
    groups and ``o`` for depthwise, so the index stays affine (vectorizable)."""
    if groups == 1:
        return c
    if per_group == 1 and in_per_group == 1:
        return o
    return s.add(s.mul(s.floordiv(o, s.index(per_group)), s.index(in_per_group)), c)


@compute_rule(nn.Conv2dOp)
def conv2d(t: TEBuilder, op: nn.Conv2dOp) -> SSAValue:
    """The reduction runs over (c, ky, kx) in NCHW and (ky, kx, c) in NHWC: innermost is the
    axis contiguous in memory in both data and weight. Only a padded axis is bounds-checked:
    unpadded, every tap of an output pixel lies inside the input (1x1 256->1024 on 14x14,
    one thread, znver2: the checks cost 1.6x)."""
    (sh, sw), (top, left, bottom, right), (dh, dw) = ints(op.strides), ints(op.padding), ints(op.dilation)
    layout = op.data_layout()
    groups = op.groups.value.data
    out_channels, in_per_group, kh, kw = weight_to_oihw(op.weight.type.get_shape(), layout)
    per_group = out_channels // groups
    channels_last = layout == "NHWC"
    inputs = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])
    padded = [axis for axis, pads in zip(spatial_axes(layout), ((top, bottom), (left, right))) if any(pads)]

    def element(s: Scalar, idx, ins):
        n, o, y, x = to_nchw(idx, layout)
        data, weight, *bias = ins
        zero = s.const(0, data.type.element_type)

        def term(r: Scalar, axes):
            ky, kx, c = axes if channels_last else (axes[1], axes[2], axes[0])
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, x, kx, sw, left, dw)
            channel = _input_channel(r, o, c, groups, per_group, in_per_group)
            pixel = r.read_padded(data, to_layout([n, channel, iy, ix], layout), padded, zero)
            return r.mul(pixel, r.read(weight, weight_from_oihw([o, c, ky, kx], layout)))

        extents = [kh, kw, in_per_group] if channels_last else [in_per_group, kh, kw]
        acc = s.reduce("add", extents, 0, term, data.type.element_type)
        return s.add(acc, s.read(bias[0], [o])) if bias else acc

    return t.compute("conv2d", op.result.type, inputs, element)


@compute_rule(nn.MaxPool2dOp)
def max_pool2d(t: TEBuilder, op: nn.MaxPool2dOp) -> SSAValue:
    (kh, kw), (sh, sw), (top, left, _, _), (dh, dw) = op.window()
    element_type = op.input.type.element_type

    layout = op.data_layout()

    def element(s: Scalar, idx, ins):
        n, c, y, x = to_nchw(idx, layout)
        low = s.lowest(element_type)

        def term(r: Scalar, axes):
            ky, kx = axes
            iy, ix = _tap(r, y, ky, sh, top, dh), _tap(r, x, kx, sw, left, dw)
            return r.read_padded(ins[0], to_layout([n, c, iy, ix], layout), spatial_axes(layout), low)

        return s.reduce("max", [kh, kw], lowest_value(element_type), term, element_type)

    return t.compute("max_pool2d", op.result.type, [op.input], element)


@compute_rule(nn.AvgPool2dOp)
def avg_pool2d(t: TEBuilder, op: nn.AvgPool2dOp) -> SSAValue:
    (kh, kw), (sh, sw), (top, left, bottom, right), _ = op.window()
    include_pad = bool(op.count_include_pad.value.data)
    element_type = op.input.type.element_type
    layout = op.data_layout()
    h_axis, w_axis = spatial_axes(layout)

    def element(s: Scalar, idx, ins):
        n, c, y, x = to_nchw(idx, layout)
        data = ins[0]
        zero = s.const(0, element_type)

        def term(r: Scalar, axes):
            ky, kx = axes
            iy, ix = _tap(r, y, ky, sh, top, 1), _tap(r, x, kx, sw, left, 1)
            return r.read_padded(data, to_layout([n, c, iy, ix], layout), (h_axis, w_axis), zero)

        total = s.reduce("add", [kh, kw], 0, term, element_type)
        if op.divisor() is not None:
            return s.div(total, s.const(op.divisor(), element_type))

        def window_length(out, stride, pad_begin, pad_end, kernel, axis):
            # torch: the window may cover padding, but not past the end padding (ceil_mode)
            size = s.dim(data, axis)
            start = s.sub(s.mul(out, s.index(stride)), s.index(pad_begin))
            end = s.min(s.add(start, s.index(kernel)), s.add(size, s.index(pad_end)))
            if not include_pad:
                start, end = s.max(start, s.index(0)), s.min(end, size)
            return s.sub(end, start)

        count = s.mul(
            window_length(y, sh, top, bottom, kh, h_axis), window_length(x, sw, left, right, kw, w_axis)
        )
        return s.div(total, s.index_to(count, element_type))

    return t.compute("avg_pool2d", op.result.type, [op.input], element)


def _adaptive_pool(
    t: TEBuilder,
    op: nn._AdaptivePool2dOp,
    combiner: str,
    init: float | int,
    finish: Callable[[Scalar, SSAValue, SSAValue, SSAValue], SSAValue],
) -> SSAValue:
    """``combiner`` over each output pixel's bin (``nn.adaptive_bins``); ``finish(s, total,
    rows, cols)`` turns the combined value into the result (the average divides)."""
    out_h, out_w = ints(op.output_size)
    layout = op.data_layout()
    height, width = to_nchw(op.input.type.get_shape(), layout)[2:]
    element_type = op.input.type.element_type

    def element(s: Scalar, idx, ins):
        n, c, y, x = to_nchw(idx, layout)

        def bin_(i, size, out):
            """[floor(i*size/out), ceil((i+1)*size/out))"""
            start = s.floordiv(s.mul(i, s.index(size)), s.index(out))
            end = s.floordiv(s.add(s.mul(s.add(i, s.index(1)), s.index(size)), s.index(out - 1)), s.index(out))
            return start, s.sub(end, start)

        y0, rows = bin_(y, height, out_h)
        x0, cols = bin_(x, width, out_w)

        def term(r: Scalar, axes):
            return r.read(ins[0], to_layout([n, c, r.add(y0, axes[0]), r.add(x0, axes[1])], layout))

        total = s.reduce(combiner, [rows, cols], init, term, element_type)
        return finish(s, total, rows, cols)

    return t.compute(op.name.removeprefix("graph."), op.result.type, [op.input], element)


@compute_rule(nn.AdaptiveAvgPool2dOp)
def adaptive_avg_pool2d(t: TEBuilder, op: nn.AdaptiveAvgPool2dOp) -> SSAValue:
    element_type = op.input.type.element_type
    return _adaptive_pool(
        t, op, "add", 0, lambda s, total, rows, cols: s.div(total, s.index_to(s.mul(rows, cols), element_type))
    )


@compute_rule(nn.AdaptiveMaxPool2dOp)
def adaptive_max_pool2d(t: TEBuilder, op: nn.AdaptiveMaxPool2dOp) -> SSAValue:
    """Every bin holds at least one element, so the lowest value never shows."""
    return _adaptive_pool(t, op, "max", lowest_value(op.input.type.element_type), lambda s, total, rows, cols: total)


@compute_rule(nn.Conv2dTransposeOp)
def conv2d_transpose(t: TEBuilder, op: nn.Conv2dTransposeOp) -> SSAValue:
    """Gather form: output pixel ``y`` sums the input pixels ``iy = (y + top - ky*dilation) / stride``
    over the taps where that division is exact and ``iy`` lies inside the input; other taps read
    nothing (a bounds-checked read, then a select)."""
    (sh, sw), (top, left, _, _), (dh, dw) = ints(op.strides), ints(op.padding), ints(op.dilation)
    groups = op.groups.value.data
    in_channels, out_per_group, kh, kw = op.weight.type.get_shape()
    in_per_group = in_channels // groups
    inputs = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])

    def element(s: Scalar, idx, ins):
        n, o, y, x = idx
        data, weight, *bias = ins
        group = s.floordiv(o, s.index(out_per_group))
        first_channel = s.mul(group, s.index(in_per_group))
        o_in_group = s.sub(o, s.mul(group, s.index(out_per_group)))
        zero = s.const(0, data.type.element_type)

        def source(r: Scalar, out, k, stride, pad, dilation):
            """(input coordinate, whether the tap lands on the stride grid or None if it always does)."""
            shifted = r.sub(r.add(out, r.index(pad)), r.mul(k, r.index(dilation)))
            if stride == 1:
                return shifted, None
            return r.floordiv(shifted, r.index(stride)), r.cmp("eq", r.rem(shifted, r.index(stride)), r.index(0))

        def term(r: Scalar, axes):
            c, ky, kx = axes
            iy, on_y = source(r, y, ky, sh, top, dh)
            ix, on_x = source(r, x, kx, sw, left, dw)
            channel = r.add(first_channel, c)
            pixel = r.read_padded(data, [n, channel, iy, ix], [2, 3], zero)
            for on_grid in (on_y, on_x):
                if on_grid is not None:
                    pixel = r.select(on_grid, pixel, zero)
            return r.mul(pixel, r.read(weight, [channel, o_in_group, ky, kx]))

        acc = s.reduce("add", [in_per_group, kh, kw], 0, term, data.type.element_type)
        return s.add(acc, s.read(bias[0], [o])) if bias else acc

    return t.compute("conv2d_transpose", op.result.type, inputs, element)


def _to_index(s: Scalar, value: SSAValue) -> SSAValue:
    """A non-negative float as an ``index`` (truncation = floor here; saturating, never UB)."""
    return s.math(arith.IndexCastOp, s.cast(value, i64), IndexType())


def _nearest_source(s: Scalar, out: SSAValue, in_size: int, out_size: int, mode: str, scale: float) -> SSAValue:
    """Source index of destination ``out`` (``resize_nearest_indices`` in the dialect, op for op)."""
    if mode == "nearest":
        if out_size == in_size:
            return out
        if out_size == 2 * in_size:
            return s.floordiv(out, s.index(2))
        # one float32 product, uncontracted: torch's floorf(dst * scale)
        src = s.math(arith.MulfOp, s.index_to(out, f32), s.const(scale, f32))
    else:
        # nearest_exact: (dst + 0.5) * scale in double (exact), rounded to float, floored
        shifted = s.math(arith.AddfOp, s.index_to(out, f64), s.const(0.5, f64))
        src = s.cast(s.math(arith.MulfOp, shifted, s.const(scale, f64)), f32)
    return s.clamp(_to_index(s, src), s.index(0), s.index(in_size - 1))


def _linear_source(s: Scalar, out: SSAValue, in_size: int, out_size: int, align_corners: bool, scale: float):
    """``(i0, i1, lambda1)`` of destination ``out`` (``resize_linear_weights`` in the dialect);
    ``lambda1`` is None where the axis keeps its size (a plain copy)."""
    if out_size == in_size:
        return out, out, None
    position = s.index_to(out, f32)
    if align_corners:
        real = s.mul(s.const(scale, f32), position)
    else:
        half = s.const(0.5, f32)
        real = s.max(s.sub(s.mul(s.const(scale, f32), s.add(position, half)), half), s.const(0.0, f32))
    last = s.index(in_size - 1)
    i0 = s.clamp(_to_index(s, real), s.index(0), last)
    lam = s.clamp(s.sub(real, s.index_to(i0, f32)), s.const(0.0, f32), s.const(1.0, f32))
    i1 = s.min(s.add(i0, s.index(1)), last)
    return i0, i1, lam


@compute_rule(nn.Resize2dOp)
def resize2d(t: TEBuilder, op: nn.Resize2dOp) -> SSAValue:
    mode = op.mode.data
    align_corners = bool(op.align_corners.value.data)
    (out_h, out_w), (height, width) = ints(op.size), op.input_nchw()[2:]
    scale_h, scale_w = op.axis_scale(0), op.axis_scale(1)
    element_type = op.input.type.element_type
    layout = op.data_layout()

    def element(s: Scalar, idx, ins):
        n, c, y, x = to_nchw(idx, layout)
        data = ins[0]

        def read(iy, ix):
            return s.read(data, list(to_layout([n, c, iy, ix], layout)))

        if mode != "bilinear":
            iy = _nearest_source(s, y, height, out_h, mode, scale_h)
            ix = _nearest_source(s, x, width, out_w, mode, scale_w)
            return read(iy, ix)
        y0, y1, ly = _linear_source(s, y, height, out_h, align_corners, scale_h)
        x0, x1, lx = _linear_source(s, x, width, out_w, align_corners, scale_w)

        def lerp(a_index, b_index, lam, read):
            a = read(a_index)
            if lam is None:
                return a
            lam = s.cast(lam, element_type)
            one = s.const(1.0, element_type)
            return s.add(s.mul(s.sub(one, lam), a), s.mul(lam, read(b_index)))

        def row(iy):
            return lerp(x0, x1, lx, lambda ix: read(iy, ix))

        return lerp(y0, y1, ly, row)

    return t.compute("resize2d", op.result.type, [op.input], element)
