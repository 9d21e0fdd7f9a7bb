"""Matrix factorizations in LAPACK's packed forms: LU with partial pivoting (``getrf``),
the permutation its pivots stand for, Householder QR (``geqrf``) and the product of its
reflectors (``orgqr``). On batches of matrices (the last two axes), float element types,
static matrix sizes; each is one ``te.dense_linalg`` kernel running the algorithm per
matrix (``lowering/dense_linalg/``), whose steps the numpy references here repeat.

An op has one result, so a factorization and its vector of pivots or scalings travel
together: the result has one more row, the last, whose first ``min(m, n)`` entries are
the vector (the rest zero)::

    %lu = graph.lu_factor %a : tensor<2x5x3xf32> -> tensor<2x6x3xf32>      // rows 0..4: L\\U, row 5: pivots
    %p = graph.pivot_permutation %piv {size = 5} : tensor<2x3xi32> -> tensor<2x5xi32>
    %qr = graph.householder_qr %a : tensor<7x4xf64> -> tensor<8x4xf64>      // rows 0..6: R and reflectors, row 7: tau
    %q = graph.householder_product %v, %tau : tensor<7x4xf64>, tensor<4xf64> -> tensor<7x4xf64>

The torch frontend slices these apart (``frontends/torch/ops/decompositions.py``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import ParsePropInAttrDict, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, operand_shape
from .dense_linalg import MatrixOp, _batched, _float_element
from .types import Shape, broadcast_shapes, element_type, format_shape, is_int, tensor_type


def _static_matrices(what: str, shape: Shape) -> tuple[int, int]:
    """``(m, n)`` of a batch of matrices ``(..., m, n)`` of static size."""
    if len(shape) < 2:
        raise VerifyException(f"{what} must be a batch of matrices (..., m, n), got shape {format_shape(shape)}")
    m, n = shape[-2:]
    if not isinstance(m, int) or not isinstance(n, int):
        raise VerifyException(f"{what} needs a static matrix size, got shape {format_shape(shape)}")
    return m, n


def _with_vector_row(factored: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``factored`` (batch, m, n) with one more row holding ``vector`` (batch, k <= n)."""
    row = np.zeros((factored.shape[0], 1, factored.shape[2]), factored.dtype)
    row[:, 0, : vector.shape[1]] = vector
    return np.concatenate([factored, row], axis=1)


# ---------------------------------------------------------------------------
# numpy references (vectorized over the batch)


def lu_in_place(w: np.ndarray) -> np.ndarray:
    """LU with partial pivoting of each ``w`` (batch, m, n), in place: L's multipliers
    below the diagonal, U on and above it. Returns the pivots (batch, min(m, n)), each
    the 1-based row swapped with row ``j`` at step ``j`` (LAPACK's ``ipiv``): the first
    row of largest ``|value|`` at or below the diagonal. A zero pivot leaves its column
    (all zeros at and below the diagonal) as it is."""
    m, n = w.shape[-2:]
    k = min(m, n)
    pivots = np.empty((w.shape[0], k), w.dtype)
    batch = np.arange(w.shape[0])
    with np.errstate(all="ignore"):
        for j in range(k):
            column = np.abs(w[:, j:, j])
            p = j + np.argmax(column, axis=1)  # argmax: the first largest
            pivots[:, j] = p + 1
            row_j, row_p = w[batch, j].copy(), w[batch, p].copy()
            w[batch, j], w[batch, p] = row_p, row_j
            pivot = w[:, j, j]
            singular = (pivot == 0)[:, None]
            w[:, j + 1 :, j] = np.where(singular, 0, w[:, j + 1 :, j] / np.where(singular, 1, pivot[:, None]))
            w[:, j + 1 :, j + 1 :] -= w[:, j + 1 :, j, None] * w[:, j, None, j + 1 :]
    return pivots


def permutation_of_pivots(pivots: np.ndarray, size: int) -> np.ndarray:
    """The row order ``perm`` (batch, size) that the row swaps ``j <-> pivots[j] - 1``
    make of ``0..size-1``, in order: ``(P^T a)[i] = a[perm[i]]``. Pivots outside
    ``[1, size]`` are clamped into it."""
    perm = np.broadcast_to(np.arange(size, dtype=pivots.dtype), (pivots.shape[0], size)).copy()
    batch = np.arange(pivots.shape[0])
    for j in range(pivots.shape[1]):
        p = np.clip(pivots[:, j].astype(np.int64) - 1, 0, size - 1)
        at_j, at_p = perm[batch, j].copy(), perm[batch, p].copy()
        perm[batch, j], perm[batch, p] = at_p, at_j
    return perm


