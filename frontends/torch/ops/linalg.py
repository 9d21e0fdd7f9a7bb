"""Matrix products: mm, bmm, addmm, linear, matmul."""

from __future__ import annotations

from ..context import ImportContext
from ..registry import converter


@converter("aten.linear.default")
def linear(ctx: ImportContext, node, x, weight, bias=None):
    return ctx.b.dense(x, weight, bias)


@converter("aten.mm.default")
def mm(ctx: ImportContext, node, a, b):
    return ctx.b.matmul(a, b)


@converter("aten.addmm.default")
def addmm(ctx: ImportContext, node, bias, a, b, beta=1, alpha=1):
    product = ctx.b.matmul(a, b)
    if alpha != 1:
        product = ctx.b.mul(product, ctx.scalar(alpha, product))
    if beta != 1:
        bias = ctx.b.mul(bias, ctx.scalar(beta, bias))
    return ctx.b.add(product, bias) if beta != 0 else product


@converter("aten.bmm.default")
def bmm(ctx: ImportContext, node, a, b):
    return ctx.b.batch_matmul(a, b)
