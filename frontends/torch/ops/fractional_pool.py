"""Fractional max pooling (``aten.fractional_max_pool2d/3d``, Graham 2014): windows of a
fixed size at pseudo-random starts, one sequence of starts per plane and spatial axis
drawn from the op's ``random_samples`` (``(N, C, rank)``, uniform in [0, 1): torch draws
them with ``torch.rand`` unless the caller passes ``_random_samples``).

Along an axis of ``n`` inputs, ``m`` outputs and windows of ``k``, with ``u`` the plane's
sample and ``alpha = (n - k) / (m - 1)``, output ``i < m - 1`` starts at
``int((i + u) * alpha) - int(u * alpha)`` and the last at ``n - k``: computed in the
samples' float type as ATen does, so the starts are torch's to the bit. The 2-d op takes
the width's sample first (``u[0]`` for W, ``u[1]`` for H), the 3-d one the depth's
(``u[0]`` T, ``u[1]`` H, ``u[2]`` W).

Each window position is one gather from the flattened plane; a running maximum over them
keeps torch's index rule (a larger value or any NaN replaces the best, so a window's
index is its first maximum, or its last NaN).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ....dialects.graph.types import format_shape, numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter
from .volumetric import batched

#: spatial axis -> the index of its sample in ``random_samples[n, c]``
SAMPLE_OF_AXIS = {2: (1, 0), 3: (0, 1, 2)}


def _starts(ctx: ImportContext, samples, sample: int, size: int, out: int, kernel: int, dtype: np.dtype):
    """The int64 window starts ``(N, C, out)`` along one axis (module docstring)."""
    b = ctx.b
    batch = shape_of(samples.type)[:2]
    last = ctx.constant(np.full((1, 1, 1), size - kernel, np.int64))
    last = b.broadcast_to(last, (*batch, 1))
    if out == 1:
        return last
    u = b.slice(samples, [sample], [sample + 1], [2], [1])  # (N, C, 1)
    alpha = ctx.constant(np.asarray(dtype.type(size - kernel) / dtype.type(out - 1), dtype))
    positions = ctx.constant(np.arange(out - 1, dtype=dtype).reshape(1, 1, -1))
    shifted = ctx.cast(b.mul(b.add(positions, u), alpha), np.dtype(np.int64))  # truncates, as C++
    offset = ctx.cast(b.mul(u, alpha), np.dtype(np.int64))
    return b.concat([b.sub(shifted, offset), last], axis=2)


def _fractional_max_pool(ctx: ImportContext, node, x, kernel, output_size, samples, rank: int):
    what = f"fractional_max_pool{rank}d"
    kernel, output_size = list(kernel) * (rank // len(kernel)), list(output_size) * (rank // len(output_size))

    def pool(x):
        b = ctx.b
        shape = shape_of(x.type)
        spatial = shape[2:]
        if not all(isinstance(d, int) for d in spatial):
            raise NotImplementedError(f"{what} of a symbolic spatial size {format_shape(spatial)} is not supported")
        for size, out, k in zip(spatial, output_size, kernel):
            if out + k - 1 > size:
                raise ValueError(f"{what}: output size {out} with windows of {k} needs an input of at least {out + k - 1}, got {size}")
        dtype = numpy_dtype(samples.type.element_type)
        strides = [math.prod(spatial[a + 1 :]) for a in range(rank)]
        # the flat index of each output's window start: sum over axes of start * stride
        origin = None
        for a, (size, out, k) in enumerate(zip(spatial, output_size, kernel)):
            starts = _starts(ctx, samples, SAMPLE_OF_AXIS[rank][a], size, out, k, dtype)
            along = [1] * rank
            along[a] = out
            starts = b.reshape(b.mul(starts, ctx.scalar(strides[a], starts)), (*shape[:2], *along))
            origin = starts if origin is None else b.add(origin, starts)
        origin = b.reshape(b.broadcast_to(origin, (*shape[:2], *output_size)), (*shape[:2], math.prod(output_size)))
        plane = b.reshape(x, (*shape[:2], math.prod(spatial)))
        best = best_index = None
        for taps in itertools.product(*(range(k) for k in kernel)):
            index = b.add(origin, ctx.scalar(sum(t * s for t, s in zip(taps, strides)), origin))
            value = b.gather(plane, index, 2)
            if best is None:
                best, best_index = value, index
                continue
            take = b.bitwise_or(b.compare(value, best, "gt"), b.compare(value, value, "ne"))
            best, best_index = b.where(take, value, best), b.where(take, index, best_index)
        out_shape = (*shape[:2], *output_size)
        return b.reshape(best, out_shape), b.reshape(best_index, out_shape)

    return batched(ctx, x, rank + 2, pool)  # (an unbatched input's samples are (1, C, rank))


@converter("aten.fractional_max_pool2d.default")
def fractional_max_pool2d(ctx: ImportContext, node, x, kernel, output_size, random_samples):
    return _fractional_max_pool(ctx, node, x, kernel, output_size, random_samples, 2)


@converter("aten.fractional_max_pool3d.default")
def fractional_max_pool3d(ctx: ImportContext, node, x, kernel, output_size, random_samples):
    return _fractional_max_pool(ctx, node, x, kernel, output_size, random_samples, 3)
