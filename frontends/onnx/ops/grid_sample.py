"""GridSample (2-d and N-d): sample an (N, C, D1, ...) input at the grid's points, with
nearest, linear or cubic interpolation and zeros, border or reflection padding.

Interpolation is separable: along each spatial axis a point reads 1, 2 or 4 input
positions with their weights, computed from the grid by graph arithmetic; the input is
read by one gather per combination of taps (flat positions into the spatial axes), each
weighted by the product of its axes' weights (and 0 outside the input with zeros padding).
"""

from __future__ import annotations

from itertools import product as combinations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter

_INT64 = np.dtype(np.int64)
_MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic", "nearest": "nearest"}


def _reflect(ctx: OnnxContext, x: SSAValue, low: float, high: float) -> SSAValue:
    """``x`` reflected by the nearer border until inside ``[low, high]`` (ONNX's rule)."""
    g = ctx.b
    span = ctx.scalar(high - low, x)
    below = g.compare(x, ctx.scalar(low, x), "lt")
    distance = g.where(below, g.sub(ctx.scalar(low, x), x), g.sub(x, ctx.scalar(high, x)))
    turns = g.trunc(g.div(distance, span))
    rest = g.sub(distance, g.mul(turns, span))
    even = g.compare(g.fmod(turns, ctx.scalar(2, x)), ctx.scalar(0, x), "eq")
    from_low, from_high = g.add(ctx.scalar(low, x), rest), g.sub(ctx.scalar(high, x), rest)
    inside = g.bitwise_and(g.compare(x, ctx.scalar(low, x), "ge"), g.compare(x, ctx.scalar(high, x), "le"))
    reflected = g.where(below, g.where(even, from_low, from_high), g.where(even, from_high, from_low))
    return g.where(inside, x, reflected)


def _cubic_weights(ctx: OnnxContext, t: SSAValue) -> list[SSAValue]:
    """Keys' cubic convolution weights (a = -0.75) of the 4 taps around a fraction ``t``."""
    g = ctx.b
    a = -0.75

    def near(d: SSAValue) -> SSAValue:  # |d| <= 1
        return g.add(g.mul(g.mul(g.sub(g.mul(d, ctx.scalar(a + 2, d)), ctx.scalar(a + 3, d)), d), d), ctx.scalar(1, d))

    def far(d: SSAValue) -> SSAValue:  # 1 < |d| < 2
        inner = g.add(g.mul(g.sub(g.mul(d, ctx.scalar(a, d)), ctx.scalar(5 * a, d)), d), ctx.scalar(8 * a, d))
        return g.sub(g.mul(inner, d), ctx.scalar(4 * a, d))

    one, two = ctx.scalar(1, t), ctx.scalar(2, t)
    return [far(g.add(t, one)), near(t), near(g.sub(one, t)), far(g.sub(two, t))]


def _axis_taps(ctx: OnnxContext, coordinate: SSAValue, size: int, mode: str, padding: str, align_corners: bool):
    """For one spatial axis: [(position (int64), weight or None, inside or None)] per tap."""
    g = ctx.b
    if align_corners:
        x = g.mul(g.add(coordinate, ctx.scalar(1, coordinate)), ctx.scalar((size - 1) / 2, coordinate))
        low, high = 0.0, size - 1.0
    else:
        x = g.div(g.sub(g.mul(g.add(coordinate, ctx.scalar(1, coordinate)), ctx.scalar(size, coordinate)), ctx.scalar(1, coordinate)), ctx.scalar(2, coordinate))
        low, high = -0.5, size - 0.5
    return pixel_taps(ctx, x, size, mode, padding, low, high)


