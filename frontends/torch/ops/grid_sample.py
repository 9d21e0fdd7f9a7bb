"""``F.grid_sample`` (``aten.grid_sampler_2d`` and ``_3d``: spatial transformers, optical
flow, deformable attention, volumetric registration) composed from graph ops: the grid
unnormalised to pixel coordinates (torch's ``grid_sampler_compute_source_index``), then
each needed tap read with one ``graph.gather`` over the flattened image and weighted.

Bilinear (trilinear on volumes), nearest, and bicubic (2-d, as torch) interpolation;
zeros, border and reflection padding. The image's spatial sizes must be static.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ....dialects.graph.types import shape_of
from ..context import ImportContext
from ..registry import converter

#: torch's enum values of grid_sampler's arguments
INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADDING = {0: "zeros", 1: "border", 2: "reflection"}
#: torch's bicubic convolution coefficient
CUBIC_A = -0.75


class _Sampler:
    """One grid_sample: the image flattened over its spatial axes, the grid's coordinates
    per spatial axis (axis 0 is the outermost: depth or height), the padding."""

    def __init__(self, ctx: ImportContext, x, grid, padding: str, align_corners: bool):
        b = self.b = ctx.b
        self.ctx, self.padding, self.align_corners = ctx, padding, align_corners
        n, self.channels, *self.sizes = shape_of(x.type)
        if not all(isinstance(s, int) for s in self.sizes):
            raise NotImplementedError(f"grid_sample of an image with symbolic spatial sizes {tuple(self.sizes)}")
        self.n, *self.out, _ = shape_of(grid.type)
        self.flat = b.reshape(x, (n, self.channels, math.prod(self.sizes)))
        rank = len(self.sizes)  # grid channel 0 is x (the innermost axis)
        self.coordinates = [self._unnormalised(grid, rank - 1 - k, size) for k, size in enumerate(self.sizes)]

    def scalar(self, value: float, like):
        return self.ctx.scalar(value, like)

    def _unnormalised(self, grid, channel: int, size: int):
        b = self.b
        g = b.reshape(b.slice(grid, [channel], [channel + 1], [len(self.sizes) + 1], [1]), (self.n, *self.out))
        one = self.scalar(1.0, g)
        if self.align_corners:  # -1 and 1 are the centres of the corner pixels
            return b.mul(b.add(g, one), self.scalar((size - 1) / 2, g))
        # -1 and 1 are the outer edges of the corner pixels
        return b.div(b.sub(b.mul(b.add(g, one), self.scalar(float(size), g)), one), self.scalar(2.0, g))

    def padded(self, v, size: int):
        """Coordinate ``v`` moved inside by border or reflection padding (zeros: as is)."""
        b = self.b
        if self.padding == "reflection":
            low, high = (0.0, 2.0 * (size - 1)) if self.align_corners else (-1.0, 2.0 * size - 1)
            v = self._reflected(v, low, high)
        if self.padding in ("border", "reflection"):
            v = b.min(b.max(v, self.scalar(0.0, v)), self.scalar(float(size - 1), v))
        return v

    def _reflected(self, v, twice_low: float, twice_high: float):
        """torch's reflect_coordinates: ``v`` mirrored at ``low`` and ``high`` (halves) until inside."""
        b = self.b
        if twice_low == twice_high:
            return b.mul(v, self.scalar(0.0, v))
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        distance = b.abs(b.sub(v, self.scalar(low, v)))
        extra = b.fmod(distance, self.scalar(span, v))
        flips = b.floor(b.div(distance, self.scalar(span, v)))
        even = b.compare(b.fmod(flips, self.scalar(2.0, v)), self.scalar(0.0, v), "eq")
        return b.where(even, b.add(extra, self.scalar(low, v)), b.sub(self.scalar(span + low, v), extra))

    def position(self, v, axis: int):
        """Integer float coordinate ``v`` along spatial ``axis`` as (inside the image, its
        term of the flat index): shared by every tap reading that position."""
        b, size = self.b, self.sizes[axis]
        inside = b.bitwise_and(b.compare(v, self.scalar(0.0, v), "ge"), b.compare(v, self.scalar(float(size - 1), v), "le"))
        clamped = b.min(b.max(v, self.scalar(0.0, v)), self.scalar(float(size - 1), v))
        return inside, b.mul(clamped, self.scalar(float(math.prod(self.sizes[axis + 1 :])), v))

    def tap(self, positions):
        """Image values at ``positions`` (one per spatial axis, as ``position`` gives them),
        zero outside the image: (N, C, *out)."""
        b = self.b
        inside = _reduce(b.bitwise_and, [ok for ok, _ in positions])
        index = _reduce(b.add, [term for _, term in positions])
        count = math.prod(self.out)
        index = self.ctx.cast(b.reshape(index, (self.n, 1, count)), np.dtype(np.int64))
        index = b.broadcast_to(index, (self.n, self.channels, count))
        values = b.reshape(b.gather(self.flat, index, 2), (self.n, self.channels, *self.out))
        return b.where(b.reshape(inside, (self.n, 1, *self.out)), values, self.scalar(0.0, values))

    def weighted(self, value, weight):
        return self.b.mul(value, self.b.reshape(weight, (self.n, 1, *self.out)))


