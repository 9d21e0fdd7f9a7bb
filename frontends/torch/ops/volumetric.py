"""3-d convolution and pooling (video, volumetric and medical models: C3D/R3D, 3-D U-Net)
as the 2-d graph ops over depth slices.

The depth axis must be static. For a convolution, the ``KD`` depth taps of each output
depth are stacked into the channel axis and the output depths into the batch axis, so a
3-d convolution is ONE 2-d convolution with ``KD`` times the input channels (its GEMM
has the reduction ``KD*C*KH*KW`` of the 3-d one: no extra arithmetic, the stacking is
a copy of the input per depth tap, like im2col along depth only). Pooling reduces the
depth window first (an elementwise max or sum of ``KD`` strided slices), then pools the
height and width with the 2-d op, depth merged into the channels.
"""

from __future__ import annotations

from ....dialects.graph.types import Dim, shape_of
from ..context import ImportContext
from ..registry import converter, result_used
from .pool_indices import adaptive_taps, first_max_indices, window_taps


def _scaled(dim: Dim, factor: int) -> Dim:
    """``dim * factor`` as a static size or a dim expression (``"4*s0"``)."""
    if factor == 1:
        return dim
    return dim * factor if isinstance(dim, int) else f"{factor}*{dim}"


def _triple(v) -> tuple[int, int, int]:
    return tuple(v) * (3 // len(v)) if isinstance(v, list | tuple) else (v, v, v)


def _static_depth(x, what: str) -> int:
    depth = shape_of(x.type)[2]
    if not isinstance(depth, int):
        raise NotImplementedError(f"{what} over a symbolic depth ({depth}) is not supported (only static depths)")
    return depth


def _depth_taps(ctx: ImportContext, x, kernel: int, stride: int, pad: int, dilation: int, fill=0.0, ceil: bool = False):
    """The ``kernel`` depth slices of ``x`` (N, C, D, H, W) that output depth ``o`` reads
    at ``o*stride + k*dilation`` (after padding the depth by ``pad`` with ``fill``):
    a list of (N, C, OD, H, W) tensors, and OD."""
    b = ctx.b
    depth = _static_depth(x, "a 3-d window")
    span = dilation * (kernel - 1) + 1
    room = depth + 2 * pad - span
    out = (-(-room // stride) if ceil else room // stride) + 1
    if ceil and (out - 1) * stride >= depth + pad:
        out -= 1  # torch: the last window must start inside the input or the left padding
    if out < 1:
        raise ValueError(f"3-d window of {span} (kernel {kernel}, dilation {dilation}) is larger than the padded depth {depth + 2 * pad}")
    extra = max(0, (out - 1) * stride + span - (depth + 2 * pad))  # ceil mode: past the end
    if pad or extra:
        rank = len(shape_of(x.type))
        low, high = [0] * rank, [0] * rank
        low[2], high[2] = pad, pad + extra
        x = b.pad(x, low, high, fill)
    return [
        b.slice(x, [k * dilation], [k * dilation + (out - 1) * stride + 1], [2], [stride]) for k in range(kernel)
    ], out


def conv3d(ctx: ImportContext, node, x, weight, bias, stride, padding, dilation, groups: int):
    """``torch.nn.functional.conv3d`` as one conv2d (module docstring)."""
    b = ctx.b
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _triple(stride), _triple(padding), _triple(dilation)
    n, channels, _, height, width = shape_of(x.type)
    out_channels, per_group, kd, kh, kw = shape_of(weight.type)
    taps, out_depth = _depth_taps(ctx, x, kd, sd, pd, dd)
    # each tap (N, C, OD, H, W) -> (N*OD, 1, C, H, W); stacked: (N*OD, KD, C, H, W)
    rows = _scaled(n, out_depth)
    stacked = b.concat(
        [b.reshape(b.transpose(t, [0, 2, 1, 3, 4]), (rows, 1, channels, height, width)) for t in taps], axis=1
    )
    # channels ordered (group, tap, channel in group), as conv2d's groups expect
    stacked = b.reshape(stacked, (rows, kd, groups, per_group, height, width))
    stacked = b.reshape(b.transpose(stacked, [0, 2, 1, 3, 4, 5]), (rows, groups * kd * per_group, height, width))
    # weight (O, C/g, KD, KH, KW) -> (O, KD*C/g, KH, KW), tap-major like the input
    w = b.reshape(b.transpose(weight, [0, 2, 1, 3, 4]), (out_channels, kd * per_group, kh, kw))
    y = b.conv2d(stacked, w, bias, strides=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups=groups)
    _, _, out_h, out_w = shape_of(y.type)
    y = b.reshape(y, (n, out_depth, out_channels, out_h, out_w))
    return b.transpose(y, [0, 2, 1, 3, 4])


def conv_transpose3d(ctx: ImportContext, node, x, weight, bias, stride, padding, dilation, output_padding, groups: int):
    """A transposed 3-d convolution: along depth, the input spread ``stride`` apart with
    zeros between, padded by ``dilation*(KD-1) - padding``, read by the flipped depth taps
    (a transposed convolution is a convolution of the dilated input); the taps stacked
    into the channels of one 2-d transposed convolution for height and width."""
    b = ctx.b
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _triple(stride), _triple(padding), _triple(dilation)
    (od_pad, oh_pad, ow_pad) = _triple(output_padding)
    n, channels, depth, height, width = shape_of(x.type)
    _static_depth(x, "a transposed 3-d convolution")
    _, per_group_out, kd, kh, kw = shape_of(weight.type)
    per_group, out_channels = channels // groups, per_group_out * groups
    if sd > 1:  # zeros between the depth slices: (N, C, D, sd, H, W) -> (N, C, D*sd, H, W), cut to (D-1)*sd+1
        spread = b.reshape(x, (n, channels, depth, 1, height, width))
        zeros = b.broadcast_to(ctx.scalar(0.0, x), (n, channels, depth, sd - 1, height, width))
        x = b.reshape(b.concat([spread, zeros], axis=3), (n, channels, depth * sd, height, width))
        x = b.slice(x, [0], [(depth - 1) * sd + 1], [2], [1])
    edge = dd * (kd - 1) - pd
    if edge < 0:
        raise NotImplementedError(f"transposed 3-d convolution with depth padding {pd} > dilation*(kernel-1)")
    rank = 5
    low, high = [0] * rank, [0] * rank
    low[2], high[2] = edge, edge + od_pad
    if edge or od_pad:
        x = b.pad(x, low, high, 0.0)
    taps, out_depth = _depth_taps(ctx, x, kd, 1, 0, dd)
    rows = _scaled(n, out_depth)
    # tap k reads the flipped weight tap KD-1-k
    stacked = b.concat(
        [b.reshape(b.transpose(t, [0, 2, 1, 3, 4]), (rows, 1, channels, height, width)) for t in taps], axis=1
    )
    # channels ordered (group, tap, channel in group), as conv2d_transpose's groups expect
    stacked = b.reshape(stacked, (rows, kd, groups, per_group, height, width))
    stacked = b.reshape(b.transpose(stacked, [0, 2, 1, 3, 4, 5]), (rows, groups * kd * per_group, height, width))
    # weight (C, O/g, KD, KH, KW) -> depth flipped -> (g, KD, C/g, O/g, KH, KW) -> (g*KD*C/g, O/g, KH, KW)
    w = b.reshape(b.flip(weight, [2]), (groups, per_group, per_group_out, kd, kh, kw))
    w = b.reshape(b.transpose(w, [0, 3, 1, 2, 4, 5]), (groups * kd * per_group, per_group_out, kh, kw))
    y = b.conv2d_transpose(
        stacked, w, bias, strides=(sh, sw), padding=(ph, pw), output_padding=(oh_pad, ow_pad), dilation=(dh, dw),
        groups=groups,
    )  # fmt: skip
    _, _, out_h, out_w = shape_of(y.type)
    y = b.reshape(y, (n, out_depth, out_channels, out_h, out_w))
    return b.transpose(y, [0, 2, 1, 3, 4])


def _pool_2d_of_depth(ctx: ImportContext, reduced, pool):
    """``pool`` (a 2-d pooling of (N, C', H, W)) applied with the depth merged into the channels."""
    n, channels, depth, height, width = shape_of(reduced.type)
    y = pool(ctx.b.reshape(reduced, (n, channels * depth, height, width)))
    _, _, out_h, out_w = shape_of(y.type)
    return ctx.b.reshape(y, (n, channels, depth, out_h, out_w))


def batched(ctx: ImportContext, x, rank: int, pool):
    """``pool`` (of a ``rank``-d batch) of an unbatched input as of a batch of one
    (``pool`` may return several tensors, or None for a result not computed)."""
    if ctx.rank(x) == rank:
        return pool(x)
    y = pool(ctx.b.reshape(x, (1, *shape_of(x.type))))
    if isinstance(y, tuple):
        return tuple(None if t is None else ctx.b.reshape(t, shape_of(t.type)[1:]) for t in y)
    return ctx.b.reshape(y, shape_of(y.type)[1:])


@converter("aten.max_pool3d_with_indices.default")
def max_pool3d_with_indices(ctx: ImportContext, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    (kd, kh, kw) = _triple(kernel)
    (sd, sh, sw) = _triple(stride) if stride else (kd, kh, kw)
    (pd, ph, pw), (dd, dh, dw) = _triple(padding), _triple(dilation)

    window = ((kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw))

    def pool(x):
        taps, _ = _depth_taps(ctx, x, kd, sd, pd, dd, fill=float("-inf"), ceil=ceil_mode)
        deepest = taps[0]
        for t in taps[1:]:
            deepest = ctx.b.max(deepest, t)
        values = _pool_2d_of_depth(ctx, deepest, lambda y: ctx.b.max_pool2d(
            y, kernel=(kh, kw), strides=(sh, sw), padding=(ph, pw), dilation=(dh, dw), ceil_mode=ceil_mode
        ))  # fmt: skip
        if not result_used(node, 1):
            return values, None
        axis_taps = lambda k, size, out: window_taps(size, out, *(w[k] for w in window))  # noqa: E731
        return values, first_max_indices(ctx, x, values, 3, axis_taps, "max_pool3d")

    return batched(ctx, x, 5, pool)


def _adaptive_depth(ctx: ImportContext, x, out_d: int, reduce, what: str):
    """Depth bins ``[floor(i*D/OD), ceil((i+1)*D/OD))`` of ``x`` each reduced by ``reduce``."""
    depth = _static_depth(x, what)
    bins = []
    for i in range(out_d):
        start, end = (i * depth) // out_d, -(-((i + 1) * depth) // out_d)
        bins.append(reduce(ctx.b.slice(x, [start], [end], [2], [1]), [2], keepdims=True))
    return bins[0] if out_d == 1 else ctx.b.concat(bins, axis=2)


@converter("aten.adaptive_max_pool3d.default")
def adaptive_max_pool3d(ctx: ImportContext, node, x, output_size):
    """Depth bins (as adaptive_avg_pool3d's) reduced by max, then the 2-d adaptive max."""
    b = ctx.b
    out_d, out_h, out_w = _triple(output_size)

    def pool(x):
        pooled = _adaptive_depth(ctx, x, out_d, b.reduce_max, "adaptive_max_pool3d")
        values = _pool_2d_of_depth(ctx, pooled, lambda y: b.adaptive_max_pool2d(y, output_size=(out_h, out_w)))
        if not result_used(node, 1):
            return values, None
        axis_taps = lambda k, size, out: adaptive_taps(size, out)  # noqa: E731
        return values, first_max_indices(ctx, x, values, 3, axis_taps, "adaptive_max_pool3d")

    return batched(ctx, x, 5, pool)


@converter("aten.avg_pool3d.default")
def avg_pool3d(ctx: ImportContext, node, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """The mean of the window: a sum of the depth taps, then the 2-d average over height
    and width divided by the depth taps (or the sum divided by ``divisor_override``).
    Windows that are cut (padding not counted, ceil mode) would need a per-window divisor
    mixing depth and area: refused unless the divisor is overridden."""
    (kd, kh, kw) = _triple(kernel)
    (sd, sh, sw) = _triple(stride) if stride else (kd, kh, kw)
    (pd, ph, pw) = _triple(padding)
    if divisor_override is None and (ceil_mode or (not count_include_pad and (pd or ph or pw))):
        raise NotImplementedError("avg_pool3d with ceil_mode, or padding not counted in the average, is not supported")

    def pool(x):
        taps, _ = _depth_taps(ctx, x, kd, sd, pd, 1, ceil=ceil_mode)
        total = taps[0]
        for t in taps[1:]:
            total = ctx.b.add(total, t)
        y = _pool_2d_of_depth(ctx, total, lambda y: ctx.b.avg_pool2d(
            y, kernel=(kh, kw), strides=(sh, sw), padding=(ph, pw), ceil_mode=ceil_mode, count_include_pad=True,
            divisor_override=divisor_override,
        ))  # fmt: skip
        return y if divisor_override is not None else ctx.b.div(y, ctx.scalar(float(kd), y))

    return batched(ctx, x, 5, pool)


@converter("aten._adaptive_avg_pool3d.default", "aten.adaptive_avg_pool3d.default")
def adaptive_avg_pool3d(ctx: ImportContext, node, x, output_size):
    """Depth bins ``[floor(i*D/OD), ceil((i+1)*D/OD))`` averaged as slices, then the 2-d
    adaptive average over height and width."""
    b = ctx.b
    out_d, out_h, out_w = _triple(output_size)

    def pool(x):
        pooled = _adaptive_depth(ctx, x, out_d, b.reduce_mean, "adaptive_avg_pool3d")
        return _pool_2d_of_depth(ctx, pooled, lambda y: b.adaptive_avg_pool2d(y, output_size=(out_h, out_w)))

    return batched(ctx, x, 5, pool)


__all__ = ["conv3d", "conv_transpose3d"]
