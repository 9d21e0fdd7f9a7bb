"""Data movement: view/reshape, permute, expand, squeeze/unsqueeze, cat, slice, select."""

from __future__ import annotations

from ..context import ImportContext
from ..registry import converter


@converter("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def view(ctx: ImportContext, node, x, shape):
    # the result shape recorded by export is already resolved (-1, symbols)
    return ctx.b.reshape(x, ctx.shape(node))


@converter("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default", "aten.unsqueeze.default")
def squeeze_unsqueeze(ctx: ImportContext, node, x, *dims):
    return ctx.b.reshape(x, ctx.shape(node))


@converter("aten.permute.default")
def permute(ctx: ImportContext, node, x, dims):
    return ctx.b.transpose(x, [d % ctx.rank(x) for d in dims])


@converter("aten.t.default")
def t(ctx: ImportContext, node, x):
    return ctx.b.transpose(x, list(range(ctx.rank(x)))[::-1])


@converter("aten.transpose.int")
def transpose(ctx: ImportContext, node, x, a, b):
    perm = list(range(ctx.rank(x)))
    a, b = a % len(perm), b % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.b.transpose(x, perm)


@converter("aten.expand.default")
def expand(ctx: ImportContext, node, x, sizes, implicit=False):
    return ctx.b.broadcast_to(x, ctx.shape(node))


@converter("aten.cat.default")
def cat(ctx: ImportContext, node, tensors, dim=0):
    tensors = [ctx.cast(t, ctx.dtype(node)) for t in tensors]
    return ctx.b.concat(tensors, axis=dim)


@converter("aten.slice.Tensor")
def slice_(ctx: ImportContext, node, x, dim=0, start=None, end=None, step=1):
    return ctx.b.slice(x, [start], [end], [dim], [step])


@converter("aten.select.int")
def select(ctx: ImportContext, node, x, dim, index):
    dim = dim % ctx.rank(x)
    size = x.type.get_shape()[dim]
    index = index + size if index < 0 else index
    piece = ctx.b.slice(x, [index], [index + 1], [dim], [1])
    return ctx.b.reshape(piece, ctx.shape(node))