def _dots(top: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``top + v^T w`` (batch, columns): ``(1, v)`` times the rows ``(top, w)``, summed
    row by row in order, as the kernel does."""
    total = top.copy()
    for r in range(w.shape[1]):
        total += v[:, r, None] * w[:, r]
    return total


def householder_in_place(w: np.ndarray) -> np.ndarray:
    """Householder QR of each ``w`` (batch, m, n), in place (LAPACK's ``geqr2``): R on and
    above the diagonal, below it each reflector ``v`` (its leading 1 implied). Returns
    ``tau`` (batch, min(m, n)): ``H_j = I - tau_j v v^T``. Step ``j`` maps the column's
    ``(alpha, x)`` to ``(beta, 0)``, ``beta = -sign(alpha) |(alpha, x)|`` (``dlarfg``);
    ``x = 0`` leaves it (``tau = 0``)."""
    m, n = w.shape[-2:]
    k = min(m, n)
    taus = np.zeros((w.shape[0], k), w.dtype)
    with np.errstate(all="ignore"):
        for j in range(k):
            alpha = w[:, j, j].copy()
            below = np.sum(w[:, j + 1 :, j] ** 2, axis=1)
            plain = below == 0
            norm = np.sqrt(alpha * alpha + below)
            beta = np.where(plain, alpha, np.where(alpha < 0, norm, -norm))
            tau = np.where(plain, 0, (beta - alpha) / beta)
            scale = np.where(plain, 1, 1 / (alpha - beta))
            w[:, j + 1 :, j] *= scale[:, None]
            w[:, j, j] = beta
            taus[:, j] = tau
            # apply H_j to the columns on the right: c -= tau v (v . c)
            dots = _dots(w[:, j, j + 1 :], w[:, j + 1 :, j], w[:, j + 1 :, j + 1 :])
            w[:, j, j + 1 :] -= tau[:, None] * dots
            w[:, j + 1 :, j + 1 :] -= tau[:, None, None] * w[:, j + 1 :, j, None] * dots[:, None, :]
    return taus


def householder_product(v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The first ``n`` columns of ``H_0 H_1 ... H_{k-1}`` (LAPACK's ``org2r``) for the
    reflectors below the diagonal of ``v`` (batch, m, n) and ``tau`` (batch, k): the
    identity's columns with ``H_{k-1}`` applied first."""
    m, n = v.shape[-2:]
    k = tau.shape[-1]
    q = np.broadcast_to(np.eye(m, n, dtype=v.dtype), v.shape).copy()
    for i in range(k - 1, -1, -1):
        below = v[:, i + 1 :, i]
        dots = _dots(q[:, i, i:], below, q[:, i + 1 :, i:])
        q[:, i, i:] -= tau[:, i, None] * dots
        q[:, i + 1 :, i:] -= tau[:, i, None, None] * below[:, :, None] * dots[:, None, :]
    return q


# ---------------------------------------------------------------------------
# ops


class _PackedFactorizationOp(MatrixOp):
    """A factorization of each ``a`` ``(..., m, n)`` in place, its vector of ``min(m, n)``
    pivots or scalings in one more row: ``(..., m + 1, n)``."""

    #: the numpy reference: factor each (batch, m, n) matrix in place, return the vectors
    FACTOR_IN_PLACE: ClassVar[staticmethod]

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        m, n = _static_matrices("input", shape)
        return tensor_type((*shape[:-2], m + 1, n), _float_element("input", self.input.type))

    def reference(self, a: np.ndarray) -> np.ndarray:
        w, _, batch = _batched(a, None)
        vectors = type(self).FACTOR_IN_PLACE(w)
        return _with_vector_row(w, vectors).reshape(*batch, a.shape[-2] + 1, a.shape[-1])


@irdl_op_definition
class LUFactorOp(_PackedFactorizationOp):
    """LU with partial pivoting of each ``a`` ``(..., m, n)`` -> ``(..., m + 1, n)``: rows
    ``0..m-1`` hold L (unit diagonal implied) and U packed as LAPACK's ``getrf``, row
    ``m`` the ``min(m, n)`` pivots (1-based rows, in the element type; the rest zero).
    ``a = P L U`` with ``P`` the permutation of the pivots' swaps (``graph.pivot_permutation``).
    A zero pivot (a singular matrix) leaves U's diagonal 0 there.

    Example: ``%lu = graph.lu_factor %a : tensor<2x5x3xf32> -> tensor<2x6x3xf32>``
    """

    name = "graph.lu_factor"
    FACTOR_IN_PLACE: ClassVar = staticmethod(lu_in_place)


@irdl_op_definition
class PivotPermutationOp(GraphOp):
    """The row order of ``size`` rows after the swaps ``j <-> pivots[j] - 1`` (LAPACK's
    1-based ``ipiv``), in order: ``(..., k)`` -> ``(..., size)`` of the pivots' integer
    type, with ``(P^T a)[i] = a[perm[i]]``. Pivots outside ``[1, size]`` are clamped.

    Example: ``%p = graph.pivot_permutation %piv {size = 5} : tensor<2x3xi32> -> tensor<2x5xi32>``
    """

    name = "graph.pivot_permutation"
    pivots = operand_def(TensorType)
    size = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$pivots attr-dict `:` type($pivots) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, pivots: SSAValue | Operation, size: int):
        self._build([pivots], {"size": IntegerAttr(size, i64)})

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.pivots)
        element = element_type(self.pivots.type)
        size = self.size.value.data
        if len(shape) < 1 or not is_int(element):
            raise VerifyException(f"pivots must be integers of at least one axis, got {self.pivots.type}")
        if isinstance(shape[-1], int) and shape[-1] > size:
            raise VerifyException(f"{shape[-1]} pivots for {size} rows: at most one swap per row")
        return tensor_type((*shape[:-1], size), element)

    def reference(self, pivots: np.ndarray) -> np.ndarray:
        flat = pivots.reshape(-1, pivots.shape[-1])
        size = self.size.value.data
        return permutation_of_pivots(flat, size).reshape(*pivots.shape[:-1], size)


