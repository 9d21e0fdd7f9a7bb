"""Unique: the distinct elements (or slices along ``axis``), the index of each one's first
occurrence, each input element's group (inverse indices) and the group sizes; sorted, or
in order of first occurrence (``sorted=0``).

The rows (elements, or slices along ``axis`` flattened) are sorted lexicographically by
stable sorts on their columns, last first; a row that differs from the one before starts a
group. How many groups there are is read from the data (``graph.data_size``, run by the VM).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter
from .indexing import true_positions
from .shape import product

_INT64 = np.dtype(np.int64)
#: slices along an axis are sorted column by column: at most this many columns
MAX_COLUMNS = 64


@converter("Unique", since=11)
def unique(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    g, x = ctx.b, node.input(0)
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise refuse("a symbolic input shape")
    if node.has_attr("axis"):
        axis = ctx.axis(node.attr("axis"), len(shape), node)
        moved = [axis, *(a for a in range(len(shape)) if a != axis)]
        rows = g.reshape(g.transpose(x, moved), (shape[axis], product([d for a, d in enumerate(shape) if a != axis])))
    else:
        axis, moved = None, None
        rows = g.reshape(x, (product(shape), 1))
    n, width = ctx.shape(rows)
    if width > MAX_COLUMNS:
        raise refuse(f"slices of {width} elements (sorted column by column: at most {MAX_COLUMNS})")
    # lexicographic order of the rows: stable sorts by each column, the last one first
    order = ctx.positions(n)
    for column in reversed(range(width)):
        keys = g.take(g.reshape(g.slice(rows, [column], [column + 1], [1]), (n,)), order, 0)
        order = g.take(order, g.argsort(keys, 0, False), 0)
    ordered = g.take(rows, order, 0)
    if n > 1:
        differs = g.compare(g.slice(ordered, [1], [n], [0]), g.slice(ordered, [0], [n - 1], [0]), "ne")
        changed = ctx.cast(g.reduce_max(ctx.cast(differs, np.uint8), [1]), np.bool_)
        starts_group = g.concat([ctx.constant(np.ones(1, np.bool_)), changed], 0)
    else:
        starts_group = ctx.constant(np.ones(n, np.bool_))
    starts = true_positions(ctx, starts_group)  # (u,) sorted positions where groups start
    (u,) = ctx.shape(starts)
    values = g.take(ordered, starts, 0)
    first = g.take(order, starts, 0)
    group = g.sub(g.cumsum(ctx.cast(starts_group, _INT64), 0), ctx.scalar(1, starts))
    inverse = g.scatter(ctx.constant(np.zeros(n, np.int64)), order, group, 0)
    ends = g.concat([g.slice(starts, [1], [u], [0]), ctx.constant(np.array([n], np.int64))], 0)
    counts = g.sub(ends, starts)
    if not node.attr("sorted", 1):  # groups in order of first occurrence
        by_first = g.argsort(first, 0, False)
        values, first, counts = (g.take(v, by_first, 0) for v in (values, first, counts))
        inverse = g.take(g.argsort(by_first, 0, False), inverse, 0)
    if axis is None:
        values = g.reshape(values, (u,))
    else:
        rest = [d for a, d in enumerate(shape) if a != axis]
        values = g.reshape(values, (u, *rest))
        values = g.transpose(values, [moved.index(a) for a in range(len(shape))])
    return values, first, inverse, counts
