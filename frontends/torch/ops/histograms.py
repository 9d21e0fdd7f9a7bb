"""Histograms: ``histc``, ``histogram`` and ``histogramdd`` (counts, or sums of weights,
of the elements in each bin; ``density`` normalises by the total and the bin sizes).

``histc``'s bin is torch's division arithmetic; ``histogram`` and ``histogramdd`` find an
element's bin among the edges as torch does (the last edge at or below it, the last bin
closed). Equal bins go from the data's own minimum to its maximum unless a range is
given, widened by half a unit each way where those are equal (as torch). A
``histogramdd`` of ``D`` axes places each point in the flat bin of its ``D`` positions and
sums with one scatter; ``histogram`` (1-d) counts by comparing with every bin.
"""

from __future__ import annotations

import math

import numpy as np

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


@converter("aten.histc.default")
def histc(ctx: ImportContext, node, x, bins=100, min=0, max=0):
    """Counts of ``x``'s elements in ``bins`` equal bins over ``[min, max]`` (elements
    outside and NaN are not counted), in ``x``'s dtype. The bin is torch's arithmetic in
    ``x``'s dtype, ``trunc((x - min) * bins / (max - min))`` (``max`` itself in the last
    bin), not a comparison with the edges: an element just below an edge can round
    into the bin above, as in torch. ``min == max`` takes the data's own range (widened
    by one each way where that is a single value), as torch does."""
    b = ctx.b
    flat = b.reshape(x, (int(np.prod(shape_of(x.type))),)) if ctx.rank(x) != 1 else x
    low, high = ctx.scalar(min, flat), ctx.scalar(max, flat)
    if min == max:
        low, high = b.reduce_min(flat, [0], keepdims=False), b.reduce_max(flat, [0], keepdims=False)
        single = b.compare(low, high, "eq")
        one = ctx.scalar(1, flat)
        low, high = b.where(single, b.sub(low, one), low), b.where(single, b.add(high, one), high)
    scaled = b.div(b.mul(b.sub(flat, low), ctx.scalar(bins, flat)), b.sub(high, low))
    position = b.min(ctx.cast(b.trunc(scaled), np.dtype(np.int64)), ctx.constant(np.int64(bins - 1)))
    inside = b.bitwise_and(b.compare(flat, low, "ge"), b.compare(flat, high, "le"))  # (NaN: neither)
    position = b.where(inside, position, ctx.constant(np.int64(-1)))
    return ctx.cast(_bin_sums(ctx, position, bins, np.dtype(np.int64)), ctx.dtype(node))


def _bin_sums(ctx: ImportContext, position, bins: int, dtype: np.dtype, weight=None):
    """How many of the 1-d int64 ``position`` fall in each of ``bins`` bins (-1: none), or
    the sum of their ``weight``, in ``dtype``."""
    b = ctx.b
    (count,) = shape_of(position.type)
    hits = b.compare(b.reshape(position, (count, 1)), ctx.constant(np.arange(bins, dtype=np.int64)), "eq")
    hits = ctx.cast(hits, dtype)
    if weight is not None:
        hits = b.mul(hits, b.reshape(weight, (count, 1)))
    return b.reduce_sum(hits, [0], keepdims=False)


def _bin_positions(ctx: ImportContext, flat, edges):
    """The bin of each element of the 1-d ``flat`` between ``edges`` (int64): the last
    edge at or below it (torch's upper bound search), the last bin closed (``edges[-1]``
    in it); -1 outside and for NaN."""
    b = ctx.b
    (count,) = shape_of(flat.type)
    bins = shape_of(edges.type)[0] - 1
    below = b.reduce_sum(ctx.cast(b.compare(b.reshape(flat, (count, 1)), edges, "ge"), np.dtype(np.int64)), [1])
    position = b.min(b.sub(below, ctx.constant(np.int64(1))), ctx.constant(np.int64(bins - 1)))
    last = b.reshape(b.slice(edges, [bins], [bins + 1], [0], [1]), ())
    first = b.reshape(b.slice(edges, [0], [1], [0], [1]), ())
    inside = b.bitwise_and(b.compare(flat, first, "ge"), b.compare(flat, last, "le"))  # (NaN: neither)
    return b.where(inside, position, ctx.constant(np.int64(-1)))


def _widths(ctx: ImportContext, edges):
    bins = shape_of(edges.type)[0] - 1
    return ctx.b.sub(ctx.b.slice(edges, [1], [bins + 1], [0], [1]), ctx.b.slice(edges, [0], [bins], [0], [1]))


def _histogram(ctx: ImportContext, x, edges, weight, density: bool):
    """``(hist, edges)``: each element of ``x`` in its bin (``_bin_positions``), counted or
    summing ``weight``; ``density`` divides by the total and the bin widths, as
    torch.histogram."""
    b = ctx.b
    flat = b.reshape(x, (int(np.prod(shape_of(x.type))),))
    bins = shape_of(edges.type)[0] - 1
    hist = _bin_sums(ctx, _bin_positions(ctx, flat, edges), bins, numpy_dtype(x.type.element_type), weight)
    if density:
        hist = b.div(hist, b.mul(b.reduce_sum(hist, [0]), _widths(ctx, edges)))
    return hist, edges


