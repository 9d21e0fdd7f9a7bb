"""Convolutions: Conv and ConvTranspose (1-d, 2-d, 3-d) and DeformConv on the graph's 2-d ops.

A 1-d convolution is the 2-d one over a height of 1. A 3-d one is the sum, over the
kernel's depth taps, of 2-d convolutions of the depth slices each tap reads (output
depths stacked into the batch axis): the 3-d work with no extra arithmetic.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .grid_sample import interpolate, pixel_taps
from .windows import Window, window


def _conv2d(ctx: OnnxContext, x: SSAValue, weight: SSAValue, bias: SSAValue | None, w: Window, groups: int) -> SSAValue:
    padding = (w.begin[0], w.begin[1], w.end[0], w.end[1])
    return ctx.b.conv2d(x, weight, bias, list(w.strides), padding, list(w.dilations), groups)


def _depth_slices_conv(ctx: OnnxContext, x: SSAValue, weight: SSAValue, bias: SSAValue | None, w: Window, groups: int) -> SSAValue:
    """A 3-d convolution as 2-d ones: for depth tap ``k``, the depth slice ``x[:, :, o*s - pad + k*d]``
    of every output depth ``o``, convolved over height and width with ``weight[:, :, k]``."""
    g = ctx.b
    n, c, depth, h, width = ctx.shape(x)
    out_channels = ctx.shape(weight)[0]
    od = w.out[0]
    if w.begin[0] or w.end[0] or w.extra[0]:
        x = g.pad(x, [0, 0, w.begin[0], 0, 0], [0, 0, w.end[0] + w.extra[0], 0, 0], 0)
    plane = Window(w.kernel[1:], w.strides[1:], w.dilations[1:], w.begin[1:], w.end[1:], w.out[1:], w.extra[1:])
    total = None
    for k in range(w.kernel[0]):
        start = k * w.dilations[0]
        slices = g.slice(x, [start], [start + (od - 1) * w.strides[0] + 1], [2], [w.strides[0]])  # (N, C, OD, H, W)
        batch = g.reshape(g.transpose(slices, [0, 2, 1, 3, 4]), (n * od, c, h, width))
        taps = g.reshape(g.slice(weight, [k], [k + 1], [2]), (out_channels, ctx.shape(weight)[1], *ctx.shape(weight)[3:]))
        y = _conv2d(ctx, batch, taps, bias if k == 0 else None, plane, groups)
        total = y if total is None else g.add(total, y)
    oh, ow = ctx.shape(total)[2:]
    return g.transpose(g.reshape(total, (n, od, out_channels, oh, ow)), [0, 2, 1, 3, 4])


@converter("Conv")
def conv(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    x, weight, bias = node.input(0), node.input(1), node.input(2)
    kernel = list(ctx.shape(weight)[2:])
    if not all(isinstance(k, int) for k in kernel):
        raise refuse("a weight of symbolic shape")
    w = window(ctx, node, x, kernel)
    groups = node.attr("group", 1)
    spatial = len(kernel)
    if spatial == 2:
        return _conv2d(ctx, x, weight, bias, w, groups)
    if spatial == 1:
        n, c, length = ctx.shape(x)
        flat = Window((1, *w.kernel), (1, *w.strides), (1, *w.dilations), (0, *w.begin), (0, *w.end), (1, *w.out), (0, *w.extra))
        wt = ctx.shape(weight)
        y = _conv2d(ctx, g.reshape(x, (n, c, 1, length)), g.reshape(weight, (wt[0], wt[1], 1, wt[2])), bias, flat, groups)
        return g.reshape(y, (n, ctx.shape(y)[1], ctx.shape(y)[3]))
    if spatial == 3:
        return _depth_slices_conv(ctx, x, weight, bias, w, groups)
    raise refuse(f"{spatial}-d convolution (1-d, 2-d and 3-d are supported)")


def _transposed_pads(ctx: OnnxContext, node: OnnxNode, spatial: list[int], kernel: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(pads begin, pads end, output sizes) of a ConvTranspose (``output_shape`` and
    ``auto_pad`` resolved as ONNX says)."""
    rank = len(spatial)
    strides = node.attr("strides", [1] * rank)
    dilations = node.attr("dilations", [1] * rank)
    output_padding = node.attr("output_padding", [0] * rank)
    full = [s * (size - 1) + op + d * (k - 1) + 1 for s, size, op, d, k in zip(strides, spatial, output_padding, dilations, kernel)]
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = list(output_shape)[-rank:] if output_shape is not None else [size * s for size, s in zip(spatial, strides)]
        total = [f - o for f, o in zip(full, out)]
        if auto_pad == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        end = [t - b for t, b in zip(total, begin)]
        return begin, end, out
    pads = node.attr("pads", [0] * 2 * rank) if auto_pad == "NOTSET" else [0] * 2 * rank
    begin, end = list(pads[:rank]), list(pads[rank:])
    return begin, end, [f - b - e for f, b, e in zip(full, begin, end)]


