"""Activation functions beyond the elementwise basics: leaky ReLU, ELU (and SELU, CELU), softplus,
mish, hardswish, hardsigmoid, ReLU6.

Most of them reach us whole from Core ATen (``leaky_relu``, ``elu``); ``softplus``, ``mish`` and
``celu`` are kept whole by the importer (one converter each, shorter than their decompositions);
the others appear when a program is imported without decomposing it. ``exp(x) - 1`` and
``log(1 + u)`` are the graph's ``expm1`` and ``log1p``, accurate near 0 (expand-math makes them
vector code in f32).
"""

from __future__ import annotations

from ..context import ImportContext
from ..registry import converter


def _positive(ctx: ImportContext, x):
    return ctx.b.compare(x, ctx.scalar(0.0, x), "gt")


@converter("aten.leaky_relu.default")
def leaky_relu(ctx: ImportContext, node, x, negative_slope=0.01):
    return ctx.b.where(_positive(ctx, x), x, ctx.b.mul(x, ctx.scalar(negative_slope, x)))


@converter("aten.elu.default")
def elu(ctx: ImportContext, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """``scale * x`` for ``x > 0``, else ``scale * alpha * (exp(x * input_scale) - 1)``."""
    b = ctx.b
    scaled = b.mul(x, ctx.scalar(input_scale, x)) if input_scale != 1 else x
    negative = b.mul(b.expm1(b.min(scaled, ctx.scalar(0.0, x))), ctx.scalar(alpha * scale, x))
    positive = b.mul(x, ctx.scalar(scale, x)) if scale != 1 else x
    return b.where(_positive(ctx, x), positive, negative)


@converter("aten.selu.default")
def selu(ctx: ImportContext, node, x):
    return elu(ctx, node, x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


@converter("aten.celu.default")
def celu(ctx: ImportContext, node, x, alpha=1.0):
    return elu(ctx, node, x, alpha, 1.0, 1.0 / alpha)


def _softplus(ctx: ImportContext, x, beta=1.0, threshold=20.0):
    """torch: ``x`` where ``beta * x > threshold``, else ``log(1 + exp(beta * x)) / beta``, computed
    as ``max(z, 0) + log1p(exp(-|z|))`` (``z = beta * x``) so that nothing overflows."""
    b = ctx.b
    z = b.mul(x, ctx.scalar(beta, x)) if beta != 1 else x
    soft = b.add(b.max(z, ctx.scalar(0.0, z)), b.log1p(b.exp(b.neg(b.abs(z)))))
    if beta != 1:
        soft = b.div(soft, ctx.scalar(beta, soft))
    return b.where(b.compare(z, ctx.scalar(threshold, z), "gt"), x, soft)


@converter("aten.softplus.default")
def softplus(ctx: ImportContext, node, x, beta=1.0, threshold=20.0):
    return _softplus(ctx, x, beta, threshold)


@converter("aten.mish.default")
def mish(ctx: ImportContext, node, x):
    return ctx.b.mul(x, ctx.b.tanh(_softplus(ctx, x)))


def _relu6(ctx: ImportContext, x):
    return ctx.b.min(ctx.b.max(x, ctx.scalar(0.0, x)), ctx.scalar(6.0, x))


@converter("aten.relu6.default")
def relu6(ctx: ImportContext, node, x):
    return _relu6(ctx, x)


@converter("aten.hardsigmoid.default")
def hardsigmoid(ctx: ImportContext, node, x):
    """``relu6(x + 3) / 6``, as torch's decomposition writes it."""
    return ctx.b.div(_relu6(ctx, ctx.b.add(x, ctx.scalar(3.0, x))), ctx.scalar(6.0, x))


@converter("aten.hardswish.default")
def hardswish(ctx: ImportContext, node, x):
    """``x * relu6(x + 3) / 6``, as torch's decomposition writes it."""
    return ctx.b.div(ctx.b.mul(x, _relu6(ctx, ctx.b.add(x, ctx.scalar(3.0, x)))), ctx.scalar(6.0, x))
