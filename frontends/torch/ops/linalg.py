"""Matrix products (mm, bmm, addmm, addmv, addbmm, linear), grouped products
(``_grouped_mm``: mixture-of-experts layers), ``_trilinear`` (``nn.Bilinear``) and pairwise
distances (``pdist``)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of, shape_of
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


def _segment_of(ctx: ImportContext, length, offsets, like) -> SSAValue:
    """The group of each of ``length`` positions split by the ends ``offsets`` (G,):
    how many ends are at or before it (G past the last end)."""
    b = ctx.b
    positions = ctx.positions(length, [like])
    ends = b.reshape(ctx.cast(offsets, np.int64), (1, shape_of(offsets.type)[0]))
    passed = b.compare(b.reshape(positions, (length, 1)), ends, "ge")
    return b.reduce_sum(b.cast(passed, element_type_of(np.int32)), [1], keepdims=False)


def _segment_mask(ctx: ImportContext, length, offsets, like) -> SSAValue:
    """(G, length) booleans: position ``k`` lies in segment ``g`` (``[offs[g-1], offs[g])``)."""
    b = ctx.b
    (count,) = shape_of(offsets.type)
    segment = b.reshape(_segment_of(ctx, length, offsets, like), (1, length))
    groups = ctx.constant(np.arange(count, dtype=np.int32).reshape(count, 1))
    return b.compare(segment, groups, "eq")


@converter("aten._grouped_mm.default")
def grouped_mm(ctx: ImportContext, node, a, b, offs=None, bias=None, out_dtype=None):
    """torch's grouped GEMM. 2-d x 3-d: the rows of ``a`` in consecutive groups ending at
    ``offs``, group ``g`` times ``b[g]`` (rows past the last offset: zero, torch leaves
    them unset); 3-d x 2-d: likewise for the columns of ``b`` with ``a[g]``; 2-d x 2-d:
    the contraction axis in groups, one product per group; 3-d x 3-d: a batched product."""
    if bias is not None:
        raise NotImplementedError("_grouped_mm with a bias is not supported (torch does not support it either)")
    ranks = (ctx.rank(a), ctx.rank(b))
    if (ranks == (3, 3)) != (offs is None):
        raise NotImplementedError(f"_grouped_mm of ranks {ranks} {'without' if offs is None else 'with'} offsets")
    if ranks == (3, 3):
        result = ctx.b.batch_matmul(a, b)
    elif ranks == (2, 3):
        result = _rows_by_group(ctx, a, b, offs)
    elif ranks == (3, 2):  # columns of b by group: the transposed product's rows
        result = ctx.b.transpose(_rows_by_group(ctx, ctx.b.transpose(b, (1, 0)), ctx.b.transpose(a, (0, 2, 1)), offs), (1, 0))
    else:
        length = shape_of(a.type)[1]
        (count,) = shape_of(offs.type)
        mask = ctx.b.reshape(_segment_mask(ctx, length, offs, a), (count, 1, length))
        masked = ctx.b.where(mask, ctx.b.reshape(a, (1, *shape_of(a.type))), ctx.scalar(0, a))
        result = ctx.b.batch_matmul(masked, ctx.b.reshape(b, (1, *shape_of(b.type))))
    return result if out_dtype is None else ctx.cast(result, ctx.dtype(node))


def _rows_by_group(ctx: ImportContext, a, b, offs) -> SSAValue:
    return ctx.b.grouped_matmul(a, b, _segment_of(ctx, shape_of(a.type)[0], offs, a))


@converter("transformers.grouped_mm_fallback.default")
def transformers_grouped_mm(ctx: ImportContext, node, a, b, offs):
    """Hugging Face transformers' MoE experts product (its loop over experts, opaque to
    torch.export as a custom op): ``_grouped_mm`` of 2-d rows by 3-d weights."""
    return _rows_by_group(ctx, a, b, offs)


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
