"""Indexing: Gather, GatherElements, GatherND, ScatterElements (Scatter), ScatterND, TopK,
CumSum, CumProd, OneHot, ReverseSequence; and the ops whose result size depends on the
data: NonZero, Compress (their count is read by the host: ``graph.data_size``, run by the VM)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of
from ....runtime import dim_arith
from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .shape import product

_INT64 = np.dtype(np.int64)


@converter("Gather")
def gather(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, indices = node.input(0), node.input(1)
    axis = ctx.axis(node.attr("axis", 0), ctx.rank(x), node)
    return ctx.b.take(x, indices, axis)


@converter("GatherElements", since=11)
def gather_elements(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, indices = node.input(0), node.input(1)
    return ctx.b.gather(x, indices, ctx.axis(node.attr("axis", 0), ctx.rank(x), node))


def _linear_index(ctx: OnnxContext, indices: SSAValue, dims: tuple, node: OnnxNode) -> SSAValue:
    """The row-major position among ``dims`` of each index tuple (``indices``' last axis),
    negative indices counted from the end."""
    g = ctx.b
    depth = len(dims)
    indices = ctx.cast(indices, _INT64)
    linear = None
    for k, size in enumerate(dims):
        part = g.reshape(g.slice(indices, [k], [k + 1], [ctx.rank(indices) - 1]), ctx.shape(indices)[:-1])
        part = g.where(g.compare(part, ctx.scalar(0, part), "lt"), g.add(part, ctx.scalar(size, part)), part)
        stride = int(np.prod(dims[k + 1 : depth], dtype=np.int64))
        term = g.mul(part, ctx.scalar(stride, part)) if stride != 1 else part
        linear = term if linear is None else g.add(linear, term)
    return linear


def _nd_layout(ctx: OnnxContext, node: OnnxNode, data: SSAValue, indices: SSAValue) -> tuple[int, tuple, SSAValue, SSAValue]:
    """For GatherND/ScatterND: (batch dims, indexed dims, the data as (batch, positions, rest...),
    the linear positions (batch, index rows)), batch dims flattened to one."""
    g = ctx.b
    batch_dims = node.attr("batch_dims", 0)
    data_shape, index_shape = ctx.shape(data), ctx.shape(indices)
    depth = index_shape[-1]
    if not isinstance(depth, int):
        raise refuse(f"a symbolic index depth ({depth})")
    indexed = data_shape[batch_dims : batch_dims + depth]
    if not all(isinstance(d, int) for d in indexed):
        raise refuse(f"symbolic indexed dims {indexed}")
    batch = product(data_shape[:batch_dims])
    flat = g.reshape(data, (batch, product(indexed), *data_shape[batch_dims + depth :]))
    rows = product(index_shape[batch_dims:-1])
    linear = g.reshape(_linear_index(ctx, indices, indexed, node), (batch, rows))
    return batch_dims, indexed, flat, linear


@converter("GatherND", since=11)
def gather_nd(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    data, indices = node.input(0), node.input(1)
    batch_dims, indexed, flat, linear = _nd_layout(ctx, node, data, indices)
    rest = ctx.shape(flat)[2:]
    # (batch, rows) -> (batch, rows, rest...) positions along axis 1
    spread = g.broadcast_to(g.reshape(linear, (*ctx.shape(linear), *[1] * len(rest))), (*ctx.shape(linear), *rest))
    picked = g.gather(flat, spread, 1)
    index_shape = ctx.shape(indices)
    return g.reshape(picked, (*index_shape[:-1], *rest))


_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _scatter_mode(node: OnnxNode) -> str:
    reduction = node.attr("reduction", "none")
    if reduction not in _REDUCTIONS:
        raise refuse(f"reduction '{reduction}'")
    return _REDUCTIONS[reduction]


@converter("ScatterElements", since=11)
@converter("Scatter", since=9)
def scatter_elements(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x, indices, updates = node.input(0), node.input(1), node.input(2)
    axis = ctx.axis(node.attr("axis", 0), ctx.rank(x), node)
    return ctx.b.scatter(x, indices, updates, axis, _scatter_mode(node))


@converter("ScatterND", since=11)
def scatter_nd(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    data, indices, updates = node.input(0), node.input(1), node.input(2)
    _, _, flat, linear = _nd_layout(ctx, node, data, indices)
    rest = ctx.shape(flat)[2:]
    spread = g.broadcast_to(g.reshape(linear, (*ctx.shape(linear), *[1] * len(rest))), (*ctx.shape(linear), *rest))
    rows = g.reshape(updates, ctx.shape(spread))
    return g.reshape(g.scatter(flat, spread, rows, 1, _scatter_mode(node)), ctx.shape(data))


@converter("TopK")
def top_k(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, SSAValue]:
    g, x = ctx.b, node.input(0)
    axis = ctx.axis(node.attr("axis", -1), ctx.rank(x), node)
    k = node.attr("k") if node.version < 10 else int(ctx.need_const(node, 1, "k").reshape(-1)[0])
    largest = bool(node.attr("largest", 1))
    size = ctx.shape(x)[axis]
    if isinstance(size, int) and not 0 <= k <= size:
        raise OnnxImportError(f"node '{node.name}' (TopK): k = {k} is not in [0, {size}]")
    indices = g.argsort(x, axis, largest, k)
    return g.gather(x, indices, axis), indices


def _shifted(ctx: OnnxContext, scanned: SSAValue, axis: int, first: float) -> SSAValue:
    """The exclusive scan from the inclusive one: shifted one step along ``axis``, ``first`` in front."""
    low, high = [0] * ctx.rank(scanned), [0] * ctx.rank(scanned)
    low[axis], high[axis] = 1, -1
    return ctx.b.pad(scanned, low, high, np.asarray(first).astype(ctx.dtype(scanned)).item())


def _scan(graph_op: str, identity: float):
    def convert(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        g, x = ctx.b, node.input(0)
        axis = ctx.axis(int(ctx.need_const(node, 1, "axis").reshape(-1)[0]), ctx.rank(x), node)
        reverse = bool(node.attr("reverse", 0))
        y = g.flip(x, [axis]) if reverse else x
        y = getattr(g, graph_op)(y, axis)
        if node.attr("exclusive", 0):
            y = _shifted(ctx, y, axis, identity)
        return g.flip(y, [axis]) if reverse else y

    return convert


converter("CumSum", since=11)(_scan("cumsum", 0))
converter("CumProd", since=26)(_scan("cumprod", 1))


@converter("OneHot", since=9)
def one_hot(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    indices, values = node.input(0), node.input(2)
    depth = int(np.asarray(ctx.need_const(node, 1, "depth")).reshape(-1)[0])
    rank = ctx.rank(indices) + 1
    axis = ctx.axis(node.attr("axis", -1), rank, node)
    positions = ctx.cast(indices, _INT64)
    positions = g.where(g.compare(positions, ctx.scalar(0, positions), "lt"), g.add(positions, ctx.scalar(depth, positions)), positions)
    shape = list(ctx.shape(indices))
    shape.insert(axis, 1)
    along = [1] * rank
    along[axis] = depth
    hit = g.compare(g.reshape(positions, shape), g.reshape(ctx.positions(depth), along), "eq")
    off = g.reshape(g.slice(values, [0], [1]), ())
    on = g.reshape(g.slice(values, [1], [2]), ())
    return g.where(hit, on, off)


@converter("ReverseSequence", since=10)
def reverse_sequence(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    x, lengths = node.input(0), ctx.cast(node.input(1), _INT64)
    batch_axis, time_axis = node.attr("batch_axis", 1), node.attr("time_axis", 0)
    shape = ctx.shape(x)
    time = ctx.positions(shape[time_axis])
    along_time = [1] * len(shape)
    along_time[time_axis] = shape[time_axis]
    along_batch = [1] * len(shape)
    along_batch[batch_axis] = shape[batch_axis]
    t, n = g.reshape(time, along_time), g.reshape(lengths, along_batch)
    source = g.where(g.compare(t, n, "lt"), g.sub(g.sub(n, ctx.scalar(1, n)), t), t)
    return g.gather(x, g.broadcast_to(source, shape), time_axis)


# ---------------------------------------------------------------------------
# sizes read from data


def true_positions(ctx: OnnxContext, flags: SSAValue) -> SSAValue:
    """The positions (int64, in order) of the true elements of the 1-d boolean ``flags``:
    a vector whose length is a new symbol, its value read from the data at run time."""
    g = ctx.b
    (length,) = ctx.shape(flags)
    ones = ctx.cast(flags, _INT64)
    symbol, carrier = ctx.data_size(g.reduce_sum(ones, [0]), length if isinstance(length, int) else None)
    order = g.sub(g.cumsum(ones, 0), ctx.scalar(1, ones))
    rows = g.where(flags, order, ctx.size_value(symbol))  # the others to one spare row, cut off
    slots = g.full((dim_arith.add(symbol, 1),), 0, element_type_of(_INT64), [carrier])
    placed = g.scatter(slots, rows, ctx.positions(length, flags), 0, "update")
    return g.slice(placed, [0], [-1])


@converter("NonZero", since=9)
def non_zero(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x = ctx.b, node.input(0)
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise refuse("a symbolic input shape")
    flags = g.compare(g.reshape(x, (product(shape),)), ctx.scalar(0, x), "ne")
    flat = true_positions(ctx, flags)
    rows = []
    for k, size in enumerate(shape):
        stride = int(np.prod(shape[k + 1 :], dtype=np.int64))
        index = g.div(flat, ctx.scalar(stride, flat)) if stride != 1 else flat
        if k > 0:
            index = g.fmod(index, ctx.scalar(size, index))
        rows.append(g.reshape(index, (1, *ctx.shape(flat))))
    if not rows:
        raise refuse("a 0-d input")
    return g.concat(rows, 0) if len(rows) > 1 else rows[0]


@converter("Compress", since=9)
def compress(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g, x, condition = ctx.b, node.input(0), node.input(1)
    if node.has_attr("axis"):
        axis = ctx.axis(node.attr("axis"), ctx.rank(x), node)
    else:
        x, axis = g.reshape(x, (product(ctx.shape(x)),)), 0
    size = ctx.shape(x)[axis]
    (length,) = ctx.shape(condition)
    if isinstance(size, int) and isinstance(length, int) and length < size:
        condition = g.pad(condition, [0], [size - length], False)  # missing entries are false
    elif length != size:
        condition = g.slice(condition, [0], [size])
    known = ctx.const(condition)
    if known is not None:
        return g.take(x, ctx.constant(np.flatnonzero(known).astype(np.int64)), axis)
    return g.take(x, true_positions(ctx, condition), axis)
