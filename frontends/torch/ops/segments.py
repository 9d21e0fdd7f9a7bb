"""``torch.segment_reduce``: reductions over consecutive segments of ``data``'s first axis,
their ``lengths`` (or ``offsets``) given per segment -- a scatter-reduce of each element
into its segment: an element's segment is how many segment ends lie at or before it (a
mark at each end, prefix-summed), so the work is linear in the data and the segments.

``sum``, ``prod``, ``max`` (NaN spreads), ``min`` and ``mean`` (on floats); an empty
segment holds ``initial`` where given, else the reduction's identity (``mean``: NaN), as
torch's. Lengths must be non-negative and sum to ``data.shape[0]``, as torch requires:
constant lengths are checked on import, lengths computed at run time by a ``graph.check``.
One-dimensional lengths only (torch's ``axis`` 0); ``indices`` (which torch does not
implement either) and ``unsafe`` change nothing.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.constant import ConstantOp
from ....dialects.graph.types import is_float_dtype, shape_of
from ..context import ImportContext
from ..registry import converter

_INT64 = np.dtype(np.int64)
#: torch's reduction -> (graph.scatter mode, the empty segment's value without ``initial``)
_REDUCTIONS = {"sum": ("add", 0.0), "mean": ("add", 0.0), "prod": ("mul", 1.0), "max": ("max", -np.inf), "min": ("min", np.inf)}


@converter("aten.segment_reduce.default")
def segment_reduce(
    ctx: ImportContext, node, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    if reduce not in _REDUCTIONS:
        raise NotImplementedError(f"segment_reduce with reduce={reduce!r} (supported: {', '.join(_REDUCTIONS)})")
    dtype = ctx.dtype(node)
    if not is_float_dtype(dtype):
        raise NotImplementedError(f"segment_reduce on {dtype} data (float dtypes are supported, as torch's)")
    if lengths is None and offsets is None:
        raise ValueError("segment_reduce needs lengths or offsets")
    b = ctx.b
    if lengths is None:
        count = shape_of(offsets.type)[-1]
        lengths = b.sub(b.slice(offsets, [1], [count], [0]), b.slice(offsets, [0], [count - 1], [0]))
    if ctx.rank(lengths) != 1 or axis % ctx.rank(data) != 0:
        raise NotImplementedError(
            f"segment_reduce with lengths of shape {shape_of(lengths.type)} along axis {axis} (one-dimensional lengths, axis 0)"
        )
    lengths = ctx.cast(lengths, _INT64)
    rows, segments = shape_of(data.type)[0], shape_of(lengths.type)[0]
    _check_lengths(ctx, lengths, rows)
    ends = b.cumsum(lengths, 0)
    # a mark at each segment's end (ends == rows land in the extra slot), summed up to each row
    marks = b.scatter(
        b.broadcast_to(ctx.constant(np.int64(0)), (_plus_one(rows),)), ends,
        b.broadcast_to(ctx.constant(np.int64(1)), (segments,)), axis=0, mode="add",
    )  # fmt: skip
    segment_of_row = b.slice(b.cumsum(marks, 0), [0], [rows], [0])
    spread = b.broadcast_to(b.reshape(segment_of_row, (rows, *[1] * (ctx.rank(data) - 1))), shape_of(data.type))
    mode, identity = _REDUCTIONS[reduce]
    empty = identity if initial is None else initial
    start = b.broadcast_to(ctx.constant(np.asarray(empty, dtype)), (segments, *shape_of(data.type)[1:]))
    total = b.scatter(start, spread, ctx.cast(data, dtype), axis=0, mode=mode)
    if reduce != "mean":
        return total
    count = b.reshape(ctx.cast(lengths, dtype), (segments, *[1] * (ctx.rank(data) - 1)))
    on_empty = ctx.constant(np.asarray(np.nan if initial is None else initial, dtype))
    return b.where(b.compare(count, ctx.constant(np.asarray(0, dtype)), "eq"), on_empty, b.div(total, count))


def _plus_one(rows):
    return rows + 1 if isinstance(rows, int) else f"{rows} + 1"


def _check_lengths(ctx: ImportContext, lengths: SSAValue, rows) -> None:
    """torch's requirement: lengths non-negative, summing to the rows."""
    owner = lengths.owner
    if isinstance(owner, ConstantOp) and isinstance(rows, int):
        values = owner.array()
        if (values < 0).any() or values.sum() != rows:
            raise ValueError(f"segment_reduce: lengths {values.tolist()} must be non-negative and sum to data.shape[0] = {rows}")
        return
    b = ctx.b
    zero = ctx.constant(np.int64(0))
    valid = b.bitwise_and(
        b.compare(b.reduce_sum(lengths, [0]), ctx.size_value(rows), "eq"),
        b.compare(b.reduce_min(lengths, [0]), zero, "ge"),
    )
    b.check(valid, "segment_reduce: lengths must be non-negative and sum to data.shape[0]")
