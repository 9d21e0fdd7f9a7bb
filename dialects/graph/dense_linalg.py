"""Small dense linear algebra on batches of matrices: solve (LU with partial pivoting),
triangular_solve, cholesky, det_factors (whose product is the determinant) and
repeated_squaring (``r^(2^s)``, for ``matrix_exp``).

Each op works on the last two axes; leading axes are a batch (broadcast between the two
operands of a solve, numpy's rules). Float element types. Each is lowered to
``te.dense_linalg``, one loop kernel running the sequential algorithm per matrix with
the batch loops outermost (``lowering/dense_linalg_kernel.py``).

Singular inputs: a kernel cannot raise, so a zero pivot gives infinities or NaNs in
``solve``, and a matrix that is not positive definite gives NaNs in ``cholesky``
(torch raises for both); ``det_factors`` holds an exact zero for an exactly singular
matrix (the determinant is 0, as torch's). The numpy references run the same algorithm.

Examples::

    %x = graph.solve %a, %b : tensor<2x5x5xf32>, tensor<5x3xf32> -> tensor<2x5x3xf32>
    %y = graph.triangular_solve %l, %b {lower = true} : tensor<5x5xf64>, tensor<5x1xf64> -> tensor<5x1xf64>
    %l = graph.cholesky %a : tensor<4x4xf32>
    %f = graph.det_factors %a : tensor<2x4x4xf32> -> tensor<2x4xf32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import BoolAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, expect_same_element, operand_shape
from .types import Shape, broadcast_shapes, format_shape, is_float, tensor_type


def _square(what: str, shape: Shape) -> None:
    """``shape`` is a batch of square matrices ``(..., n, n)``."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise VerifyException(f"{what} must be a batch of square matrices (..., n, n), got shape {format_shape(shape)}")


def _float_element(what: str, *types) -> object:
    element = expect_same_element(what, *types)
    if not is_float(element):
        raise VerifyException(f"{what} must be float tensors, got {element}")
    return element


def _solve_shape(a: Shape, b: Shape) -> Shape:
    """``(batch..., n, k)``: ``a`` is ``(..., n, n)``, ``b`` is ``(..., n, k)``, batches broadcast."""
    _square("a", a)
    if len(b) < 2 or b[-2] != a[-1]:
        raise VerifyException(
            f"b must be (..., {a[-1]}, k) for a of shape {format_shape(a)}, got shape {format_shape(b)}"
        )
    return (*broadcast_shapes(a[:-2], b[:-2]), b[-2], b[-1])


# ---------------------------------------------------------------------------
# numpy references: the kernels' algorithms, vectorized over the batch


def _batched(a: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, tuple[int, ...]]:
    """Copies of ``a`` (and ``b``) broadcast to their common batch and flattened to one batch axis."""
    batch = np.broadcast_shapes(a.shape[:-2], *([b.shape[:-2]] if b is not None else []))
    a = np.broadcast_to(a, (*batch, *a.shape[-2:])).reshape(-1, *a.shape[-2:]).copy()
    if b is not None:
        b = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:]).copy()
    return a, b, batch


def _swap_rows(m: np.ndarray, j: int, p: np.ndarray) -> None:
    batch = np.arange(m.shape[0])
    row_j, row_p = m[batch, j].copy(), m[batch, p].copy()
    m[batch, j], m[batch, p] = row_p, row_j


def eliminate(w: np.ndarray, x: np.ndarray | None) -> np.ndarray:
    """Gaussian elimination with partial pivoting of each ``w`` (``(batch, n, n)``, in
    place: its upper triangle becomes U), applying the same row operations to ``x``;
    returns the signed pivots (``(batch, n)``: U's diagonal, each negated when its step
    swapped two rows). The pivot is the first row of largest ``|value|`` at or below the
    diagonal; a zero pivot skips its column's elimination (LAPACK's getrf)."""
    n = w.shape[-1]
    factors = np.empty(w.shape[:-1], w.dtype)
    with np.errstate(all="ignore"):
        for j in range(n):
            best, p = np.abs(w[:, j, j]), np.full(w.shape[0], j)
            for r in range(j + 1, n):
                v = np.abs(w[:, r, j])
                take = v > best
                best, p = np.where(take, v, best), np.where(take, r, p)
            _swap_rows(w, j, p)
            if x is not None:
                _swap_rows(x, j, p)
            pivot = w[:, j, j]
            factors[:, j] = np.where(p != j, -pivot, pivot)
            singular = (pivot == 0)[:, None]
            m = np.where(singular, 0, w[:, j + 1 :, j] / np.where(singular, 1, pivot[:, None]))
            w[:, j + 1 :, j + 1 :] -= m[:, :, None] * w[:, j, None, j + 1 :]
            if x is not None:
                x[:, j + 1 :, :] -= m[:, :, None] * x[:, j, None, :]
    return factors


