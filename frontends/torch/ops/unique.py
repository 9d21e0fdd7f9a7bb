"""``unique``, ``unique(dim=)`` and ``unique_consecutive``: the values (rows) that start a
run of equal neighbours, of the sorted values for ``unique``; their number is a
data-dependent size (``data_dependent.py``)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of, shape_of
from ....runtime import dim_arith
from ..context import ImportContext, symbol_name
from ..registry import converter
from .data_dependent import new_data_symbol, true_positions

_INT64 = np.dtype(np.int64)


def _unique_runs(ctx: ImportContext, node, values: SSAValue, order: SSAValue | None, return_inverse, return_counts, shape):
    """The runs of equal neighbours among the rows of ``values`` (along axis 0; ``order``:
    the positions they came from, None for in place): one row per run; the run of each
    original row (in ``shape``), and each run's length, where asked for (else empty, as
    torch)."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    length, *rest = shape_of(values.type)
    _, inverse_meta, counts_meta = node.meta["val"]  # along a dim, torch gives both, asked for or not
    return_inverse = return_inverse or tuple(map(symbol_name, inverse_meta.shape)) != (0,)
    return_counts = return_counts or tuple(map(symbol_name, counts_meta.shape)) != (0,)
    at = ctx.positions(length, [values])
    previous = b.take(values, b.max(b.sub(at, ctx.constant(np.int64(1))), ctx.constant(np.int64(0))), 0)
    differs = b.compare(values, previous, "ne")  # NaN != NaN: each NaN its own run
    if rest:
        differs = b.compare(b.reduce_max(ctx.cast(differs, np.dtype(np.int8)), list(range(1, 1 + len(rest)))), ctx.constant(np.int8(0)), "ne")
    starts = b.bitwise_or(b.compare(at, ctx.constant(np.int64(0)), "eq"), differs)
    unique = b.take(values, true_positions(ctx, starts, symbol), 0)
    run = b.sub(b.cumsum(ctx.cast(starts, _INT64), 0), ctx.constant(np.int64(1)))  # of each row of values
    inverse = counts = ctx.constant(np.zeros(0, np.int64))
    if return_inverse:  # the run of each row, in its own place
        placed = run if order is None else b.scatter(b.full((length,), 0, element_type_of(_INT64), [values]), order, run, axis=0)
        inverse = b.reshape(placed, shape)
    if return_counts:
        slots = b.full((symbol,), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
        counts = b.scatter(slots, run, b.full((length,), 1, element_type_of(_INT64), [values]), axis=0, mode="add")
    return unique, inverse, counts


@converter("aten._unique2.default")
def unique(ctx: ImportContext, node, x, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    """``torch.unique``: the distinct values in ascending order (NaNs last, each its own);
    on the CPU torch sorts them whatever ``sorted`` says, as here."""
    b = ctx.b
    shape = shape_of(x.type)
    flat = b.reshape(x, (dim_arith.product(shape),))
    order = b.argsort(flat, 0)  # stable, NaN last
    return _unique_runs(ctx, node, b.take(flat, order, 0), order, return_inverse, return_counts, shape)


def _rows_along(ctx: ImportContext, x: SSAValue, dim: int) -> tuple[SSAValue, list[int] | None]:
    """``x`` with axis ``dim`` first (and the permutation, None if none was needed)."""
    if dim == 0:
        return x, None
    permutation = [dim, *(a for a in range(ctx.rank(x)) if a != dim)]
    return ctx.b.transpose(x, permutation), permutation


def _from_rows(ctx: ImportContext, rows: SSAValue, permutation: list[int] | None) -> SSAValue:
    if permutation is None:
        return rows
    return ctx.b.transpose(rows, [permutation.index(a) for a in range(len(permutation))])


@converter("aten.unique_dim.default")
def unique_dim(ctx: ImportContext, node, x, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    """``torch.unique(x, dim=d)``: the distinct slices along ``d`` in lexicographic order
    (a stable argsort by each column, the last first)."""
    b = ctx.b
    dim %= max(ctx.rank(x), 1)
    rows, permutation = _rows_along(ctx, x, dim)
    length, *rest = shape_of(rows.type)
    table = b.reshape(rows, (length, dim_arith.product(rest)))
    columns = dim_arith.product(rest)
    if not isinstance(columns, int):
        raise NotImplementedError("unique along a dim with symbolic other dims is not supported")
    order = ctx.positions(length, [rows])
    for column in reversed(range(columns)):  # least significant first: stable sorts keep the rest's order
        key = b.take(b.reshape(b.slice(table, [column], [column + 1], [1]), (length,)), order, 0)
        order = b.take(order, b.argsort(key, 0), 0)
    unique_rows, inverse, counts = _unique_runs(ctx, node, b.take(rows, order, 0), order, return_inverse, return_counts, (length,))
    return _from_rows(ctx, unique_rows, permutation), inverse, counts


@converter("aten.unique_consecutive.default")
def unique_consecutive(ctx: ImportContext, node, x, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique_consecutive``: one value (slice along ``dim``) per run of equal
    neighbours."""
    if dim is None:
        shape = shape_of(x.type)
        flat = ctx.b.reshape(x, (dim_arith.product(shape),))
        return _unique_runs(ctx, node, flat, None, return_inverse, return_counts, shape)
    rows, permutation = _rows_along(ctx, x, dim % ctx.rank(x))
    unique_rows, inverse, counts = _unique_runs(ctx, node, rows, None, return_inverse, return_counts, shape_of(rows.type)[:1])
    return _from_rows(ctx, unique_rows, permutation), inverse, counts