def _linear_edges(ctx: ImportContext, low, high, bins: int, like):
    """``bins + 1`` edges from ``low`` to ``high`` (0-d), torch.linspace's arithmetic: the
    first half counted up from ``low``, the second down from ``high`` (both ends exact)."""
    b = ctx.b
    dtype = numpy_dtype(like.type.element_type)
    k = ctx.constant(np.arange(bins + 1, dtype=dtype))
    step = b.div(b.sub(high, low), ctx.scalar(bins, like))
    up = b.add(low, b.mul(step, k))
    down = b.sub(high, b.mul(step, ctx.constant(np.arange(bins, -1, -1).astype(dtype))))
    return b.where(ctx.constant(np.arange(bins + 1) < (bins + 1) / 2), up, down)


@converter("aten.histogram.bin_ct")
def histogram(ctx: ImportContext, node, x, bins=100, *, range=None, weight=None, density=False):
    """``bins`` equal bins over ``range`` (default: the data's own, widened by 0.5 each way
    where that is a single value, as torch)."""
    low, high = _outer_edges(ctx, ctx.b.reshape(x, (int(np.prod(shape_of(x.type))),)), range)
    return _histogram(ctx, x, _linear_edges(ctx, low, high, bins, x), weight, density)


@converter("aten.histogram.bins_tensor")
def histogram_with_edges(ctx: ImportContext, node, x, bins, *, weight=None, density=False):
    """Bins between the given (increasing) edges."""
    return _histogram(ctx, x, bins, weight, density)


def _outer_edges(ctx: ImportContext, flat, bounds):
    """The first and last edge (0-d) of equal bins over the 1-d ``flat``: ``bounds``
    (low, high) when given, else its minimum and maximum, half a unit apart each way
    where they are equal."""
    b = ctx.b
    if bounds is not None:
        return ctx.scalar(bounds[0], flat), ctx.scalar(bounds[1], flat)
    low, high = b.reduce_min(flat, [0]), b.reduce_max(flat, [0])
    single, half = b.compare(low, high, "eq"), ctx.scalar(0.5, flat)
    return b.where(single, b.sub(low, half), low), b.where(single, b.add(high, half), high)


def _points(ctx: ImportContext, x):
    """The ``(N, D)`` points of histogramdd's input ``(..., D)``, and their columns."""
    shape = shape_of(x.type)
    if not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"histogramdd of a symbolic shape {shape} is not supported")
    points = ctx.b.reshape(x, (math.prod(shape[:-1]), shape[-1]))
    count = shape_of(points.type)[0]
    return points, [ctx.b.reshape(ctx.b.slice(points, [d], [d + 1], [1], [1]), (count,)) for d in range(shape[-1])]


def _dd_edges(ctx: ImportContext, x, bins, bounds) -> list:
    """The edges of each axis of histogramdd with ``bins[d]`` equal bins (``bounds``: the
    flat ``[low0, high0, low1, high1, ...]`` or None)."""
    _, columns = _points(ctx, x)
    edges = []
    for d, (column, count) in enumerate(zip(columns, bins)):
        low, high = _outer_edges(ctx, column, None if bounds is None else bounds[2 * d : 2 * d + 2])
        edges.append(_linear_edges(ctx, low, high, count, x))
    return edges


def _histogramdd(ctx: ImportContext, x, edges: list, weight, density: bool):
    """The ``D``-d histogram of the points of ``x`` over the per-axis ``edges``."""
    b = ctx.b
    points, columns = _points(ctx, x)
    count = shape_of(points.type)[0]
    bins = [shape_of(e.type)[0] - 1 for e in edges]
    dtype = numpy_dtype(x.type.element_type)
    flat_bin = inside = None
    for d, (column, axis_edges) in enumerate(zip(columns, edges)):
        position = _bin_positions(ctx, column, axis_edges)
        here = b.compare(position, ctx.constant(np.int64(0)), "ge")
        term = b.mul(b.max(position, ctx.constant(np.int64(0))), ctx.constant(np.int64(math.prod(bins[d + 1 :]))))
        flat_bin = term if flat_bin is None else b.add(flat_bin, term)
        inside = here if inside is None else b.bitwise_and(inside, here)
    amounts = ctx.constant(np.ones(count, dtype)) if weight is None else b.reshape(weight, (count,))
    amounts = b.where(inside, amounts, ctx.constant(np.zeros((), dtype)))  # (outside: adds 0 to bin 0)
    hist = b.scatter(ctx.constant(np.zeros(math.prod(bins), dtype)), flat_bin, amounts, axis=0, mode="add")
    hist = b.reshape(hist, tuple(bins))
    if density:
        hist = b.div(hist, b.reduce_sum(hist, list(range(len(bins)))))
        for d, axis_edges in enumerate(edges):
            along = [1] * len(bins)
            along[d] = bins[d]
            hist = b.div(hist, b.reshape(_widths(ctx, axis_edges), tuple(along)))
    return hist


@converter("aten._histogramdd_bin_edges.default")
def histogramdd_bin_edges(ctx: ImportContext, node, x, bins, *, range=None, weight=None, density=False):
    return _dd_edges(ctx, x, bins, range)


@converter("aten._histogramdd_from_bin_cts.default")
def histogramdd_from_bin_cts(ctx: ImportContext, node, x, bins, *, range=None, weight=None, density=False):
    return _histogramdd(ctx, x, _dd_edges(ctx, x, bins, range), weight, density)


@converter("aten._histogramdd_from_bin_tensors.default")
def histogramdd_from_bin_tensors(ctx: ImportContext, node, x, bins, *, weight=None, density=False):
    """Bins between the given (increasing) edges of each axis."""
    return _histogramdd(ctx, x, list(bins), weight, density)
