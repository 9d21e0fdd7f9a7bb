"""Antialiased resizing (``F.interpolate(..., antialias=True)``, torchvision's ``Resize``):
``_upsample_bilinear2d_aa`` and ``_upsample_bicubic2d_aa``.

Separable, one axis after the other. Output ``o`` of an axis is a normalised weighted sum
of the inputs within ``support`` of its centre ``scale * (o + 0.5)``; when shrinking, the
filter (triangle for bilinear, Keys' cubic with ``a = -0.5`` for bicubic) is stretched by
``scale`` so that every input contributes (torch's and PIL's algorithm). The weights
depend on the sizes only: they are computed here, and each axis becomes a sum over the
window's taps of ``take(x, tap) * weight``, fused into one kernel. Spatial sizes must be
static. Integer images (uint8) are resized in float32, each pass rounded to the nearest
whole value, where torch uses fixed-point weights: results can differ from torch's by one.
"""

from __future__ import annotations

import numpy as np

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


def _keys_cubic(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


#: mode -> (filter, filter radius in input pixels at scale 1)
FILTERS = {"bilinear": (_triangle, 1.0), "bicubic": (_keys_cubic, 2.0)}


def _scale(size: int, out: int, align_corners: bool, scale_factor: float | None) -> float:
    """Input pixels per output pixel (ATen's area_pixel_compute_scale)."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return size / out


def antialias_weights(size: int, out: int, mode: str, align_corners: bool, scale_factor: float | None):
    """(taps, weights): ``taps[o, k]`` the k-th input read by output ``o`` and
    ``weights[o, k]`` its normalised weight (0 past the window; the tap is then clamped)."""
    filter_fn, radius = FILTERS[mode]
    scale = _scale(size, out, align_corners, scale_factor)
    support = radius * scale if scale >= 1.0 else radius
    stretch = 1.0 / scale if scale >= 1.0 else 1.0
    centres = scale * (np.arange(out) + 0.5)
    first = np.maximum(np.trunc(centres - support + 0.5), 0).astype(np.int64)
    last = np.minimum(np.trunc(centres + support + 0.5).astype(np.int64), size)
    width = int(max((last - first).max(), 1))
    taps = first[:, None] + np.arange(width)[None, :]
    weights = filter_fn((taps - centres[:, None] + 0.5) * stretch)
    weights = np.where(taps < last[:, None], weights, 0.0)
    totals = weights.sum(axis=1, keepdims=True)
    weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals != 0)
    return np.minimum(taps, size - 1), weights


def _resize_axis(ctx: ImportContext, x, axis: int, out: int, mode: str, align_corners: bool, scale_factor):
    size = shape_of(x.type)[axis]
    taps, weights = antialias_weights(size, out, mode, align_corners, scale_factor)
    dtype = np.dtype(np.float64) if numpy_dtype(x.type.element_type) == np.float64 else np.dtype(np.float32)
    spread = [1] * ctx.rank(x)
    spread[axis] = out
    total = None
    for k in range(taps.shape[1]):
        tap = ctx.b.take(x, ctx.constant(taps[:, k]), axis)
        term = ctx.b.mul(tap, ctx.constant(weights[:, k].astype(dtype).reshape(spread)))
        total = term if total is None else ctx.b.add(total, term)
    return total


def _resize(ctx: ImportContext, node, x, mode: str, align_corners: bool, scales):
    spatial, out = shape_of(x.type)[2:], ctx.shape(node)[2:]
    if not all(isinstance(d, int) for d in (*spatial, *out)):
        raise NotImplementedError(f"antialiased {mode} resizing of symbolic spatial sizes {spatial} -> {out}")
    scales = list(scales or [None, None])
    integral = not np.issubdtype(ctx.dtype(node), np.floating)
    y = x
    for k in (1, 0):  # width first, as torch (and PIL) resize
        if spatial[k] != out[k] or align_corners:
            y = ctx.cast(y, np.dtype(np.float32)) if integral else y
            y = _resize_axis(ctx, y, 2 + k, out[k], mode, align_corners, scales[k])
            if integral:  # each pass stores whole values: the nearest, halves up (the cast saturates)
                y = ctx.cast(ctx.b.floor(ctx.b.add(y, ctx.scalar(0.5, y))), ctx.dtype(node))
    return y


@converter("aten._upsample_bilinear2d_aa.default")
def upsample_bilinear2d_aa(ctx: ImportContext, node, x, output_size, align_corners, scales_h=None, scales_w=None):
    return _resize(ctx, node, x, "bilinear", align_corners, [scales_h, scales_w])


@converter("aten._upsample_bicubic2d_aa.default")
def upsample_bicubic2d_aa(ctx: ImportContext, node, x, output_size, align_corners, scales_h=None, scales_w=None):
    return _resize(ctx, node, x, "bicubic", align_corners, [scales_h, scales_w])


@converter("aten._upsample_bilinear2d_aa.vec")
def upsample_bilinear2d_aa_vec(ctx: ImportContext, node, x, output_size, align_corners, scale_factors):
    return _resize(ctx, node, x, "bilinear", align_corners, scale_factors)


@converter("aten._upsample_bicubic2d_aa.vec")
def upsample_bicubic2d_aa_vec(ctx: ImportContext, node, x, output_size, align_corners, scale_factors):
    return _resize(ctx, node, x, "bicubic", align_corners, scale_factors)