def _depth_taps_transposed(
    ctx: OnnxContext, x: SSAValue, weight: SSAValue, bias: SSAValue | None, strides: list[int], dilations: list[int],
    begin: list[int], out: list[int], groups: int,
) -> SSAValue:  # fmt: skip
    """A 3-d transposed convolution as 2-d ones: every input depth slice scattered over height
    and width by depth tap ``k``'s weights lands at output depth ``i*stride + k*dilation``; the
    taps' depth-spread results summed, then the ``[begin, begin + out)`` window (zeros past
    the scattered image's end)."""
    g = ctx.b
    n, c, depth, h, w = ctx.shape(x)
    _, per_group, taps, kh, kw = ctx.shape(weight)
    channels = per_group * groups
    planes = g.reshape(g.transpose(x, [0, 2, 1, 3, 4]), (n * depth, c, h, w))
    spread = (depth - 1) * strides[0] + 1
    full_depth = spread + dilations[0] * (taps - 1)
    total = None
    for k in range(taps):
        tap = g.reshape(g.slice(weight, [k], [k + 1], [2]), (c, per_group, kh, kw))
        y = g.conv2d_transpose(planes, tap, None, strides[1:], (0, 0, 0, 0), (0, 0), dilations[1:], groups)
        fh, fw = ctx.shape(y)[2:]
        y = g.reshape(y, (n, depth, 1, channels, fh, fw))
        if strides[0] > 1:  # depth i at i*stride: zeros between the slices
            y = g.pad(y, [0, 0, 0, 0, 0, 0], [0, 0, strides[0] - 1, 0, 0, 0], 0)
        y = g.slice(g.reshape(y, (n, depth * strides[0], channels, fh, fw)), [0], [spread], [1])
        y = g.pad(y, [0, k * dilations[0], 0, 0, 0], [0, full_depth - spread - k * dilations[0], 0, 0, 0], 0)
        total = y if total is None else g.add(total, y)
    full = [full_depth, *ctx.shape(total)[3:]]
    low = [0, -begin[0], 0, -begin[1], -begin[2]]
    high = [0, begin[0] + out[0] - full[0], 0, begin[1] + out[1] - full[1], begin[2] + out[2] - full[2]]
    y = g.transpose(g.pad(total, low, high, 0), [0, 2, 1, 3, 4])
    if bias is not None:
        y = g.add(y, g.reshape(bias, (1, channels, 1, 1, 1)))
    return y


