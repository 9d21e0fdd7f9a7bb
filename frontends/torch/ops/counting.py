"""``bincount`` and ``repeat_interleave`` of a tensor of repeats: results whose length
comes from the data (a new symbol, read by the VM: ``data_dependent.py``) unless given.

- ``bincount(x, weights, minlength)``: ``max(max(x) + 1, minlength)`` bins, a
  ``graph.scatter`` adding one (or the weight) per element into its bin;
- ``repeat_interleave(repeats)``: element ``i`` repeated ``repeats[i]`` times, so output
  position ``j`` holds how many running totals ``cumsum(repeats)`` lie at or before
  ``j``: a mark added at each total, then prefix-summed (linear work).
  ``x.repeat_interleave(r, dim)`` is this then ``index_select``.

Negative counts or repeats raise as torch's do (a ``graph.check``).
"""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import shape_of
from ....runtime import dim_arith
from ..context import ImportContext
from ..registry import converter
from .creation import filled
from .data_dependent import new_data_symbol
from .index_checks import all_true

_INT64 = np.dtype(np.int64)


def _length(ctx: ImportContext, node):
    """The result's length: static, or the new symbol torch.export named it."""
    (length,) = ctx.shape(node)
    return length if isinstance(length, int) else new_data_symbol(ctx, node)


@converter("aten.bincount.default")
def bincount(ctx: ImportContext, node, x, weights=None, minlength=0):
    b = ctx.b
    if ctx.rank(x) != 1:
        raise ValueError(f"bincount of a {ctx.rank(x)}-d tensor (1-d only, as torch)")
    x = ctx.cast(x, _INT64)
    b.check(all_true(ctx, b.compare(x, ctx.scalar(0, x), "ge")), "bincount only supports 1-d non-negative integral inputs.")
    length = _length(ctx, node)
    if isinstance(length, str) and length not in ctx.symbol_values:
        largest = b.add(b.reduce_max(x, [0]), ctx.constant(np.int64(1)))  # an empty x: the identity, below 0
        ctx.bind_data_symbol(length, b.max(largest, ctx.constant(np.int64(minlength))))
    dtype = ctx.dtype(node)
    counts = filled(ctx, (length,), 0, dtype, [x])
    added = ctx.cast(weights, dtype) if weights is not None else b.broadcast_to(ctx.constant(np.ones((), dtype)), shape_of(x.type))
    return b.scatter(counts, x, added, axis=0, mode="add")


@converter("aten.repeat_interleave.Tensor")
def repeat_interleave(ctx: ImportContext, node, repeats, *, output_size=None):
    b = ctx.b
    if ctx.rank(repeats) != 1:
        raise ValueError(f"repeat_interleave of repeats of shape {shape_of(repeats.type)} (1-d repeats)")
    repeats = ctx.cast(repeats, _INT64)
    b.check(all_true(ctx, b.compare(repeats, ctx.scalar(0, repeats), "ge")), "repeat_interleave: repeats can not be negative")
    totals = b.cumsum(repeats, 0)
    count = shape_of(repeats.type)[0]
    total = b.reshape(b.slice(totals, [dim_arith.sub(count, 1)], [count], [0]), ()) if count != 0 else ctx.constant(np.int64(0))
    length = _length(ctx, node)
    if isinstance(length, str) and length not in ctx.symbol_values:
        ctx.bind_data_symbol(length, total)
    elif output_size is not None:
        b.check(b.compare(total, ctx.size_value(length), "eq"), "repeat_interleave: allocated size does not match required size")
    # a mark at each running total (those equal to the length go to one extra slot)
    marks = b.scatter(filled(ctx, (dim_arith.add(length, 1),), 0, _INT64, [repeats]), totals,
                      b.broadcast_to(ctx.constant(np.int64(1)), (count,)), axis=0, mode="add")  # fmt: skip
    return b.slice(b.cumsum(marks, 0), [0], [length], [0])


__all__ = ["bincount", "repeat_interleave"]
