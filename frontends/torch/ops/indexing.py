"""Indexing and index-producing ATen ops: index_select, embedding, gather, index (x[idx]),
cumsum/cumprod/logcumsumexp, cummax/cummin, argmax/argmin, max/min with indices, topk, sort;
any/all, var/std, constant padding, stack, split/chunk/unbind, flip, repeat.

The graph ops clamp indices out of range (see graph.take) and wrap negative ones; the
converters check the indices they are given as torch does (``index_checks.py``: an
IndexError after the call).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1

from ....dialects.graph.types import Dim, broadcast_shapes, format_shape, is_float_dtype, numpy_dtype, shape_of
from ....runtime import dim_arith
from ..context import ImportContext, numpy_dtype_of_torch
from ..registry import converter
from .data_dependent import masked_put, masked_rows, masks_as_indices, rows_in_order
from .index_checks import check_indices

# ---------------------------------------------------------------------------
# take / gather


def _fit(ctx: ImportContext, node, value):
    """``value`` reshaped to the node's shape where they differ (a 0-d index, keepdim=None...)."""
    if shape_of(value.type) != ctx.shape(node):
        return ctx.b.reshape(value, ctx.shape(node))
    return value


def _indices_of(node, position: int) -> str:
    """How a message names the op of ``node`` and its index argument: ``gather of 'ids'``."""
    arg = node.args[position] if position < len(node.args) else None
    op = str(node.target).split(".")[1] if str(node.target).count(".") >= 2 else str(node.target)
    return f"{op} of '{arg.name}'" if hasattr(arg, "name") else op


@converter("aten.index_select.default", scalars_as_vectors=True)
def index_select(ctx: ImportContext, node, x, dim, index):
    dim %= ctx.rank(x)
    check_indices(ctx, index, shape_of(x.type)[dim], _indices_of(node, 2))
    return _fit(ctx, node, ctx.b.take(x, index, dim))


