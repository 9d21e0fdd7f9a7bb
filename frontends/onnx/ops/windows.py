"""Sliding windows over the spatial axes of (N, C, D1, D2, ...) tensors, as ONNX defines them:
padding (explicit pads or ``auto_pad``), output sizes (floor or ceil mode), and a window
reduction written as its taps (one strided slice per kernel offset), for the windows the
2-d graph ops do not cover (1-d and 3-d, dilated average pools, pads over half the
kernel, MaxPool's indices, LpPool, LRN)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product as offsets

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse


@dataclass(frozen=True)
class Window:
    """One window geometry: per spatial axis its kernel, stride, dilation, begin and end
    padding, and output size (``extra``: end padding past the pads that ceil mode reads)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]
    extra: tuple[int, ...]

    @property
    def effective(self) -> tuple[int, ...]:
        return tuple(d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilations))


def window(ctx: OnnxContext, node: OnnxNode, x: SSAValue, kernel: list[int], ceil_mode: bool = False) -> Window:
    """The window a pooling or convolution node slides over ``x`` (ONNX's rules)."""
    spatial = ctx.shape(x)[2:]
    rank = len(spatial)
    if len(kernel) != rank:
        raise OnnxImportError(f"node '{node.name}' ({node.op_type}): kernel {kernel} for {rank} spatial axes")
    if not all(isinstance(d, int) for d in spatial):
        raise refuse(f"symbolic spatial dims {spatial}")
    strides = tuple(node.attr("strides", [1] * rank))
    dilations = tuple(node.attr("dilations", [1] * rank))
    effective = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-size // s) for size, s in zip(spatial, strides)]
        total = [max((o - 1) * s + e - size, 0) for o, s, e, size in zip(out, strides, effective, spatial)]
        small = [t // 2 for t in total]
        begin = [t - h for t, h in zip(total, small)] if auto_pad == "SAME_LOWER" else small
        end = [t - b for t, b in zip(total, begin)]
        ceil_mode = False
    elif auto_pad in ("NOTSET", "VALID"):
        pads = node.attr("pads", [0] * 2 * rank) if auto_pad == "NOTSET" else [0] * 2 * rank
        begin, end = list(pads[:rank]), list(pads[rank:])
        out = []
        for size, s, e, b, a in zip(spatial, strides, effective, begin, end):
            span = size + b + a - e
            if span < 0:
                raise OnnxImportError(f"node '{node.name}' ({node.op_type}): the window {e} is larger than the padded input {size + b + a}")
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (o - 1) * s >= size + b:  # the last window must start inside the input or the begin pad
                o -= 1
            out.append(o)
    else:
        raise refuse(f"auto_pad '{auto_pad}'")
    extra = [max((o - 1) * s + e - (size + b + a), 0) for o, s, e, size, b, a in zip(out, strides, effective, spatial, begin, end)]
    return Window(tuple(kernel), strides, dilations, tuple(begin), tuple(end), tuple(out), tuple(extra))


def taps(ctx: OnnxContext, x: SSAValue, w: Window, fill: float) -> list[SSAValue]:
    """The window's taps: for each kernel offset, the (N, C, O1, O2, ...) slice of the input
    padded with ``fill`` that offset reads in every window (row-major kernel order)."""
    g = ctx.b
    rank = len(w.kernel)
    low = [0, 0, *w.begin]
    high = [0, 0, *(e + x_ for e, x_ in zip(w.end, w.extra))]
    if any(low) or any(high):
        x = g.pad(x, low, high, np.asarray(fill).astype(ctx.dtype(x)).item())
    result = []
    for offset in offsets(*(range(k) for k in w.kernel)):
        starts = [o * d for o, d in zip(offset, w.dilations)]
        ends = [s + (n - 1) * st + 1 for s, n, st in zip(starts, w.out, w.strides)]
        result.append(g.slice(x, starts, ends, list(range(2, 2 + rank)), list(w.strides)))
    return result


def stacked(ctx: OnnxContext, values: list[SSAValue]) -> SSAValue:
    """The taps stacked on a new last axis (to reduce over it)."""
    g = ctx.b
    return g.concat([g.reshape(v, (*ctx.shape(v), 1)) for v in values], ctx.rank(values[0]))


def window_counts(w: Window, spatial: tuple[int, ...], include_pad: bool) -> np.ndarray:
    """How many elements each window averages, shape (O1, O2, ...): the input elements it
    covers, or with ``include_pad`` the input and pad elements (not ceil mode's extra)."""
    per_axis = []
    for size, k, s, d, b, e, o in zip(spatial, w.kernel, w.strides, w.dilations, w.begin, w.end, w.out):
        starts = np.arange(o)[:, None] * s - b + np.arange(k)[None, :] * d  # (O, K) input positions
        low, high = (-b, size + e) if include_pad else (0, size)
        per_axis.append(((starts >= low) & (starts < high)).sum(axis=1))
    counts = per_axis[0]
    for c in per_axis[1:]:
        counts = np.multiply.outer(counts, c)
    return counts
