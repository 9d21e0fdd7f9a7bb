"""TE rules of the dense linear algebra ops (``dialects/graph/dense_linalg.py``,
``factorizations.py``, ``spectral.py``) and the functions computed by iteration
(``polynomials.py``, ``incomplete_gamma.py``):
one ``te.dense_linalg`` each, whose kernel runs the op's sequential algorithm per matrix
or element (``lowering/dense_linalg/``): a ``te.compute`` cannot carry the state of an
elimination (a rotation, a recurrence) from one step to the next."""

from __future__ import annotations

from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph.dense_linalg import DENSE_LINALG_OPS
from ...dialects.graph.factorizations import FACTORIZATION_OPS
from ...dialects.graph.incomplete_gamma import IncompleteGammaOp
from ...dialects.graph.polynomials import OrthogonalPolynomialOp
from ...dialects.graph.spectral import SPECTRAL_OPS
from ..te_builder import TEBuilder
from .registry import compute_rule


@compute_rule(*DENSE_LINALG_OPS, *FACTORIZATION_OPS, *SPECTRAL_OPS, OrthogonalPolynomialOp, IncompleteGammaOp)
def dense_linalg(t: TEBuilder, op) -> SSAValue:
    """The routine named after the op, with its ``lower``/``unit_diagonal`` flags and its
    ``kind`` where it has them."""
    flags = {name: bool(op.properties[name].value.data) for name in ("lower", "unit_diagonal") if name in op.properties}
    if "kind" in op.properties:
        flags["kind"] = op.properties["kind"].data
    routine = op.name.removeprefix("graph.")
    return t.builder.insert(te.DenseLinalgOp(list(op.operands), op.result.type, routine, **flags)).result

