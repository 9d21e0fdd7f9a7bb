"""TE rules of the dense linear algebra ops (``dialects/graph/dense_linalg.py``,
``factorizations.py``, ``spectral.py``) and the functions computed by iteration
(``polynomials.py``, ``incomplete_gamma.py``):
one ``te.dense_linalg`` each, whose kernel runs the op's sequential algorithm per matrix
or element (``lowering/dense_linalg/``): a ``te.compute`` cannot carry the state of an
elimination (a rotation, a recurrence) from one step to the next. ``graph.fft`` the same
way (its stages read a whole line), with a constant table of roots of unity."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph.dense_linalg import DENSE_LINALG_OPS
from ...dialects.graph.constant import ConstantOp
from ...dialects.graph.factorizations import FACTORIZATION_OPS
from ...dialects.graph.fourier import FFTOp, roots_of_unity
from ...dialects.graph.incomplete_gamma import IncompleteGammaOp
from ...dialects.graph.polynomials import OrthogonalPolynomialOp
from ...dialects.graph.spectral import SPECTRAL_OPS
from ...dialects.graph.types import numpy_dtype, shape_of
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



@compute_rule(FFTOp)
def fft(t: TEBuilder, op: FFTOp) -> SSAValue:
    """The ``fft`` routine on both parts and a constant table of the roots of unity
    ``w_n^t`` (2, n) in their float type (computed in float64, as the reference's)."""
    axis = op.axis.value.data
    n = shape_of(op.real.type)[axis]
    inverse = bool(op.inverse.value.data)
    table = np.stack(roots_of_unity(n, inverse)).astype(numpy_dtype(op.real.type.element_type))
    roots = t.builder.insert(ConstantOp.from_array(table, "roots_of_unity")).result
    kind = f"{'inverse' if inverse else 'forward'} {'rows' if axis == -1 else 'columns'}"
    return t.builder.insert(te.DenseLinalgOp([op.real, op.imag, roots], op.result.type, "fft", kind=kind)).result
