"""TE rules of reductions and softmax: ``te.reduce`` over the reduced axes."""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import SSAValue

from ...dialects.graph import reduce as red
from ...dialects.graph.types import shape_of, tensor_type
from ..te_builder import Scalar, TEBuilder, highest_value, lowest_value
from .registry import compute_rule

_COMBINER = {
    red.ReduceSumOp: "add",
    red.ReduceMeanOp: "add",
    red.ReduceMaxOp: "max",
    red.ReduceMinOp: "min",
    red.ReduceProdOp: "mul",
}


def _init(combiner: str, element_type) -> float | int:
    """The combiner's identity (idle GPU threads contribute it too)."""
    return {"add": 0, "mul": 1, "max": lowest_value(element_type), "min": highest_value(element_type)}[combiner]


def reduce_axes(
    s: Scalar, combiner: str, x: SSAValue, out_idx, axes: tuple[int, ...], keepdims: bool, value=None
) -> SSAValue:
    """Combine ``value(r, x_indices)`` (default: x itself) over ``axes`` of ``x`` for one
    result element at ``out_idx``."""
    rank = len(x.type.get_shape())
    kept = [a for a in range(rank) if a not in axes]
    kept_idx = [out_idx[a] for a in kept] if keepdims else list(out_idx)
    element_type = x.type.element_type

    def term(r: Scalar, red_idx):
        indices = [None] * rank
        for a, i in zip(kept, kept_idx):
            indices[a] = i
        for a, i in zip(axes, red_idx):
            indices[a] = i
        return value(r, indices) if value else r.read(x, indices)

    extents = [s.dim(x, a) for a in axes]
    return s.reduce(combiner, extents, _init(combiner, element_type), term, element_type)


@compute_rule(*_COMBINER)
def reduction(t: TEBuilder, op: red.ReduceOp) -> SSAValue:
    combiner = _COMBINER[type(op)]
    axes, keepdims = op.reduced_axes(), bool(op.keepdims.value.data)

    def element(s: Scalar, idx, ins):
        (x,) = ins
        total = reduce_axes(s, combiner, x, idx, axes, keepdims)
        if isinstance(op, red.ReduceMeanOp):
            count = s.index(1)
            for a in axes:
                count = s.mul(count, s.dim(x, a))
            total = s.div(total, s.index_to(count, x.type.element_type))
        return total

    return t.compute(op.name.removeprefix("graph."), op.result.type, [op.input], element)


def _row_maxima(t: TEBuilder, op: red._SoftmaxBase) -> tuple[SSAValue, int]:
    """The maxima along the softmax axis (kept as size 1), and the axis."""
    x, axis = op.input, op.axis.value.data
    kept = tuple(1 if a == axis else d for a, d in enumerate(shape_of(x.type)))
    kept_type = tensor_type(kept, x.type.element_type)
    maxima = t.compute(
        "softmax_max", kept_type, [x], lambda s, idx, ins: reduce_axes(s, "max", ins[0], idx, (axis,), True)
    )
    return maxima, axis


def _softmax_parts(t: TEBuilder, op: red._SoftmaxBase) -> tuple[SSAValue, SSAValue, int]:
    """Row maxima and sums of exp(x - max) along the softmax axis (kept as size 1)."""
    x = op.input
    maxima, axis = _row_maxima(t, op)

    def exp_sum(s: Scalar, idx, ins):
        data, m = ins
        row_max = s.read(m, idx)
        return reduce_axes(
            s, "add", data, idx, (axis,), True,
            value=lambda r, at: r.math(math.ExpOp, r.sub(r.read(data, at), row_max)),
        )

    sums = t.compute("softmax_sum", maxima.type, [x, maxima], exp_sum)
    return maxima, sums, axis


def _row(s: Scalar, idx, axis: int):
    return [s.index(0) if a == axis else i for a, i in enumerate(idx)]


@compute_rule(red.SoftmaxOp)
def softmax(t: TEBuilder, op: red.SoftmaxOp) -> SSAValue:
    """``exp(x - max)`` is a compute of its own, read by the row sum and the output: a CPU
    kernel computes it once per element, stored in the output row, which the sum then
    reads and the output scales in place (te-to-loop's stash, ``stash_rows``)."""
    x = op.input
    maxima, axis = _row_maxima(t, op)
    exps = t.compute(
        "softmax_exp", x.type, [x, maxima],
        lambda s, idx, ins: s.math(math.ExpOp, s.sub(s.read(ins[0], idx), s.read(ins[1], _row(s, idx, axis)))),
    )  # fmt: skip
    sums = t.compute("softmax_sum", maxima.type, [exps], lambda s, idx, ins: reduce_axes(s, "add", ins[0], idx, (axis,), True))

    def element(s: Scalar, idx, ins):
        e, total = ins
        # times the row's reciprocal (computed once per row after LLVM hoists it), as
        # torch and ONNX Runtime do: a vector division costs 5-10 multiplications
        # (softmax 64x1024, one thread, znver2: 0.117 -> 0.105 ms); at most 1 ulp more
        row_sum = s.read(total, _row(s, idx, axis))
        return s.mul(s.read(e, idx), s.div(s.const(1.0, row_sum.type), row_sum))

    return t.compute("softmax", op.result.type, [exps, sums], element)


@compute_rule(red.LogSoftmaxOp)
def log_softmax(t: TEBuilder, op: red.LogSoftmaxOp) -> SSAValue:
    maxima, sums, axis = _softmax_parts(t, op)

    def element(s: Scalar, idx, ins):
        x, m, total = ins
        row = _row(s, idx, axis)
        return s.sub(s.sub(s.read(x, idx), s.read(m, row)), s.math(math.LogOp, s.read(total, row)))

    return t.compute("log_softmax", op.result.type, [op.input, maxima, sums], element)
