"""Reductions and softmax."""

from __future__ import annotations

from ..context import ImportContext
from ..registry import converter


def _reduction(method: str):
    def convert(ctx: ImportContext, node, x, dims=None, keepdim=False, *, dtype=None):
        x = ctx.cast(x, ctx.dtype(node))
        return getattr(ctx.b, method)(x, ctx.axes(dims, ctx.rank(x)), keepdims=keepdim)

    return convert


converter("aten.sum.dim_IntList")(_reduction("reduce_sum"))
converter("aten.mean.dim")(_reduction("reduce_mean"))
converter("aten.amax.default")(_reduction("reduce_max"))
converter("aten.amin.default")(_reduction("reduce_min"))


@converter("aten.sum.default", "aten.mean.default")
def reduce_all(ctx: ImportContext, node, x, *, dtype=None):
    method = "reduce_sum" if "sum" in str(node.target) else "reduce_mean"
    return _reduction(method)(ctx, node, x)


@converter("aten._softmax.default")
def softmax(ctx: ImportContext, node, x, dim, half_to_float=False):
    return ctx.b.softmax(x, dim)


@converter("aten._log_softmax.default")
def log_softmax(ctx: ImportContext, node, x, dim, half_to_float=False):
    return ctx.b.log_softmax(x, dim)
