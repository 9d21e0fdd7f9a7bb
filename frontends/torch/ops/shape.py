"""Data movement: view/reshape, permute, expand, squeeze/unsqueeze, cat, slice, select, diagonal, unfold,
as_strided."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from ....dialects.graph.types import element_type_of, format_shape, numpy_dtype, shape_of
from ....runtime import dim_arith
from ..context import ImportContext
from ..registry import converter
from .data_dependent import input_symbols


@converter("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default")
def view(ctx: ImportContext, node, x, shape):
    # the result shape recorded by export is already resolved (-1, symbols)
    return ctx.b.reshape(x, ctx.shape(node))


@converter("aten.resize.default")
def resize(ctx: ImportContext, node, x, size, memory_format=None):
    """``x.resize_as_(y)`` / ``x.resize_(size)`` as export records them: the first elements
    of ``x`` in row-major order in the new shape; elements beyond ``x``'s (torch leaves
    them uninitialised) are 0."""
    b = ctx.b
    shape = ctx.shape(node)
    have, want = (dim_arith.product(s) for s in (shape_of(x.type), shape))
    if not all(isinstance(n, int) for n in (have, want)):
        raise NotImplementedError(f"resize between symbolic shapes ({format_shape(shape_of(x.type))} -> {format_shape(shape)})")
    flat = b.reshape(x, (have,))
    if want <= have:
        flat = b.slice(flat, [0], [want], [0], [1])
    else:
        flat = b.concat([flat, ctx.constant(np.zeros(want - have, numpy_dtype(x.type.element_type)))], axis=0)
    return b.reshape(flat, shape)


@converter(
    "aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default", "aten.unsqueeze.default",
    "aten.squeeze_copy.dims", "aten.squeeze_copy.dim", "aten.squeeze_copy.default", "aten.unsqueeze_copy.default",
)  # fmt: skip
def squeeze_unsqueeze(ctx: ImportContext, node, x, *dims):
    return ctx.b.reshape(x, ctx.shape(node))


@converter("aten.permute.default", "aten.permute_copy.default")
def permute(ctx: ImportContext, node, x, dims):
    return ctx.b.transpose(x, [d % ctx.rank(x) for d in dims])


@converter("aten.t.default", "aten.t_copy.default")
def t(ctx: ImportContext, node, x):
    return ctx.b.transpose(x, list(range(ctx.rank(x)))[::-1])


@converter("aten.transpose.int", "aten.transpose_copy.int")
def transpose(ctx: ImportContext, node, x, a, b):
    perm = list(range(ctx.rank(x)))
    a, b = a % len(perm), b % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.b.transpose(x, perm)


@converter("aten.expand.default", "aten.expand_copy.default")
def expand(ctx: ImportContext, node, x, sizes, implicit=False):
    return ctx.b.broadcast_to(x, ctx.shape(node))


@converter("aten.cat.default")
def cat(ctx: ImportContext, node, tensors, dim=0):
    # torch skips 1-d empty tensors beside others of a higher rank (legacy: torch.cat([torch.tensor([]), x]))
    rank = len(ctx.shape(node))
    kept = [t for t in tensors if not (rank > 1 and shape_of(t.type) == (0,))]
    tensors = [ctx.cast(t, ctx.dtype(node)) for t in kept]
    return ctx.b.concat(tensors, axis=dim)


@converter("aten.slice.Tensor", "aten.slice_copy.Tensor")
def slice_(ctx: ImportContext, node, x, dim=0, start=None, end=None, step=1):
    dim = dim % ctx.rank(x)
    if step == 1 and ctx.shape(node)[dim] == shape_of(x.type)[dim]:
        return x  # torch proved the slice whole (x[-512:] of a sequence of at most 512)
    if isinstance(start, str) or isinstance(end, str):
        if _binds_new_length(ctx, node, x, dim, start, end, step):
            return _slice_by_positions(ctx, node, x, dim, ctx.slice_bound(start, shape_of(x.type)[dim], 0), step)
        if isinstance(shape_of(x.type)[dim], int):
            return _slice_by_positions(ctx, node, x, dim, start, step)
        try:
            return ctx.b.slice(x, [start], [end], [dim], [step])
        except VerifyException:  # bounds graph.slice cannot express on this axis
            return _slice_by_positions(ctx, node, x, dim, start, step)
    return ctx.b.slice(x, [start], [end], [dim], [step])


def _binds_new_length(ctx: ImportContext, node, x, dim: int, start, end, step: int) -> bool:
    """Whether the slice's length is a symbol torch.export made up for it (bounds read from
    data, ``x[a:b]`` of ``item()``s torch could not relate): then bound here to the length
    torch's slice has, ``ceil((end - start) / step)`` of the clamped bounds, at least 0."""
    length = ctx.shape(node)[dim]
    if not isinstance(length, str) or length in ctx.symbol_values or length in input_symbols(ctx):
        return False
    b, size = ctx.b, shape_of(x.type)[dim]
    span = b.sub(ctx.slice_bound(end, size, size), ctx.slice_bound(start, size, 0))
    if step != 1:
        span = b.div(b.add(span, ctx.constant(np.int64(step - 1))), ctx.constant(np.int64(step)))
    ctx.bind_data_symbol(length, b.max(span, ctx.constant(np.int64(0))))
    return True


