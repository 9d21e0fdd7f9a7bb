"""``F.grid_sample`` (``aten.grid_sampler_2d``: spatial transformers, optical flow, deformable
attention) composed from graph ops: the grid unnormalised to pixel coordinates, then each
needed corner read with one ``graph.gather`` over the flattened image and weighted.

Bilinear and nearest interpolation; zeros and border padding (reflection and bicubic are
refused by name). The image's height and width must be static.
"""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import shape_of
from ..context import ImportContext
from ..registry import converter

#: torch's enum values of grid_sampler_2d's arguments
INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _coordinate(ctx: ImportContext, grid, axis: int, size: int, align_corners: bool, padding: str):
    """Pixel coordinates along one image axis from grid channel ``axis`` (0: x, 1: y)."""
    b = ctx.b
    n, out_h, out_w, _ = shape_of(grid.type)
    g = b.reshape(b.slice(grid, [axis], [axis + 1], [3], [1]), (n, out_h, out_w))
    one = ctx.scalar(1.0, g)
    if align_corners:  # -1 and 1 are the centres of the corner pixels
        pixel = b.mul(b.add(g, one), ctx.scalar((size - 1) / 2, g))
    else:  # -1 and 1 are the outer edges of the corner pixels
        pixel = b.div(b.sub(b.mul(b.add(g, one), ctx.scalar(float(size), g)), one), ctx.scalar(2.0, g))
    if padding == "border":
        pixel = b.min(b.max(pixel, ctx.scalar(0.0, g)), ctx.scalar(float(size - 1), g))
    return pixel


def _corner(ctx: ImportContext, flat, xs, ys, height: int, width: int, channels: int):
    """The image values at integer float coordinates ``(xs, ys)`` (N, Ho, Wo), zero outside
    the image: (N, C, Ho, Wo)."""
    b = ctx.b
    n, out_h, out_w = shape_of(xs.type)
    inside = None
    for v, size in ((xs, width), (ys, height)):
        ok = b.where(
            b.compare(v, ctx.scalar(0.0, v), "ge"), b.compare(v, ctx.scalar(float(size - 1), v), "le"), ctx.b.constant(np.asarray(False))
        )
        inside = ok if inside is None else b.where(inside, ok, inside)
    col = b.min(b.max(xs, ctx.scalar(0.0, xs)), ctx.scalar(float(width - 1), xs))
    row = b.min(b.max(ys, ctx.scalar(0.0, ys)), ctx.scalar(float(height - 1), ys))
    index = ctx.cast(b.add(b.mul(row, ctx.scalar(float(width), row)), col), np.dtype(np.int64))
    index = b.broadcast_to(b.reshape(index, (n, 1, out_h * out_w)), (n, channels, out_h * out_w))
    values = b.reshape(b.gather(flat, index, 2), (n, channels, out_h, out_w))
    zero = ctx.scalar(0.0, values)
    return b.where(b.reshape(inside, (n, 1, out_h, out_w)), values, zero)


@converter("aten.grid_sampler_2d.default")
def grid_sampler_2d(ctx: ImportContext, node, x, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    interpolation, padding = INTERPOLATION[interpolation_mode], PADDING[padding_mode]
    if interpolation == "bicubic" or padding == "reflection":
        raise NotImplementedError(
            f"grid_sample with mode={interpolation!r}, padding_mode={padding!r} (supported: bilinear and "
            "nearest, zeros and border padding)"
        )
    b = ctx.b
    n, channels, height, width = shape_of(x.type)
    if not isinstance(height, int) or not isinstance(width, int):
        raise NotImplementedError(f"grid_sample of an image with symbolic height/width ({height}, {width})")
    grid = ctx.cast(grid, ctx.dtype(node))
    flat = b.reshape(x, (n, channels, height * width))
    px = _coordinate(ctx, grid, 0, width, align_corners, padding)
    py = _coordinate(ctx, grid, 1, height, align_corners, padding)
    if interpolation == "nearest":  # torch rounds half to even (nearbyint)
        return _corner(ctx, flat, b.round(px), b.round(py), height, width, channels)
    x0, y0 = b.floor(px), b.floor(py)
    one = ctx.scalar(1.0, x0)
    x1, y1 = b.add(x0, one), b.add(y0, one)
    wx1, wy1 = b.sub(px, x0), b.sub(py, y0)
    wx0, wy0 = b.sub(one, wx1), b.sub(one, wy1)
    out_h, out_w = shape_of(px.type)[1:]
    total = None
    for xs, ys, weight in ((x0, y0, b.mul(wx0, wy0)), (x1, y0, b.mul(wx1, wy0)), (x0, y1, b.mul(wx0, wy1)), (x1, y1, b.mul(wx1, wy1))):
        term = b.mul(_corner(ctx, flat, xs, ys, height, width, channels), b.reshape(weight, (n, 1, out_h, out_w)))
        total = term if total is None else b.add(total, term)
    return total
