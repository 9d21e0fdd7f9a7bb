"""Convolution (1-d, 2-d, transposed), pooling, upsampling, normalisation layers, dropout."""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import format_shape, numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter, result_used
from .pool_indices import adaptive_taps, first_max_indices, window_taps
from .random import training_dropout
from .volumetric import batched, conv3d, conv_transpose3d


@converter("aten.convolution.default")
def convolution(ctx: ImportContext, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """2-D convolution (plain or transposed); 1-D as 2-D with height 1: ``(N, C, L)`` is viewed
    as ``(N, C, 1, L)`` and the weight ``(O, C/g, K)`` as ``(O, C/g, 1, K)``; 3-D as one 2-D
    convolution over stacked depth taps (``volumetric.py``)."""
    rank = ctx.rank(x)
    if rank == 5:
        if transposed:
            return conv_transpose3d(ctx, node, x, weight, bias, stride, padding, dilation, output_padding, groups)
        return conv3d(ctx, node, x, weight, bias, stride, padding, dilation, groups)
    if rank == 3:
        n, channels, length = shape_of(x.type)
        w = shape_of(weight.type)
        y = _conv2d(
            ctx, ctx.b.reshape(x, (n, channels, 1, length)), ctx.b.reshape(weight, (*w[:2], 1, w[2])), bias,
            (1, *stride), (0, *padding), (1, *dilation), transposed, (0, *output_padding), groups,
        )
        return ctx.b.reshape(y, ctx.shape(node))
    if rank == 4:
        stride, padding, dilation, output_padding = (_pair(v) for v in (stride, padding, dilation, output_padding))
        return _conv2d(ctx, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    raise NotImplementedError(f"{rank - 2}-d convolution is not supported (1-d, 2-d and 3-d are)")


def _conv2d(ctx: ImportContext, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return ctx.b.conv2d_transpose(
            x, weight, bias, strides=tuple(stride), padding=tuple(padding), output_padding=tuple(output_padding),
            dilation=tuple(dilation), groups=groups,
        )
    return ctx.b.conv2d(
        x, weight, bias, strides=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), groups=groups
    )


@converter("aten.max_pool2d_with_indices.default")
def max_pool2d_with_indices(ctx: ImportContext, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    window = (_pair(kernel), _pair(stride or kernel), _pair(padding), _pair(dilation))

    def pool(x):
        values = ctx.b.max_pool2d(
            x, kernel=window[0], strides=window[1], padding=window[2], dilation=window[3], ceil_mode=ceil_mode
        )
        return values, (_max_pool2d_indices(ctx, x, values, *window) if result_used(node, 1) else None)

    return _batched(ctx, x, pool)


def _max_pool2d_indices(ctx: ImportContext, x, values, kernel, stride, padding, dilation):
    def axis_taps(k: int, size: int, out: int):
        return window_taps(size, out, kernel[k], stride[k], padding[k], dilation[k])

    return first_max_indices(ctx, x, values, 2, axis_taps, "max_pool2d")


@converter("aten.avg_pool2d.default")
def avg_pool2d(ctx: ImportContext, node, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return _batched(ctx, x, lambda x: ctx.b.avg_pool2d(
        x, kernel=tuple(kernel), strides=tuple(stride) or None, padding=_pair(padding), ceil_mode=ceil_mode,
        count_include_pad=count_include_pad, divisor_override=divisor_override,
    ))  # fmt: skip


@converter("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(ctx: ImportContext, node, x, output_size):
    return _batched(ctx, x, lambda x: ctx.b.adaptive_avg_pool2d(x, output_size=tuple(output_size)))


@converter("aten.adaptive_max_pool2d.default")
def adaptive_max_pool2d(ctx: ImportContext, node, x, output_size):
    def pool(x):
        values = ctx.b.adaptive_max_pool2d(x, output_size=tuple(output_size))
        if not result_used(node, 1):
            return values, None
        indices = first_max_indices(ctx, x, values, 2, lambda k, size, out: adaptive_taps(size, out), "adaptive_max_pool2d")
        return values, indices

    return _batched(ctx, x, pool)


def _batched(ctx: ImportContext, x, pool):
    return batched(ctx, x, 4, pool)


def _pair(v):
    """Two values of a 2-d window parameter; ATen also takes one for both (padding="valid": [0])."""
    return tuple(v) * (2 // len(v)) if isinstance(v, list | tuple) else (v, v)


@converter("aten._native_batch_norm_legit_no_training.default")
def batch_norm_inference(ctx: ImportContext, node, x, weight, bias, mean, var, momentum, eps):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, per channel (axis 1)."""
    b = ctx.b
    channel_shape = [1] * ctx.rank(x)
    channel_shape[1] = x.type.get_shape()[1]
    scale = b.rsqrt(b.add(var, ctx.scalar(eps, var)))
    if weight is not None:
        scale = b.mul(scale, weight)
    shift = b.neg(b.mul(mean, scale))
    if bias is not None:
        shift = b.add(shift, bias)
    y = b.add(b.mul(x, b.reshape(scale, channel_shape)), b.reshape(shift, channel_shape))
    nothing = ctx.constant(np.zeros(0, numpy_dtype(x.type.element_type)))  # (torch's saved statistics: empty in eval)
    return (y, nothing, nothing)


def _standardise(ctx: ImportContext, x, axes: list[int], eps: float):
    """``((x - mean) * rstd, mean, rstd)``, the statistics over ``axes`` (kept as size 1):
    the biased variance, ``rstd = 1 / sqrt(var + eps)``, as torch's norm layers."""
    b = ctx.b
    mean, centered, var = _moments(ctx, x, axes)
    rstd = b.rsqrt(b.add(var, ctx.scalar(eps, var)))
    return b.mul(centered, rstd), mean, rstd


def _moments(ctx: ImportContext, x, axes: list[int]):
    """``(mean, x - mean, biased variance)`` over ``axes`` (kept as size 1)."""
    b = ctx.b
    mean = b.reduce_mean(x, axes, keepdims=True)
    centered = b.sub(x, mean)
    return mean, centered, b.reduce_mean(b.mul(centered, centered), axes, keepdims=True)


def _per_channel_affine(ctx: ImportContext, y, weight, bias):
    """``y * weight + bias`` with ``weight`` and ``bias`` of shape ``(C,)`` on axis 1."""
    shape = shape_of(y.type)
    channel_shape = (1, shape[1]) + (1,) * (len(shape) - 2)
    if weight is not None:
        y = ctx.b.mul(y, ctx.b.reshape(weight, channel_shape))
    if bias is not None:
        y = ctx.b.add(y, ctx.b.reshape(bias, channel_shape))
    return y


@converter("aten._native_batch_norm_legit.no_stats")
def batch_norm_batch_statistics(ctx: ImportContext, node, x, weight, bias, training, momentum, eps):
    """Batch norm on the input's own statistics, without running ones to update: what
    instance norm becomes (it views ``(N, C, ...)`` as ``(1, N*C, ...)`` first). Each channel
    (axis 1) is normalised over every other axis; returns ``(y, mean, rstd)``, the
    statistics shaped ``(C,)``."""
    channels = shape_of(x.type)[1]
    y, mean, rstd = _standardise(ctx, x, [a for a in range(ctx.rank(x)) if a != 1], eps)
    y = _per_channel_affine(ctx, y, weight, bias)
    return (y, ctx.b.reshape(mean, (channels,)), ctx.b.reshape(rstd, (channels,)))


def _batch_norm_training(ctx: ImportContext, x, weight, bias, mean, var, momentum, eps):
    """Training mode: normalise each channel by the batch's own statistics; the running
    statistics move ``momentum`` of the way to the batch's (its variance unbiased, as
    torch's). Returns ``(y, batch mean, batch rstd, new running mean, new running var)``,
    the statistics shaped ``(C,)``."""
    b = ctx.b
    shape = shape_of(x.type)
    channels = shape[1]
    axes = [a for a in range(len(shape)) if a != 1]
    batch_mean, centered, biased = _moments(ctx, x, axes)
    rstd = b.rsqrt(b.add(biased, ctx.scalar(eps, biased)))
    y = _per_channel_affine(ctx, b.mul(centered, rstd), weight, bias)
    batch_mean, rstd, biased = (b.reshape(v, (channels,)) for v in (batch_mean, rstd, biased))
    count = 1
    for axis in axes:
        d = shape[axis]
        count = count * d if isinstance(d, int) and isinstance(count, int) else f"({count})*({d})"
    n = ctx.cast(ctx.size_value(count), numpy_dtype(x.type.element_type)) if isinstance(count, str) else ctx.scalar(count, x)
    unbiased = b.div(b.mul(biased, n), b.sub(n, ctx.scalar(1, n)))
    keep = ctx.scalar(1 - momentum, x)
    step = ctx.scalar(momentum, x)
    new_mean = b.add(b.mul(keep, mean), b.mul(step, batch_mean))
    new_var = b.add(b.mul(keep, var), b.mul(step, unbiased))
    return y, batch_mean, rstd, new_mean, new_var


@converter("aten._native_batch_norm_legit.default")
def batch_norm_with_running_stats(ctx: ImportContext, node, x, weight, bias, mean, var, training, momentum, eps):
    """Batch norm with running statistics: in eval mode the inference form; in training
    mode the batch's statistics (the updated running ones: the functional form below)."""
    if training:
        return _batch_norm_training(ctx, x, weight, bias, mean, var, momentum, eps)[:3]
    return batch_norm_inference(ctx, node, x, weight, bias, mean, var, momentum, eps)


@converter("aten._native_batch_norm_legit_functional.default")
def batch_norm_functional(ctx: ImportContext, node, x, weight, bias, mean, var, training, momentum, eps):
    """The functional form of the above (what export makes of training mode): also the new
    running statistics, which a compiled model returns with ``state_as_io`` (the importer
    refuses the update otherwise); in eval mode they come back unchanged."""
    if training:
        return _batch_norm_training(ctx, x, weight, bias, mean, var, momentum, eps)
    return (*batch_norm_inference(ctx, node, x, weight, bias, mean, var, momentum, eps), mean, var)


@converter("aten._batch_norm_with_update_functional.default")
def batch_norm_with_update(ctx: ImportContext, node, x, weight, bias, mean, var, momentum, eps):
    """Training-mode batch norm as ``torch.ops.aten._batch_norm_with_update`` computes it:
    ``(y, save_mean, save_rstd, reserve, new running mean, new running var)``, ``reserve``
    empty (cuDNN's workspace; torch's CPU kernel returns none either)."""
    y, save_mean, save_rstd, new_mean, new_var = _batch_norm_training(ctx, x, weight, bias, mean, var, momentum, eps)
    return y, save_mean, save_rstd, ctx.constant(np.zeros((0,), np.uint8)), new_mean, new_var


@converter("aten.native_layer_norm.default")
def layer_norm(ctx: ImportContext, node, x, normalized_shape, weight, bias, eps):
    b = ctx.b
    axes = list(range(ctx.rank(x) - len(normalized_shape), ctx.rank(x)))
    y, mean, inv = _standardise(ctx, x, axes, eps)
    if weight is not None:
        y = b.mul(y, weight)
    if bias is not None:
        y = b.add(y, bias)
    return (y, mean, inv)


def _dropout(per_channel: bool, alpha: bool):
    """The converter of one dropout flavour: identity in eval(), random keep-masks in
    training (``ops/random.py``)."""

    def convert(ctx: ImportContext, node, x, p, train):
        if not train or p == 0:
            return x
        return training_dropout(ctx, x, p, per_channel=per_channel, alpha=alpha)[0]

    return convert


converter("aten.dropout.default")(_dropout(per_channel=False, alpha=False))
converter("aten.feature_dropout.default")(_dropout(per_channel=True, alpha=False))
converter("aten.alpha_dropout.default")(_dropout(per_channel=False, alpha=True))
converter("aten.feature_alpha_dropout.default")(_dropout(per_channel=True, alpha=True))


@converter("aten.native_dropout.default")
def native_dropout(ctx: ImportContext, node, x, p, train):
    """``(result, keep-mask)``; in eval() the mask (all True) is not computed."""
    if not train or not p:
        return (x, None)
    return training_dropout(ctx, x, p)


# -- upsampling: torch's interpolate (nearest, nearest-exact, bilinear; 1-d as 2-d of height 1) --


def _scale_factors(scales):
    """torch passes scale factors only when the user gave them (else the sizes define the step)."""
    if scales is None or all(s is None for s in scales):
        return None
    return tuple(float(s) for s in scales)


def _resize(ctx: ImportContext, node, x, mode: str, align_corners: bool, factors):
    rank = ctx.rank(x)
    out = ctx.shape(node)
    if any(isinstance(d, str) for d in out[2:]):
        raise NotImplementedError(
            f"upsampling to a symbolic size {format_shape(out)} is not supported: export with static spatial dims"
        )
    if rank == 4:
        if factors is not None and None in factors:  # one axis given by its size: its ratio
            factors = tuple(f if f is not None else o / i for f, o, i in zip(factors, out[2:], shape_of(x.type)[2:]))
        return ctx.b.resize2d(x, size=out[2:], mode=mode, align_corners=align_corners, scale_factors=factors)
    if rank == 3:
        n, channels, length = shape_of(x.type)
        factors = None if factors is None else (1.0, factors[0])
        y = ctx.b.resize2d(
            ctx.b.reshape(x, (n, channels, 1, length)), size=(1, out[2]), mode=mode, align_corners=align_corners,
            scale_factors=factors,
        )
        return ctx.b.reshape(y, out)
    raise NotImplementedError(f"upsampling a rank-{rank} tensor is not supported (1-d and 2-d are)")


@converter("aten.upsample_nearest2d.vec", "aten.upsample_nearest1d.vec")
def upsample_nearest_vec(ctx: ImportContext, node, x, output_size, scale_factors):
    return _resize(ctx, node, x, "nearest", False, _scale_factors(scale_factors))


@converter("aten._upsample_nearest_exact2d.vec", "aten._upsample_nearest_exact1d.vec")
def upsample_nearest_exact_vec(ctx: ImportContext, node, x, output_size, scale_factors):
    return _resize(ctx, node, x, "nearest_exact", False, _scale_factors(scale_factors))


@converter("aten.upsample_bilinear2d.vec", "aten.upsample_linear1d.vec")
def upsample_linear_vec(ctx: ImportContext, node, x, output_size, align_corners, scale_factors):
    return _resize(ctx, node, x, "bilinear", align_corners, _scale_factors(scale_factors))


@converter("aten.upsample_nearest2d.default", "aten.upsample_nearest1d.default")
def upsample_nearest(ctx: ImportContext, node, x, output_size, *scales):
    return _resize(ctx, node, x, "nearest", False, _scale_factors(scales))


@converter("aten._upsample_nearest_exact2d.default", "aten._upsample_nearest_exact1d.default")
def upsample_nearest_exact(ctx: ImportContext, node, x, output_size, *scales):
    return _resize(ctx, node, x, "nearest_exact", False, _scale_factors(scales))


@converter("aten.upsample_bilinear2d.default", "aten.upsample_linear1d.default")
def upsample_linear(ctx: ImportContext, node, x, output_size, align_corners, *scales):
    return _resize(ctx, node, x, "bilinear", align_corners, _scale_factors(scales))
