"""TE rules of the indexing ops: take, gather, scatter, the scans (cumsum/cumprod/logcumsumexp,
cumargmax/cumargmin), argmax/argmin, argsort, flip, pad, full and arange.

Every read at a data-dependent index goes through :func:`safe_index`: negative indices
wrap once (torch), then the index is clamped into ``[0, size)``, so the generated code
never reads outside a buffer whatever the index data is.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, StringAttr, f64, i64
from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph import indexing as ix
from ...dialects.graph.base import ints
from ...dialects.graph.types import is_float, shape_of, tensor_type
from ..te_builder import Scalar, TEBuilder, highest_value, lowest_value
from .registry import compute_rule


def to_index(s: Scalar, value: SSAValue) -> SSAValue:
    """An integer scalar as an ``index`` value."""
    return s.math(arith.IndexCastOp, value, IndexType())


def safe_index(s: Scalar, position: SSAValue, size: SSAValue) -> SSAValue:
    """An index read from data, made safe: ``-1`` is the last element, and anything still
    outside ``[0, size)`` is clamped to the nearest end. The upper end applies first, so
    on an axis that is empty at run time the index is 0 (inside every buffer we allocate:
    never fewer bytes than one element), not -1 (before the buffer)."""
    i = to_index(s, position)
    wrapped = s.select(s.cmp("lt", i, s.index(0)), s.add(i, size), i)
    return s.max(s.min(wrapped, s.sub(size, s.index(1))), s.index(0))


@compute_rule(ix.TakeOp)
def take(t: TEBuilder, op: ix.TakeOp) -> SSAValue:
    axis = op.axis.value.data
    index_rank = len(op.indices.type.get_shape())

    def element(s: Scalar, idx, ins):
        x, indices = ins
        position = s.read(indices, idx[axis : axis + index_rank])
        at = safe_index(s, position, s.dim(x, axis))
        return s.read(x, [*idx[:axis], at, *idx[axis + index_rank :]])

    return t.compute("take", op.result.type, [op.input, op.indices], element)


@compute_rule(ix.GatherOp)
def gather(t: TEBuilder, op: ix.GatherOp) -> SSAValue:
    axis = op.axis.value.data

    def element(s: Scalar, idx, ins):
        x, indices = ins
        at = safe_index(s, s.read(indices, idx), s.dim(x, axis))
        return s.read(x, [*idx[:axis], at, *idx[axis + 1 :]])

    return t.compute("gather", op.result.type, [op.input, op.indices], element)


@compute_rule(ix.ScatterOp)
def scatter(t: TEBuilder, op: ix.ScatterOp) -> SSAValue:
    """A ``te.scatter``: te-to-loop applies the updates line by line (``scatter_kernel.py``),
    ``O(input + indices)``, where a ``te.compute`` would scan all the updates of a line
    for each of its elements."""
    scatter = te.ScatterOp(
        op.input, op.indices, op.updates, op.axis.value.data, op.mode.data, bool(op.include_self.value.data)
    )
    return t.builder.insert(scatter).result


#: each scan's te.scan combiner
_SCANS: dict[type[ix.ScanOp | ix.ScanIndexOp], str] = {
    ix.CumsumOp: "add",
    ix.CumprodOp: "mul",
    ix.LogcumsumexpOp: "logaddexp",
    ix.CumargmaxOp: "argmax",
    ix.CumargminOp: "argmin",
}


@compute_rule(*_SCANS)
def scan(t: TEBuilder, op: ix.ScanOp | ix.ScanIndexOp) -> SSAValue:
    """A ``te.scan``: te-to-loop carries one running value along each line
    (``scan_kernel.py``), ``O(n)`` along the axis, where a ``te.compute`` would combine
    each element's whole prefix, ``O(n^2)``."""
    scan = te.ScanOp(op.input, op.axis.value.data, _SCANS[type(op)])
    scan.attributes["tag"] = StringAttr(op.name.removeprefix("graph."))
    return t.builder.insert(scan).result


