"""torch's indices of max pooling (``return_indices=True``, what ``max_unpool`` scatters by):
for each output, the flat index (``h * W + w``, or ``d * H * W + h * W + w``) of its
window's first maximum in scan order.

The gradient of max pooling (``max_pool2d/3d_with_indices_backward``) scatters each
output's gradient to the input element its index names.

Every window is described per spatial axis by its *taps*: for the k-th position of a
window, the input coordinate each output reads (-1 where the window has no k-th position
there: padding, ceil mode, a short adaptive bin). The index is the smallest flat
coordinate among the taps whose value equals the pooled maximum (NaN matching NaN, as
torch's pooled NaN points at the first NaN). One gather per tap, all fused into the
kernel computing the minimum.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from ....dialects.graph.types import format_shape, numpy_dtype, shape_of
from ....runtime import dim_arith
from ..context import ImportContext
from ..registry import converter
from .creation import filled

#: a per-axis list of taps: for each window position, the input coordinate of every output
Taps = list[np.ndarray]


def window_taps(size: int, out: int, kernel: int, stride: int, padding: int, dilation: int) -> Taps:
    """The taps of a sliding window (padding and ceil mode read nothing: -1)."""
    starts = np.arange(out) * stride - padding
    return [_inside(starts + k * dilation, size, size) for k in range(kernel)]


def adaptive_taps(size: int, out: int) -> Taps:
    """The taps of adaptive pooling: bin i is ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    starts = np.arange(out) * size // out
    ends = -(-(np.arange(out) + 1) * size // out)
    widest = int((ends - starts).max())
    return [_inside(starts + k, ends, size) for k in range(widest)]


def _inside(coordinates: np.ndarray, ends: np.ndarray | int, size: int) -> np.ndarray:
    return np.where((coordinates >= 0) & (coordinates < ends) & (coordinates < size), coordinates, -1)


def first_max_indices(ctx: ImportContext, x, values, rank: int, axis_taps: Callable[[int, int, int], Taps], what: str):
    """The int64 indices of ``values``, the max pooling of ``x`` over its trailing
    ``rank`` axes, as torch computes them; ``axis_taps(k, size, out)`` gives the taps of
    spatial axis ``k`` of ``size`` inputs and ``out`` outputs."""
    b = ctx.b
    spatial, outs = shape_of(x.type)[-rank:], shape_of(values.type)[-rank:]
    if not all(isinstance(d, int) for d in (*spatial, *outs)):
        raise NotImplementedError(f"{what} indices of a symbolic spatial size {format_shape(spatial)} are not supported")
    taps = [axis_taps(k, size, out) for k, (size, out) in enumerate(zip(spatial, outs))]
    axes = range(ctx.rank(x) - rank, ctx.rank(x))
    strides = [math.prod(spatial[a + 1 :]) for a in range(len(spatial))]
    outside = np.iinfo(np.int64).max
    is_nan = lambda v: b.compare(v, v, "ne")  # noqa: E731
    values_nan = is_nan(values)
    first = None
    for window in itertools.product(*taps):  # one coordinate array per axis
        tap = x
        for axis, coordinates in zip(axes, window):
            tap = b.take(tap, ctx.constant(np.maximum(coordinates, 0).astype(np.int64)), axis)
        grids = np.meshgrid(*window, indexing="ij")
        valid = np.logical_and.reduce([g >= 0 for g in grids])
        flat = np.where(valid, sum(g * s for g, s in zip(grids, strides)), outside).astype(np.int64)
        matches = b.bitwise_or(b.compare(tap, values, "eq"), b.bitwise_and(is_nan(tap), values_nan))
        candidate = b.where(matches, ctx.constant(flat), ctx.constant(np.int64(outside)))
        first = candidate if first is None else b.min(first, candidate)
    return first


def _max_pool_backward(ctx: ImportContext, grad, x, indices, rank: int):
    """The gradient of a ``rank``-d max pooling with respect to its input ``x``: each
    output's ``grad`` added at its index in its plane (outputs sharing an input are
    summed in output order, as torch's kernel adds them)."""
    b = ctx.b
    shape, out_shape = shape_of(x.type), shape_of(grad.type)
    lead = shape[:-rank]
    plane, outputs = dim_arith.product(shape[-rank:]), dim_arith.product(out_shape[-rank:])
    zeros = filled(ctx, (*lead, plane), 0, numpy_dtype(x.type.element_type), [x])
    flat_grad, flat_indices = b.reshape(grad, (*lead, outputs)), b.reshape(indices, (*lead, outputs))
    return b.reshape(b.scatter(zeros, flat_indices, flat_grad, axis=len(lead), mode="add"), shape)


@converter("aten.max_pool2d_with_indices_backward.default")
def max_pool2d_backward(ctx: ImportContext, node, grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    return _max_pool_backward(ctx, grad, x, indices, 2)


@converter("aten.max_pool3d_with_indices_backward.default")
def max_pool3d_backward(ctx: ImportContext, node, grad, x, kernel, stride, padding, dilation, ceil_mode, indices):
    return _max_pool_backward(ctx, grad, x, indices, 3)
