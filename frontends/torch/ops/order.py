"""Order statistics, binary search and counting: ``kthvalue``, ``median`` and
``nanmedian`` (lower median, as torch), ``mode``, ``bucketize`` and ``searchsorted``
(histograms: ``histograms.py``).

An order statistic is argsort's first k indices (a partial sort), of which the last is
the k-th smallest; its value is gathered. A search into a sequence that cannot hold NaN
(integers, a constant without NaN) counts the boundaries below each value (``right``:
at or below): with m boundaries that is m comparisons per value summed, which for the
short boundary lists models carry (bucketing distances, token ids) costs little. Any
other sequence is searched as torch searches it, step by step (``bit_length(m)``
halvings of every value's [start, end) range at once): a sorted float sequence holds
its NaNs at its end, where torch's binary search treats them as below every value
(``not (NaN >= v)``) and its answer depends on the path it takes, which is reproduced.

NaN as torch: argsort orders NaN after +inf (kthvalue, nanmedian follow); ``median``
is NaN (at the first NaN's position) where its row holds one; ``bucketize`` and
``searchsorted`` put a NaN value past every boundary (torch's binary search steps right
while ``not (boundary >= value)``, which holds for every boundary against NaN); ``mode``
counts NaNs as one value, larger than every number (torch.sort's order), and picks the
smallest of the most frequent values. (torch's own CPU ``mode`` on NaN inputs depends
on how its unstable sort meets NaN and is not reproducible in general: ``[nan, 1, 2, nan]``
gives NaN in both; ``[3, nan, nan, 3, nan]`` gives 3 in torch, NaN here; along dim 0 of
a matrix torch can even answer a value that occurs once.)
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph import ConstantOp
from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


def _drop_axis(ctx: ImportContext, x: SSAValue, dim: int) -> SSAValue:
    shape = shape_of(x.type)
    return ctx.b.reshape(x, shape[:dim] + shape[dim + 1 :])


def _order_statistic(ctx: ImportContext, x: SSAValue, rank: int, dim: int, keepdim: bool):
    """(values, indices) of the ``rank``-th smallest (from 0) along ``dim``."""
    b = ctx.b
    first = b.argsort(x, dim, descending=False, k=rank + 1)
    indices = b.slice(first, [rank], [rank + 1], [dim], [1])
    values = b.gather(x, indices, dim)
    if keepdim:
        return values, indices
    return _drop_axis(ctx, values, dim), _drop_axis(ctx, indices, dim)


def _first_nan(ctx: ImportContext, x: SSAValue, dim: int) -> tuple[SSAValue, SSAValue]:
    """(whether the row along ``dim`` holds a NaN, the first NaN's position), both keepdim."""
    b = ctx.b
    nan = b.compare(x, x, "ne")  # only NaN differs from itself
    position = b.argmax(ctx.cast(nan, np.dtype(np.int32)), dim, keepdims=True)
    return b.gather(nan, position, dim), position


def _nan_propagated(ctx: ImportContext, x: SSAValue, dim: int, values: SSAValue, indices: SSAValue, keepdim: bool):
    """torch's median: NaN, at the first NaN's position, where the row holds one."""
    b = ctx.b
    if not keepdim:
        values, indices = b.reshape(values, _kept(x, dim)), b.reshape(indices, _kept(x, dim))
    has_nan, position = _first_nan(ctx, x, dim)
    values = b.where(has_nan, b.gather(x, position, dim), values)
    indices = b.where(has_nan, position, indices)
    if keepdim:
        return values, indices
    return _drop_axis(ctx, values, dim), _drop_axis(ctx, indices, dim)


def _kept(x: SSAValue, dim: int) -> tuple:
    shape = list(shape_of(x.type))
    shape[dim] = 1
    return tuple(shape)


def _static_length(x: SSAValue, dim: int, what: str) -> int:
    n = shape_of(x.type)[dim]
    if not isinstance(n, int):
        raise NotImplementedError(f"{what} along a symbolic dim ({n}) is not supported (its length must be static)")
    return n


@converter("aten.kthvalue.default", scalars_as_vectors=True)
def kthvalue(ctx: ImportContext, node, x, k, dim=-1, keepdim=False):
    dim = dim % max(ctx.rank(x), 1)
    if not isinstance(k, int):
        raise NotImplementedError(f"kthvalue with a symbolic k ({k}) is not supported (k must be static)")
    n = _static_length(x, dim, "kthvalue")
    if not 1 <= k <= n:
        raise ValueError(f"kthvalue: k={k} is out of range for a dim of {n} elements")
    return _order_statistic(ctx, x, k - 1, dim, keepdim)


@converter("aten.median.dim", scalars_as_vectors=True)
def median_dim(ctx: ImportContext, node, x, dim=-1, keepdim=False):
    """torch's median of an even count is the lower of the two middle values; NaN where
    the row holds one."""
    dim = dim % max(ctx.rank(x), 1)
    values, indices = _order_statistic(ctx, x, (_static_length(x, dim, "median") - 1) // 2, dim, keepdim)
    if not _is_float(x):
        return values, indices
    return _nan_propagated(ctx, x, dim, values, indices, keepdim)


@converter("aten.median.default")
def median(ctx: ImportContext, node, x):
    count = int(np.prod([_static_length(x, d, "median") for d in range(ctx.rank(x))]))
    values, _ = median_dim(ctx, node, ctx.b.reshape(x, (count,)), 0, False)
    return values


def _is_float(x: SSAValue) -> bool:
    return numpy_dtype(x.type.element_type).kind in "fcV"  # V: bfloat16


@converter("aten.nanmedian.dim", scalars_as_vectors=True)
def nanmedian_dim(ctx: ImportContext, node, x, dim=-1, keepdim=False):
    """The lower median of the values that are not NaN (NaN where all are). argsort puts
    NaN last, so the median's rank is ``(count - 1) // 2`` of each row's own count of
    numbers: a full argsort, then a gather at that per-row rank."""
    b = ctx.b
    dim = dim % max(ctx.rank(x), 1)
    length = _static_length(x, dim, "nanmedian")
    order = b.argsort(x, dim, descending=False, k=length)
    numbers = ctx.cast(b.compare(x, x, "eq"), np.dtype(np.int64))  # NaN != NaN
    count = b.reduce_sum(numbers, [dim], keepdims=True)
    rank = b.max(b.div(b.sub(count, ctx.scalar(1, count)), ctx.scalar(2, count)), ctx.scalar(0, count))
    indices = b.gather(order, rank, dim)
    values = b.gather(x, indices, dim)
    if keepdim:
        return values, indices
    return _drop_axis(ctx, values, dim), _drop_axis(ctx, indices, dim)


@converter("aten.nanmedian.default")
def nanmedian(ctx: ImportContext, node, x):
    count = int(np.prod([_static_length(x, d, "nanmedian") for d in range(ctx.rank(x))]))
    values, _ = nanmedian_dim(ctx, node, ctx.b.reshape(x, (count,)), 0, False)
    return values


def _count_below(ctx: ImportContext, sequence: SSAValue, values: SSAValue, right: bool, out_int32: bool) -> SSAValue:
    """For each value, how many elements of ``sequence``'s last axis are below it (at or
    below with ``right``); ``sequence`` is 1-d, or holds one sorted row per row of
    ``values``. Counted as the length minus those not below (``>=``, ``>``), so that a
    NaN value, which compares false, lands past every element, as in torch."""
    b = ctx.b
    if ctx.rank(sequence) == 1:
        flags = b.compare(sequence, b.reshape(values, (*shape_of(values.type), 1)), "gt" if right else "ge")
    else:
        rows, columns = shape_of(sequence.type), shape_of(values.type)
        flags = b.compare(
            b.reshape(sequence, (*rows[:-1], 1, rows[-1])),
            b.reshape(values, (*columns, 1)),
            "gt" if right else "ge",
        )
    not_below = b.reduce_sum(ctx.cast(flags, np.dtype(np.int64)), [ctx.rank(flags) - 1], keepdims=False)
    length = shape_of(sequence.type)[-1]
    counts = b.sub(ctx.scalar(length, not_below), not_below)
    return ctx.cast(counts, np.dtype(np.int32 if out_int32 else np.int64))


def _binary_search(ctx: ImportContext, sequence: SSAValue, values: SSAValue, right: bool, out_int32: bool) -> SSAValue:
    """torch's binary search (``searchsorted``'s CPU and CUDA kernels), every value at
    once: ``mid = start + (end - start) / 2``; ``start = mid + 1`` while not
    ``sequence[mid] >= value`` (``>`` with ``right``), else ``end = mid``; the answer is
    ``start``. A static length m needs ``m.bit_length()`` steps. ``sequence`` as in
    :func:`_count_below`."""
    b = ctx.b
    length = int(shape_of(sequence.type)[-1])
    axis = ctx.rank(sequence) - 1
    start = b.mul(ctx.cast(b.compare(values, values, "ne"), np.dtype(np.int64)), 0)  # zeros of the values' shape
    end = b.add(start, length)
    for _ in range(length.bit_length()):
        mid = b.add(start, b.div(b.sub(end, start), 2))
        probe = b.gather(sequence, mid, axis) if axis > 0 else b.take(sequence, mid, 0)  # mid = m is clamped
        not_below = b.compare(probe, values, "gt" if right else "ge")
        searching = b.compare(start, end, "lt")
        start, end = (
            b.where(searching, b.where(not_below, start, b.add(mid, 1)), start),
            b.where(searching, b.where(not_below, mid, end), end),
        )
    return ctx.cast(start, np.dtype(np.int32 if out_int32 else np.int64))


def _may_hold_nan(sequence: SSAValue) -> bool:
    if not np.issubdtype(numpy_dtype(sequence.type.element_type), np.floating):
        return False
    owner = sequence.owner
    return not (isinstance(owner, ConstantOp) and not np.isnan(owner.array()).any())


def _search(ctx: ImportContext, sequence: SSAValue, values: SSAValue, right: bool, out_int32: bool) -> SSAValue:
    """Where each value goes in ``sequence`` (see the module docstring): counted where
    the sequence cannot hold NaN or its length is symbolic, else torch's search."""
    if not _may_hold_nan(sequence) or not isinstance(shape_of(sequence.type)[-1], int):
        return _count_below(ctx, sequence, values, right, out_int32)
    return _binary_search(ctx, sequence, values, right, out_int32)


@converter("aten.bucketize.Tensor")
def bucketize(ctx: ImportContext, node, x, boundaries, *, out_int32=False, right=False):
    if ctx.rank(boundaries) != 1:
        raise ValueError(f"bucketize: boundaries must be 1-d, got shape {shape_of(boundaries.type)}")
    return _search(ctx, boundaries, x, right, out_int32)


@converter("aten.searchsorted.Tensor")
def searchsorted(ctx: ImportContext, node, sorted_sequence, x, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:  # the sequence in sorted order
        sorted_sequence = ctx.b.gather(sorted_sequence, sorter, ctx.rank(sorted_sequence) - 1)
    if ctx.rank(sorted_sequence) > 1 and shape_of(sorted_sequence.type)[:-1] != shape_of(x.type)[:-1]:
        raise ValueError(
            f"searchsorted: the leading dims of the sequence {shape_of(sorted_sequence.type)} and of the "
            f"values {shape_of(x.type)} must match"
        )
    return _search(ctx, sorted_sequence, x, right or side == "right", out_int32)


@converter("aten.mode.default", scalars_as_vectors=True)
def mode(ctx: ImportContext, node, x, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of those tied, as torch) and the
    last position holding it. Sorted, each run of equal values has its length at its last
    element (its position minus the run's start, a running max of run starts, plus one);
    the first run end of the longest length is the mode. NaNs are one value, sorted last
    (see the module docstring)."""
    b = ctx.b
    dim = dim % ctx.rank(x)
    n = _static_length(x, dim, "mode")
    rank = ctx.rank(x)
    along = [1] * rank
    along[dim] = n
    position = ctx.constant(np.arange(n, dtype=np.int64).reshape(along))
    ordered = b.gather(x, b.argsort(x, dim, descending=False, k=n), dim)
    if n > 1:
        differs = _differs(ctx, b.slice(ordered, [1], [n], [dim], [1]), b.slice(ordered, [0], [n - 1], [dim], [1]))
        edge = b.broadcast_to(b.constant(np.asarray(True)), tuple(1 if d == dim else s for d, s in enumerate(shape_of(x.type))))
        starts_run = b.concat([edge, differs], axis=dim)
        ends_run = b.concat([differs, edge], axis=dim)
    else:
        starts_run = ends_run = b.broadcast_to(b.constant(np.asarray(True)), shape_of(x.type))
    # the running max of (start + 1) at starts, 0 elsewhere: unique, so its position is the run's start
    run_start = b.cumargmax(b.where(starts_run, b.add(position, ctx.scalar(1, position)), ctx.scalar(0, position)), dim)
    length = b.where(ends_run, b.add(b.sub(position, run_start), ctx.scalar(1, position)), ctx.scalar(0, position))
    longest = b.compare(length, b.reduce_max(length, [dim], keepdims=True), "eq")
    first = b.argmax(ctx.cast(longest, np.dtype(np.int32)), dim, keepdims=True)
    value = b.gather(ordered, first, dim)
    same = b.bitwise_xor(_differs(ctx, x, value), b.constant(np.asarray(True)))
    last = b.reduce_max(b.where(same, position, ctx.scalar(-1, position)), [dim], keepdims=True)
    if keepdim:
        return value, last
    return _drop_axis(ctx, value, dim), _drop_axis(ctx, last, dim)


def _differs(ctx: ImportContext, a: SSAValue, b_: SSAValue) -> SSAValue:
    """``a != b`` where NaN equals NaN (mode counts NaNs as one value)."""
    b = ctx.b
    differs = b.compare(a, b_, "ne")
    if not _is_float(a):
        return differs
    both_nan = b.bitwise_and(b.compare(a, a, "ne"), b.compare(b_, b_, "ne"))
    return b.bitwise_and(differs, b.bitwise_xor(both_nan, b.constant(np.asarray(True))))
