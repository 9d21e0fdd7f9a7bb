"""Activations: Clip, LeakyRelu, PRelu, Elu, Selu, Celu, HardSigmoid, HardSwish,
ThresholdedRelu, Softplus, Softsign, Gelu, Mish, Shrink, Swish."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter


def _negative(ctx: OnnxContext, x: SSAValue) -> SSAValue:
    return ctx.b.compare(x, ctx.scalar(0, x), "lt")


@converter("Clip", since=6)
def clip(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    if node.version < 11:
        low = ctx.scalar(node.attr("min", float(np.finfo(np.float32).min)), x)
        high = ctx.scalar(node.attr("max", float(np.finfo(np.float32).max)), x)
    else:
        low, high = node.input(1), node.input(2)
    if low is not None:
        x = g.max(x, low)
    if high is not None:
        x = g.min(x, high)
    return x


@converter("LeakyRelu", since=6)
def leaky_relu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    return g.where(_negative(ctx, x), g.mul(x, ctx.scalar(node.attr("alpha", 0.01), x)), x)


@converter("PRelu", since=7)
def prelu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x, slope = ctx.b, node.input(0), node.input(1)
    return g.where(_negative(ctx, x), g.mul(x, slope), x)


def _elu_part(ctx: OnnxContext, x: SSAValue, alpha: float) -> SSAValue:
    """``alpha * (exp(x) - 1)`` where x < 0, else x."""
    g = ctx.b
    return g.where(_negative(ctx, x), g.mul(g.expm1(x), ctx.scalar(alpha, x)), x)


@converter("Elu", since=6)
def elu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return _elu_part(ctx, node.input(0), node.attr("alpha", 1.0))


@converter("Selu", since=6)
def selu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    alpha, gamma = node.attr("alpha", 1.67326319217681884765625), node.attr("gamma", 1.05070102214813232421875)
    return ctx.b.mul(_elu_part(ctx, x, alpha), ctx.scalar(gamma, x))


@converter("Celu", since=12)
def celu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    alpha = node.attr("alpha", 1.0)
    scaled = g.div(x, ctx.scalar(alpha, x))
    return g.where(_negative(ctx, x), g.mul(g.expm1(scaled), ctx.scalar(alpha, x)), x)


def _hard_sigmoid(ctx: OnnxContext, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    g = ctx.b
    y = g.add(g.mul(x, ctx.scalar(alpha, x)), ctx.scalar(beta, x))
    return g.min(g.max(y, ctx.scalar(0, x)), ctx.scalar(1, x))


@converter("HardSigmoid", since=6)
def hard_sigmoid(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return _hard_sigmoid(ctx, node.input(0), node.attr("alpha", 0.2), node.attr("beta", 0.5))


@converter("HardSwish", since=14)
def hard_swish(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.mul(x, _hard_sigmoid(ctx, x, 1 / 6, 0.5))


@converter("ThresholdedRelu", since=10)
def thresholded_relu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    return g.where(g.compare(x, ctx.scalar(node.attr("alpha", 1.0), x), "gt"), x, ctx.scalar(0, x))


def _softplus(ctx: OnnxContext, x: SSAValue) -> SSAValue:
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log1p(exp(-|x|))``."""
    g = ctx.b
    return g.add(g.relu(x), g.log1p(g.exp(g.neg(g.abs(x)))))


@converter("Softplus")
def softplus(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return _softplus(ctx, node.input(0))


@converter("Softsign")
def softsign(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    return g.div(x, g.add(g.abs(x), ctx.scalar(1, x)))


@converter("Gelu", since=20)
def gelu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    approximate = node.attr("approximate", "none")
    half = ctx.scalar(0.5, x)
    if approximate == "none":
        inner = g.erf(g.mul(x, ctx.scalar(1 / math.sqrt(2), x)))
    elif approximate == "tanh":
        cube = g.mul(g.mul(x, x), x)
        inner = g.tanh(g.mul(g.add(x, g.mul(cube, ctx.scalar(0.044715, x))), ctx.scalar(math.sqrt(2 / math.pi), x)))
    else:
        raise refuse(f"approximate '{approximate}'")
    return g.mul(g.mul(x, half), g.add(inner, ctx.scalar(1, x)))


@converter("Mish", since=18)
def mish(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.mul(x, ctx.b.tanh(_softplus(ctx, x)))


@converter("Shrink", since=9)
def shrink(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    bias, lambd = node.attr("bias", 0.0), node.attr("lambd", 0.5)
    below = g.compare(x, ctx.scalar(-lambd, x), "lt")
    above = g.compare(x, ctx.scalar(lambd, x), "gt")
    return g.where(below, g.add(x, ctx.scalar(bias, x)), g.where(above, g.sub(x, ctx.scalar(bias, x)), ctx.scalar(0, x)))


@converter("Swish", since=24)
def swish(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    return g.mul(x, g.sigmoid(g.mul(x, ctx.scalar(node.attr("alpha", 1.0), x))))
