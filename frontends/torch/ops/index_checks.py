"""Indices a model is given are checked as torch checks them.

The graph ops clamp an index outside its axis (the kernels never leave a buffer), where
torch raises an error. So every converter of a user-facing indexing op (embedding,
index_select, gather, scatter, ``x[idx]``...) checks its indices: one reduction over
them (``all(low <= idx < size)``), a ``graph.check`` that raises ``IndexError`` after
the call that computed it (``passes/checks_to_outputs.py``). A constant index is checked
on import. ``IndexCheckError`` is both an IndexError and a RuntimeError, which covers
the two torch raises (``index_select`` an IndexError, ``gather`` a RuntimeError).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.constant import ConstantOp
from ....dialects.graph.types import Dim, shape_of
from ....runtime import dim_arith
from ..context import ImportContext

_INT64 = np.dtype(np.int64)


def check_indices(ctx: ImportContext, index: SSAValue, size: Dim, what: str, *, from_end: bool = False) -> None:
    """Raise IndexError when an entry of ``index`` lies outside ``[0, size)`` --
    ``[-size, size)`` with ``from_end`` (advanced indexing: ``-1`` is the last) -- on
    import for a constant index, else at run time. ``what`` names the op and the
    indices in the message (``"embedding of 'input_ids'"``).

    Example: ``check_indices(ctx, ids, 30522, "embedding of 'input_ids'")``
    """
    if not ctx.check_indices:  # from_exported_program(check_indices=False)
        return
    shown = f"[{'-' + str(size) if from_end else 0}, {size})"
    message = f"{what}: an index is out of range {shown} (dim of size {size})"
    owner = index.owner
    if isinstance(owner, ConstantOp) and isinstance(size, int):
        values = owner.array().astype(np.int64)
        bad = values[(values < (-size if from_end else 0)) | (values >= size)]
        if bad.size:
            raise IndexError(f"{what}: index {int(bad.flat[0])} is out of range {shown} (dim of size {size})")
        return
    if dim_arith.product(shape_of(index.type)) == 0:
        return
    b = ctx.b
    index = ctx.cast(index, _INT64)
    length = ctx.size_value(size)
    lowest = b.neg(length) if from_end else ctx.scalar(0, index)
    b.check(all_true(ctx, ctx.within(index, lowest, length)), message, "IndexError")


def all_true(ctx: ImportContext, flags: SSAValue) -> SSAValue:
    """A 0-d ``i1``: whether every element of the boolean tensor ``flags`` is true (a
    check's predicate; true for no elements)."""
    if not ctx.rank(flags):
        return flags
    if 0 in shape_of(flags.type):  # (a reduction over no elements is refused)
        return ctx.constant(np.bool_(True))
    smallest = ctx.b.reduce_min(ctx.cast(flags, np.int8), list(range(ctx.rank(flags))))
    return ctx.b.compare(smallest, ctx.constant(np.int8(0)), "ne")


__all__ = ["all_true", "check_indices"]
