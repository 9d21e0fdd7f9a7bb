"""Resize (and the older Upsample): nearest, n-linear and cubic interpolation, every ONNX
coordinate transformation, antialiasing, ``exclude_outside``, ``tf_crop_and_resize``.

Interpolation is separable: each resized axis is done on its own. For an axis, every
output index reads ``n`` input indices with ``n`` coefficients (1 for nearest, 2 for
linear, 4 for cubic, more when antialiasing a downscale), which only depend on the sizes
and attributes: they are computed here, at import, in float64 as ONNX's reference does,
and the compiled code is ``n`` gathers along the axis and a weighted sum (a nearest
resize is one gather, exact for any element type).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter

_MODES = ("nearest", "linear", "cubic")
_TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")


def _nearest(rule: str) -> Callable[[np.ndarray, float], np.ndarray]:
    """Coefficients (left, right) of the two neighbours: 1 on the one nearest picks."""

    def coefficients(ratio: np.ndarray, scale: float) -> np.ndarray:
        if rule == "round_prefer_floor":
            right = ratio > 0.5
        elif rule == "round_prefer_ceil":
            right = ratio >= 0.5
        elif rule == "floor":
            right = np.zeros_like(ratio, dtype=bool)
        elif rule == "ceil":
            right = np.ones_like(ratio, dtype=bool)
        else:
            raise refuse(f"nearest_mode '{rule}'")
        right = right | (ratio == 1)  # an exact position: ratio 1 stands for the right neighbour itself
        return np.stack([~right, right], axis=1).astype(np.float64)

    return coefficients


def _linear(antialias: bool) -> Callable[[np.ndarray, float], np.ndarray]:
    def coefficients(ratio: np.ndarray, scale: float) -> np.ndarray:
        if not antialias or scale >= 1:
            return np.stack([1 - ratio, ratio], axis=1)
        start = int(np.floor(-1 / scale) + 1)
        taps = np.arange(start, 2 - start)
        weights = np.clip(1 - np.abs((taps[None, :] - ratio[:, None]) * scale), 0, 1)
        return weights / weights.sum(axis=1, keepdims=True)

    return coefficients


def _cubic(antialias: bool, a: float) -> Callable[[np.ndarray, float], np.ndarray]:
    def kernel(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x <= 1, near, np.where(x < 2, far, 0.0))

    def coefficients(ratio: np.ndarray, scale: float) -> np.ndarray:
        if not antialias or scale >= 1:
            return kernel(np.arange(-1, 3)[None, :] - ratio[:, None])
        start = int(np.floor(-2 / scale) + 1)
        taps = np.arange(start, 2 - start)
        weights = kernel((taps[None, :] - ratio[:, None]) * scale)
        return weights / weights.sum(axis=1, keepdims=True)

    return coefficients


def axis_taps(
    size: int, out: int, scale: float, transform: str, coefficients, roi: tuple[float, float], exclude_outside: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """For one axis: the input indices (out, n) each output index reads, their
    coefficients (out, n), and which outputs lie outside ``roi`` (tf_crop_and_resize)."""
    y = np.arange(out, dtype=np.float64)
    length = scale * size  # the output's "real" length
    outside = None
    if transform == "align_corners":
        x = np.zeros(out) if length == 1 else y * (size - 1) / (length - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_crop_and_resize":
        begin, end = roi
        x = np.full(out, (end - begin) * (size - 1) / 2) if length == 1 else y * (end - begin) * (size - 1) / (length - 1)
        x = x + begin * (size - 1)
        outside = (x < 0) | (x > size - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(out, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif transform == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / length)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise refuse(f"coordinate_transformation_mode '{transform}'")
    whole = np.floor(x)
    ratio = np.where(x == whole, 1.0, x - whole)  # the left neighbour is preferred: ratio in (0, 1]
    coeffs = coefficients(ratio, scale)
    n = coeffs.shape[1]
    # the n neighbours nearest x (ties to the smaller index), as ONNX's reference picks them
    half = int(np.ceil(n / 2))
    shifted = x + half
    floor = np.floor(shifted)
    frac = shifted - floor
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    indices = (floor.astype(np.int64) + offset)[:, None] + np.arange(n)[None, :] - half
    if exclude_outside:
        coeffs = np.where((indices < 0) | (indices >= size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    return np.clip(indices, 0, size - 1), coeffs, outside


def _resize_axis(ctx: OnnxContext, x: SSAValue, axis: int, indices: np.ndarray, coeffs: np.ndarray, outside, fill: float, nearest: bool) -> SSAValue:
    g = ctx.b
    rank = ctx.rank(x)
    if nearest:  # one neighbour has coefficient 1
        picked = indices[np.arange(len(indices)), coeffs.argmax(axis=1)]
        y = g.take(x, ctx.constant(picked), axis)
    else:
        wide = np.float64 if ctx.dtype(x) == np.float64 else np.float32
        source = ctx.cast(x, wide)
        shape = [1] * rank
        shape[axis] = len(indices)
        y = None
        for j in range(indices.shape[1]):
            term = g.mul(g.take(source, ctx.constant(indices[:, j]), axis), ctx.constant(coeffs[:, j].astype(wide).reshape(shape)))
            y = term if y is None else g.add(y, term)
        y = _back(ctx, y, ctx.dtype(x))
    if outside is not None and outside.any():
        shape = [1] * rank
        shape[axis] = len(outside)
        y = g.where(ctx.constant(outside.reshape(shape)), ctx.scalar(fill, y), y)
    return y


def _back(ctx: OnnxContext, y: SSAValue, dtype: np.dtype) -> SSAValue:
    """An interpolated value back to the input's type: integers rounded and saturated."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        g = ctx.b
        y = g.min(g.max(g.round(y), ctx.scalar(float(info.min), y)), ctx.scalar(float(info.max), y))
    return ctx.cast(y, dtype)