@converter("aten.embedding.default")
def embedding(ctx: ImportContext, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # padding_idx only changes gradients
    check_indices(ctx, indices, shape_of(weight.type)[0], _indices_of(node, 1))
    return ctx.b.take(weight, indices, 0)


#: aten's embedding_bag modes
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


@converter("aten._embedding_bag.default", "aten._embedding_bag_forward_only.default")
def embedding_bag(
    ctx: ImportContext, node, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=-1,
):
    """``nn.EmbeddingBag``: the rows ``weight[indices]`` summed, averaged or maxed per bag
    (bag ``b`` starts at ``offsets[b]``) with one ``graph.scatter`` into ``B + 1`` rows:
    a row of ``padding_idx`` (and any index before the first offset) goes to the extra
    row, which is dropped. Empty bags give zeros, as torch. Only the first result (the
    bags) is computed."""
    b = ctx.b
    (n,), (count,) = shape_of(indices.type), shape_of(offsets.type)
    bags = count - 1 if include_last_offset else count
    if not isinstance(n, int) or not isinstance(bags, int):
        raise NotImplementedError(f"embedding_bag with a symbolic number of indices or bags ({n}, {bags})")
    dim, dtype = shape_of(weight.type)[1], numpy_dtype(weight.type.element_type)
    kind = _BAG_MODES[mode]
    check_indices(ctx, indices, shape_of(weight.type)[0], _indices_of(node, 1))
    rows = b.take(weight, indices, 0)  # (N, D)
    if per_sample_weights is not None:
        rows = b.mul(rows, b.reshape(per_sample_weights, (n, 1)))
    starts = b.reshape(ctx.cast(b.slice(offsets, [0], [bags], [0], [1]), np.dtype(np.int64)), (1, bags))
    positions = b.reshape(ctx.constant(np.arange(n, dtype=np.int64)), (n, 1))
    bag = b.sub(b.reduce_sum(ctx.cast(b.compare(starts, positions, "le"), np.dtype(np.int64)), [1]), ctx.scalar(1, starts))
    if padding_idx is not None and padding_idx >= 0:
        bag = b.where(b.compare(ctx.cast(indices, np.dtype(np.int64)), ctx.scalar(padding_idx, bag), "eq"), ctx.scalar(bags, bag), bag)
    bag = b.where(b.compare(bag, ctx.scalar(0, bag), "lt"), ctx.scalar(bags, bag), bag)
    spread = b.broadcast_to(b.reshape(bag, (n, 1)), (n, dim))
    zeros = ctx.constant(np.zeros((bags + 1, dim), dtype=dtype))
    total = b.scatter(zeros, spread, rows, axis=0, mode="max" if kind == "max" else "add", include_self=kind != "max")
    if kind == "mean":
        ones = ctx.constant(np.ones((n, 1), dtype=dtype))
        sizes = b.scatter(ctx.constant(np.zeros((bags + 1, 1), dtype=dtype)), b.reshape(bag, (n, 1)), ones, axis=0, mode="add")
        total = b.div(total, b.max(sizes, ctx.scalar(1, sizes)))
    return (b.slice(total, [0], [bags], [0], [1]), None, None, None)


@converter("aten.gather.default", scalars_as_vectors=True)
def gather(ctx: ImportContext, node, x, dim, index, sparse_grad=False):
    dim %= ctx.rank(x)
    check_indices(ctx, index, shape_of(x.type)[dim], _indices_of(node, 2))
    return ctx.b.gather(x, index, dim)


def _wrap_clamp(ctx: ImportContext, index, size: Dim):
    """An i64 index tensor with negative entries wrapped and the rest clamped into [0, size)."""
    b = ctx.b
    index = ctx.cast(index, np.int64)
    length = ctx.size_value(size)
    last = b.max(b.sub(length, ctx.scalar(1, length)), ctx.scalar(0, length))
    wrapped = b.where(b.compare(index, ctx.scalar(0, index), "lt"), b.add(index, length), index)
    return b.min(b.max(wrapped, ctx.scalar(0, index)), last)


@converter("aten.index.Tensor")
def index(ctx: ImportContext, node, x, indices):
    """``x[i0, i1, ...]`` with integer index tensors (``None`` for whole axes), or a
    boolean mask (its ``nonzero`` columns: a data-dependent number of rows).

    One index tensor is a ``graph.take``. Several are combined into one linear index over
    the indexed axes (static or symbolic), as torch's advanced indexing: the index
    shapes broadcast together, and their shape replaces the indexed axes in place when
    those are adjacent, or comes first when they are not.
    """
    masks = [k for k, t in enumerate(indices) if t is not None and t.type.element_type == i1]
    if len(masks) == 1 and sum(t is not None for t in indices) == 1 and ctx.rank(indices[masks[0]]):  # x[:, mask]
        return masked_rows(ctx, node, x, masks[0], indices[masks[0]])
    _check_advanced_indices(ctx, node, x, indices)
    positions = _integer_positions(masks_as_indices(ctx, node, indices))
    if not positions:
        return x
    if len(positions) == 1:
        axis, t = positions[0]
        return _fit(ctx, node, ctx.b.take(x, t, axis))
    merged, first, linear, _ = _merge_indexed_axes(ctx, x, positions)
    return _fit(ctx, node, ctx.b.take(merged, linear, first))


@converter("aten.take.default")
def take(ctx: ImportContext, node, x, positions):
    """``torch.take``: ``x`` flattened, indexed by ``positions`` (as torch's decomposition,
    which the importer keeps whole: torch's own fails on a 0-d ``x``)."""
    return index(ctx, node, ctx.b.reshape(x, (dim_arith.product(shape_of(x.type)),)), [positions])


def _check_advanced_indices(ctx: ImportContext, node, x, indices) -> None:
    """Each integer index tensor of ``x[i0, i1, ...]`` in ``[-size, size)`` of its axis
    (a boolean mask selects in range; its axes count as the mask's rank)."""
    axis, name = 0, getattr(node.args[0], "name", "x")
    for t in indices:
        if t is not None and t.type.element_type != i1:
            check_indices(ctx, t, shape_of(x.type)[axis], f"indexing '{name}' along dim {axis}", from_end=True)
        axis += ctx.rank(t) if t is not None and t.type.element_type == i1 else 1


def _integer_positions(indices) -> list[tuple[int, object]]:
    """The ``(axis, index tensor)`` pairs of an advanced index (``None`` entries skipped;
    boolean masks already turned into integer indices)."""
    return [(axis, t) for axis, t in enumerate(indices) if t is not None]


def _merge_indexed_axes(ctx: ImportContext, x, positions):
    """``x`` with its indexed axes brought together (first when they are not adjacent,
    as torch puts the index shape first) and merged into one axis; returns
    ``(merged, axis, linear index, permutation applied to x or None)``. The indexed
    axes may be symbolic (their sizes then computed at run time)."""
    b = ctx.b
    axes = [axis for axis, _ in positions]
    x_shape = shape_of(x.type)
    permutation = None
    if axes != list(range(axes[0], axes[0] + len(axes))):
        permutation = axes + [a for a in range(len(x_shape)) if a not in axes]
        x = b.transpose(x, permutation)
        x_shape = shape_of(x.type)
        axes = list(range(len(axes)))
    sizes = [x_shape[a] for a in axes]
    broadcast_shapes(*(shape_of(t.type) for _, t in positions))  # a clear error if they do not
    linear = None
    stride: Dim = 1
    for size, (_, t) in reversed(list(zip(sizes, positions))):
        term = _wrap_clamp(ctx, t, size)
        if stride != 1:
            term = b.mul(term, ctx.size_value(stride))
        linear = term if linear is None else b.add(term, linear)
        stride = dim_arith.mul(stride, size)
    first = axes[0]
    merged = b.reshape(x, [*x_shape[:first], stride, *x_shape[first + len(axes) :]])
    return merged, first, linear, permutation


@converter("aten.index_put.default")
def index_put(ctx: ImportContext, node, x, indices, values, accumulate=False):
    """``x[i0, i1, ...] = values`` (``+=`` with ``accumulate``): a ``graph.scatter`` along
    the indexed axes merged into one. A boolean mask is a ``graph.where`` of the value,
    or of one value per selected element (``data_dependent.masked_put``)."""
    b = ctx.b
    values = ctx.cast(values, ctx.dtype(node))
    masks = [(axis, t) for axis, t in enumerate(indices) if t is not None and t.type.element_type == i1]
    if masks:
        return _masked_put(ctx, x, indices, masks, values, accumulate)
    _check_advanced_indices(ctx, node, x, indices)
    positions = _integer_positions(indices)
    if not positions:
        return b.add(x, values) if accumulate else b.broadcast_to(values, shape_of(x.type))
    if len(positions) == 1:
        merged, first, linear, permutation = x, positions[0][0], positions[0][1], None
    else:
        merged, first, linear, permutation = _merge_indexed_axes(ctx, x, positions)
    # values broadcast to merged[..., linear, ...], the index shape flattened to one axis
    m_shape = shape_of(merged.type)
    index_shape = shape_of(linear.type)
    count = dim_arith.product(index_shape)
    before, after = m_shape[:first], m_shape[first + 1 :]
    updates = b.broadcast_to(values, [*before, *index_shape, *after])
    updates = b.reshape(updates, [*before, count, *after])
    spread = [1] * len(before) + [count] + [1] * len(after)
    flat_index = b.broadcast_to(b.reshape(linear, spread), [*before, count, *after])
    mode = "add" if accumulate else "update"
    y = b.scatter(merged, flat_index, updates, axis=first, mode=mode)
    if len(positions) > 1:
        y = b.reshape(y, shape_of(x.type) if permutation is None else [shape_of(x.type)[a] for a in permutation])
    if permutation is not None:
        y = b.transpose(y, [permutation.index(a) for a in range(len(permutation))])
    return y


def _masked_put(ctx: ImportContext, x, indices, masks, values, accumulate: bool):
    """``x[mask] = v`` with one boolean mask (``x[:, mask]``: after whole axes)."""
    (axis, mask), *others = masks
    if others or any(t is not None for a, t in enumerate(indices) if a != axis):
        raise NotImplementedError("index_put with a boolean mask among other indices is not supported")
    return masked_put(ctx, x, axis, mask, values, accumulate)


# ---------------------------------------------------------------------------
# scatter


def _scatter(mode: str):
    def convert(ctx: ImportContext, node, x, dim, index, src, reduce=None):
        if reduce is not None:
            return scatter_reduce(ctx, node, x, dim, index, src, {"add": "sum", "multiply": "prod"}.get(reduce, reduce))
        _check_scatter_indices(ctx, node, x, dim, index)
        return _scatter_values(ctx, node, x, dim, index, src, mode)

    return convert


def _check_scatter_indices(ctx: ImportContext, node, x, dim, index) -> None:
    check_indices(ctx, index, shape_of(x.type)[dim % ctx.rank(x)], _indices_of(node, 2))


def _scatter_values(ctx: ImportContext, node, x, dim, index, src, mode: str, include_self: bool = True):
    """``graph.scatter`` of ``src`` (a tensor, or a scalar for every index) into ``x``."""
    x = ctx.cast(x, ctx.dtype(node))
    if isinstance(src, bool | int | float):
        src = ctx.b.broadcast_to(ctx.scalar(src, x), shape_of(index.type))
    else:
        src = ctx.cast(src, ctx.dtype(node))
    return ctx.b.scatter(x, index, src, axis=dim % ctx.rank(x), mode=mode, include_self=include_self)


converter("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce", "aten.scatter.value_reduce", scalars_as_vectors=True)(
    _scatter("update")
)
converter("aten.scatter_add.default", scalars_as_vectors=True)(_scatter("add"))

#: torch's scatter_reduce names -> graph.scatter modes
_SCATTER_REDUCE_MODES = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}