def _is_nan(s: Scalar, v: SSAValue) -> SSAValue:
    return s.cmp("ne", v, v)


def _or(s: Scalar, a: SSAValue, b: SSAValue) -> SSAValue:
    return s.math(arith.OrIOp, a, b)


def _and(s: Scalar, a: SSAValue, b: SSAValue) -> SSAValue:
    return s.math(arith.AndIOp, a, b)


@compute_rule(ix.ArgMaxOp, ix.ArgMinOp)
def arg_reduce(t: TEBuilder, op: ix.ArgReduceOp) -> SSAValue:
    """Two reductions in one element: the extreme value (NaN propagates, as torch), then
    the smallest index whose element equals it (or is NaN when the extreme is NaN)."""
    axis, keepdims = op.axis.value.data, bool(op.keepdims.value.data)
    element_type = op.input.type.element_type
    combiner = op.KIND
    init = lowest_value(element_type) if combiner == "max" else highest_value(element_type)

    def element(s: Scalar, idx, ins):
        (x,) = ins
        outer = list(idx) if keepdims else [*idx[:axis], None, *idx[axis:]]
        n = s.dim(x, axis)

        def at(r: Scalar, k: SSAValue) -> list[SSAValue]:
            return [k if a == axis else i for a, i in enumerate(outer)]

        extreme = s.reduce(combiner, [n], init, lambda r, red: r.read(x, at(r, red[0])), element_type)

        def first(r: Scalar, red):
            v = r.read(x, at(r, red[0]))
            hit = r.cmp("eq", v, extreme)
            if is_float(element_type):
                hit = _or(r, hit, _is_nan(r, v))
            return r.select(hit, r.index_to(red[0], i64), r.const(highest_value(i64), i64))

        return s.reduce("min", [n], highest_value(i64), first, i64)

    return t.compute(op.name.removeprefix("graph."), op.result.type, [op.input], element)


def _comes_before(s: Scalar, a: SSAValue, b: SSAValue, ia: SSAValue, ib: SSAValue, descending: bool) -> SSAValue:
    """Does the element ``a`` at index ``ia`` sort before ``b`` at ``ib``? (stable; NaN largest)"""
    strictly = s.cmp("gt" if descending else "lt", a, b)
    tie = s.cmp("eq", a, b)
    if is_float(a.type):
        nan_a, nan_b = _is_nan(s, a), _is_nan(s, b)
        true = s.const(True, nan_a.type)
        nan_wins = _and(s, nan_a, s.math(arith.XOrIOp, nan_b, true))  # a is NaN, b is not
        nan_loses = _and(s, nan_b, s.math(arith.XOrIOp, nan_a, true))
        strictly = _or(s, strictly, nan_wins if descending else nan_loses)
        tie = _or(s, tie, _and(s, nan_a, nan_b))
    return _or(s, strictly, _and(s, tie, s.cmp("lt", ia, ib)))


#: the longest static axis argsort sorts by ranks (O(n^2), but vectorized); longer and
#: symbolic ones are merge-sorted (te.sort, O(n log n), one serial line at a time)
RANK_SORT_MAX = 128
#: the largest k a long axis's top-k keeps by insertion as it reads each line once
#: (O(n + insertions * k)); larger ones sort the whole line
TOP_K_INSERTION_MAX = 64


