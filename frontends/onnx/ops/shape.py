"""Shape ops: Reshape, Flatten, (Un)Squeeze, Transpose, Concat, Split, Slice, Expand, Tile,
Shape, Size, Constant, ConstantOfShape, Pad, DepthToSpace, SpaceToDepth, Range, EyeLike,
Trilu, Dropout (inference)."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper
from xdsl.ir import SSAValue

from ....dialects.graph.types import Dim, broadcast_shapes, element_type_of, num_elements
from ....runtime import dim_arith
from ..context import FOLD_LIMIT, OnnxContext, OnnxImportError, OnnxNode, refuse
from ..held import held_type, to_held
from ..registry import converter

#: ONNX's "to the end" bounds (INT64_MAX, INT32_MAX) and beyond: the end of a symbolic axis
_HUGE = 2**31 - 1


def product(dims: list[Dim] | tuple[Dim, ...]) -> Dim:
    result: Dim = 1
    for d in dims:
        result = dim_arith.mul(result, d)
    return result


# ---------------------------------------------------------------------------
# reshapes


def reshape_target(ctx: OnnxContext, node: OnnxNode, x: SSAValue, target: list[int], allowzero: bool) -> list[Dim]:
    """ONNX's target shape with 0 (copy the input's dim, unless ``allowzero``) and -1 (infer) resolved."""
    shape = ctx.shape(x)
    dims: list[Dim] = []
    for k, d in enumerate(target):
        if isinstance(d, str):
            dims.append(d)
        elif d == 0 and not allowzero:
            if k >= len(shape):
                raise OnnxImportError(f"node '{node.name}' (Reshape): target dim {k} is 0 (copy) but the input has rank {len(shape)}")
            dims.append(shape[k])
        else:
            dims.append(int(d))
    if dims.count(-1) > 1:
        raise OnnxImportError(f"node '{node.name}' (Reshape): more than one -1 in the target shape {target}")
    if -1 in dims:
        known = product([d for d in dims if d != -1])
        total = product(shape)
        if isinstance(known, int) and isinstance(total, int):
            if known == 0 or total % known:
                raise OnnxImportError(f"node '{node.name}' (Reshape): cannot reshape {shape} to {target}")
            dims[dims.index(-1)] = total // known
        else:
            inferred = dim_arith.floordiv(total, known) if isinstance(known, int) else None
            if inferred is None or dim_arith.mul(inferred, known) != total:
                # let the graph op match the symbols (it infers one -1 itself)
                return dims
            dims[dims.index(-1)] = inferred
    return dims


@converter("Reshape", since=5)
def reshape(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    target = ctx.need_dims(node, 1, "shape")
    return ctx.b.reshape(x, reshape_target(ctx, node, x, target, bool(node.attr("allowzero", 0))))


@converter("Flatten")
def flatten(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    shape = ctx.shape(x)
    axis = node.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis  # (in [-rank, rank]: rank puts every dim in the first)
    if not 0 <= axis <= len(shape):
        raise OnnxImportError(f"node '{node.name}' (Flatten): axis {node.attr('axis')} is out of range for rank {len(shape)}")
    return ctx.b.reshape(x, (product(shape[:axis]), product(shape[axis:])))


def _axes_of(ctx: OnnxContext, node: OnnxNode, since_input: int = 13) -> list[int] | None:
    if node.version >= since_input:
        return ctx.need_const(node, 1, "axes").reshape(-1).tolist() if node.input(1) is not None else None
    return node.attr("axes")


@converter("Squeeze")
def squeeze(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    shape = ctx.shape(x)
    axes = _axes_of(ctx, node)
    if axes is None:
        axes = [a for a, d in enumerate(shape) if d == 1]
    axes = ctx.axes(axes, len(shape), node)
    for a in axes:
        if shape[a] != 1:
            raise OnnxImportError(f"node '{node.name}' (Squeeze): axis {a} has size {shape[a]}, not 1")
    return ctx.b.reshape(x, [d for a, d in enumerate(shape) if a not in axes])


@converter("Unsqueeze")
def unsqueeze(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    shape = list(ctx.shape(x))
    axes = _axes_of(ctx, node)
    if not axes:
        raise OnnxImportError(f"node '{node.name}' (Unsqueeze): no axes given")
    rank = len(shape) + len(axes)
    axes = sorted(ctx.axes(axes, rank, node))
    for a in axes:
        shape.insert(a, 1)
    return ctx.b.reshape(x, shape)


@converter("Transpose")
def transpose(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    perm = node.attr("perm")
    return ctx.b.transpose(x, list(reversed(range(ctx.rank(x)))) if perm is None else perm)


@converter("Concat", since=4)
def concat(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    values = [v for v in node.inputs() if v is not None]
    axis = ctx.axis(node.attr("axis"), ctx.rank(values[0]), node)
    nonempty = [v for v in values if ctx.shape(v)[axis] != 0]
    if len(nonempty) == 1:
        return nonempty[0]
    return ctx.b.concat(nonempty or values[:1], axis)


def split(ctx: OnnxContext, node: OnnxNode, sizes: list[int] | None) -> tuple[SSAValue, ...]:
    """``Split`` into ``sizes`` along ``axis``; equal parts when None (the last smaller with
    opset 18's ``num_outputs``)."""
    x = node.input(0)
    shape = ctx.shape(x)
    axis = ctx.axis(node.attr("axis", 0), len(shape), node)
    size = shape[axis]
    if sizes is None:
        if not isinstance(size, int):
            raise refuse(f"splitting the symbolic axis {axis} ({size}) into equal parts")
        parts = node.attr("num_outputs", node.n_outputs)
        step = -(-size // parts)
        if node.version < 18 and size % parts:
            raise OnnxImportError(f"node '{node.name}' (Split): axis {axis} of size {size} does not split into {parts} equal parts")
        sizes = [min(step, size - k * step) for k in range(parts)]
    if isinstance(size, int) and sum(sizes) != size:
        raise OnnxImportError(f"node '{node.name}' (Split): parts {sizes} do not add up to axis {axis}'s size {size}")
    results, start = [], 0
    for part in sizes:
        results.append(ctx.b.slice(x, [start], [start + part], [axis]))
        start += part
    return tuple(results)


@converter("Split", since=2)
def split_by_attribute(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    return split(ctx, node, node.attr("split"))


@converter("Split", since=13)
def split_by_input(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    sizes = ctx.need_const(node, 1, "split").reshape(-1).tolist() if node.input(1) is not None else None
    return split(ctx, node, sizes)


def _slice_bounds(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


@converter("Slice")
def slice_(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    shape = ctx.shape(x)
    if node.version >= 10:
        starts = _slice_bounds(ctx.need_const(node, 1, "starts"))
        ends = _slice_bounds(ctx.need_const(node, 2, "ends"))
        axes = _slice_bounds(ctx.need_const(node, 3, "axes")) if node.input(3) is not None else None
        steps = _slice_bounds(ctx.need_const(node, 4, "steps")) if node.input(4) is not None else None
    else:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    axes = ctx.axes(axes if axes is not None else range(len(starts)), len(shape), node)
    steps = steps or [1] * len(starts)
    return slice_axes(ctx, node, x, starts, ends, axes, steps)


def slice_axes(ctx: OnnxContext, node: OnnxNode, x: SSAValue, starts, ends, axes, steps) -> SSAValue:
    """ONNX's slice on ``axes`` (negative steps walk backwards: the flipped axis sliced forward)."""
    shape = ctx.shape(x)
    forward: tuple[list, list, list, list] = ([], [], [], [])
    flips = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = shape[axis]
        if step == 0:
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): step 0 on axis {axis}")
        if step > 0:
            bounds = (start, end) if isinstance(dim, int) else tuple(None if abs(v) >= _HUGE else v for v in (start, end))
            for lst, v in zip(forward, (*bounds, axis, step)):
                lst.append(v)
            continue
        if not isinstance(dim, int):
            raise refuse(f"a negative step on the symbolic axis {axis} ({dim})")
        first, last, _ = slice(start, end, step).indices(dim)  # clamped as ONNX clamps
        count = max(0, -(-(first - last) // -step))
        flipped = dim - 1 - first  # in the reversed axis
        flips.append(axis)
        for lst, v in zip(forward, (flipped, flipped + (count - 1) * -step + 1 if count else flipped, axis, -step)):
            lst.append(v)
    if flips:
        x = ctx.b.flip(x, flips)
    if not forward[0]:
        return x
    return ctx.b.slice(x, *forward)


@converter("Expand", since=8)
def expand(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    target = tuple(ctx.need_dims(node, 1, "shape"))
    shape = broadcast_shapes(ctx.shape(x), target)
    if shape == ctx.shape(x):
        return x
    return ctx.b.broadcast_to(x, shape)


@converter("Tile", since=6)
def tile(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    repeats = [int(r) for r in ctx.need_const(node, 1, "repeats").reshape(-1)]
    shape = ctx.shape(x)
    if len(repeats) != len(shape):
        raise OnnxImportError(f"node '{node.name}' (Tile): {len(repeats)} repeats for a rank-{len(shape)} input")
    if all(r == 1 for r in repeats):
        return x
    # (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0*d0, r1*d1)
    spread = [v for d in shape for v in (1, d)]
    stretched = [v for r, d in zip(repeats, shape) for v in (r, d)]
    tiled = b.broadcast_to(b.reshape(x, spread), stretched)
    return b.reshape(tiled, [dim_arith.mul(r, d) for r, d in zip(repeats, shape)])


# ---------------------------------------------------------------------------
# shapes as values


@converter("Shape")
def shape_(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    dims = list(ctx.shape(node.input(0)))
    rank = len(dims)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start, end = (max(0, min(rank, v + rank if v < 0 else v)) for v in (start, end))
    return ctx.dims_value(dims[start:end])


@converter("Size")
def size(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    return ctx.dims_value([product(ctx.shape(node.input(0)))], scalar=True)


def _tensor_attr(ctx: OnnxContext, node: OnnxNode, name: str):
    """A tensor attribute's value (one of a held type as its holding values) and its held type."""
    proto = node.proto.attribute[node.attr_names().index(name)].t
    held = held_type(proto.data_type)
    if held is None:
        ctx.onnx_dtype(proto.data_type, node, name)  # (refuses an unsupported type by name)
        return node.attr(name), None
    return to_held(node.attr(name), held, name), held


@converter("Constant")
def constant(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64), ("value_ints", np.int64)):
        if node.has_attr(name):
            return ctx.constant(np.asarray(node.attr(name), dtype=dtype))
    if node.has_attr("value"):
        array, held = _tensor_attr(ctx, node, "value")
        value = ctx.constant(array)
        if held is not None:
            ctx.held[value] = held
        return value
    if node.has_attr("sparse_value"):
        sparse = node.proto.attribute[node.attr_names().index("sparse_value")].sparse_tensor
        values = numpy_helper.to_array(sparse.values)
        indices = numpy_helper.to_array(sparse.indices)
        dense = np.zeros(int(np.prod(sparse.dims)), values.dtype)
        flat = indices if indices.ndim == 1 else np.ravel_multi_index(indices.T, tuple(sparse.dims))
        dense[flat] = values
        return ctx.constant(dense.reshape(tuple(sparse.dims)))
    names = node.attr_names()
    raise refuse(f"a constant given by {names[0] if names else 'no attribute'} (strings are not supported)")


@converter("ConstantOfShape", since=9)
def constant_of_shape(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    shape = tuple(ctx.need_dims(node, 0, "shape"))
    value, held = _tensor_attr(ctx, node, "value") if node.has_attr("value") else (np.zeros(1, np.float32), None)
    fill = value.reshape(-1)[0]
    n = num_elements(shape)
    if n is not None and n <= FOLD_LIMIT:
        result = ctx.constant(np.full(shape, fill, value.dtype))
    else:
        sources = ctx.dim_sources(shape) if n is None else []
        result = ctx.b.full(shape, fill.item(), element_type_of(value.dtype), sources)
    if held is not None:
        ctx.held[result] = held
    return result


@converter("Range", since=11)
def range_(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    start, limit, delta = (ctx.need_const(node, k, what).reshape(()) for k, what in enumerate(("start", "limit", "delta")))
    dtype = ctx.dtype(node.input(0))
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return ctx.constant((start + np.arange(count) * delta).astype(dtype))


@converter("EyeLike", since=9)
def eye_like(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    rows, columns = ctx.shape(x)
    if not isinstance(rows, int) or not isinstance(columns, int):
        raise refuse("a symbolic shape")
    dtype = ctx.onnx_dtype(node.attr("dtype"), node, "dtype") if node.has_attr("dtype") else ctx.dtype(x)
    return ctx.constant(np.eye(rows, columns, node.attr("k", 0), dtype=dtype))


@converter("Trilu", since=14)
def trilu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    k = int(ctx.need_const(node, 1, "k").reshape(())) if node.input(1) is not None else 0
    rows, columns = ctx.shape(x)[-2:]
    if not isinstance(rows, int) or not isinstance(columns, int):
        raise refuse("symbolic matrix dims")
    ones = np.ones((rows, columns), np.bool_)
    keep = np.triu(ones, k) if node.attr("upper", 1) else np.tril(ones, k)
    return ctx.b.where(ctx.constant(keep), x, ctx.scalar(0, x))


@converter("Dropout")
def dropout(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, SSAValue | None]:
    x = node.input(0)
    if node.version >= 12 and node.input(2) is not None and bool(ctx.need_const(node, 2, "training_mode").reshape(())):
        # training: identity only when nothing is dropped (ratio 0); else masks are random draws
        ratio = 0.5 if node.input(1) is None else float(ctx.need_const(node, 1, "ratio").reshape(()))
        if ratio != 0:
            raise refuse(f"training_mode with ratio {ratio} (random masks) is not supported: only inference or ratio 0, "
                         "where Dropout is the identity")  # fmt: skip
    elif node.version < 7 and not node.attr("is_test", 0):
        raise refuse("is_test=0 (training) is not supported: only inference, where Dropout is the identity")
    mask = None
    if node.n_outputs > 1 and node.used[1]:
        mask = ctx.b.full(ctx.shape(x), True, element_type_of(np.bool_), ctx.dim_sources(ctx.shape(x), x)) if (
            num_elements(ctx.shape(x)) is None) else ctx.constant(np.ones(ctx.shape(x), np.bool_))  # fmt: skip
    return x, mask


# ---------------------------------------------------------------------------
# padding


def _pad_indices(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index of each element of an axis padded by ``before``/``after`` (non-negative)."""
    positions = np.arange(-before, size + after)
    if mode == "edge":
        return np.clip(positions, 0, size - 1)
    if mode == "wrap":
        return positions % size
    period = 2 * (size - 1)  # reflect: ... 2 1 [0 1 2 3] 2 1 0 ...
    if period == 0:
        return np.zeros_like(positions)
    folded = positions % period
    return np.where(folded < size, folded, period - folded)


@converter("Pad", since=2)
def pad(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    rank = ctx.rank(x)
    mode = node.attr("mode", "constant")
    if node.version >= 11:
        pads = [int(p) for p in ctx.need_const(node, 1, "pads").reshape(-1)]
        value = ctx.need_const(node, 2, "constant_value").reshape(-1)[0] if node.input(2) is not None else 0
        axes = ctx.axes(ctx.need_const(node, 3, "axes").reshape(-1), rank, node) if node.input(3) is not None else range(rank)
    else:
        pads, value, axes = node.attr("pads"), node.attr("value", 0.0), range(rank)
    axes = list(axes)
    if len(pads) != 2 * len(axes):
        raise OnnxImportError(f"node '{node.name}' (Pad): {len(pads)} pads for {len(axes)} axes")
    low, high = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        low[a], high[a] = pads[k], pads[k + len(axes)]
    if mode == "constant":
        return b.pad(x, low, high, np.asarray(value).astype(ctx.dtype(x)).item())
    if mode not in ("reflect", "edge", "wrap"):
        raise refuse(f"mode '{mode}'")
    for a in range(rank):
        if low[a] == 0 and high[a] == 0:
            continue
        size = ctx.shape(x)[a]
        if not isinstance(size, int):
            raise refuse(f"{mode} padding of the symbolic axis {a}")
        crop_low, crop_high = max(-low[a], 0), max(-high[a], 0)
        if crop_low or crop_high:
            x = b.slice(x, [crop_low], [size - crop_high], [a])
            size -= crop_low + crop_high
        indices = _pad_indices(size, max(low[a], 0), max(high[a], 0), mode)
        x = b.take(x, ctx.constant(indices), a)
    return x


# ---------------------------------------------------------------------------
# depth <-> space


@converter("DepthToSpace")
def depth_to_space(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    n, c, h, w = ctx.shape(x)
    bs = node.attr("blocksize")
    if node.attr("mode", "DCR") == "DCR":
        y = b.transpose(b.reshape(x, (n, bs, bs, c // (bs * bs), h, w)), [0, 3, 4, 1, 5, 2])
    else:
        y = b.transpose(b.reshape(x, (n, c // (bs * bs), bs, bs, h, w)), [0, 1, 4, 2, 5, 3])
    return b.reshape(y, (n, c // (bs * bs), h * bs, w * bs))


@converter("SpaceToDepth")
def space_to_depth(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    b, x = ctx.b, node.input(0)
    n, c, h, w = ctx.shape(x)
    bs = node.attr("blocksize")
    perm = [0, 3, 5, 1, 2, 4] if node.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
    y = b.transpose(b.reshape(x, (n, c, h // bs, bs, w // bs, bs)), perm)
    return b.reshape(y, (n, c * bs * bs, h // bs, w // bs))
