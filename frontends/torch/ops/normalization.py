"""Group norm and instance norm in a form that keeps the input's layout: ``nn.GroupNorm``
(``aten.group_norm``, kept whole by the importer, and ``aten.native_group_norm``, what its
decomposition gives) and
``nn.InstanceNorm*d`` (``aten.instance_norm``, kept whole).

Torch's decompositions view the input ``(N, C, *spatial)`` as ``(N, groups, rest)`` (group
norm) or ``(1, N*C, *spatial)`` (instance norm): a reshape of the whole tensor that only
the NCHW layout allows, so convert-layout had to transpose every activation back to NCHW
before each norm and to NHWC after it (a third of a diffusion UNet's time). Here the
statistics are reductions over the spatial axes per channel first (kept as size-1 dims,
which convert-layout renames), then, on the small ``(N, C)`` statistics, averaged over
the channels of each group (a product with a constant block-diagonal matrix); the output is ``x * scale + shift`` with per-(sample, channel)
``scale = rstd * weight`` and ``shift = bias - mean * scale`` (what torch's CPU kernel
computes). The activation is only ever read elementwise or reduced over its spatial axes,
so a GroupNorm -> SiLU -> conv chain stays in NHWC with no transpose of it. The variance
is two-pass (the mean of squared deviations from the group's mean).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


def group_norm(
    ctx: ImportContext, x: SSAValue, weight: SSAValue | None, bias: SSAValue | None, groups: int, eps: float
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """``(y, mean, rstd)``: ``x (N, C, *spatial)`` normalised over each sample's groups of
    ``C / groups`` channels and every position, then scaled and shifted per channel; the
    statistics per channel ``(N, C)`` (each its group's: :func:`per_group` takes one per group)."""
    b = ctx.b
    shape = shape_of(x.type)
    if len(shape) < 2:
        raise NotImplementedError(f"group norm needs an input (N, C, ...), got shape {shape}")
    batch, channels, spatial = shape[0], shape[1], list(range(2, len(shape)))
    if not isinstance(channels, int) or channels % groups:
        raise NotImplementedError(f"{channels} channels in {groups} groups: the channels must be static and divide evenly")
    per_group = channels // groups
    broadcast = (batch, channels) + (1,) * len(spatial)  # (N, C) statistics against x
    # each channel's value -> the mean over its group's channels, as a product with a constant
    # block-diagonal matrix: the (N, C) result is contiguous, where a reshape to (N, groups,
    # C / groups) and back would be fused into the consumers as a division per element
    dtype = numpy_dtype(x.type.element_type)
    averaging = np.kron(np.eye(groups), np.full((per_group, per_group), 1 / per_group)).astype(dtype)
    group_average = ctx.constant(averaging) if per_group > 1 else None

    def per_channel_mean(value: SSAValue) -> SSAValue:
        """(N, C, *spatial) -> (N, C): the mean over the positions, then over the group."""
        means = b.reshape(b.reduce_mean(value, spatial, keepdims=True), (batch, channels)) if spatial else value
        return b.dense(means, group_average) if group_average is not None else means

    mean = per_channel_mean(x)
    centered = b.sub(x, b.reshape(mean, broadcast))
    var = per_channel_mean(b.mul(centered, centered))
    rstd = b.rsqrt(b.add(var, ctx.scalar(eps, var)))
    scale = b.mul(rstd, weight) if weight is not None else rstd
    shift = b.neg(b.mul(mean, scale))
    if bias is not None:
        shift = b.add(shift, bias)
    y = b.add(b.mul(x, b.reshape(scale, broadcast)), b.reshape(shift, broadcast))
    return y, mean, rstd


def per_group(ctx: ImportContext, per_channel: SSAValue, groups: int) -> SSAValue:
    """(N, C) values equal within each group -> (N, groups): the first channel's."""
    batch, channels = shape_of(per_channel.type)
    grouped = ctx.b.reshape(per_channel, (batch, groups, channels // groups))
    return ctx.b.reshape(ctx.b.slice(grouped, [0], [1], [2]), (batch, groups))


@converter("aten.group_norm.default")
def group_norm_op(ctx: ImportContext, node, x, groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(ctx, x, weight, bias, groups, eps)[0]


@converter("aten.native_group_norm.default")
def native_group_norm(ctx: ImportContext, node, x, weight, bias, batch, channels, spatial, groups, eps):
    """``(y, mean, rstd)``, the statistics shaped ``(N, groups)``."""
    y, mean, rstd = group_norm(ctx, x, weight, bias, groups, eps)
    return y, per_group(ctx, mean, groups), per_group(ctx, rstd, groups)


__all__ = ["group_norm", "per_group"]
