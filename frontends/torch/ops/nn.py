"""Convolution, pooling and normalisation layers."""

from __future__ import annotations

from ..context import ImportContext
from ..registry import converter


@converter("aten.convolution.default")
def convolution(ctx: ImportContext, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise NotImplementedError("transposed convolution is not supported yet")
    rank = ctx.rank(x)
    if rank == 4:
        return ctx.b.conv2d(
            x, weight, bias, strides=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), groups=groups
        )
    raise NotImplementedError(f"{rank - 2}-d convolution is not supported yet")


@converter("aten.max_pool2d_with_indices.default")
def max_pool2d_with_indices(ctx: ImportContext, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    values = ctx.b.max_pool2d(
        x, kernel=tuple(kernel), strides=tuple(stride) or None, padding=_pair(padding), dilation=_pair(dilation),
        ceil_mode=ceil_mode,
    )
    return (values, None)  # the indices are not computed; nothing may use them


@converter("aten.avg_pool2d.default")
def avg_pool2d(ctx: ImportContext, node, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d with divisor_override is not supported")
    return ctx.b.avg_pool2d(
        x, kernel=tuple(kernel), strides=tuple(stride) or None, padding=_pair(padding), ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )


@converter("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(ctx: ImportContext, node, x, output_size):
    return ctx.b.adaptive_avg_pool2d(x, output_size=tuple(output_size))


def _pair(v):
    return tuple(v) if isinstance(v, list | tuple) else (v, v)


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
    return (y, None, None)


@converter("aten.native_layer_norm.default")
def layer_norm(ctx: ImportContext, node, x, normalized_shape, weight, bias, eps):
    b = ctx.b
    axes = list(range(ctx.rank(x) - len(normalized_shape), ctx.rank(x)))
    mean = b.reduce_mean(x, axes, keepdims=True)
    centered = b.sub(x, mean)
    var = b.reduce_mean(b.mul(centered, centered), axes, keepdims=True)
    inv = b.rsqrt(b.add(var, ctx.scalar(eps, var)))
    y = b.mul(centered, inv)
    if weight is not None:
        y = b.mul(y, weight)
    if bias is not None:
        y = b.add(y, bias)
    return (y, mean, inv)
