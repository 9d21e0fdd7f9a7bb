"""Grouped matrix products (mixture-of-experts layers): ``_grouped_mm`` in its four forms
and Hugging Face transformers' ``grouped_mm_fallback`` op.

Rows sorted by group (consecutive groups ending at ``offs``, as MoE dispatch sorts the
(token, expert) pairs) are laid out in blocks of ``BLOCK`` rows, each group starting a
new block, and multiplied as ``graph.grouped_matmul`` of blocks: every row of a block
shares its expert's matrix, so the GEMM tile loads each vector of it once for all its
rows, as in a dense product, instead of once per row (MoE 512 -> 2048 on 512 rows, one
thread, AVX2: 44 -> 77 GFLOP/s; a dense layer of that size: 92). Padding costs at most
``BLOCK - 1`` rows per group; the rows go back to their places with one gather.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of, shape_of
from ....runtime import dim_arith
from ..context import ImportContext
from ..registry import converter

#: rows per block: divided by the GEMM tiles' row counts (8 with AVX-512, 4 with AVX2)
BLOCK = 8


def block_rows(rows: int | str, groups: int) -> int:
    """Rows per block for ``rows`` spread over ``groups``: :data:`BLOCK`, or fewer when a
    known row count gives each group fewer (a decode step: 4 tokens x top-2 over 8 experts
    would pad each expert's one row to 8, eight times the products), a power of two so
    that it divides the GEMM tile's rows."""
    if isinstance(rows, str) or rows >= BLOCK * groups:
        return BLOCK
    return 1 << max(rows // max(groups, 1), 1).bit_length() - 1

I32 = element_type_of(np.int32)


def segment_of(ctx: ImportContext, length, ends, like) -> SSAValue:
    """The group of each of ``length`` positions split by the int64 ``ends`` (G,): how
    many ends are at or before it (G past the last end)."""
    b = ctx.b
    positions = b.reshape(ctx.positions(length, [like]), (length, 1))
    passed = b.compare(positions, b.reshape(ends, (1, shape_of(ends.type)[0])), "ge")
    return b.reduce_sum(b.cast(passed, I32), [1], keepdims=False)


def _segment_mask(ctx: ImportContext, length, offsets, like) -> SSAValue:
    """(G, length) booleans: position ``k`` lies in segment ``g`` (``[offs[g-1], offs[g])``)."""
    (count,) = shape_of(offsets.type)
    segment = ctx.b.reshape(segment_of(ctx, length, ctx.cast(offsets, np.int64), like), (1, length))
    return ctx.b.compare(segment, ctx.constant(np.arange(count, dtype=np.int32).reshape(count, 1)), "eq")


def _starts(ctx: ImportContext, ends: SSAValue) -> SSAValue:
    """Where each group begins: the previous group's end (0 for the first)."""
    (count,) = shape_of(ends.type)
    previous = ctx.b.take(ends, ctx.constant(np.maximum(np.arange(count) - 1, 0)), 0)
    return ctx.b.where(ctx.constant(np.arange(count) == 0), ctx.scalar(0, ends), previous)


def rows_by_group(ctx: ImportContext, x: SSAValue, weights: SSAValue, offsets: SSAValue) -> SSAValue:
    """``x (S, K)``'s rows in consecutive groups ending at ``offsets`` (G,), group ``g``
    times ``weights[g] (K, N)``; rows past the last end are zero (module docstring)."""
    b = ctx.b
    rows, depth = shape_of(x.type)
    count = shape_of(offsets.type)[0]
    block = block_rows(rows, count)
    ends = ctx.cast(offsets, np.int64)
    ends = b.max(ends, ctx.scalar(0, ends))
    starts = _starts(ctx, ends)
    sizes = b.max(b.sub(b.min(ends, ctx.size_value(rows)), starts), ctx.scalar(0, ends))
    blocks = b.div(b.add(sizes, ctx.scalar(block - 1, sizes)), ctx.scalar(block, sizes))
    block_ends = b.cumsum(blocks, 0)
    block_starts = b.sub(block_ends, blocks)
    # enough blocks for any sizes: sum(ceil(size / block)) <= ceil(rows / block) + count - 1
    capacity = dim_arith.add(dim_arith.ceildiv(rows, block), count)
    group = segment_of(ctx, capacity, block_ends, x)  # (capacity,): count for unused blocks
    at = b.min(group, ctx.scalar(count - 1, group))  # in range, for the reads below
    first_row = b.reshape(b.add(b.take(starts, at, 0), b.mul(
        b.sub(ctx.cast(ctx.positions(capacity, [x]), np.int64), b.take(block_starts, at, 0)), ctx.scalar(block, ends)
    )), (capacity, 1))  # fmt: skip
    source = b.add(first_row, ctx.constant(np.arange(block, dtype=np.int64).reshape(1, block)))  # (capacity, block)
    used = b.compare(source, b.reshape(b.take(ends, at, 0), (capacity, 1)), "lt")
    blocked = b.where(b.reshape(used, (capacity, block, 1)), b.take(x, source, 0), ctx.scalar(0, x))
    products = b.grouped_matmul(blocked, weights, group)  # unused blocks: group out of range, zero
    columns = shape_of(weights.type)[2]
    flat = b.reshape(products, (dim_arith.mul(capacity, block), columns))
    # each row's place among the blocks
    row_group = segment_of(ctx, rows, ends, x)
    row_at = b.min(row_group, ctx.scalar(count - 1, row_group))
    offset_in_group = b.sub(ctx.positions(rows, [x]), b.take(starts, row_at, 0))
    place = b.add(b.mul(b.take(block_starts, row_at, 0), ctx.scalar(block, ends)), offset_in_group)
    inside = b.compare(row_group, ctx.scalar(count, row_group), "lt")
    return b.where(b.reshape(inside, (rows, 1)), b.take(flat, place, 0), ctx.scalar(0, x))


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
        result = rows_by_group(ctx, a, b, offs)
    elif ranks == (3, 2):  # columns of b by group: the transposed product's rows
        result = ctx.b.transpose(rows_by_group(ctx, ctx.b.transpose(b, (1, 0)), ctx.b.transpose(a, (0, 2, 1)), offs), (1, 0))
    else:
        length = shape_of(a.type)[1]
        (count,) = shape_of(offs.type)
        mask = ctx.b.reshape(_segment_mask(ctx, length, offs, a), (count, 1, length))
        masked = ctx.b.where(mask, ctx.b.reshape(a, (1, *shape_of(a.type))), ctx.scalar(0, a))
        result = ctx.b.batch_matmul(masked, ctx.b.reshape(b, (1, *shape_of(b.type))))
    return result if out_dtype is None else ctx.cast(result, ctx.dtype(node))


@converter("transformers.grouped_mm_fallback.default")
def transformers_grouped_mm(ctx: ImportContext, node, a, b, offs):
    """Hugging Face transformers' MoE experts product (its loop over experts, opaque to
    torch.export as a custom op): ``_grouped_mm`` of 2-d rows by 3-d weights."""
    return rows_by_group(ctx, a, b, offs)