def _sizes_and_scales(ctx: OnnxContext, node: OnnxNode, shape: tuple, axes: list[int], scales, sizes) -> tuple[list[int], list[float]]:
    rank = len(shape)
    out = list(shape)
    factors = [1.0] * rank
    if sizes is not None:
        if len(sizes) != len(axes):
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): {len(sizes)} sizes for {len(axes)} axes")
        for a, s in zip(axes, sizes):
            if s == shape[a]:  # (a symbolic batch's own size)
                continue
            if isinstance(s, str) or isinstance(shape[a], str):
                raise refuse(f"resizing axis {a} of size {shape[a]} to {s}")
            out[a], factors[a] = int(s), int(s) / shape[a]
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            chosen = [factors[a] for a in axes]
            if policy == "not_larger":
                scale = min(chosen)
            elif policy == "not_smaller":
                scale = max(chosen)
            else:
                raise refuse(f"keep_aspect_ratio_policy '{policy}'")
            for a in axes:
                factors[a], out[a] = scale, int(scale * shape[a] + 0.5)
    elif scales is not None:
        if len(scales) != len(axes):
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): {len(scales)} scales for {len(axes)} axes")
        for a, s in zip(axes, scales):
            factors[a] = float(s)
            out[a] = shape[a] if float(s) == 1.0 else int(np.floor(float(s) * shape[a]))  # (a symbolic batch keeps its size)
    else:
        raise OnnxImportError(f"node '{node.name}' ({node.op_type}): neither scales nor sizes is given")
    return out, factors