@converter("aten.scatter_reduce.two", scalars_as_vectors=True)
def scatter_reduce(ctx: ImportContext, node, x, dim, index, src, reduce, *, include_self=True):
    """``sum``/``prod``/``amax``/``amin`` as a ``graph.scatter`` mode; ``mean`` as a sum
    divided by the count of values each element received (plus one for itself when included)."""
    _check_scatter_indices(ctx, node, x, dim, index)
    return _scatter_reduce(ctx, node, x, dim, index, src, reduce, include_self)


def _scatter_reduce(ctx: ImportContext, node, x, dim, index, src, reduce, include_self):
    if reduce in _SCATTER_REDUCE_MODES:
        return _scatter_values(ctx, node, x, dim, index, src, _SCATTER_REDUCE_MODES[reduce], include_self)
    if reduce != "mean" or not is_float_dtype(ctx.dtype(node)):
        raise NotImplementedError(
            f"scatter_reduce with reduce={reduce!r} on {ctx.dtype(node)} (supported: sum, prod, amax, amin; mean on floats)"
        )
    b = ctx.b
    total = _scatter_values(ctx, node, x, dim, index, src, "add", include_self)
    ones = b.broadcast_to(ctx.scalar(1, total), shape_of(index.type))
    start = b.broadcast_to(ctx.scalar(1 if include_self else 0, total), shape_of(total.type))
    count = b.scatter(start, index, ones, axis=dim % ctx.rank(total), mode="add")
    # an element that received nothing keeps its value (count 0 without itself)
    count = b.max(count, ctx.scalar(1, count))
    return b.div(total, count)


