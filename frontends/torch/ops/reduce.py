"""Reductions, vector norms, pairwise distances and softmax."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import is_float_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


def _reduction(method: str):
    def convert(ctx: ImportContext, node, x, dims=None, keepdim=False, *, dtype=None):
        x = ctx.cast(x, ctx.dtype(node))
        return getattr(ctx.b, method)(x, ctx.axes(dims, ctx.rank(x)), keepdims=keepdim)

    return convert


converter("aten.sum.dim_IntList", "aten.sum.default", scalars_as_vectors=True)(_reduction("reduce_sum"))
converter("aten.mean.dim", "aten.mean.default", scalars_as_vectors=True)(_reduction("reduce_mean"))
converter("aten.prod.dim_int", "aten.prod.default", scalars_as_vectors=True)(_reduction("reduce_prod"))


def _extreme(method: str):
    """amax/amin, and max/min over every axis: bools reduce as integers (max is any, min
    is all), as the graph's reductions take numbers only."""

    def convert(ctx: ImportContext, node, x, dims=None, keepdim=False):
        dtype = ctx.dtype(node)
        if dtype == np.bool_:
            x = ctx.cast(x, np.dtype(np.int32))
        y = getattr(ctx.b, method)(x, ctx.axes(dims, ctx.rank(x)), keepdims=keepdim)
        return ctx.cast(y, dtype)

    return convert


converter("aten.amax.default", "aten.max.default", scalars_as_vectors=True)(_extreme("reduce_max"))
converter("aten.amin.default", "aten.min.default", scalars_as_vectors=True)(_extreme("reduce_min"))


# -- vector norms: ||x||_p over axes, composed from reductions ----------------------------

_NormRule = Callable[[ImportContext, SSAValue, list[int], bool], SSAValue]

#: the orders with a norm of their own; any other p is sum(|x|^p)^(1/p)
_NORMS: dict[float, _NormRule] = {
    2.0: lambda ctx, x, axes, keep: ctx.b.sqrt(ctx.b.reduce_sum(ctx.b.mul(x, x), axes, keepdims=keep)),
    1.0: lambda ctx, x, axes, keep: ctx.b.reduce_sum(ctx.b.abs(x), axes, keepdims=keep),
    math.inf: lambda ctx, x, axes, keep: ctx.b.reduce_max(ctx.b.abs(x), axes, keepdims=keep),
    -math.inf: lambda ctx, x, axes, keep: ctx.b.reduce_min(ctx.b.abs(x), axes, keepdims=keep),
    # the count of nonzero elements
    0.0: lambda ctx, x, axes, keep: ctx.b.reduce_sum(
        ctx.b.cast(ctx.b.compare(x, ctx.scalar(0, x), "ne"), x.type.element_type), axes, keepdims=keep
    ),
}


def vector_norm(ctx: ImportContext, x: SSAValue, ord: float, axes: list[int], keepdim: bool) -> SSAValue:
    """The ``ord``-norm of float ``x`` over ``axes`` (torch's ``linalg.vector_norm``)."""
    rule = _NORMS.get(float(ord))
    if rule is not None:
        return rule(ctx, x, axes, keepdim)
    b = ctx.b
    powered = b.reduce_sum(b.pow(b.abs(x), ctx.scalar(ord, x)), axes, keepdims=keepdim)
    return b.pow(powered, ctx.scalar(1.0 / ord, powered))


@converter("aten.linalg_vector_norm.default", scalars_as_vectors=True)
def linalg_vector_norm(ctx: ImportContext, node, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``F.normalize``, ``x.norm(p, dim)``, ``torch.linalg.vector_norm``: ``x`` is taken in
    the result's dtype (``dtype`` when given) before the norm, as torch does."""
    dtype = ctx.dtype(node)
    if not is_float_dtype(dtype):
        raise NotImplementedError(f"vector norm with result dtype {dtype} is not supported (float only)")
    x = ctx.cast(x, dtype)
    return vector_norm(ctx, x, ord, ctx.axes(dim, ctx.rank(x)), keepdim)


@converter("aten._cdist_forward.default")
def cdist(ctx: ImportContext, node, x1, x2, p, compute_mode=None):
    """``torch.cdist``: the ``p``-norm distance of every row of ``x1 (..., P, M)`` to every
    row of ``x2 (..., R, M)``, as the norm over the last axis of their broadcast difference
    ``(..., P, R, M)`` (exact; torch may use a matrix product for p=2 on more than 25 rows,
    which rounds differently)."""
    *batch1, rows1, features = shape_of(x1.type)
    *batch2, rows2, _ = shape_of(x2.type)
    left = ctx.b.reshape(x1, (*batch1, rows1, 1, features))
    right = ctx.b.reshape(x2, (*batch2, 1, rows2, features))
    difference = ctx.b.sub(left, right)
    return vector_norm(ctx, difference, p, [ctx.rank(difference) - 1], False)


@converter("aten._softmax.default", scalars_as_vectors=True)
def softmax(ctx: ImportContext, node, x, dim, half_to_float=False):
    return ctx.b.softmax(x, dim)


@converter("aten._log_softmax.default", scalars_as_vectors=True)
def log_softmax(ctx: ImportContext, node, x, dim, half_to_float=False):
    return ctx.b.log_softmax(x, dim)