def _slice_by_positions(ctx: ImportContext, node, x, dim: int, start, step: int):
    """An axis sliced at bounds computed from sizes that ``graph.slice`` does not take
    (BERT's ``position_ids[:, :seq_len]`` of a static table; Mamba2's ``x[:, :s]`` of its
    padded ``8*ceil(s/8)``): a gather of ``start + step * i`` for the ``i`` of the length
    torch computed."""
    positions = ctx.positions(ctx.shape(node)[dim], [x])
    if step != 1:
        positions = ctx.b.mul(positions, ctx.scalar(step, positions))
    if isinstance(start, int) and start < 0:  # from the end
        start = dim_arith.add(shape_of(x.type)[dim], start)
    if isinstance(start, SSAValue):  # (a bound computed here)
        positions = ctx.b.add(positions, start)
    elif start:
        positions = ctx.b.add(positions, ctx.size_value(start))
    return ctx.b.take(x, positions, dim)


@converter("aten.select.int", "aten.select_copy.int")
def select(ctx: ImportContext, node, x, dim, index):
    dim = dim % ctx.rank(x)
    size = shape_of(x.type)[dim]
    if isinstance(size, int) and isinstance(index, int):
        start = index + size if index < 0 else index
        end = start + 1
    elif isinstance(index, int):  # a symbolic axis: a negative index counts from its end
        start, end = index, (index + 1 if index != -1 else None)
    else:  # an index computed from sizes (x[:, x.shape[1] - 1])
        start, end = index, dim_arith.add(index, 1)
    piece = ctx.b.slice(x, [start], [end], [dim], [1])
    return ctx.b.reshape(piece, ctx.shape(node))


class _DiagonalPlanes:
    """The planes of axes (``dim1``, ``dim2``) of ``x`` moved last and flattened; the
    diagonal ``x[..., i, i + offset]`` is every ``(cols + 1)``-th element of a plane from
    ``first`` (``length`` of them)."""

    def __init__(self, ctx: ImportContext, x, offset: int, dim1: int, dim2: int):
        rank = ctx.rank(x)
        dim1, dim2 = dim1 % rank, dim2 % rank
        shape = shape_of(x.type)
        rows, cols = shape[dim1], shape[dim2]
        if not isinstance(rows, int) or not isinstance(cols, int):
            raise NotImplementedError(f"the diagonal of {rows} x {cols} planes (a symbolic size) is not supported")
        rest = [d for d in range(rank) if d not in (dim1, dim2)]
        self.perm = [*rest, dim1, dim2]
        planes = x if self.perm == list(range(rank)) else ctx.b.transpose(x, self.perm)
        self.planes_shape = shape_of(planes.type)
        self.flat = ctx.b.reshape(planes, (*(shape[d] for d in rest), rows * cols))
        self.length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
        self.first = offset if offset >= 0 else -offset * cols
        self.step = cols + 1

    def positions(self) -> np.ndarray:
        return self.first + self.step * np.arange(self.length, dtype=np.int64)


@converter("aten.diagonal.default", "aten.diagonal_copy.default")
def diagonal(ctx: ImportContext, node, x, offset=0, dim1=0, dim2=1):
    """``x[..., i, i + offset]`` over the planes of axes (``dim1``, ``dim2``), the diagonal
    last (torch's order): one strided slice of the flattened planes."""
    d = _DiagonalPlanes(ctx, x, offset, dim1, dim2)
    end = d.first + (d.length - 1) * d.step + 1 if d.length else d.first
    return ctx.b.slice(d.flat, [d.first], [end], [ctx.rank(d.flat) - 1], [d.step])


