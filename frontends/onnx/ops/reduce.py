"""Reductions (``Reduce*``, ``ArgMax``/``ArgMin``) and normalisations along an axis
(``Softmax``, ``LogSoftmax``, ``Hardmax``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of, num_elements
from ..context import OnnxContext, OnnxNode
from ..registry import converter

#: the schema version from which each op takes ``axes`` as an input instead of an attribute
_AXES_AS_INPUT = {"ReduceSum": 13}
_AXES_AS_INPUT_LATER = 18


def reduced_axes(ctx: OnnxContext, node: OnnxNode) -> list[int] | None:
    """The axes a ``Reduce*`` node reduces, normalised; None when it reduces nothing
    (empty axes with ``noop_with_empty_axes``)."""
    x = node.input(0)
    rank = ctx.rank(x)
    if node.version >= _AXES_AS_INPUT.get(node.op_type, _AXES_AS_INPUT_LATER):
        axes = ctx.need_const(node, 1, "axes").reshape(-1).tolist() if node.input(1) is not None else []
    else:
        axes = node.attr("axes", [])
    if not axes:
        return None if node.attr("noop_with_empty_axes", 0) else list(range(rank))
    return sorted(set(ctx.axes(axes, rank, node)))


def _reduced_shape(ctx: OnnxContext, x: SSAValue, axes: list[int], keepdims: bool) -> tuple:
    shape = ctx.shape(x)
    return tuple(1 if a in axes else d for a, d in enumerate(shape) if keepdims or a not in axes)


def _over_nothing(ctx: OnnxContext, x: SSAValue, axes: list[int]) -> bool:
    return any(ctx.shape(x)[a] == 0 for a in axes)


def _filled(ctx: OnnxContext, x: SSAValue, shape: tuple, value: float, dtype: np.dtype) -> SSAValue:
    if num_elements(shape) is not None:
        return ctx.constant(np.full(shape, value, dtype))
    return ctx.b.full(shape, np.asarray(value, dtype).item(), element_type_of(dtype), [x])


def _reduction(combine: Callable[[OnnxContext, SSAValue, list[int], bool], SSAValue], empty: Callable[[np.dtype], float]):
    """A ``Reduce*`` converter: ``combine(ctx, x, axes, keepdims)``; ``empty(dtype)`` is the
    value of a reduction over no elements."""

    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        x = node.input(0)
        axes = reduced_axes(ctx, node)
        if axes is None:
            return x
        keepdims = bool(node.attr("keepdims", 1))
        if _over_nothing(ctx, x, axes):
            return _filled(ctx, x, _reduced_shape(ctx, x, axes, keepdims), empty(ctx.dtype(x)), ctx.dtype(x))
        return combine(ctx, x, axes, keepdims)

    return convert


def _lowest(dtype: np.dtype) -> float:
    if dtype == np.bool_:
        return False
    return -np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> float:
    if dtype == np.bool_:
        return True
    return np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).max


def _in_float(ctx: OnnxContext, x: SSAValue, compute: Callable[[SSAValue], SSAValue]) -> SSAValue:
    """``compute`` on ``x``, integers computed in float64 and truncated back."""
    if ctx.is_float(x):
        return compute(x)
    return ctx.cast(compute(ctx.cast(x, np.float64)), ctx.dtype(x))


def _sum(ctx, x, axes, keepdims):
    return ctx.b.reduce_sum(x, axes, keepdims)


def _mean(ctx, x, axes, keepdims):
    return _in_float(ctx, x, lambda v: ctx.b.reduce_mean(v, axes, keepdims))


def _on_bytes(ctx: OnnxContext, x: SSAValue, reduce: Callable[[SSAValue], SSAValue]) -> SSAValue:
    """``reduce`` of a boolean tensor as bytes (the maximum of booleans is any, the minimum all)."""
    if ctx.dtype(x) != np.bool_:
        return reduce(x)
    return ctx.cast(reduce(ctx.cast(x, np.uint8)), np.bool_)


def _max(ctx, x, axes, keepdims):
    return _on_bytes(ctx, x, lambda v: ctx.b.reduce_max(v, axes, keepdims))


def _min(ctx, x, axes, keepdims):
    return _on_bytes(ctx, x, lambda v: ctx.b.reduce_min(v, axes, keepdims))


def _prod(ctx, x, axes, keepdims):
    return ctx.b.reduce_prod(x, axes, keepdims)


def _l1(ctx, x, axes, keepdims):
    return ctx.b.reduce_sum(ctx.b.abs(x), axes, keepdims)


def _sum_square(ctx, x, axes, keepdims):
    return ctx.b.reduce_sum(ctx.b.mul(x, x), axes, keepdims)


def _l2(ctx, x, axes, keepdims):
    return _in_float(ctx, x, lambda v: ctx.b.sqrt(_sum_square(ctx, v, axes, keepdims)))


def _log_sum(ctx, x, axes, keepdims):
    return _in_float(ctx, x, lambda v: ctx.b.log(ctx.b.reduce_sum(v, axes, keepdims)))


def _log_sum_exp(ctx, x, axes, keepdims):
    def compute(v: SSAValue) -> SSAValue:
        b = ctx.b
        peak = b.reduce_max(v, axes, True)
        # an all -inf (or +inf) slice: shift by 0 instead (exp(-inf - -inf) would be NaN)
        shift = b.where(b.compare(b.abs(peak), ctx.scalar(np.inf, v), "eq"), ctx.scalar(0, v), peak)
        total = b.reduce_sum(b.exp(b.sub(v, shift)), axes, keepdims)
        return b.add(b.log(total), shift if keepdims else b.reshape(shift, ctx.shape(total)))

    return _in_float(ctx, x, compute)


_REDUCTIONS = {
    "ReduceSum": (_sum, lambda d: 0),
    "ReduceMean": (_mean, lambda d: np.nan),
    "ReduceMax": (_max, _lowest),
    "ReduceMin": (_min, _highest),
    "ReduceProd": (_prod, lambda d: 1),
    "ReduceL1": (_l1, lambda d: 0),
    "ReduceL2": (_l2, lambda d: 0),
    "ReduceSumSquare": (_sum_square, lambda d: 0),
    "ReduceLogSum": (_log_sum, lambda d: -np.inf),
    "ReduceLogSumExp": (_log_sum_exp, lambda d: -np.inf),
}

for _op_type, (_combine, _empty) in _REDUCTIONS.items():
    converter(_op_type)(_reduction(_combine, _empty))


# ---------------------------------------------------------------------------
# ArgMax / ArgMin


def _arg_reduce(graph_op: str):
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        b, x = ctx.b, node.input(0)
        axis = ctx.axis(node.attr("axis", 0), ctx.rank(x), node)
        keepdims = bool(node.attr("keepdims", 1))
        if not node.attr("select_last_index", 0):
            return getattr(b, graph_op)(x, axis, keepdims)
        # the last extreme: the first one of the reversed axis, counted from the end
        size = ctx.shape(x)[axis]
        first = getattr(b, graph_op)(b.flip(x, [axis]), axis, keepdims)
        return b.sub(ctx.scalar(size - 1, first), first)

    return convert


converter("ArgMax")(_arg_reduce("argmax"))
converter("ArgMin")(_arg_reduce("argmin"))


# ---------------------------------------------------------------------------
# Softmax, LogSoftmax, Hardmax


def _along_axis(compute: Callable[[OnnxContext, SSAValue, int], SSAValue]):
    """From opset 13 these normalise along ``axis`` (default -1); before, over the input
    flattened to 2-d at ``axis`` (default 1), everything from ``axis`` on as one row."""

    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        x = node.input(0)
        rank = ctx.rank(x)
        if node.version >= 13:
            return compute(ctx, x, ctx.axis(node.attr("axis", -1), rank, node))
        axis = ctx.axis(node.attr("axis", 1), rank, node) if rank else 0
        shape = ctx.shape(x)
        if axis == rank - 1:
            return compute(ctx, x, axis)
        rows = ctx.b.reshape(x, (*shape[:axis], -1))
        return ctx.b.reshape(compute(ctx, rows, axis), shape)

    return convert


def _softmax(ctx: OnnxContext, x: SSAValue, axis: int) -> SSAValue:
    return ctx.b.softmax(x, axis)


def _log_softmax(ctx: OnnxContext, x: SSAValue, axis: int) -> SSAValue:
    return ctx.b.log_softmax(x, axis)


def _hardmax(ctx: OnnxContext, x: SSAValue, axis: int) -> SSAValue:
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    b = ctx.b
    first = b.argmax(x, axis, True)
    positions = ctx.positions(ctx.shape(x)[axis], x)
    shape = [1] * ctx.rank(x)
    shape[axis] = ctx.shape(x)[axis]
    hit = b.compare(b.reshape(positions, shape), first, "eq")
    return ctx.cast(hit, ctx.dtype(x))


converter("Softmax")(_along_axis(_softmax))
converter("LogSoftmax")(_along_axis(_log_softmax))
converter("Hardmax")(_along_axis(_hardmax))
