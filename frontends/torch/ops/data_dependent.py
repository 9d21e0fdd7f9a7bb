"""Ops whose result sizes depend on the data: nonzero, masked_select, boolean masks.

``nonzero``, ``masked_select`` and indexing by a boolean mask (``x[mask]``) return as
many rows as the data has true elements: torch.export names that count with a fresh
symbol (``u0``). Here the count is computed, read by the host (``graph.data_size``,
run by the VM) and the rows placed by a scatter: element ``i`` goes to row
``cumsum(flags)[i] - 1``.

``unique`` (``unique.py``) keeps the first of each run of equal neighbours the same
way; ``item()`` and the run-time assertions are in ``checks.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from ....dialects.graph.types import broadcast_shapes, element_type_of, format_shape, shape_of
from ....runtime import dim_arith
from ....runtime.dim_expr import free_symbols
from ..context import ImportContext, symbol_name
from ..registry import converter

_INT64 = np.dtype(np.int64)


def input_symbols(ctx: ImportContext) -> set[str]:
    """The symbols the function's inputs give."""
    return {s for arg in ctx.b._block.args for d in shape_of(arg.type) if isinstance(d, str) for s in free_symbols(d)}  # noqa: SLF001


def new_data_symbol(ctx: ImportContext, node: Any) -> str:
    """The symbol torch.export made up for the data-dependent size of ``node``'s result
    (``u0``): the one in its shape that no input gives (an earlier op may have bound it:
    torch.export names ``nonzero`` of one tensor once)."""
    metas = node.meta["val"] if isinstance(node.meta["val"], list | tuple) else [node.meta["val"]]
    dims = [symbol_name(d) for meta in metas if hasattr(meta, "shape") for d in meta.shape]
    found = {s for d in dims if isinstance(d, str) for s in free_symbols(d)} - input_symbols(ctx)
    if len(found) != 1:
        raise NotImplementedError(f"expected one new data-dependent size in the result, found {sorted(found) or 'none'}")
    return found.pop()