@converter("aten.index_reduce.default", scalars_as_vectors=True)
def index_reduce(ctx: ImportContext, node, x, dim, index, source, reduce, *, include_self=True):
    """``x.index_reduce(dim, index, source, reduce)``: slice ``k`` of ``source`` along
    ``dim`` reduces into slice ``index[k]`` of ``x``, a scatter_reduce with ``index``
    broadcast over ``source``'s other axes."""
    dim = dim % ctx.rank(x)
    _check_scatter_indices(ctx, node, x, dim, index)
    along = [1] * ctx.rank(source)
    along[dim] = shape_of(index.type)[0]
    spread = ctx.b.broadcast_to(ctx.b.reshape(index, along), shape_of(source.type))
    return _scatter_reduce(ctx, node, x, dim, spread, source, reduce, include_self)


# ---------------------------------------------------------------------------
# scans, arg-reductions, sorting


def _scan(method: str):
    def convert(ctx: ImportContext, node, x, dim, *, dtype=None):
        x = ctx.cast(x, ctx.dtype(node))  # integers and bools accumulate in int64, as torch
        if ctx.rank(x) == 0:
            return x  # the scan of one element is itself
        return getattr(ctx.b, method)(x, dim % ctx.rank(x))

    return convert


converter("aten.cumsum.default", scalars_as_vectors=True)(_scan("cumsum"))
converter("aten.cumprod.default", scalars_as_vectors=True)(_scan("cumprod"))
converter("aten.logcumsumexp.default", scalars_as_vectors=True)(_scan("logcumsumexp"))


