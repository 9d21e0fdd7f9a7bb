"""TE rules of the dense linear algebra ops (solve, triangular_solve, cholesky,
det_factors): one ``te.dense_linalg`` each, whose kernel runs the op's sequential
algorithm per matrix (``lowering/dense_linalg_kernel.py``): a ``te.compute`` cannot
carry the state of an elimination from one column to the next."""

from __future__ import annotations

from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph import dense_linalg as dl
from ..te_builder import TEBuilder
from .registry import compute_rule


@compute_rule(dl.SolveOp, dl.TriangularSolveOp, dl.CholeskyOp, dl.DetFactorsOp)
def dense_linalg(t: TEBuilder, op: dl.SolveOp | dl.TriangularSolveOp | dl.CholeskyOp | dl.DetFactorsOp) -> SSAValue:
    flags = {}
    if isinstance(op, dl.TriangularSolveOp):
        flags = {"lower": bool(op.lower.value.data), "unit_diagonal": bool(op.unit_diagonal.value.data)}
    routine = op.name.removeprefix("graph.")
    return t.builder.insert(te.DenseLinalgOp(list(op.operands), op.result.type, routine, **flags)).result
