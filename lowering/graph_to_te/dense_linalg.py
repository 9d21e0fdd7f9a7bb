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
from ...dialects.graph.fourier import FFTOp, IRFFTOp, RFFTOp, roots_of_unity, unit_circle
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


def _table(t: TEBuilder, like: SSAValue, *rows: tuple[np.ndarray, np.ndarray]) -> SSAValue:
    """A constant ``(2, total)`` of the (cos, sin) rows side by side, in ``like``'s float
    type (computed in float64, as the references')."""
    table = np.stack([np.concatenate([r[part] for r in rows]) for part in (0, 1)])
    return t.builder.insert(ConstantOp.from_array(table.astype(numpy_dtype(like.type.element_type)), "roots_of_unity")).result


def _kind(inverse: bool, axis: int) -> str:
    return f"{'inverse' if inverse else 'forward'} {'rows' if axis == -1 else 'columns'}"


@compute_rule(FFTOp)
def fft(t: TEBuilder, op: FFTOp) -> SSAValue:
    """The ``fft`` routine on both parts and the roots of unity ``w_n^t``."""
    axis, inverse = op.axis.value.data, bool(op.inverse.value.data)
    roots = _table(t, op.real, roots_of_unity(shape_of(op.real.type)[axis], inverse))
    return t.builder.insert(te.DenseLinalgOp([op.real, op.imag, roots], op.result.type, "fft", kind=_kind(inverse, axis))).result


@compute_rule(RFFTOp)
def rfft(t: TEBuilder, op: RFFTOp) -> SSAValue:
    """The ``rfft`` routine: roots of ``h = n / 2``, then ``cos/2, sin/2`` of
    ``2 pi k / n``, ``k <= h`` (separating the halves)."""
    axis = op.axis.value.data
    h = shape_of(op.input.type)[axis] // 2
    halves = tuple(part / 2 for part in unit_circle(np.arange(h + 1), 2 * h))
    table = _table(t, op.input, roots_of_unity(h, False), halves)
    return t.builder.insert(te.DenseLinalgOp([op.input, table], op.result.type, "rfft", kind=_kind(False, axis))).result


@compute_rule(IRFFTOp)
def irfft(t: TEBuilder, op: IRFFTOp) -> SSAValue:
    """The ``irfft`` routine: inverse roots of ``h``, then ``cos, sin`` of ``2 pi k / n``,
    ``k < h`` (joining the halves)."""
    axis, h = op.axis.value.data, op.length.value.data // 2
    table = _table(t, op.real, roots_of_unity(h, True), unit_circle(np.arange(h), 2 * h))
    operands = [op.real, op.imag, table]
    return t.builder.insert(te.DenseLinalgOp(operands, op.result.type, "irfft", kind=_kind(True, axis))).result