@converter("aten.diagonal_scatter.default")
def diagonal_scatter(ctx: ImportContext, node, x, src, offset=0, dim1=0, dim2=1):
    """``x`` with its diagonal (as ``diagonal`` takes it) replaced by ``src``
    (``x.diagonal()[:] = v``, ``fill_diagonal_``): a scatter into the flattened planes."""
    b = ctx.b
    d = _DiagonalPlanes(ctx, ctx.cast(x, ctx.dtype(node)), offset, dim1, dim2)
    along = (*d.planes_shape[:-2], d.length)
    src = b.broadcast_to(ctx.cast(src, ctx.dtype(node)), along)  # as the in-place copy broadcasts
    index = b.broadcast_to(ctx.constant(d.positions()), along)
    flat = b.scatter(d.flat, index, src, axis=ctx.rank(d.flat) - 1, mode="update")
    planes = b.reshape(flat, d.planes_shape)
    inverse = list(np.argsort(d.perm))
    return planes if inverse == sorted(inverse) else b.transpose(planes, inverse)


@converter("aten.slice_scatter.default")
def slice_scatter(ctx: ImportContext, node, base, src, dim=0, start=None, end=None, step=1):
    """``base`` with ``base[start:end:step]`` along ``dim`` replaced by ``src``: for unit
    steps the pieces before and after, concatenated around ``src``; for longer steps
    (``x[..., ::2] = v``) a scatter of ``src`` at the positions the slice reads."""
    dim = dim % ctx.rank(base)
    size = shape_of(base.type)[dim]
    if not all(isinstance(v, int | None) for v in (size, start, end)):
        return _slice_scatter_by_positions(ctx, node, base, src, dim, start, end, step)
    start, end, _ = slice(start, end, step).indices(size)
    end = max(start, end)
    src = ctx.cast(src, ctx.dtype(node))
    if step != 1:
        positions = np.arange(start, end, step, dtype=np.int64)
        along = [1] * ctx.rank(base)
        along[dim] = len(positions)
        index = ctx.b.broadcast_to(ctx.constant(positions.reshape(along)), shape_of(src.type))
        return ctx.b.scatter(ctx.cast(base, ctx.dtype(node)), index, src, axis=dim, mode="update")
    pieces = []
    if start > 0:
        pieces.append(ctx.b.slice(base, [0], [start], [dim], [1]))
    pieces.append(src)
    if end < size:
        pieces.append(ctx.b.slice(base, [end], [size], [dim], [1]))
    return pieces[0] if len(pieces) == 1 else ctx.b.concat(pieces, axis=dim)


def _slice_scatter_by_positions(ctx: ImportContext, node, base, src, dim: int, start, end, step: int):
    """slice_scatter on a symbolic axis or at symbolic bounds (BART's ``shifted[:, 1:] =
    ids[:, :-1]``): each position ``p`` of the axis takes ``src[(p - start) / step]``
    where the slice covers it, else keeps ``base``."""
    b = ctx.b
    size = shape_of(base.type)[dim]
    positions = ctx.positions(size, [base])

    def bound(value, default):
        if value is None or (isinstance(value, int) and value >= 2**62):
            value = default
        elif isinstance(value, int) and value < 0:
            value = dim_arith.add(size, value)
        return b.min(b.max(ctx.size_value(value), ctx.scalar(0, positions)), ctx.size_value(size))

    first, stop = bound(start, 0), bound(end, size)
    offset = b.sub(positions, first)
    covered = ctx.within(positions, first, stop)
    if step != 1:
        on_step = b.compare(b.fmod(offset, ctx.scalar(step, offset)), ctx.scalar(0, offset), "eq")
        covered = b.where(covered, on_step, ctx.constant(np.asarray(False)))
        offset = b.div(offset, ctx.scalar(step, offset))
    picked = b.take(ctx.cast(src, ctx.dtype(node)), offset, dim)  # out-of-range offsets clamp; not selected
    along = [1] * ctx.rank(base)
    along[dim] = size
    return b.where(b.reshape(covered, along), picked, ctx.cast(base, ctx.dtype(node)))


@converter("aten.narrow_copy.default")
def narrow_copy(ctx: ImportContext, node, x, dim, start, length):
    """``x.narrow(dim, start, length)``; a negative ``start`` counts from the end."""
    dim = dim % ctx.rank(x)
    if isinstance(start, int) and start < 0:
        start = dim_arith.add(shape_of(x.type)[dim], start)
    return ctx.b.slice(x, [start], [dim_arith.add(start, length)], [dim], [1])


@converter("aten.copy.default")
def copy(ctx: ImportContext, node, dst, src, non_blocking=False):
    """The value ``dst`` holds after ``dst.copy_(src)``: ``src`` broadcast to ``dst``'s
    shape in ``dst``'s dtype."""
    value = ctx.cast(src, ctx.dtype(node))
    if value.type.get_shape() != dst.type.get_shape():
        value = ctx.b.broadcast_to(value, ctx.shape(node))
    return value