@converter("ConvTranspose")
def conv_transpose(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    x, weight, bias = node.input(0), node.input(1), node.input(2)
    kernel = list(ctx.shape(weight)[2:])
    spatial = list(ctx.shape(x)[2:])
    rank = len(kernel)
    if rank not in (1, 2, 3):
        raise refuse(f"{rank}-d transposed convolution (1-d, 2-d and 3-d are supported)")
    if not all(isinstance(d, int) for d in [*kernel, *spatial]):
        raise refuse("symbolic spatial dims")
    groups = node.attr("group", 1)
    strides = list(node.attr("strides", [1] * rank))
    dilations = list(node.attr("dilations", [1] * rank))
    begin, end, out = _transposed_pads(ctx, node, spatial, kernel)
    if any(o < 1 for o in out):
        raise OnnxImportError(f"node '{node.name}' (ConvTranspose): output size {out} is not positive")
    if rank == 3:
        return _depth_taps_transposed(ctx, x, weight, bias, strides, dilations, begin, out, groups)
    n, c = ctx.shape(x)[:2]
    if rank == 1:
        x = g.reshape(x, (n, c, 1, spatial[0]))
        weight = g.reshape(weight, (*ctx.shape(weight)[:2], 1, kernel[0]))
        strides, dilations, begin, end, kernel = [1, *strides], [1, *dilations], [0, *begin], [0, *end], [1, *kernel]
    want = [1, *out] if rank == 1 else out
    spatial2 = ctx.shape(x)[2:]
    extra = [o - (s * (i - 1) - b - e + d * (k - 1) + 1) for o, s, i, b, e, d, k in zip(want, strides, spatial2, begin, end, dilations, kernel)]
    if all(v >= 0 for v in [*begin, *end]) and all(0 <= p < max(s, d) for p, s, d in zip(extra, strides, dilations)):
        padding = (begin[0], begin[1], end[0], end[1])
        y = g.conv2d_transpose(x, weight, bias, strides, padding, extra, dilations, groups)
        return g.reshape(y, (n, ctx.shape(y)[1], out[0])) if rank == 1 else y
    # the whole scattered image (no pads), then the [begin, begin + out) window of it, zeros past its end
    y = g.conv2d_transpose(x, weight, None, strides, (0, 0, 0, 0), (0, 0), dilations, groups)
    full = ctx.shape(y)[2:]
    low = [0, 0] + [-b for b in begin]
    high = [0, 0] + [b + o - f for b, o, f in zip(begin, want, full)]
    if any(low) or any(high):
        y = g.pad(y, low, high, 0)
    if bias is not None:
        y = g.add(y, g.reshape(bias, (1, ctx.shape(bias)[0], 1, 1)))
    if rank == 1:
        y = g.reshape(y, (n, ctx.shape(y)[1], out[0]))
    return y


@converter("DeformConv", since=19)
def deform_conv(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """A 2-d convolution whose taps read the input at offset positions (bilinear, zeros
    outside; times the mask): for each kernel tap, the input sampled at its positions,
    then a 1x1 (grouped) convolution with that tap's weights; the taps summed."""
    g = ctx.b
    x, weight, offsets, bias, mask = (node.input(k) for k in range(5))
    shape, kernel = ctx.shape(x), list(ctx.shape(weight)[2:])
    if len(kernel) != 2:
        raise refuse(f"{len(kernel)}-d deformable convolution (2-d is supported)")
    if not all(isinstance(d, int) for d in (*shape, *ctx.shape(offsets))):
        raise refuse("symbolic shapes")
    n, channels, height, width = shape
    out_h, out_w = ctx.shape(offsets)[2:]
    kh, kw = kernel
    strides, dilations = node.attr("strides", [1, 1]), node.attr("dilations", [1, 1])
    pads = node.attr("pads", [0, 0, 0, 0])
    groups, offset_groups = node.attr("group", 1), node.attr("offset_group", 1)
    per_group = channels // offset_groups
    points = out_h * out_w
    rows = np.broadcast_to(np.arange(out_h, dtype=np.float64)[:, None] * strides[0] - pads[0], (out_h, out_w))
    cols = np.broadcast_to(np.arange(out_w, dtype=np.float64)[None, :] * strides[1] - pads[1], (out_h, out_w))
    dtype = ctx.dtype(x)
    total = None
    for i, j in ((i, j) for i in range(kh) for j in range(kw)):
        tap = i * kw + j
        sampled = []
        for og in range(offset_groups):
            base = (og * kh * kw + tap) * 2
            dy = g.reshape(g.slice(offsets, [base], [base + 1], [1]), (n, 1, points))
            dx = g.reshape(g.slice(offsets, [base + 1], [base + 2], [1]), (n, 1, points))
            y = g.add(dy, ctx.constant((rows + i * dilations[0]).reshape(1, 1, points).astype(dtype)))
            xs = g.add(dx, ctx.constant((cols + j * dilations[1]).reshape(1, 1, points).astype(dtype)))
            taps = [pixel_taps(ctx, y, height, "linear", "zeros", 0.0, height - 1.0), pixel_taps(ctx, xs, width, "linear", "zeros", 0.0, width - 1.0)]
            part = g.reshape(g.slice(x, [og * per_group], [(og + 1) * per_group], [1]), (n, per_group, height * width))
            values = interpolate(ctx, part, taps, [height, width])  # (N, C/og, P)
            if mask is not None:
                m = og * kh * kw + tap
                values = g.mul(values, g.reshape(g.slice(mask, [m], [m + 1], [1]), (n, 1, points)))
            sampled.append(values)
        image = g.reshape(sampled[0] if len(sampled) == 1 else g.concat(sampled, 1), (n, channels, out_h, out_w))
        taps_weight = g.slice(weight, [i, j], [i + 1, j + 1], [2, 3])  # (O, C/group, 1, 1)
        y = g.conv2d(image, taps_weight, None, [1, 1], (0, 0, 0, 0), [1, 1], groups)
        total = y if total is None else g.add(total, y)
    if bias is not None:
        total = g.add(total, g.reshape(bias, (1, ctx.shape(bias)[0], 1, 1)))
    return total