def _running_extreme(method: str):
    """torch's ``cummax``/``cummin``: the positions of the running extreme by a
    ``graph.cumargmax``/``cumargmin`` scan, the values gathered at them (so they are
    torch's exactly: ties, NaNs and the sign of zeros included)."""

    def convert(ctx: ImportContext, node, x, dim):
        if ctx.rank(x) == 0:
            return x, ctx.constant(np.zeros((), np.int64))
        dim = dim % ctx.rank(x)
        numbers = ctx.cast(x, np.int8) if x.type.element_type == i1 else x  # false < true
        indices = getattr(ctx.b, method)(numbers, dim)
        return ctx.b.gather(x, indices, dim), indices

    return convert


converter("aten.cummax.default", scalars_as_vectors=True)(_running_extreme("cumargmax"))
converter("aten.cummin.default", scalars_as_vectors=True)(_running_extreme("cumargmin"))


def _arg_reduce(method: str):
    def convert(ctx: ImportContext, node, x, dim=None, keepdim=False):
        if ctx.rank(x) == 0:
            return ctx.constant(np.zeros((), np.int64))
        if dim is None:  # over all elements: of the flattened tensor
            n = int(np.prod(shape_of(x.type))) if all(isinstance(d, int) for d in shape_of(x.type)) else None
            if n is None:
                raise NotImplementedError(f"{method} over all axes of a symbolic shape {format_shape(shape_of(x.type))}")
            x, dim = ctx.b.reshape(x, [n]), 0
        return _fit(ctx, node, getattr(ctx.b, method)(x, dim % ctx.rank(x), keepdims=keepdim))

    return convert


converter("aten.argmax.default", scalars_as_vectors=True)(_arg_reduce("argmax"))
converter("aten.argmin.default", scalars_as_vectors=True)(_arg_reduce("argmin"))


@converter("aten.max.dim", "aten.min.dim", scalars_as_vectors=True)
def max_min_dim(ctx: ImportContext, node, x, dim, keepdim=False):
    kind = "max" if "max" in str(node.target) else "min"
    dim = dim % max(ctx.rank(x), 1)
    values = getattr(ctx.b, f"reduce_{kind}")(x, [dim], keepdims=keepdim)
    indices = getattr(ctx.b, f"arg{kind}")(x, dim, keepdims=keepdim)
    return values, indices


@converter("aten.topk.default", scalars_as_vectors=True)
def topk(ctx: ImportContext, node, x, k, dim=-1, largest=True, sorted=True):
    if not isinstance(k, int):
        raise NotImplementedError(f"topk with a symbolic k ({k}) is not supported (k must be static)")
    dim = dim % ctx.rank(x)
    indices = ctx.b.argsort(x, dim, descending=largest, k=k)  # sorted, also when sorted=False
    return ctx.b.gather(x, indices, dim), indices


@converter("aten.sort.default", scalars_as_vectors=True)
def sort(ctx: ImportContext, node, x, dim=-1, descending=False):
    dim = dim % ctx.rank(x)
    indices = ctx.b.argsort(x, dim, descending=descending)  # stable: ties keep index order
    return ctx.b.gather(x, indices, dim), indices


@converter("aten.sort.stable", scalars_as_vectors=True)
def sort_stable(ctx: ImportContext, node, x, *, stable=None, dim=-1, descending=False):
    return sort(ctx, node, x, dim, descending)


@converter("aten.argsort.default", scalars_as_vectors=True)
def argsort(ctx: ImportContext, node, x, dim=-1, descending=False):
    return ctx.b.argsort(x, dim % ctx.rank(x), descending=descending)


@converter("aten.argsort.stable", scalars_as_vectors=True)
def argsort_stable(ctx: ImportContext, node, x, *, stable=False, dim=-1, descending=False):
    return argsort(ctx, node, x, dim, descending)


# ---------------------------------------------------------------------------
# logical reductions: any, all


def _logical_reduce(kind: str):
    def convert(ctx: ImportContext, node, x, dim=None, keepdim=False):
        b = ctx.b
        flags = x if x.type.element_type == i1 else b.compare(x, ctx.scalar(0, x), "ne")
        as_int = ctx.cast(flags, np.int8)
        axes = ctx.axes(dim, ctx.rank(x))
        if ctx.rank(x) == 0:
            return flags
        reduced = getattr(b, f"reduce_{kind}")(as_int, axes, keepdims=keepdim)
        return b.compare(reduced, ctx.scalar(0, reduced), "ne")

    return convert


