"""Optimizer steps of ``ai.onnx.preview.training``: Adagrad, Adam, Momentum (standard and
Nesterov). Each updates any number of tensors ``X`` from their gradients ``G`` and
accumulated state, given the learning rate ``R`` and the step count ``T`` (scalars).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter

_DOMAIN = "ai.onnx.preview.training"


def _groups(node: OnnxNode, per_tensor: int) -> list[list[SSAValue]]:
    """The per-tensor inputs after R and T: (X..., G..., state...) split into ``per_tensor`` lists."""
    rest = node.inputs()[2:]
    n = len(rest) // per_tensor
    return [rest[k * n : (k + 1) * n] for k in range(per_tensor)]


def _step(ctx: OnnxContext, node: OnnxNode, per_tensor: int, update: Callable[..., tuple[SSAValue, ...]]) -> tuple[SSAValue, ...]:
    r, t = node.input(0), node.input(1)
    groups = _groups(node, per_tensor)
    results = [update(ctx, node, r, t, *values) for values in zip(*groups)]
    return tuple(v for k in range(per_tensor - 1) for v in (res[k] for res in results))


def _regularized(ctx: OnnxContext, x: SSAValue, grad: SSAValue, coefficient: float) -> SSAValue:
    g = ctx.b
    return grad if coefficient == 0 else g.add(g.mul(x, ctx.scalar(coefficient, x)), grad)


def _as(ctx: OnnxContext, value: SSAValue, like: SSAValue) -> SSAValue:
    return ctx.b.reshape(ctx.cast(value, ctx.dtype(like)), ())


def _adagrad(ctx: OnnxContext, node: OnnxNode, r: SSAValue, t: SSAValue, x: SSAValue, grad: SSAValue, h: SSAValue):
    g = ctx.b
    decay, epsilon = node.attr("decay_factor", 0.0), node.attr("epsilon", 0.0)
    rate = g.div(_as(ctx, r, x), g.add(ctx.scalar(1, x), g.mul(_as(ctx, t, x), ctx.scalar(decay, x))))
    regularized = _regularized(ctx, x, grad, node.attr("norm_coefficient", 0.0))
    h_new = g.add(h, g.mul(regularized, regularized))
    x_new = g.sub(x, g.div(g.mul(rate, regularized), g.add(g.sqrt(h_new), ctx.scalar(epsilon, h_new))))
    return x_new, h_new


def _adam(ctx: OnnxContext, node: OnnxNode, r: SSAValue, t: SSAValue, x: SSAValue, grad: SSAValue, v: SSAValue, h: SSAValue):
    g = ctx.b
    alpha, beta = node.attr("alpha", 0.9), node.attr("beta", 0.999)
    epsilon, post = node.attr("epsilon", 0.0), node.attr("norm_coefficient_post", 0.0)
    regularized = _regularized(ctx, x, grad, node.attr("norm_coefficient", 0.0))
    v_new = g.add(g.mul(v, ctx.scalar(alpha, v)), g.mul(regularized, ctx.scalar(1 - alpha, v)))
    h_new = g.add(g.mul(h, ctx.scalar(beta, h)), g.mul(g.mul(regularized, regularized), ctx.scalar(1 - beta, h)))
    steps, rate = _as(ctx, t, x), _as(ctx, r, x)
    corrected = g.div(
        g.mul(rate, g.sqrt(g.sub(ctx.scalar(1, x), g.pow(ctx.scalar(beta, x), steps)))),
        g.sub(ctx.scalar(1, x), g.pow(ctx.scalar(alpha, x), steps)),
    )
    rate = g.where(g.compare(steps, ctx.scalar(0, steps), "gt"), corrected, rate)
    x_new = g.sub(x, g.mul(rate, g.div(v_new, g.add(g.sqrt(h_new), ctx.scalar(epsilon, h_new)))))
    if post:
        x_new = g.mul(x_new, ctx.scalar(1 - post, x_new))
    return x_new, v_new, h_new


def _momentum(ctx: OnnxContext, node: OnnxNode, r: SSAValue, t: SSAValue, x: SSAValue, grad: SSAValue, v: SSAValue):
    g = ctx.b
    alpha, beta, mode = node.attr("alpha"), node.attr("beta"), node.attr("mode")
    if mode not in ("standard", "nesterov"):
        raise refuse(f"mode '{mode}'")
    regularized = _regularized(ctx, x, grad, node.attr("norm_coefficient"))
    steps = _as(ctx, t, x)
    scale = g.where(g.compare(steps, ctx.scalar(0, steps), "gt"), ctx.scalar(beta, x), ctx.scalar(1, x))
    v_new = g.add(g.mul(v, ctx.scalar(alpha, v)), g.mul(regularized, scale))
    direction = v_new if mode == "standard" else g.add(regularized, g.mul(v_new, ctx.scalar(alpha, v_new)))
    return g.sub(x, g.mul(_as(ctx, r, x), direction)), v_new


@converter("Adagrad", domain=_DOMAIN)
def adagrad(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    return _step(ctx, node, 3, _adagrad)


@converter("Adam", domain=_DOMAIN)
def adam(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    return _step(ctx, node, 4, _adam)


@converter("Momentum", domain=_DOMAIN)
def momentum(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    return _step(ctx, node, 3, _momentum)