def pixel_taps(ctx: OnnxContext, x: SSAValue, size: int, mode: str, padding: str, low: float, high: float):
    """The taps of a point at pixel coordinate ``x`` (float) along an axis of ``size``:
    [(position (int64), weight or None, inside or None)]; ``low``/``high``: the borders
    reflection folds at."""
    g = ctx.b
    if mode == "nearest":
        x = g.round(x)
    outside = g.bitwise_or(g.compare(x, ctx.scalar(low, x), "lt"), g.compare(x, ctx.scalar(high, x), "gt"))
    if padding == "border":
        x = g.where(outside, g.min(g.max(x, ctx.scalar(0, x)), ctx.scalar(size - 1, x)), x)
    elif padding == "reflection":
        x = _reflect(ctx, x, low, high)
    if mode == "nearest":
        offsets, weights = [x], [None]
    else:
        base = g.floor(x)
        t = g.sub(x, base)
        if mode == "linear":
            offsets = [base, g.add(base, ctx.scalar(1, base))]
            weights = [g.sub(ctx.scalar(1, t), t), t]
        else:
            offsets = [g.add(base, ctx.scalar(k, base)) for k in (-1, 0, 1, 2)]
            weights = _cubic_weights(ctx, t)
    taps = []
    for position, weight in zip(offsets, weights):
        inside = None
        if padding == "zeros":
            inside = g.bitwise_and(g.compare(position, ctx.scalar(0, position), "ge"), g.compare(position, ctx.scalar(size - 1, position), "le"))
        elif padding == "border":
            position = g.min(g.max(position, ctx.scalar(0, position)), ctx.scalar(size - 1, position))
        else:
            position = g.trunc(_reflect(ctx, position, low, high))
        index = ctx.cast(g.min(g.max(position, ctx.scalar(0, position)), ctx.scalar(size - 1, position)), _INT64)
        taps.append((index, weight, inside))
    return taps


def interpolate(ctx: OnnxContext, flat_input: SSAValue, per_axis: list, spatial: list[int]) -> SSAValue:
    """The points (``per_axis``: each axis' taps, (N, 1, P) each) read from ``flat_input``
    (N, C, D1*D2*...): one gather per combination of taps, weighted, summed -> (N, C, P)."""
    g = ctx.b
    n, channels, _ = ctx.shape(flat_input)
    points = ctx.shape(per_axis[0][0][0])[-1]
    strides = [int(np.prod(spatial[a + 1 :], dtype=np.int64)) for a in range(len(spatial))]
    total = None
    for taps in combinations(*per_axis):
        flat, weight, inside = None, None, None
        for (index, w, ok), stride in zip(taps, strides):
            term = g.mul(index, ctx.scalar(stride, index)) if stride != 1 else index
            flat = term if flat is None else g.add(flat, term)
            if w is not None:
                weight = w if weight is None else g.mul(weight, w)
            if ok is not None:
                inside = ok if inside is None else g.bitwise_and(inside, ok)
        value = g.gather(flat_input, g.broadcast_to(flat, (n, channels, points)), 2)
        if weight is not None:
            value = g.mul(value, weight)
        if inside is not None:
            value = g.where(inside, value, ctx.scalar(0, value))
        total = value if total is None else g.add(total, value)
    return total


@converter("GridSample", since=16)
def grid_sample(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    x, grid = node.input(0), node.input(1)
    mode = _MODES.get(node.attr("mode", "bilinear" if node.version < 20 else "linear"))
    if mode is None:
        raise refuse(f"mode '{node.attr('mode')}'")
    padding = node.attr("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        raise refuse(f"padding_mode '{padding}'")
    align_corners = bool(node.attr("align_corners", 0))
    shape, grid_shape = ctx.shape(x), ctx.shape(grid)
    if not all(isinstance(d, int) for d in (*shape, *grid_shape)):
        raise refuse("symbolic shapes")
    n, channels, *spatial = shape
    out = grid_shape[1:-1]
    points = int(np.prod(out, dtype=np.int64))
    rank = len(spatial)
    grid = ctx.cast(grid, ctx.dtype(x)) if ctx.dtype(grid) != ctx.dtype(x) else grid
    per_axis = []
    for axis, size in enumerate(spatial):  # the grid's last component is the last spatial axis
        component = g.reshape(g.slice(grid, [rank - 1 - axis], [rank - axis], [len(grid_shape) - 1]), (n, 1, points))
        per_axis.append(_axis_taps(ctx, component, size, mode, padding, align_corners))
    flat_input = g.reshape(x, (n, channels, int(np.prod(spatial, dtype=np.int64))))
    total = interpolate(ctx, flat_input, per_axis, spatial)
    return g.reshape(total, (n, channels, *out))
