"""TE rules of matmul, batch_matmul, dense and grouped_matmul: a sum over the contraction axis."""

from __future__ import annotations

from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from ...dialects.graph import linalg
from ..te_builder import Scalar, TEBuilder, broadcast_indices
from .indexing import to_index
from .registry import compute_rule


def _dot(s: Scalar, a: SSAValue, a_index, b: SSAValue, b_index, k_extent: SSAValue) -> SSAValue:
    """sum over k of a[a_index(k)] * b[b_index(k)]."""
    element = a.type.element_type
    return s.reduce(
        "add",
        [k_extent],
        0,
        lambda r, axes: r.mul(r.read(a, a_index(axes[0])), r.read(b, b_index(axes[0]))),
        element,
    )


@compute_rule(linalg.MatMulOp)
def matmul(t: TEBuilder, op: linalg.MatMulOp) -> SSAValue:
    def element(s: Scalar, idx, ins):
        (i, j), (a, b) = idx, ins
        return _dot(s, a, lambda k: [i, k], b, lambda k: [k, j], s.dim(a, 1))

    return t.compute("matmul", op.result.type, [op.lhs, op.rhs], element)


@compute_rule(linalg.BatchMatMulOp)
def batch_matmul(t: TEBuilder, op: linalg.BatchMatMulOp) -> SSAValue:
    def element(s: Scalar, idx, ins):
        a, b = ins
        *batch, i, j = idx
        a_batch = broadcast_indices(s, a.type.get_shape()[:-2], batch)
        b_batch = broadcast_indices(s, b.type.get_shape()[:-2], batch)
        rank = len(idx)
        return _dot(
            s, a, lambda k: [*a_batch, i, k], b, lambda k: [*b_batch, k, j], s.dim(a, rank - 1)
        )

    return t.compute("batch_matmul", op.result.type, [op.lhs, op.rhs], element)


@compute_rule(linalg.DenseOp)
def dense(t: TEBuilder, op: linalg.DenseOp) -> SSAValue:
    inputs = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])

    def element(s: Scalar, idx, ins):
        x, w, *bias = ins
        *rows, n = idx
        k_extent = s.dim(x, len(idx) - 1)
        acc = _dot(s, x, lambda k: [*rows, k], w, lambda k: [n, k], k_extent)
        return s.add(acc, s.read(bias[0], [n])) if bias else acc

    return t.compute("dense", op.result.type, inputs, element)


@compute_rule(linalg.GroupedMatMulOp)
def grouped_matmul(t: TEBuilder, op: linalg.GroupedMatMulOp) -> SSAValue:
    """Row (or block) ``i`` reads the matrix of its group (clamped into range, so never
    out of bounds) and is zero when the group is out of range."""

    def element(s: Scalar, idx, ins):
        (i, *rows, j), (a, b, groups) = idx, ins
        group = to_index(s, s.read(groups, [i]))
        count = s.dim(b, 0)
        valid = s.select(s.cmp("lt", group, s.index(0)), s.const(False, i1), s.cmp("lt", group, count))
        at = s.clamp(group, s.index(0), s.sub(count, s.index(1)))
        acc = _dot(s, a, lambda k: [i, *rows, k], b, lambda k: [at, k, j], s.dim(a, len(idx) - 1))
        return s.select(valid, acc, s.const(0, a.type.element_type))

    return t.compute("grouped_matmul", op.result.type, [op.lhs, op.rhs, op.groups], element)
