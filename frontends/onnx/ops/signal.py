"""Signal processing: DFT (forward, inverse, one-sided) and STFT, as products with DFT
matrices (cosines and sines computed at import, in float64) along the transformed axis.
A complex tensor is ONNX's (..., 2) of real and imaginary parts."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .linalg import matmul


def _along(ctx: OnnxContext, x: SSAValue, axis: int, matrix: np.ndarray) -> SSAValue:
    """``x`` times ``matrix`` (n, k) along ``axis`` (its size n becomes k)."""
    g = ctx.b
    rank = ctx.rank(x)
    perm = [a for a in range(rank) if a != axis] + [axis]
    moved = g.transpose(x, perm) if axis != rank - 1 else x
    y = matmul(ctx, moved, ctx.constant(matrix.astype(ctx.dtype(x))))
    if axis == rank - 1:
        return y
    back = [perm.index(a) for a in range(rank)]
    return g.transpose(y, back)


def _fitted(ctx: OnnxContext, x: SSAValue, axis: int, length: int) -> SSAValue:
    """``x`` cut or zero-padded to ``length`` along ``axis``."""
    size = ctx.shape(x)[axis]
    if size == length:
        return x
    if size > length:
        return ctx.b.slice(x, [0], [length], [axis])
    low, high = [0] * ctx.rank(x), [0] * ctx.rank(x)
    high[axis] = length - size
    return ctx.b.pad(x, low, high, 0)


def dft(ctx: OnnxContext, x: SSAValue, axis: int, length: int | None, inverse: bool, onesided: bool) -> SSAValue:
    """ONNX's DFT of ``x`` (..., 1 or 2) along ``axis``; the result is (..., 2), or (..., 1)
    for an inverse one-sided transform (a real signal)."""
    g = ctx.b
    dtype = ctx.dtype(x)
    if dtype != np.float64:  # sums of many products: in float64, rounded once (as ONNX's reference)
        return ctx.cast(dft(ctx, ctx.cast(x, np.float64), axis, length, inverse, onesided), dtype)
    rank = ctx.rank(x)
    parts = ctx.shape(x)[-1]
    if parts not in (1, 2):
        raise OnnxImportError(f"the last axis holds {parts} values; it must be 1 (real) or 2 (real, imaginary)")
    size = ctx.shape(x)[axis]
    if not isinstance(size, int):
        raise refuse(f"a symbolic transformed axis ({size})")
    if length is None:
        length = 2 * (size - 1) if inverse and onesided else size
    real = g.reshape(g.slice(x, [0], [1], [rank - 1]), ctx.shape(x)[:-1])
    imag = g.reshape(g.slice(x, [1], [2], [rank - 1]), ctx.shape(x)[:-1]) if parts == 2 else None
    if inverse and onesided:  # (irfft) K bins -> a real signal of length L
        bins = length // 2 + 1
        real, imag = (_fitted(ctx, v, axis, bins) if v is not None else None for v in (real, imag))
        k, n = np.arange(bins)[:, None], np.arange(length)[None, :]
        weight = np.where((k == 0) | ((length % 2 == 0) & (k == length // 2)), 1.0, 2.0) / length
        angle = 2 * np.pi * k * n / length
        y = _along(ctx, real, axis, weight * np.cos(angle))
        if imag is not None:
            y = g.sub(y, _along(ctx, imag, axis, weight * np.sin(angle)))
        return g.reshape(y, (*ctx.shape(y), 1))
    real, imag = (_fitted(ctx, v, axis, length) if v is not None else None for v in (real, imag))
    out = length // 2 + 1 if onesided else length
    n, k = np.arange(length)[:, None], np.arange(out)[None, :]
    angle = 2 * np.pi * n * k / length
    cos, sin = np.cos(angle), np.sin(angle)
    sign = 1.0 if inverse else -1.0
    scale = 1.0 / length if inverse else 1.0
    # (a + ib)(cos + i sign sin) = (a cos - sign b sin) + i (sign a sin + b cos)
    y_real = _along(ctx, real, axis, scale * cos)
    y_imag = _along(ctx, real, axis, scale * sign * sin)
    if imag is not None:
        y_real = g.sub(y_real, _along(ctx, imag, axis, scale * sign * sin))
        y_imag = g.add(y_imag, _along(ctx, imag, axis, scale * cos))
    shape = (*ctx.shape(y_real), 1)
    return g.concat([g.reshape(y_real, shape), g.reshape(y_imag, shape)], rank - 1)


def _scalar(ctx: OnnxContext, node: OnnxNode, k: int, what: str) -> int | None:
    return None if node.input(k) is None else int(ctx.need_const(node, k, what).reshape(-1)[0])


@converter("DFT", since=17)
def dft_17(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    if node.version >= 20:
        axis = _scalar(ctx, node, 2, "axis")
        axis = -2 if axis is None else axis
    else:
        axis = node.attr("axis", 1)
    axis = ctx.axis(axis, ctx.rank(x), node)
    if axis == ctx.rank(x) - 1:
        raise OnnxImportError(f"node '{node.name}' (DFT): axis {axis} is the real/imaginary axis")
    return dft(ctx, x, axis, _scalar(ctx, node, 1, "dft_length"), bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0)))


@converter("STFT", since=17)
def stft(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    signal, window = node.input(0), node.input(2)
    step = _scalar(ctx, node, 1, "frame_step")
    length = _scalar(ctx, node, 3, "frame_length")
    if length is None:
        length = ctx.shape(window)[0] if window is not None else ctx.shape(signal)[1]
    total = ctx.shape(signal)[1]
    if not isinstance(total, int):
        raise refuse(f"a symbolic signal length ({total})")
    frames = (total - length) // step + 1
    if frames < 1:
        raise OnnxImportError(f"node '{node.name}' (STFT): frame_length {length} is longer than the signal ({total})")
    positions = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    framed = g.take(signal, ctx.constant(positions.astype(np.int64)), 1)  # (B, F, L, parts)
    if window is not None:
        framed = g.mul(framed, g.reshape(ctx.cast(window, ctx.dtype(signal)), (1, 1, length, 1)))
    onesided = bool(node.attr("onesided", 1)) and ctx.shape(signal)[-1] == 1
    return dft(ctx, framed, 2, length, False, onesided)


def mel_weight_matrix(bins: int, dft_length: int, sample_rate: int, low_hz: float, high_hz: float) -> np.ndarray:
    """(dft_length // 2 + 1, bins) triangular filters, as ONNX's reference computes them (the
    mel range split into ``bins + 2`` steps; edges as integer spectrogram bins)."""
    edges_mel = np.arange(bins + 2) * ((_mel(high_hz) - _mel(low_hz)) / (bins + 2)) + _mel(low_hz)
    edges = (((dft_length + 1) * (700 * np.expm1(edges_mel / 2595 * np.log(10)))) // sample_rate).astype(int)
    weights = np.zeros((dft_length // 2 + 1, bins))
    for i, (left, center, right) in enumerate(zip(edges, edges[1:], edges[2:])):
        if center == left:
            weights[center, i] = 1
        else:
            weights[left : center + 1, i] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            weights[center:right, i] = (right - np.arange(center, right)) / (right - center)
    return weights


def _mel(hertz: float) -> float:
    return 2595 * np.log1p(hertz / 700) / np.log(10)


@converter("MelWeightMatrix", since=17)
def mel_weight_matrix_17(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """A constant: every input must be known at import (constants, or bound graph inputs)."""
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    bins, length, rate, low, high = (ctx.need_const(node, k, name).reshape(()).item() for k, name in enumerate(names))
    if bins < 1 or length < 1 or rate <= 0 or not 0 <= low < high:
        raise OnnxImportError(f"node '{node.name}' (MelWeightMatrix): num_mel_bins {bins}, dft_length {length}, "
                              f"sample_rate {rate}, edges {low}..{high} Hz")  # fmt: skip
    if (int(length) + 1) * float(high) // int(rate) > int(length) // 2:
        raise OnnxImportError(f"node '{node.name}' (MelWeightMatrix): upper_edge_hertz {high} is above the Nyquist "
                              f"frequency of sample_rate {rate} (the filters would leave the {length // 2 + 1} bins)")  # fmt: skip
    weights = mel_weight_matrix(int(bins), int(length), int(rate), float(low), float(high))
    return ctx.constant(weights.astype(ctx.onnx_dtype(node.attr("output_datatype", 1), node, "output_datatype")))