@compute_rule(ix.ArgsortOp)
def argsort(t: TEBuilder, op: ix.ArgsortOp) -> SSAValue:
    """A short axis: O(n^2), in two computes, the rank of each element (how many sort
    before it), then for each output position the index whose rank it is. A long one:
    ``te.sort``: a merge sort, or, for a small ``k``, the best ``k`` kept by insertion."""
    axis = op.axis.value.data
    descending = bool(op.descending.value.data)
    length = shape_of(op.input.type)[axis]
    if not isinstance(length, int) or length > RANK_SORT_MAX:
        if op.k is not None and op.k.value.data <= TOP_K_INSERTION_MAX:
            return t.builder.insert(te.SortOp(op.input, axis, descending, op.k.value.data, op.result.type)).result
        order = t.builder.insert(te.SortOp(op.input, axis, descending)).result
        if op.k is None:
            return order

        def first_k(s: Scalar, idx, ins):
            (o,) = ins
            return s.read(o, idx)

        return t.compute("sorted_prefix", op.result.type, [order], first_k)
    ranks_type = tensor_type(shape_of(op.input.type), i64)

    def rank(s: Scalar, idx, ins):
        (x,) = ins
        mine = s.read(x, idx)

        def term(r: Scalar, red):
            other = r.read(x, [red[0] if a == axis else i for a, i in enumerate(idx)])
            before = _comes_before(r, other, mine, red[0], idx[axis], descending)
            return r.cast(before, i64)

        return s.reduce("add", [s.dim(x, axis)], 0, term, i64)

    ranks = t.compute("argsort_rank", ranks_type, [op.input], rank)

    def position(s: Scalar, idx, ins):
        (r_,) = ins
        p = s.index_to(idx[axis], i64)
        n = s.dim(r_, axis)

        def term(r: Scalar, red):
            hit = r.cmp("eq", r.read(r_, [red[0] if a == axis else i for a, i in enumerate(idx)]), p)
            return r.select(hit, r.index_to(red[0], i64), r.const(highest_value(i64), i64))

        found = s.reduce("min", [n], highest_value(i64), term, i64)
        return s.min(found, s.index_to(s.sub(n, s.index(1)), i64))  # ranks are a permutation: always found

    return t.compute("argsort", op.result.type, [ranks], position)


@compute_rule(ix.FlipOp)
def flip(t: TEBuilder, op: ix.FlipOp) -> SSAValue:
    axes = set(ints(op.axes))

    def element(s: Scalar, idx, ins):
        (x,) = ins
        at = [s.sub(s.sub(s.dim(x, a), s.index(1)), i) if a in axes else i for a, i in enumerate(idx)]
        return s.read(x, at)

    return t.compute("flip", op.result.type, [op.input], element)


@compute_rule(ix.PadOp)
def pad(t: TEBuilder, op: ix.PadOp) -> SSAValue:
    low, high = ints(op.low), ints(op.high)
    padded = [a for a, (lo, hi) in enumerate(zip(low, high)) if lo or hi]
    element_type = op.input.type.element_type
    value = ix.scalar_value(op.value)
    empty = any(d == 0 for d in shape_of(op.input.type))

    def element(s: Scalar, idx, ins):
        fill = s.const(value, element_type)
        if empty:  # nothing to read: every element is padding
            return fill
        at = [s.sub(i, s.index(low[a])) if a in padded else i for a, i in enumerate(idx)]
        return s.read_padded(ins[0], at, padded, fill)

    return t.compute("pad", op.result.type, [op.input], element)


@compute_rule(ix.FullOp)
def full(t: TEBuilder, op: ix.FullOp) -> SSAValue:
    value, element_type = ix.scalar_value(op.value), op.value.type
    return t.compute("full", op.result.type, [], lambda s, idx, ins: s.const(value, element_type))


@compute_rule(ix.ArangeOp)
def arange(t: TEBuilder, op: ix.ArangeOp) -> SSAValue:
    start, step = ix.scalar_value(op.start), ix.scalar_value(op.step)
    element_type = op.start.type

    def element(s: Scalar, idx, ins):
        if not is_float(element_type):
            return s.add(s.const(start, element_type), s.mul(s.index_to(idx[0], element_type), s.const(step, element_type)))
        # in f64, then rounded once (as torch computes float aranges)
        value = s.add(s.const(start, f64), s.mul(s.index_to(idx[0], f64), s.const(step, f64)))
        return s.cast(value, element_type)

    return t.compute("arange", op.result.type, [], element)