@converter("aten.unfold.default", "aten.unfold_copy.default", scalars_as_vectors=True)
def unfold(ctx: ImportContext, node, x, dimension, size, step):
    """Sliding windows (``Tensor.unfold``): window ``w``'s element ``j`` is
    ``x[..., w*step + j, ...]``: a take along the axis by a (windows, size) index table,
    the window elements moved last."""
    rank = ctx.rank(x)
    dim = dimension % rank if rank else 0
    windows = ctx.shape(node)[dim]
    if isinstance(windows, int):
        table = ctx.constant(np.arange(windows)[:, None] * step + np.arange(size)[None, :])
    else:
        starts = ctx.b.arange(windows, 0, step, element_type_of(np.int64), ctx.dim_sources((windows,), [x]))
        table = ctx.b.add(ctx.b.reshape(starts, (windows, 1)), ctx.constant(np.arange(size).reshape(1, size)))
    picked = ctx.b.take(x, table, dim)  # (..., windows, size, ...)
    order = [*range(dim + 1), *range(dim + 2, rank + 1), dim + 1]
    return ctx.b.transpose(picked, order)


def _strided_sources(ctx: ImportContext, node, size, stride, storage_offset) -> np.ndarray | None:
    """For each element of the strided view ``(size, stride, storage_offset)`` of the
    node's first argument, the (row-major) element of that tensor stored there, as laid
    out by the strides export recorded for it; None where the view is the tensor itself.
    The tensor must be dense (each storage position holds one element) and static."""
    source = node.args[0].meta["val"]
    shape, strides = tuple(source.shape), tuple(source.stride())
    out_shape = tuple(size)
    if ctx.shape(node.args[0]) == out_shape and tuple(stride) == strides and not storage_offset:
        return None  # the view x already is (also with symbolic dims)
    if not all(isinstance(d, int) for d in (*shape, *strides, *out_shape, *stride, storage_offset)):
        raise NotImplementedError(f"as_strided of symbolic sizes or strides ({shape}, {strides} -> {size}, {stride})")
    count = int(np.prod(shape, dtype=np.int64))
    stored_at = sum(i * s for i, s in zip(np.indices(shape, dtype=np.int64), strides)) if shape else np.zeros((), np.int64)
    if sorted(stored_at.ravel().tolist()) != list(range(count)):
        raise NotImplementedError(f"as_strided of a tensor whose strides {strides} for shape {shape} are not dense")
    element_at = np.empty(count, np.int64)
    element_at[stored_at.ravel()] = np.arange(count)
    wanted = storage_offset + sum(i * s for i, s in zip(np.indices(out_shape, dtype=np.int64), stride))
    wanted = np.asarray(wanted, np.int64)
    if wanted.size and (wanted.min() < 0 or wanted.max() >= count):
        raise ValueError(f"as_strided: size {list(size)} with stride {list(stride)} reads outside the {count} elements of its input")
    return element_at[wanted]


@converter("aten.as_strided.default", "aten.as_strided_copy.default")
def as_strided(ctx: ImportContext, node, x, size, stride, storage_offset=0):
    """A strided view of ``x``'s storage (decompositions restride channels-last results:
    ``adaptive_avg_pool2d`` to 1x1 is ``mean`` then ``as_strided``). Graph tensors have no
    storage, so each output element's storage position is mapped back to the element of
    ``x`` stored there: the view is a reshape where that is the identity, else a gather
    with constant indices."""
    sources = _strided_sources(ctx, node, size, stride, storage_offset)
    if sources is None:
        return x
    count = int(np.prod(shape_of(x.type), dtype=np.int64))
    flat = ctx.b.reshape(x, (count,))
    if sources.size == count and np.array_equal(sources.ravel(), np.arange(count)):
        return ctx.b.reshape(flat, ctx.shape(node))
    return ctx.b.take(flat, ctx.constant(sources), 0)


@converter("aten.as_strided_scatter.default")
def as_strided_scatter(ctx: ImportContext, node, x, src, size, stride, storage_offset=0):
    """``x`` with the elements of its strided view replaced by ``src`` (``fill_diagonal_``
    exports as one): a scatter into ``x`` flattened, at the elements ``as_strided`` reads."""
    sources = _strided_sources(ctx, node, size, stride, storage_offset)
    src = ctx.cast(src, ctx.dtype(node))
    if sources is None:
        return src
    b = ctx.b
    count = int(np.prod(shape_of(x.type), dtype=np.int64))
    flat = b.reshape(ctx.cast(x, ctx.dtype(node)), (count,))
    updated = b.scatter(flat, ctx.constant(sources.ravel()), b.reshape(src, (sources.size,)), axis=0, mode="update")
    return b.reshape(updated, ctx.shape(node))