def substitute(t: np.ndarray, x: np.ndarray, lower: bool, unit_diagonal: bool) -> None:
    """Solve ``t x' = x`` in place for each triangular ``t`` (only its ``lower`` or upper
    triangle read), column by column (``x[j] /= t[j, j]``, then ``x[r] -= t[r, j] x[j]``
    for the rows ``r`` still to solve)."""
    n = t.shape[-1]
    with np.errstate(all="ignore"):
        for j in range(n) if lower else range(n - 1, -1, -1):
            if not unit_diagonal:
                x[:, j, :] /= t[:, j, j, None]
            rows = slice(j + 1, n) if lower else slice(0, j)
            x[:, rows, :] -= t[:, rows, j, None] * x[:, j, None, :]


def cholesky_lower(a: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = a`` (each ``(batch, n, n)``, lower triangle read), column by
    column; NaNs where ``a`` is not positive definite."""
    n = a.shape[-1]
    out = np.zeros_like(a)
    with np.errstate(all="ignore"):
        for j in range(n):
            d = np.sqrt(a[:, j, j] - np.sum(out[:, j, :j] * out[:, j, :j], axis=-1))
            out[:, j, j] = d
            out[:, j + 1 :, j] = (a[:, j + 1 :, j] - np.sum(out[:, j + 1 :, :j] * out[:, j, None, :j], axis=-1)) / d[:, None]
    return out


# ---------------------------------------------------------------------------
# ops


@irdl_op_definition
class SolveOp(GraphOp):
    """``x`` with ``a x = b`` for each square ``a`` ``(..., n, n)`` and ``b`` ``(..., n, k)``
    (batches broadcast): Gaussian elimination with partial pivoting, then back
    substitution. The inverse of ``a`` is ``solve(a, I)``.

    Example: ``%x = graph.solve %a, %b : tensor<2x5x5xf32>, tensor<5x3xf32> -> tensor<2x5x3xf32>``
    """

    name = "graph.solve"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation):
        self._build([a, b])

    def infer_result_type(self) -> TensorType:
        element = _float_element("a and b", self.a.type, self.b.type)
        return tensor_type(_solve_shape(operand_shape(self.a), operand_shape(self.b)), element)

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        w, x, batch = _batched(a, b)
        eliminate(w, x)
        substitute(w, x, lower=False, unit_diagonal=False)
        return x.reshape(*batch, *x.shape[-2:])


@irdl_op_definition
class TriangularSolveOp(GraphOp):
    """``x`` with ``a x = b`` for each triangular ``a`` ``(..., n, n)`` (only its ``lower``
    or upper triangle is read; with ``unit_diagonal`` its diagonal is taken as ones) and
    ``b`` ``(..., n, k)``, batches broadcast: forward or back substitution.

    Example: ``%y = graph.triangular_solve %l, %b {lower = true} : tensor<5x5xf64>, tensor<5x1xf64> -> tensor<5x1xf64>``
    """

    name = "graph.triangular_solve"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    lower = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    unit_diagonal = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, lower: bool, unit_diagonal: bool = False):
        self._build(
            [a, b], {"lower": BoolAttr.from_bool(lower), "unit_diagonal": BoolAttr.from_bool(unit_diagonal)}
        )

    def infer_result_type(self) -> TensorType:
        element = _float_element("a and b", self.a.type, self.b.type)
        return tensor_type(_solve_shape(operand_shape(self.a), operand_shape(self.b)), element)

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        t, x, batch = _batched(a, b)
        substitute(t, x, bool(self.lower.value.data), bool(self.unit_diagonal.value.data))
        return x.reshape(*batch, *x.shape[-2:])


@irdl_op_definition
class CholeskyOp(GraphOp):
    """The lower triangular ``l`` with ``l l^T = a`` for each symmetric positive definite
    ``a`` ``(..., n, n)``; only ``a``'s lower triangle is read, ``l``'s upper triangle is
    zero (no pivoting).

    Example: ``%l = graph.cholesky %a : tensor<4x4xf32>``
    """

    name = "graph.cholesky"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, input: SSAValue | Operation):
        self._build([input])

    def infer_result_type(self) -> TensorType:
        _square("input", operand_shape(self.input))
        _float_element("input", self.input.type)
        return self.input.type

    def reference(self, a: np.ndarray) -> np.ndarray:
        w, _, batch = _batched(a, None)
        return cholesky_lower(w).reshape(*batch, *a.shape[-2:])


class MatrixOp(GraphOp):
    """The shape of the ops of one batch of matrices (``%r = graph.x %a : type -> type``):
    one operand ``input``, one result whose type is inferred, an opaque kernel."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, input: SSAValue | Operation):
        self._build([input])


@irdl_op_definition
class DetFactorsOp(MatrixOp):
    """The signed pivots of each square ``a`` ``(..., n, n)`` -> ``(..., n)``: the diagonal
    of ``U`` in its LU factorization with partial pivoting, each pivot negated when its
    step swapped two rows, so that their product is ``det(a)``, the product of their
    signs is the sign of ``det(a)`` and the sum of their ``log |.|`` is ``log |det(a)|``.
    An exactly singular matrix has a zero factor.

    Example: ``%f = graph.det_factors %a : tensor<2x4x4xf32> -> tensor<2x4xf32>``
    """

    name = "graph.det_factors"

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        _square("input", shape)
        return tensor_type(shape[:-1], _float_element("input", self.input.type))

    def reference(self, a: np.ndarray) -> np.ndarray:
        w, _, batch = _batched(a, None)
        return eliminate(w, None).reshape(*batch, a.shape[-1])


def square_repeatedly(r: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each ``r`` (batch, n, n) squared ``counts`` (batch,) times, products summed in
    order (the kernel's)."""
    out = r.copy()
    with np.errstate(all="ignore"):
        for b, count in enumerate(counts):
            for _ in range(int(count)):
                square = np.zeros_like(out[b])
                for k in range(out.shape[-1]):
                    square += out[b, :, k, None] * out[b, None, k, :]
                out[b] = square
    return out


@irdl_op_definition
class RepeatedSquaringOp(GraphOp):
    """``r^(2^s)``: each square ``r`` ``(..., n, n)`` squared ``s`` times, ``s`` ``(...)``
    a count per matrix (in ``r``'s float type, integral; negatives and NaN count as 0,
    at most :data:`MAX_SQUARINGS`). The last step of a scaling-and-squaring method
    (``matrix_exp``); batches broadcast.

    Example: ``%e = graph.repeated_squaring %r, %s : tensor<8x3x3xf32>, tensor<8xf32> -> tensor<8x3x3xf32>``
    """

    name = "graph.repeated_squaring"
    r = operand_def(TensorType)
    counts = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$r `,` $counts attr-dict `:` type($r) `,` type($counts) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, r: SSAValue | Operation, counts: SSAValue | Operation):
        self._build([r, counts])

    def infer_result_type(self) -> TensorType:
        r, counts = operand_shape(self.r), operand_shape(self.counts)
        _square("r", r)
        element = _float_element("r and counts", self.r.type, self.counts.type)
        return tensor_type((*broadcast_shapes(r[:-2], counts), *r[-2:]), element)

    def reference(self, r: np.ndarray, counts: np.ndarray) -> np.ndarray:
        batch = np.broadcast_shapes(r.shape[:-2], counts.shape)
        flat = np.broadcast_to(r, (*batch, *r.shape[-2:])).reshape(-1, *r.shape[-2:])
        with np.errstate(invalid="ignore"):
            steps = np.clip(np.nan_to_num(np.broadcast_to(counts, batch).reshape(-1), nan=0.0), 0, MAX_SQUARINGS)
        return square_repeatedly(flat, steps).reshape(*batch, *r.shape[-2:])


#: the most squarings ``graph.repeated_squaring`` does (a float's exponent range is spent well before)
MAX_SQUARINGS = 1100


DENSE_LINALG_OPS: tuple[type[GraphOp], ...] = (SolveOp, TriangularSolveOp, CholeskyOp, DetFactorsOp, RepeatedSquaringOp)
