"""Matrix products (mm, bmm, addmm, addmv, addbmm, linear), ``_trilinear`` (``nn.Bilinear``)
and pairwise distances (``pdist``). Grouped products (mixture of experts): ``grouped.py``."""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import shape_of
from ..context import ImportContext
from ..registry import converter
from .reduce import vector_norm


@converter("aten.linear.default")
def linear(ctx: ImportContext, node, x, weight, bias=None):
    return ctx.b.dense(x, weight, bias)


@converter("aten.mm.default")
def mm(ctx: ImportContext, node, a, b):
    return ctx.b.matmul(a, b)


def _scaled_sum(ctx: ImportContext, bias, product, beta, alpha):
    """``beta * bias + alpha * product`` (torch's ``add*`` ops: beta 0 ignores the bias)."""
    if alpha != 1:
        product = ctx.b.mul(product, ctx.scalar(alpha, product))
    if beta == 0:
        return product
    if beta != 1:
        bias = ctx.b.mul(bias, ctx.scalar(beta, bias))
    return ctx.b.add(product, bias)


@converter("aten.addmm.default")
def addmm(ctx: ImportContext, node, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(ctx, bias, ctx.b.matmul(a, b), beta, alpha)


@converter("aten.addmv.default")
def addmv(ctx: ImportContext, node, bias, matrix, vector, beta=1, alpha=1):
    """``beta * bias + alpha * (matrix @ vector)``: the vector as a one-column matrix."""
    (length,) = shape_of(vector.type)
    product = ctx.b.matmul(matrix, ctx.b.reshape(vector, (length, 1)))
    return _scaled_sum(ctx, bias, ctx.b.reshape(product, shape_of(product.type)[:1]), beta, alpha)


@converter("aten.addbmm.default")
def addbmm(ctx: ImportContext, node, bias, a, b, beta=1, alpha=1):
    """``beta * bias + alpha * sum_i(a[i] @ b[i])``."""
    product = ctx.b.reduce_sum(ctx.b.batch_matmul(a, b), [0], keepdims=False)
    return _scaled_sum(ctx, bias, product, beta, alpha)


@converter("aten.bmm.default")
def bmm(ctx: ImportContext, node, a, b):
    return ctx.b.batch_matmul(a, b)


@converter("aten._trilinear.default")
def trilinear(ctx: ImportContext, node, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """torch's ``_trilinear`` (what ``nn.Bilinear`` decomposes to): each input gets size-1
    axes inserted at its ``expand`` positions, the three are multiplied (broadcasting) and
    summed over ``sumdim``. ``unroll_dim`` only chooses torch's loop order."""
    b = ctx.b
    product = None
    for x, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        shape = list(shape_of(x.type))
        for axis in sorted(expand):
            shape.insert(axis, 1)
        x = b.reshape(x, tuple(shape))
        product = x if product is None else b.mul(product, x)
    return b.reduce_sum(product, sorted(sumdim), keepdims=False) if sumdim else product


@converter("aten._pdist_forward.default")
def pdist(ctx: ImportContext, node, x, p=2.0):
    """The ``p``-norm distance of every pair of rows ``i < j`` of ``(N, M)`` ``x``, in
    row-major order of the pairs: two gathers of the rows, then a vector norm."""
    rows = shape_of(x.type)[0]
    if not isinstance(rows, int):
        raise NotImplementedError(f"pdist of a symbolic number of rows ({rows}) is not supported")
    first, second = (ctx.constant(i.astype(np.int64)) for i in np.triu_indices(rows, 1))
    difference = ctx.b.sub(ctx.b.take(x, first, 0), ctx.b.take(x, second, 0))
    return vector_norm(ctx, difference, float(p), [1], keepdim=False)
