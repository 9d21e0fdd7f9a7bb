"""TE rules of the data-movement ops: every element is a read at a computed index."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from ...dialects.graph import shape
from ...dialects.graph.base import ints
from ...dialects.graph.types import shape_of
from ...runtime.dim_expr import is_symbol, lower
from ..te_builder import Scalar, TEBuilder, broadcast_indices
from .registry import compute_rule


class _NotADim(Exception):
    pass


def _reshaped_sizes(s: Scalar, tensor: SSAValue, dims: Sequence[int | str]) -> list[SSAValue]:
    """Index values for the dims of a reshape of ``tensor``: constants, the matching
    symbolic dim of ``tensor``, a dim expression over its symbols (``4*n``) computed from
    them, or -- for one dim at most -- what the element count leaves (numpy's -1)."""
    symbols = {d: axis for axis, d in enumerate(shape_of(tensor.type)) if isinstance(d, str)}
    emit = {
        "+": s.add, "-": s.sub, "*": s.mul, "//": s.floordiv, "%": s.rem, "max": s.max, "min": s.min,
        "neg": lambda x: s.sub(s.index(0), x),
    }  # fmt: skip

    def size(d: int | str) -> SSAValue:
        if isinstance(d, int):
            return s.index(d)
        if d in symbols:
            return s.dim(tensor, symbols[d])
        if is_symbol(d):
            raise _NotADim(d)
        return lower(d, size, emit, s.index)

    sizes: list[SSAValue | None] = []
    for d in dims:
        try:
            sizes.append(size(d))
        except _NotADim:
            sizes.append(None)
    unknown = [k for k, v in enumerate(sizes) if v is None]
    if len(unknown) > 1:
        names = ", ".join(repr(dims[k]) for k in unknown)
        raise NotImplementedError(f"reshape of {tensor.type}: the dims {names} cannot be computed from its dims")
    if unknown:
        count = s.index(1)
        for axis in range(len(shape_of(tensor.type))):
            count = s.mul(count, s.dim(tensor, axis))
        for value in sizes:
            if value is not None:
                count = s.floordiv(count, value)
        sizes[unknown[0]] = count
    return sizes


def _matched_ends(source: Sequence[int | str], target: Sequence[int | str]) -> tuple[dict[int, int | None], range, range]:
    """Input axis -> result axis (None: size 1, index 0) for the dims a reshape keeps at
    either end (equal dims, size-1 dims on either side skipped), and the input's and
    result's axes between them."""
    kept: dict[int, int | None] = {}
    i = j = 0
    while i < len(source) and j < len(target):
        if source[i] == target[j]:
            kept[i] = j
            i, j = i + 1, j + 1
        elif source[i] == 1:
            kept[i], i = None, i + 1
        elif target[j] == 1:
            j += 1
        else:
            break
    end_i, end_j = len(source), len(target)
    while end_i > i and end_j > j:
        if source[end_i - 1] == target[end_j - 1]:
            kept[end_i - 1] = end_j - 1
            end_i, end_j = end_i - 1, end_j - 1
        elif source[end_i - 1] == 1:
            kept[end_i - 1], end_i = None, end_i - 1
        elif target[end_j - 1] == 1:
            end_j -= 1
        else:
            break
    return kept, range(i, end_i), range(j, end_j)


@compute_rule(shape.ReshapeOp)
def reshape(t: TEBuilder, op: shape.ReshapeOp) -> SSAValue:
    target = op.target_shape()

    source = shape_of(op.input.type)
    kept, source_middle, target_middle = _matched_ends(source, target)

    def element(s: Scalar, idx, ins):
        (x,) = ins
        # dims the reshape keeps at either end index the input directly; between them,
        # row-major: the linear offset in the result's middle dims, then the input's
        # (a symbolic batch or sequence kept in front: no division by its size)
        out_sizes = _reshaped_sizes(s, x, target)
        linear = s.index(0)
        for axis in target_middle:
            linear = s.add(s.mul(linear, out_sizes[axis]), idx[axis])
        indices = {a: (s.index(0) if b is None else idx[b]) for a, b in kept.items()}
        for axis in reversed(source_middle):
            size = s.dim(x, axis)
            indices[axis] = s.rem(linear, size)
            linear = s.floordiv(linear, size)
        return s.read(x, [indices[a] for a in range(len(source))])

    return t.compute("reshape", op.result.type, [op.input], element)


@compute_rule(shape.TransposeOp)
def transpose(t: TEBuilder, op: shape.TransposeOp) -> SSAValue:
    perm = ints(op.perm)

    def element(s: Scalar, idx, ins):
        indices = [None] * len(perm)
        for out_axis, in_axis in enumerate(perm):
            indices[in_axis] = idx[out_axis]
        return s.read(ins[0], indices)

    return t.compute("transpose", op.result.type, [op.input], element)


@compute_rule(shape.BroadcastToOp)
def broadcast_to(t: TEBuilder, op: shape.BroadcastToOp) -> SSAValue:
    return t.compute(
        "broadcast_to",
        op.result.type,
        [op.input],
        lambda s, idx, ins: s.read(ins[0], broadcast_indices(s, ins[0].type.get_shape(), idx)),
    )


@compute_rule(shape.ConcatOp)
def concat(t: TEBuilder, op: shape.ConcatOp) -> SSAValue:
    axis = op.axis.value.data

    def element(s: Scalar, idx, ins):
        # select among the inputs by the position on the axis; each read is clamped into
        # its input so that the unselected ones stay in bounds too (sizes may be symbolic)
        position = idx[axis]
        sizes = [s.dim(x, axis) for x in ins]
        offsets = [s.index(0)]
        for size in sizes[:-1]:
            offsets.append(s.add(offsets[-1], size))
        value = None
        for x, size, offset in reversed(list(zip(ins, sizes, offsets))):
            local = s.clamp(s.sub(position, offset), s.index(0), s.sub(size, s.index(1)))
            read = s.read(x, [*idx[:axis], local, *idx[axis + 1 :]])
            value = read if value is None else s.select(s.cmp("lt", position, s.add(offset, size)), read, value)
        return value

    return t.compute("concat", op.result.type, list(op.inputs), element)


@compute_rule(shape.SliceOp)
def slice_(t: TEBuilder, op: shape.SliceOp) -> SSAValue:
    starts = dict(zip(ints(op.axes), ints(op.starts)))
    steps = dict(zip(ints(op.axes), ints(op.steps)))
    symbolic = {a for a, d in enumerate(shape_of(op.input.type)) if isinstance(d, str) and a in starts}

    def index(s: Scalar, x: SSAValue, a: int, i: SSAValue) -> SSAValue:
        if a not in symbolic:
            return s.add(s.index(starts[a]), s.mul(i, s.index(steps[a])))
        # a start counted from the end (shape.SliceOp); clamped into the input, so that
        # no read leaves it even for sizes outside the range the model was exported for
        start = s.index(starts[a]) if starts[a] >= 0 else s.add(s.dim(x, a), s.index(starts[a]))
        return s.clamp(s.add(start, s.mul(i, s.index(steps[a]))), s.index(0), s.sub(s.dim(x, a), s.index(1)))

    def element(s: Scalar, idx, ins):
        return s.read(ins[0], [index(s, ins[0], a, i) if a in starts else i for a, i in enumerate(idx)])

    return t.compute("slice", op.result.type, [op.input], element)