converter("aten.any.dim", "aten.any.dims", "aten.any.default", scalars_as_vectors=True)(_logical_reduce("max"))
converter("aten.all.dim", "aten.all.dims", "aten.all.default", "aten._is_all_true.default", scalars_as_vectors=True)(
    _logical_reduce("min")
)


# ---------------------------------------------------------------------------
# variance and standard deviation


def _var_parts(ctx: ImportContext, node, x, dim, correction, keepdim):
    """(variance, mean with keepdim) of ``x`` over ``dim`` with Bessel's ``correction``."""
    b = ctx.b
    val = node.meta["val"]
    val = val[0] if isinstance(val, tuple | list) else val  # var_mean: (var, mean)
    dtype = numpy_dtype_of_torch(val.dtype, f"{node.name}: ")
    if not is_float_dtype(dtype):
        raise NotImplementedError(f"var/std of a {dtype} tensor (float only, as torch)")
    x = ctx.cast(x, dtype)
    axes = ctx.axes(dim, ctx.rank(x))
    correction = 1 if correction is None else correction
    mean = b.reduce_mean(x, axes, keepdims=True)
    deviation = b.sub(x, mean)
    squares = b.mul(deviation, deviation)
    dims = [shape_of(x.type)[a] for a in axes]
    if any(isinstance(d, str) for d in dims):
        if correction != 0:
            raise NotImplementedError(
                f"var/std with correction={correction} over the symbolic dims {dims}: the count is not static"
            )
        variance = b.reduce_mean(squares, axes, keepdims=keepdim)
    else:
        count = int(np.prod(dims))
        # torch: a count <= correction gives inf (or nan for 0/0)
        variance = b.div(b.reduce_sum(squares, axes, keepdims=keepdim), ctx.scalar(max(count - correction, 0), x))
    if not keepdim:
        mean = b.reshape(mean, shape_of(variance.type))
    return variance, mean


@converter("aten.var.correction", scalars_as_vectors=True)
def var(ctx: ImportContext, node, x, dim=None, *, correction=None, keepdim=False):
    return _var_parts(ctx, node, x, dim, correction, keepdim)[0]


@converter("aten.std.correction", scalars_as_vectors=True)
def std(ctx: ImportContext, node, x, dim=None, *, correction=None, keepdim=False):
    return ctx.b.sqrt(var(ctx, node, x, dim, correction=correction, keepdim=keepdim))


@converter("aten.var.dim", scalars_as_vectors=True)
def var_dim(ctx: ImportContext, node, x, dim=None, unbiased=True, keepdim=False):
    return var(ctx, node, x, dim, correction=1 if unbiased else 0, keepdim=keepdim)


@converter("aten.std.dim", scalars_as_vectors=True)
def std_dim(ctx: ImportContext, node, x, dim=None, unbiased=True, keepdim=False):
    return std(ctx, node, x, dim, correction=1 if unbiased else 0, keepdim=keepdim)


@converter("aten.var.default", scalars_as_vectors=True)
def var_all(ctx: ImportContext, node, x, unbiased=True):
    return var_dim(ctx, node, x, None, unbiased)


@converter("aten.std.default", scalars_as_vectors=True)
def std_all(ctx: ImportContext, node, x, unbiased=True):
    return std_dim(ctx, node, x, None, unbiased)


@converter("aten.var_mean.correction", scalars_as_vectors=True)
def var_mean(ctx: ImportContext, node, x, dim=None, *, correction=None, keepdim=False):
    return _var_parts(ctx, node, x, dim, correction, keepdim)


@converter("aten.std_mean.correction", scalars_as_vectors=True)
def std_mean(ctx: ImportContext, node, x, dim=None, *, correction=None, keepdim=False):
    variance, mean = _var_parts(ctx, node, x, dim, correction, keepdim)
    return ctx.b.sqrt(variance), mean


# ---------------------------------------------------------------------------
# padding, stacking, splitting, flipping, repeating


