"""Ops of their own kind: Det, MaxUnpool, Col2Im, TensorScatter, and ``ai.onnx.ml``'s
Binarizer, ArrayFeatureExtractor and LabelEncoder (numeric keys)."""

from __future__ import annotations

from itertools import product as offsets

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .shape import product

_INT64 = np.dtype(np.int64)
_ML = "ai.onnx.ml"


@converter("Det", since=11)
def det(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """The product of the signed LU pivots (``graph.det_factors``)."""
    factors = ctx.b.det_factors(node.input(0))
    return ctx.b.reduce_prod(factors, [ctx.rank(factors) - 1])


@converter("MaxUnpool", since=9)
def max_unpool(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Each value written at its flat position (MaxPool's Indices) in a zero output."""
    g = ctx.b
    x, indices = node.input(0), node.input(1)
    n, c, *spatial = ctx.shape(x)
    kernel = node.attr("kernel_shape")
    rank = len(kernel)
    strides = node.attr("strides", [1] * rank)
    pads = node.attr("pads", [0] * 2 * rank)
    inferred = [(size - 1) * s + k - pads[a] - pads[a + rank] for a, (size, s, k) in enumerate(zip(spatial, strides, kernel))]
    if not all(isinstance(d, int) for d in (n, c, *spatial)):
        raise refuse("symbolic shapes")
    total = n * c * product(inferred)
    zeros = ctx.constant(np.zeros(total, ctx.dtype(x))) if total <= 1 << 16 else g.full((total,), 0, x.type.element_type)
    placed = g.scatter(zeros, ctx.cast(g.reshape(indices, (product(ctx.shape(indices)),)), _INT64), g.reshape(x, (product(ctx.shape(x)),)), 0)
    y = g.reshape(placed, (n, c, *inferred))
    if node.input(2) is None:
        return y
    # an output_shape: the unpooled image at its start, zeros after (ONNX's reference)
    out = [int(d) for d in ctx.need_const(node, 2, "output_shape").reshape(-1)][-rank:]
    return g.pad(y, [0] * (rank + 2), [0, 0, *(o - i for o, i in zip(out, inferred))], 0)


@converter("Col2Im", since=18)
def col2im(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Sum each block position's column values into the image: for every kernel offset, its
    (N, C, L1, L2, ...) values spread to their strided positions (zeros between) and added."""
    g = ctx.b
    x = node.input(0)
    image = [int(d) for d in ctx.need_const(node, 1, "image_shape").reshape(-1)]
    block = [int(d) for d in ctx.need_const(node, 2, "block_shape").reshape(-1)]
    rank = len(image)
    strides = node.attr("strides", [1] * rank)
    dilations = node.attr("dilations", [1] * rank)
    pads = node.attr("pads", [0] * 2 * rank)
    n, channels_blocks, count = ctx.shape(x)
    channels = channels_blocks // product(block)
    blocks = [(size + pads[a] + pads[a + rank] - d * (k - 1) - 1) // s + 1 for a, (size, k, s, d) in enumerate(zip(image, block, strides, dilations))]
    if product(blocks) != count:
        raise OnnxImportError(f"node '{node.name}' (Col2Im): {count} columns, but the image and block shapes give {blocks}")
    columns = g.reshape(x, (n, channels, product(block), *blocks))
    padded = [size + pads[a] + pads[a + rank] for a, size in enumerate(image)]
    total = None
    for k, offset in enumerate(offsets(*(range(b) for b in block))):
        values = g.reshape(g.slice(columns, [k], [k + 1], [2]), (n, channels, *blocks))
        for a in range(rank):  # value i goes to offset*d + i*s: interleave s - 1 zeros, then shift
            axis = 2 + a
            shape = ctx.shape(values)
            spread = g.reshape(values, (*shape[: axis + 1], 1, *shape[axis + 1 :]))
            low, high = [0] * (ctx.rank(spread)), [0] * (ctx.rank(spread))
            high[axis + 1] = strides[a] - 1
            spread = g.pad(spread, low, high, 0)
            length = shape[axis] * strides[a]
            spread = g.reshape(spread, (*shape[:axis], length, *shape[axis + 1 :]))
            start = offset[a] * dilations[a]
            low, high = [0] * ctx.rank(spread), [0] * ctx.rank(spread)
            low[axis], high[axis] = start, padded[a] - start - length
            values = g.pad(spread, low, high, 0)
        total = values if total is None else g.add(total, values)
    crop = [slice(pads[a], pads[a] + image[a]) for a in range(rank)]
    return g.slice(total, [c.start for c in crop], [c.stop for c in crop], list(range(2, 2 + rank)))


@converter("TensorScatter", since=24)
def tensor_scatter(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """The cache with ``update`` written along ``axis`` from each batch entry's write index
    (wrapping around with ``mode="circular"``)."""
    g = ctx.b
    cache, update, write = node.input(0), node.input(1), node.input(2)
    rank = ctx.rank(cache)
    axis = ctx.axis(node.attr("axis", -2), rank, node)
    size, length = ctx.shape(cache)[axis], ctx.shape(update)[axis]
    batch = ctx.shape(cache)[0]
    positions = g.reshape(ctx.positions(length), [length if a == axis else 1 for a in range(rank)])
    starts = g.reshape(ctx.cast(write, _INT64), [batch if a == 0 else 1 for a in range(rank)]) if write is not None else ctx.constant(np.zeros([1] * rank, np.int64))
    target = g.add(positions, starts)
    if node.attr("mode", "linear") == "circular":
        target = g.fmod(target, ctx.scalar(size, target))
    return g.scatter(cache, g.broadcast_to(target, ctx.shape(update)), update, axis)


@converter("Binarizer", domain=_ML)
def binarizer(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    return ctx.cast(ctx.b.compare(x, ctx.scalar(node.attr("threshold", 0.0), x), "gt"), ctx.dtype(x))


@converter("ArrayFeatureExtractor", domain=_ML)
def array_feature_extractor(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, indices = node.input(0), node.input(1)
    picked = ctx.b.take(x, ctx.b.reshape(indices, (product(ctx.shape(indices)),)), ctx.rank(x) - 1)
    return picked if ctx.rank(x) > 1 else ctx.b.reshape(picked, (1, *ctx.shape(picked)))


@converter("LabelEncoder", domain=_ML, since=2)
def label_encoder(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Numeric keys to numeric values by comparison with each key (the last repeated key wins)."""
    g, x = ctx.b, node.input(0)
    keys = _attr_values(node, "keys")
    values = _attr_values(node, "values")
    if keys is None or values is None:
        raise refuse("string keys or values (only numeric ones are supported)")
    default = _default(node, values.dtype)
    result = ctx.constant(np.asarray(default, values.dtype))
    result = g.broadcast_to(result, ctx.shape(x)) if ctx.shape(x) else result
    for key, value in zip(keys, values):
        nan = isinstance(key, float | np.floating) and np.isnan(key)  # (a NaN key matches NaN inputs)
        hit = g.compare(x, x, "ne") if nan else g.compare(x, ctx.scalar(key, x), "eq")
        result = g.where(hit, ctx.constant(np.asarray(value, values.dtype)), result)
    return result


def _attr_values(node: OnnxNode, kind: str) -> np.ndarray | None:
    for suffix, dtype in (("_int64s", np.int64), ("_floats", np.float32)):
        if node.has_attr(kind + suffix):
            return np.asarray(node.attr(kind + suffix), dtype)
    if node.has_attr(kind + "_tensor"):
        array = node.attr(kind + "_tensor")
        return None if array.dtype.kind in "OSU" else array
    return None


def _default(node: OnnxNode, dtype: np.dtype):
    if node.has_attr("default_tensor"):
        value = node.attr("default_tensor")
        return value.reshape(-1)[0] if value.dtype.kind not in "OSU" else 0
    if dtype.kind == "f":
        return node.attr("default_float", -0.0)
    return node.attr("default_int64", -1)
