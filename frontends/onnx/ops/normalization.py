"""Normalizations: BatchNormalization (inference and training mode), InstanceNormalization,
LayerNormalization, LRN, LpNormalization."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter
from .windows import Window, stacked, taps


def per_channel(ctx: OnnxContext, v: SSAValue, rank: int) -> SSAValue:
    """A (C,) vector shaped (1, C, 1, ...) to broadcast over an (N, C, ...) tensor."""
    return ctx.b.reshape(v, (1, ctx.shape(v)[0], *[1] * (rank - 2))) if rank > 2 else v


def _normalized(ctx: OnnxContext, x: SSAValue, mean: SSAValue, var: SSAValue, epsilon: float) -> SSAValue:
    g = ctx.b
    return g.mul(g.sub(x, mean), g.rsqrt(g.add(var, ctx.scalar(epsilon, var))))


def _moments(ctx: OnnxContext, x: SSAValue, axes: list[int]) -> tuple[SSAValue, SSAValue]:
    """Mean and (biased) variance over ``axes``, kept as size-1 dims."""
    g = ctx.b
    mean = g.reduce_mean(x, axes, True)
    centred = g.sub(x, mean)
    return mean, g.reduce_mean(g.mul(centred, centred), axes, True)


@converter("BatchNormalization", since=7)
def batch_norm(ctx: OnnxContext, node: OnnxNode) -> SSAValue | tuple:
    g = ctx.b
    x, scale, bias, mean, var = (node.input(k) for k in range(5))
    rank = ctx.rank(x)
    epsilon = node.attr("epsilon", 1e-5)
    training = node.version >= 14 and node.attr("training_mode", 0)
    if node.version < 9 and not node.attr("spatial", 1):
        raise refuse("spatial=0 (per-element statistics)")
    if not training:
        shaped = [per_channel(ctx, v, rank) for v in (scale, bias, mean, var)]
        return g.add(g.mul(_normalized(ctx, x, shaped[2], shaped[3], epsilon), shaped[0]), shaped[1])
    momentum = node.attr("momentum", 0.9)
    axes = [0, *range(2, rank)]
    batch_mean, batch_var = _moments(ctx, x, axes)
    y = g.add(g.mul(_normalized(ctx, x, batch_mean, batch_var, epsilon), per_channel(ctx, scale, rank)), per_channel(ctx, bias, rank))
    channels = (ctx.shape(x)[1],)
    running_mean = g.add(g.mul(mean, ctx.scalar(momentum, mean)), g.mul(g.reshape(batch_mean, channels), ctx.scalar(1 - momentum, mean)))
    running_var = g.add(g.mul(var, ctx.scalar(momentum, var)), g.mul(g.reshape(batch_var, channels), ctx.scalar(1 - momentum, var)))
    return y, running_mean, running_var


@converter("InstanceNormalization", since=6)
def instance_norm(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    rank = ctx.rank(x)
    mean, var = _moments(ctx, x, list(range(2, rank)))
    y = _normalized(ctx, x, mean, var, node.attr("epsilon", 1e-5))
    return g.add(g.mul(y, per_channel(ctx, scale, rank)), per_channel(ctx, bias, rank))


@converter("LayerNormalization", since=17)
def layer_norm(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, SSAValue, SSAValue]:
    g = ctx.b
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    rank = ctx.rank(x)
    axis = ctx.axis(node.attr("axis", -1), rank, node)
    dtype = ctx.dtype(x)
    # statistics in float32 for 16-bit inputs (stash_type 1, the default)
    stash = np.float32 if node.attr("stash_type", 1) == 1 and dtype.itemsize < 4 else dtype
    wide = ctx.cast(x, stash)
    mean, var = _moments(ctx, wide, list(range(axis, rank)))
    inverse = g.rsqrt(g.add(var, ctx.scalar(node.attr("epsilon", 1e-5), var)))
    y = ctx.cast(g.mul(g.sub(wide, mean), inverse), dtype)
    y = g.mul(y, scale)
    if bias is not None:
        y = g.add(y, bias)
    return y, mean, inverse


@converter("LRN")
def lrn(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """``x / (bias + alpha / size * sum of x**2 over the channel window) ** beta``."""
    g, x = ctx.b, node.input(0)
    size = node.attr("size")
    alpha, beta, bias = node.attr("alpha", 1e-4), node.attr("beta", 0.75), node.attr("bias", 1.0)
    n, c, *spatial = ctx.shape(x)
    # the channel axis as the one spatial axis of a window over (N, 1, C, rest)
    squares = g.reshape(g.mul(x, x), (n, 1, c, int(np.prod(spatial, dtype=np.int64))))
    below, above = (size - 1) // 2, size - 1 - (size - 1) // 2
    w = Window((size, 1), (1, 1), (1, 1), (below, 0), (above, 0), (c, ctx.shape(squares)[3]), (0, 0))
    windows = stacked(ctx, taps(ctx, squares, w, 0))
    total = g.reshape(g.reduce_sum(windows, [4]), ctx.shape(x))
    scale = g.add(ctx.scalar(bias, x), g.mul(total, ctx.scalar(alpha / size, x)))
    return g.div(x, g.pow(scale, ctx.scalar(beta, x)))


@converter("LpNormalization")
def lp_normalization(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    axis = ctx.axis(node.attr("axis", -1), ctx.rank(x), node)
    p = node.attr("p", 2)
    if p == 1:
        norm = g.reduce_sum(g.abs(x), [axis], True)
    elif p == 2:
        norm = g.sqrt(g.reduce_sum(g.mul(x, x), [axis], True))
    else:
        raise refuse(f"p = {p} (1 and 2 are defined)")
    zero = ctx.scalar(0, x)
    return g.where(g.compare(norm, zero, "eq"), zero, g.div(x, norm))