@irdl_op_definition
class HouseholderQROp(_PackedFactorizationOp):
    """Householder QR of each ``a`` ``(..., m, n)`` -> ``(..., m + 1, n)``: rows ``0..m-1``
    as LAPACK's ``geqrf`` (R on and above the diagonal, the reflectors below), row ``m``
    the ``min(m, n)`` scalings ``tau`` (the rest zero). R's diagonal has LAPACK's signs.

    Example: ``%qr = graph.householder_qr %a : tensor<7x4xf64> -> tensor<8x4xf64>``
    """

    name = "graph.householder_qr"
    FACTOR_IN_PLACE: ClassVar = staticmethod(householder_in_place)


@irdl_op_definition
class HouseholderProductOp(GraphOp):
    """The first ``n`` columns of ``H_0 ... H_{k-1}``, ``H_j = I - tau_j v_j v_j^T``, for
    the reflectors ``v_j`` below the diagonal of ``v`` ``(..., m, n)`` (leading 1 implied,
    ``m >= n``) and ``tau`` ``(..., k)``, ``k <= n`` (LAPACK's ``orgqr``); batches broadcast.

    Example: ``%q = graph.householder_product %v, %tau : tensor<7x4xf64>, tensor<4xf64> -> tensor<7x4xf64>``
    """

    name = "graph.householder_product"
    v = operand_def(TensorType)
    tau = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$v `,` $tau attr-dict `:` type($v) `,` type($tau) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, v: SSAValue | Operation, tau: SSAValue | Operation):
        self._build([v, tau])

    def infer_result_type(self) -> TensorType:
        v, tau = operand_shape(self.v), operand_shape(self.tau)
        m, n = _static_matrices("v", v)
        element = _float_element("v and tau", self.v.type, self.tau.type)
        if m < n:
            raise VerifyException(f"v must have at least as many rows as columns, got shape {format_shape(v)}")
        if len(tau) < 1 or not isinstance(tau[-1], int) or tau[-1] > n:
            raise VerifyException(f"tau must be (..., k) with a static k <= {n}, got shape {format_shape(tau)}")
        return tensor_type((*broadcast_shapes(v[:-2], tau[:-1]), m, n), element)

    def reference(self, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        batch = np.broadcast_shapes(v.shape[:-2], tau.shape[:-1])
        vs = np.broadcast_to(v, (*batch, *v.shape[-2:])).reshape(-1, *v.shape[-2:])
        taus = np.broadcast_to(tau, (*batch, tau.shape[-1])).reshape(-1, tau.shape[-1])
        return householder_product(vs, taus).reshape(*batch, *v.shape[-2:])


FACTORIZATION_OPS: tuple[type[GraphOp], ...] = (LUFactorOp, PivotPermutationOp, HouseholderQROp, HouseholderProductOp)