@converter("aten.constant_pad_nd.default")
def constant_pad_nd(ctx: ImportContext, node, x, pad, value=0):
    rank = ctx.rank(x)
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise ValueError(f"pad {list(pad)} must have an even length of at most {2 * rank} for rank {rank}")
    low, high = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):  # torch: (left, right) of the last axis first
        low[rank - 1 - k], high[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    dtype = ctx.dtype(node)
    fill = np.asarray(value).astype(dtype).item()
    for axis in range(rank):  # pads computed from sizes (to a multiple of a chunk: Mamba2)
        if isinstance(low[axis], str) or isinstance(high[axis], str):
            x = _pad_by_positions(ctx, node, x, axis, low[axis], fill)
            low[axis] = high[axis] = 0
    if not any(low) and not any(high):
        return ctx.cast(x, dtype)
    return ctx.b.pad(x, low, high, fill)


def _pad_by_positions(ctx: ImportContext, node, x, axis: int, before, fill):
    """``x`` padded along ``axis`` to the length torch computed, ``before`` values first
    (an int or a size expression): position ``p`` reads ``x[p - before]`` where that
    lies inside, else ``fill``."""
    b = ctx.b
    size, length = shape_of(x.type)[axis], ctx.shape(node)[axis]
    positions = ctx.positions(length, [x])
    if before:
        positions = b.sub(positions, ctx.size_value(before))
    inside = ctx.within(positions, ctx.scalar(0, positions), ctx.size_value(size))
    along = [1] * ctx.rank(x)
    along[axis] = length
    return b.where(b.reshape(inside, along), b.take(x, positions, axis), ctx.scalar(fill, x))


@converter("aten.stack.default")
def stack(ctx: ImportContext, node, tensors, dim=0):
    rank = ctx.rank(tensors[0]) + 1
    dim = dim % rank
    pieces = []
    for t in tensors:
        shape = list(shape_of(t.type))
        pieces.append(ctx.b.reshape(ctx.cast(t, ctx.dtype(node)), [*shape[:dim], 1, *shape[dim:]]))
    return ctx.b.concat(pieces, axis=dim)


def _split(ctx: ImportContext, x, sizes, dim):
    dim = dim % ctx.rank(x)
    total = shape_of(x.type)[dim]
    if isinstance(total, str):
        raise NotImplementedError(f"splitting the symbolic axis {dim} ({total})")
    if sum(sizes) != total:
        raise ValueError(f"split sizes {list(sizes)} do not add up to dim {dim} = {total}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(ctx.b.slice(x, [start], [start + size], [dim], [1]))
        start += size
    return tuple(pieces)


@converter("aten.split_with_sizes.default", "aten.split_with_sizes_copy.default")
def split_with_sizes(ctx: ImportContext, node, x, split_sizes, dim=0):
    if any(isinstance(s, str) for s in split_sizes):
        raise NotImplementedError(f"splitting into pieces of symbolic sizes {list(split_sizes)}")
    return _split(ctx, x, [int(s) for s in split_sizes], dim)


@converter("aten.split.Tensor", "aten.split_copy.Tensor")
def split(ctx: ImportContext, node, x, split_size, dim=0):
    total = shape_of(x.type)[dim % ctx.rank(x)]
    if isinstance(total, str):
        raise NotImplementedError(f"splitting the symbolic axis {dim} ({total})")
    sizes = [min(split_size, total - start) for start in range(0, total, split_size)] or [0]
    return _split(ctx, x, sizes, dim)


@converter("aten.chunk.default")
def chunk(ctx: ImportContext, node, x, chunks, dim=0):
    total = shape_of(x.type)[dim % ctx.rank(x)]
    if isinstance(total, str):
        raise NotImplementedError(f"chunking the symbolic axis {dim} ({total})")
    return split(ctx, node, x, max(-(-total // chunks), 1), dim)


@converter("aten.unbind.int", "aten.unbind_copy.int")
def unbind(ctx: ImportContext, node, x, dim=0):
    dim = dim % ctx.rank(x)
    shape = shape_of(x.type)
    if isinstance(shape[dim], str):
        raise NotImplementedError(f"unbinding the symbolic axis {dim} ({shape[dim]})")
    rest = [*shape[:dim], *shape[dim + 1 :]]
    return tuple(ctx.b.reshape(piece, rest) for piece in _split(ctx, x, [1] * shape[dim], dim))


@converter("aten.flip.default", scalars_as_vectors=True)
def flip(ctx: ImportContext, node, x, dims):
    if not dims:
        return x
    return ctx.b.flip(x, [d % ctx.rank(x) for d in dims])


@converter("aten.repeat.default")
def repeat(ctx: ImportContext, node, x, repeats):
    """Tile: each axis ``(d,)`` becomes ``(r, d)`` by broadcasting, then ``r * d`` by a reshape."""
    b = ctx.b
    shape = list(shape_of(x.type))
    if len(repeats) < len(shape):
        raise ValueError(f"repeat: {len(repeats)} repeats for a tensor of rank {len(shape)}")
    shape = [1] * (len(repeats) - len(shape)) + shape
    if all(r == 1 for r in repeats):
        return b.reshape(x, shape) if len(shape) != ctx.rank(x) else x
    interleaved = [d for size in shape for d in (1, size)]
    tiled = [d for r, size in zip(repeats, shape) for d in (r, size)]
    return b.reshape(b.broadcast_to(b.reshape(x, interleaved), tiled), ctx.shape(node))


@converter("aten.masked_scatter.default")
def masked_scatter(ctx: ImportContext, node, x, mask, source):
    """``x`` with the positions ``mask`` marks (broadcast, row-major order) taken from
    ``source``'s elements in order (how vision-language models put image features in place
    of image tokens): position ``i`` reads ``source.flat[cumsum(mask)[i] - 1]``."""
    b = ctx.b
    shape = ctx.shape(node)
    count = dim_arith.product(shape)
    flags = b.reshape(b.broadcast_to(mask, shape), (count,))
    marks = ctx.cast(flags, np.dtype(np.int64))
    available = dim_arith.product(shape_of(source.type))
    enough = b.compare(b.reduce_sum(marks, [0]), ctx.size_value(available), "le")
    b.check(enough, "Number of elements of source < number of ones in mask")  # torch's words
    taken = b.reshape(rows_in_order(ctx, marks, b.reshape(source, (available,)), 0), shape)
    return b.where(b.broadcast_to(mask, shape), taken, b.broadcast_to(x, shape))


@converter("aten.put.default")
def put(ctx: ImportContext, node, x, index, source, accumulate=False):
    """``x`` as a flat array with ``source``'s elements written (added) at ``index``
    (negative entries count from the end), reshaped back."""
    b = ctx.b
    shape = shape_of(x.type)
    count = dim_arith.product(shape)
    updates = dim_arith.product(shape_of(index.type))
    check_indices(ctx, index, count, _indices_of(node, 1), from_end=True)
    flat_index = b.reshape(index, (updates,))
    flat_index = _wrap_clamp(ctx, flat_index, count)
    flat = b.scatter(b.reshape(x, (count,)), flat_index, b.reshape(source, (updates,)), axis=0,
                     mode="add" if accumulate else "update")  # fmt: skip
    return b.reshape(flat, shape)


@converter("aten.nonzero_static.default")
def nonzero_static(ctx: ImportContext, node, x, *, size, fill_value=-1):
    """The coordinates of the first ``size`` non-zero elements in row-major order, rows
    past their count filled with ``fill_value`` (the static-shape ``nonzero``). Element
    ``i`` goes to row ``cumsum(nonzero)[i] - 1``; zeros, and non-zeros past ``size``, to
    one extra row that is cut off: a scatter of each element's (constant) coordinates."""
    b = ctx.b
    shape = shape_of(x.type)
    if not shape:  # a 0-d tensor: no coordinates to list, whatever its value
        return ctx.constant(np.zeros((size, 0), np.int64))
    if not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"nonzero_static of a tensor of shape {tuple(shape)} (static shapes only)")
    count = int(np.prod(shape))
    flags = b.compare(b.reshape(x, (count,)), ctx.scalar(0, x), "ne")
    order = b.sub(b.cumsum(ctx.cast(flags, np.dtype(np.int64)), 0), ctx.constant(np.int64(1)))
    kept = b.bitwise_and(flags, b.compare(order, ctx.constant(np.int64(size)), "lt"))
    row = b.where(kept, order, ctx.constant(np.int64(size)))
    coordinates = np.stack(np.unravel_index(np.arange(count), shape), axis=1).astype(np.int64)
    index = b.broadcast_to(b.reshape(row, (count, 1)), coordinates.shape)
    filled = ctx.constant(np.full((size + 1, len(shape)), fill_value, np.int64))
    placed = b.scatter(filled, index, ctx.constant(coordinates), axis=0, mode="update")
    return b.slice(placed, [0], [size], [0], [1])