def resize(ctx: OnnxContext, node: OnnxNode, x: SSAValue, scales, sizes, roi, attrs: dict) -> SSAValue:
    shape = ctx.shape(x)
    rank = len(shape)
    mode = attrs["mode"]
    if mode not in _MODES:
        raise refuse(f"mode '{mode}'")
    transform = attrs["coordinate_transformation_mode"]
    if transform not in _TRANSFORMS:
        raise refuse(f"coordinate_transformation_mode '{transform}'")
    axes = ctx.axes(attrs["axes"], rank, node) if attrs.get("axes") is not None else list(range(rank))
    out, factors = _sizes_and_scales(ctx, node, shape, axes, scales, sizes)
    resized = [a for a in axes if out[a] != shape[a] or not np.isclose(factors[a], 1.0)]
    if not all(isinstance(shape[a], int) for a in resized):
        raise refuse(f"resizing symbolic axes ({[shape[a] for a in resized]})")
    antialias = bool(attrs.get("antialias", 0))
    if mode == "nearest":
        if antialias:
            raise refuse("antialias with mode 'nearest'")
        coefficients = _nearest(attrs["nearest_mode"])
    elif mode == "linear":
        coefficients = _linear(antialias)
    else:
        coefficients = _cubic(antialias, attrs["cubic_coeff_a"])
    roi_pairs = {a: (0.0, 1.0) for a in range(rank)}
    if roi is not None and len(roi):
        n = len(roi) // 2
        for k, a in enumerate(axes if n == len(axes) else range(rank)):
            roi_pairs[a] = (float(roi[k]), float(roi[k + n]))
    for a in axes:
        unchanged = out[a] == shape[a] and np.isclose(factors[a], 1.0) and roi_pairs[a] == (0.0, 1.0)
        if unchanged:
            continue
        if out[a] == 0:
            raise refuse(f"an empty output along axis {a}")
        indices, coeffs, outside = axis_taps(shape[a], out[a], factors[a], transform, coefficients, roi_pairs[a], bool(attrs["exclude_outside"]))
        x = _resize_axis(ctx, x, a, indices, coeffs, outside, attrs["extrapolation_value"], mode == "nearest")
    return x


def _attrs(node: OnnxNode, transform_default: str, nearest_default: str) -> dict:
    return {
        "mode": node.attr("mode", "nearest"),
        "coordinate_transformation_mode": node.attr("coordinate_transformation_mode", transform_default),
        "nearest_mode": node.attr("nearest_mode", nearest_default),
        "cubic_coeff_a": node.attr("cubic_coeff_a", -0.75),
        "exclude_outside": node.attr("exclude_outside", 0),
        "extrapolation_value": node.attr("extrapolation_value", 0.0),
        "antialias": node.attr("antialias", 0),
        "axes": node.attr("axes"),
    }


def _optional_const(ctx: OnnxContext, node: OnnxNode, k: int, what: str) -> np.ndarray | None:
    """Input ``k``'s value, None when absent or empty (how ONNX leaves out roi or scales)."""
    value = node.input(k)
    if value is None or 0 in ctx.shape(value):
        return None
    return ctx.need_const(node, k, what).reshape(-1)


@converter("Resize", since=11)
def resize_11(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    roi = _optional_const(ctx, node, 1, "roi")
    scales = _optional_const(ctx, node, 2, "scales")
    sizes = ctx.need_dims(node, 3, "sizes") if node.input(3) is not None and 0 not in ctx.shape(node.input(3)) else None
    return resize(ctx, node, node.input(0), scales, sizes, roi, _attrs(node, "half_pixel", "round_prefer_floor"))


@converter("Resize", since=10)
def resize_10(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    scales = ctx.need_const(node, 1, "scales").reshape(-1)
    return resize(ctx, node, node.input(0), scales, None, None, _attrs(node, "asymmetric", "floor"))


@converter("Upsample", since=7)
def upsample(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    scales = node.attr("scales") if node.version < 9 else ctx.need_const(node, 1, "scales").reshape(-1)
    attrs = _attrs(node, "asymmetric", "floor")
    if attrs["mode"] == "bilinear":
        attrs["mode"] = "linear"
    return resize(ctx, node, node.input(0), scales, None, None, attrs)