def _reduce(combine, values):
    total = values[0]
    for v in values[1:]:
        total = combine(total, v)
    return total


def _linear(s: _Sampler):
    """Bilinear/trilinear: the 2**rank corners around each (padded) coordinate."""
    b = s.b
    points = [s.padded(v, size) for v, size in zip(s.coordinates, s.sizes)]
    lows = [b.floor(p) for p in points]
    one = s.scalar(1.0, lows[0])
    fractions = [b.sub(p, lo) for p, lo in zip(points, lows)]
    # per axis: (position, weight) of the lower and the upper neighbour
    sides = [
        [(s.position(lo, k), b.sub(one, f)), (s.position(b.add(lo, one), k), f)]
        for k, (lo, f) in enumerate(zip(lows, fractions))
    ]
    terms = [
        s.weighted(s.tap([p for p, _ in corner]), _reduce(b.mul, [w for _, w in corner]))
        for corner in itertools.product(*sides)
    ]
    return _reduce(b.add, terms)


def _nearest(s: _Sampler):
    # torch rounds half to even (nearbyint)
    return s.tap([s.position(s.b.round(s.padded(v, size)), k) for k, (v, size) in enumerate(zip(s.coordinates, s.sizes))])


def _cubic_weights(b, s: _Sampler, t):
    """Keys' cubic convolution weights of the four taps at offsets -1, 0, 1, 2 (``A = -0.75``)."""
    a, one = CUBIC_A, s.scalar(1.0, t)

    def near(x):  # |x| <= 1
        return b.add(b.mul(b.mul(b.sub(b.mul(s.scalar(a + 2, x), x), s.scalar(a + 3, x)), x), x), one)

    def far(x):  # 1 < |x| < 2
        inner = b.add(b.mul(b.sub(b.mul(s.scalar(a, x), x), s.scalar(5 * a, x)), x), s.scalar(8 * a, x))
        return b.sub(b.mul(inner, x), s.scalar(4 * a, x))

    return [far(b.add(t, one)), near(t), near(b.sub(one, t)), far(b.sub(s.scalar(2.0, t), t))]


def _bicubic(s: _Sampler):
    """16 taps around each (unpadded) coordinate, each tap coordinate padded on its own (torch)."""
    b = s.b
    sides = []
    for k, (v, size) in enumerate(zip(s.coordinates, s.sizes)):
        f = b.floor(v)
        weights = _cubic_weights(b, s, b.sub(v, f))
        positions = [s.position(s.padded(b.add(f, s.scalar(float(o - 1), f)), size), k) for o in range(4)]
        sides.append(list(zip(positions, weights)))
    terms = [
        s.weighted(s.tap([p for p, _ in taps]), _reduce(b.mul, [w for _, w in taps]))
        for taps in itertools.product(*sides)
    ]
    return _reduce(b.add, terms)


INTERPOLATORS = {"bilinear": _linear, "nearest": _nearest, "bicubic": _bicubic}


def _grid_sample(ctx: ImportContext, node, x, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    interpolation, padding = INTERPOLATION[interpolation_mode], PADDING[padding_mode]
    if interpolation == "bicubic" and ctx.rank(x) != 4:
        raise NotImplementedError("grid_sample with mode='bicubic' on a volume (torch has it for 2-d images only)")
    grid = ctx.cast(grid, ctx.dtype(node))
    return INTERPOLATORS[interpolation](_Sampler(ctx, x, grid, padding, align_corners))


converter("aten.grid_sampler_2d.default", "aten.grid_sampler_3d.default")(_grid_sample)