def true_positions(ctx: ImportContext, flags: SSAValue, symbol: str) -> SSAValue:
    """The flat positions (int64, in order) of the true elements of the 1-d boolean
    ``flags``: a tensor of ``symbol`` elements, ``symbol`` bound to their count."""
    b = ctx.b
    (length,) = shape_of(flags.type)
    ones = ctx.cast(flags, _INT64)
    if symbol not in ctx.symbol_values:
        ctx.bind_data_symbol(symbol, b.reduce_sum(ones, [0]), at_most=length)
    order = b.sub(b.cumsum(ones, 0), ctx.constant(np.int64(1)))
    rows = b.where(flags, order, ctx.size_value(symbol))  # the others to one spare row, cut off
    slots = b.full((dim_arith.add(symbol, 1),), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
    placed = b.scatter(slots, rows, ctx.positions(length, [flags]), axis=0, mode="update")
    return b.slice(placed, [0], [-1])


def _flat_flags(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """``x != 0`` as a 1-d boolean vector (row-major)."""
    b = ctx.b
    shape = shape_of(x.type)
    flat = b.reshape(x, (dim_arith.product(shape),))
    return flat if x.type.element_type == i1 else b.compare(flat, ctx.scalar(0, flat), "ne")


def coordinates(ctx: ImportContext, positions: SSAValue, shape: tuple) -> list[SSAValue]:
    """The coordinates in ``shape`` of flat row-major ``positions``, one int64 vector per axis."""
    b = ctx.b
    columns, stride = [], 1
    for size in reversed(shape):
        q = positions if stride == 1 else b.div(positions, ctx.size_value(stride))  # positions >= 0: div floors
        columns.append(b.sub(q, b.mul(b.div(q, ctx.size_value(size)), ctx.size_value(size))))
        stride = dim_arith.mul(stride, size)
    return columns[::-1]


@converter("aten.nonzero.default")
def nonzero(ctx: ImportContext, node, x):
    """The coordinates of the non-zero elements of ``x``, one row each, in row-major order."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    shape = shape_of(x.type)
    positions = true_positions(ctx, _flat_flags(ctx, x if shape else b.reshape(x, (1,))), symbol)
    if not shape:
        return b.full((symbol, 0), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
    columns = [b.reshape(c, (symbol, 1)) for c in coordinates(ctx, positions, shape)]
    return columns[0] if len(columns) == 1 else b.concat(columns, 1)


@converter("aten.masked_select.default")
def masked_select(ctx: ImportContext, node, x, mask):
    """The elements of ``x`` where ``mask`` (both broadcast) is true, as a vector."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    shape = broadcast_shapes(shape_of(x.type), shape_of(mask.type))
    count = dim_arith.product(shape)
    flags = b.reshape(b.broadcast_to(mask, shape), (count,))
    positions = true_positions(ctx, flags, symbol)
    return b.take(b.reshape(b.broadcast_to(x, shape), (count,)), positions, 0)


def masked_rows(ctx: ImportContext, node, x: SSAValue, at: int, mask: SSAValue) -> SSAValue:
    """``x[..., mask]`` with ``mask`` covering the axes of ``x`` from ``at`` (whole axes
    before it): the true cells' rows of ``x`` with those axes merged into one."""
    b = ctx.b
    x_shape, mask_shape = shape_of(x.type), shape_of(mask.type)
    before, after = x_shape[:at], x_shape[at + len(mask_shape) :]
    positions = true_positions(ctx, _flat_flags(ctx, mask), new_data_symbol(ctx, node))
    return b.take(b.reshape(x, (*before, dim_arith.product(mask_shape), *after)), positions, at)


def masks_as_indices(ctx: ImportContext, node, indices: list) -> list:
    """An advanced index with a boolean mask (``x[mask]``, ``x[:, mask]``) as the integer
    index it means: the mask's ``nonzero`` columns in place of the axes it covers."""
    masks = [k for k, t in enumerate(indices) if t is not None and t.type.element_type == i1]
    if not masks:
        return list(indices)
    if len(masks) > 1:
        raise NotImplementedError("indexing with more than one boolean mask is not supported")
    (at,) = masks
    mask = indices[at]
    mask_shape = shape_of(mask.type)
    if not mask_shape:
        raise NotImplementedError("indexing with a 0-d boolean mask (x[True]) is not supported")
    symbol = new_data_symbol(ctx, node)
    positions = true_positions(ctx, _flat_flags(ctx, mask), symbol)
    return [*indices[:at], *coordinates(ctx, positions, mask_shape), *indices[at + 1 :]]


def rows_in_order(ctx: ImportContext, marks: SSAValue, rows: SSAValue, axis: int) -> SSAValue:
    """For each of the 1-d int64 ``marks`` (1 marked, 0 not), row ``cumsum(marks) - 1``
    of ``rows`` along ``axis``: the ``j``-th marked position reads the ``j``-th row. The
    others read a nearby row, to be discarded; a length that may be 0 at run time gets
    one spare row, so every read is inside ``rows``."""
    b = ctx.b
    length = shape_of(rows.type)[axis]
    last = ctx.size_value(length)
    if isinstance(length, int) and length > 0:
        last = b.sub(last, ctx.constant(np.int64(1)))
    else:
        spare = [int(k == axis) for k in range(ctx.rank(rows))]
        rows = b.pad(rows, [0] * len(spare), spare)
    order = b.sub(b.cumsum(marks, 0), ctx.constant(np.int64(1)))
    return b.take(rows, b.min(b.max(order, ctx.constant(np.int64(0))), last), axis)


def masked_put(ctx: ImportContext, x: SSAValue, at: int, mask: SSAValue, values: SSAValue, accumulate: bool) -> SSAValue:
    """``x[..., mask, ...] = values`` (``+=`` with ``accumulate``), the mask covering the
    axes of ``x`` from ``at``: the ``j``-th true position takes the ``j``-th row of
    ``values`` (or its only one). A ``graph.check`` raises, as torch does, when
    ``values`` has neither one row nor one per true position."""
    b = ctx.b
    x_shape = shape_of(x.type)
    mask_shape = shape_of(mask.type)
    before, after = x_shape[:at], x_shape[at + len(mask_shape) :]
    cells = dim_arith.product(mask_shape)
    v_shape = shape_of(values.type)
    length = v_shape[-(len(after) + 1)] if len(v_shape) > len(after) else 1
    rows = b.broadcast_to(values, (*before, length, *after))
    flags = b.reshape(mask, (cells,))
    ones = ctx.cast(flags, _INT64)
    if length != 1:
        count = b.reduce_sum(ones, [0])
        ctx.b.check(
            b.compare(count, ctx.size_value(length), "eq"),
            f"shape mismatch: value tensor of shape {format_shape(v_shape)} cannot be broadcast to the "
            "number of elements the boolean mask selects",
        )
    placed = rows_in_order(ctx, ones, rows, len(before))  # (*before, cells, *after)
    merged = b.reshape(x, (*before, cells, *after))
    chosen = b.reshape(flags, (*(1 for _ in before), cells, *(1 for _ in after)))
    updated = b.where(chosen, b.add(merged, placed) if accumulate else placed, merged)
    return b.reshape(updated, x_shape)
