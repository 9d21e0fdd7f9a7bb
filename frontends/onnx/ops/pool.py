"""Pooling: MaxPool (with its Indices output), AveragePool, LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool. 2-d windows the graph's pooling ops take (pads at most half
the window; no dilation for averages) become them, a 1-d window the same op over a height
of 1; other windows are reduced over their taps (``windows.py``)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode
from ..registry import converter
from .windows import Window, stacked, taps, window, window_counts

_INT64 = np.dtype(np.int64)


def _lowest(ctx: OnnxContext, x: SSAValue) -> float:
    dtype = ctx.dtype(x)
    return -np.inf if ctx.is_float(x) else np.iinfo(dtype).min


def _as_2d(ctx: OnnxContext, x: SSAValue, w: Window) -> tuple[SSAValue, Window] | None:
    """A 1-d or 2-d window as a 2-d one (a 1-d input gets a height of 1), or None."""
    if len(w.kernel) == 2:
        return x, w
    if len(w.kernel) != 1:
        return None
    n, c, length = ctx.shape(x)
    flat = Window((1, *w.kernel), (1, *w.strides), (1, *w.dilations), (0, *w.begin), (0, *w.end), (1, *w.out), (0, *w.extra))
    return ctx.b.reshape(x, (n, c, 1, length)), flat


def _fits_graph_pool(w: Window) -> bool:
    """Whether the graph's pooling ops take this 2-d window: each pad at most half the window."""
    return all(b <= e // 2 and a <= e // 2 for b, a, e in zip(w.begin, w.end, w.effective))


def _ceil(ctx: OnnxContext, node: OnnxNode) -> bool:
    return bool(node.attr("ceil_mode", 0)) if node.version >= 10 else False


def _restore(ctx: OnnxContext, y: SSAValue, x: SSAValue) -> SSAValue:
    """A result computed as 2-d back to ``x``'s rank (the height of 1 of a 1-d window dropped)."""
    if ctx.rank(x) == 3:
        n, c, _, length = ctx.shape(y)
        return ctx.b.reshape(y, (n, c, length))
    return y


@converter("MaxPool")
def max_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue | tuple[SSAValue, SSAValue]:
    g, x = ctx.b, node.input(0)
    w = window(ctx, node, x, node.attr("kernel_shape"), _ceil(ctx, node))
    want_indices = node.n_outputs > 1 and node.used[1]
    as_2d = _as_2d(ctx, x, w)
    if not want_indices and as_2d is not None and _fits_graph_pool(as_2d[1]):
        x2, w2 = as_2d
        padding = (w2.begin[0], w2.begin[1], w2.end[0], w2.end[1])
        y = g.max_pool2d(x2, list(w2.kernel), list(w2.strides), padding, list(w2.dilations), _ceil(ctx, node))
        return _restore(ctx, y, x)
    windows = stacked(ctx, taps(ctx, x, w, _lowest(ctx, x)))
    values = g.reduce_max(windows, [ctx.rank(windows) - 1])
    if not want_indices:
        return values
    return values, _max_indices(ctx, node, x, w, windows)


def _max_indices(ctx: OnnxContext, node: OnnxNode, x: SSAValue, w: Window, windows: SSAValue) -> SSAValue:
    """MaxPool's Indices: the flat position in ``x`` of each window's (first) maximum,
    spatial axes row-major (``storage_order`` 0) or column-major (1)."""
    g = ctx.b
    tap = g.argmax(windows, ctx.rank(windows) - 1, False)  # (N, C, O1, ...): which kernel offset
    shape = ctx.shape(x)
    spatial = shape[2:]
    rank = len(spatial)
    offsets = np.array(list(np.ndindex(*w.kernel)), dtype=np.int64).reshape(-1, rank)
    order = list(range(rank)) if not node.attr("storage_order", 0) else list(reversed(range(rank)))
    flat = None
    for axis in order:
        step = ctx.constant(offsets[:, axis] * w.dilations[axis])
        starts = np.arange(w.out[axis], dtype=np.int64) * w.strides[axis] - w.begin[axis]
        along = [1] * rank
        along[axis] = w.out[axis]
        position = g.add(g.take(step, tap, 0), ctx.constant(starts.reshape(along)))
        flat = position if flat is None else g.add(g.mul(flat, ctx.scalar(spatial[axis], flat)), position)
    planes = g.add(
        g.mul(g.reshape(ctx.positions(shape[0]), (shape[0], 1, *[1] * rank)), ctx.scalar(shape[1], flat)),
        g.reshape(ctx.positions(shape[1]), (1, shape[1], *[1] * rank)),
    )
    return g.add(g.mul(planes, ctx.scalar(int(np.prod(spatial)), flat)), flat)


@converter("AveragePool")
def average_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    w = window(ctx, node, x, node.attr("kernel_shape"), _ceil(ctx, node))
    include_pad = bool(node.attr("count_include_pad", 0))
    as_2d = _as_2d(ctx, x, w)
    if as_2d is not None and _fits_graph_pool(as_2d[1]) and all(d == 1 for d in w.dilations):
        x2, w2 = as_2d
        padding = (w2.begin[0], w2.begin[1], w2.end[0], w2.end[1])
        y = g.avg_pool2d(x2, list(w2.kernel), list(w2.strides), padding, _ceil(ctx, node), include_pad)
        return _restore(ctx, y, x)
    windows = stacked(ctx, taps(ctx, x, w, 0))
    total = g.reduce_sum(windows, [ctx.rank(windows) - 1])
    counts = window_counts(w, ctx.shape(x)[2:], include_pad)
    return g.div(total, ctx.constant(counts.astype(ctx.dtype(x))))


def _lp(ctx: OnnxContext, x: SSAValue, p: int, axes: list[int], keepdims: bool = True) -> SSAValue:
    """``(sum |x|**p) ** (1/p)`` over ``axes``."""
    g = ctx.b
    if p == 1:
        return g.reduce_sum(g.abs(x), axes, keepdims)
    if p == 2:
        return g.sqrt(g.reduce_sum(g.mul(x, x), axes, keepdims))
    powered = g.reduce_sum(g.pow(g.abs(x), ctx.scalar(p, x)), axes, keepdims)
    return g.pow(powered, ctx.scalar(1.0 / p, x))


@converter("LpPool", since=2)
def lp_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    w = window(ctx, node, x, node.attr("kernel_shape"), _ceil(ctx, node) if node.version >= 18 else False)
    windows = stacked(ctx, taps(ctx, x, w, 0))
    return _lp(ctx, windows, int(node.attr("p", 2)), [ctx.rank(windows) - 1], False)


def _spatial_axes(ctx: OnnxContext, x: SSAValue) -> list[int]:
    return list(range(2, ctx.rank(x)))


@converter("GlobalAveragePool")
def global_average_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.reduce_mean(x, _spatial_axes(ctx, x), True)


@converter("GlobalMaxPool")
def global_max_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.b.reduce_max(x, _spatial_axes(ctx, x), True)


@converter("GlobalLpPool", since=2)
def global_lp_pool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return _lp(ctx, x, int(node.attr("p", 2)), _spatial_axes(ctx, x))
