"""Eigen- and singular value decompositions by Jacobi rotations, on batches of matrices
(the last two axes), float element types, static matrix sizes; each one
``te.dense_linalg`` kernel running the sweeps per matrix (``lowering/dense_linalg/jacobi.py``),
whose steps the numpy references here repeat.

Jacobi methods suit a kernel without branches: a sweep rotates every pair of
rows ``(p, q)`` once, a rotation that is not needed is skipped by giving its loops no
iterations, and the sweeps stop (their loops run empty) once one rotated nothing. A NaN
always rotates, so it spreads to every value and vector (no partly finite result). They
are accurate (small eigenvalues to high relative accuracy) and need about 6-10 sweeps of
``O(n^3)`` each: slower than LAPACK's tridiagonal and bidiagonal methods for large
matrices, fine for the small ones models use.

An op has one result, so the vectors and values travel together::

    %e = graph.eigh %a {lower = true} : tensor<3x5x5xf32> -> tensor<3x6x5xf32>   // rows 0..4: eigenvectors, row 5: eigenvalues
    %s = graph.jacobi_svd %a : tensor<7x4xf64> -> tensor<4x11xf64>               // row i: [(a v_i)^T | v_i^T]

The torch frontend turns them into ``eigh``, ``svd`` and what builds on them
(``frontends/torch/ops/decompositions.py``).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import BoolAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import ParsePropInAttrDict, irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, operand_shape
from .dense_linalg import MatrixOp, _batched, _float_element, _square
from .factorizations import _static_matrices
from .types import format_shape, tensor_type

#: the most sweeps a Jacobi method runs (it stops before, after a sweep without rotations)
MAX_SWEEPS = 40


def rotation_tolerance(dtype: np.dtype, length: int) -> float:
    """How small ``|a_pq|`` must be, relative to ``sqrt(|a_pp a_qq|)``, for the pair
    ``(p, q)`` to count as done: ``length`` roundings of the dtype's epsilon (a dot
    product of ``length`` terms is not exact to less)."""
    return float(np.finfo(dtype).eps) * max(length, 1)


def rotation(a_pp, a_qq, a_pq):
    """``(c, s)`` of the Jacobi rotation zeroing ``a_pq`` of the symmetric 2x2 block
    (Golub and Van Loan's ``sym.schur2``): ``theta = (a_qq - a_pp) / 2 a_pq``, ``t`` the
    smaller root of ``t^2 + 2 theta t - 1``; ``theta^2`` overflowing gives ``t = 1 / 2 theta``."""
    with np.errstate(all="ignore"):
        theta = (a_qq - a_pp) / (2 * a_pq)
        sign = np.where(theta >= 0, 1.0, -1.0).astype(theta.dtype)
        t = sign / (np.abs(theta) + np.sqrt(1 + theta * theta))
        t = np.where(np.isinf(theta * theta), 0.5 / theta, t)
        c = 1 / np.sqrt(1 + t * t)
    return c, t * c


def _rotate_rows(x: np.ndarray, p: int, q: int, c: np.ndarray, s: np.ndarray) -> None:
    """Rows ``p, q`` of each ``x`` (batch, ., .) <- ``(c x_p - s x_q, s x_p + c x_q)``."""
    xp, xq = x[:, p].copy(), x[:, q].copy()
    x[:, p] = c[:, None] * xp - s[:, None] * xq
    x[:, q] = s[:, None] * xp + c[:, None] * xq


def jacobi_eigh(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (batch, n) ascending and eigenvectors (batch, n, n), one per row, of
    each symmetric ``w`` (batch, n, n; overwritten) by cyclic Jacobi: for each pair
    ``p < q`` with ``|w_pq| > tol sqrt(|w_pp w_qq|)``, ``w <- J^T w J`` (columns, then
    rows; ``w_pq`` set to 0) and the rows ``p, q`` of the vectors rotated alike."""
    batch, n = w.shape[0], w.shape[-1]
    vectors = np.broadcast_to(np.eye(n, dtype=w.dtype), w.shape).copy()
    tol = rotation_tolerance(w.dtype, n)
    for _ in range(MAX_SWEEPS):
        rotated = np.zeros(batch, bool)
        for p in range(n - 1):
            for q in range(p + 1, n):
                a_pq = w[:, p, q]
                rotate = ~(np.abs(a_pq) <= tol * np.sqrt(np.abs(w[:, p, p])) * np.sqrt(np.abs(w[:, q, q])))  # NaN spreads
                c, s = rotation(w[:, p, p], w[:, q, q], a_pq)
                c, s = np.where(rotate, c, 1).astype(w.dtype), np.where(rotate, s, 0).astype(w.dtype)
                _rotate_rows(np.swapaxes(w, 1, 2), p, q, c, s)  # columns
                _rotate_rows(w, p, q, c, s)
                w[:, p, q] = np.where(rotate, 0, w[:, p, q])
                w[:, q, p] = np.where(rotate, 0, w[:, q, p])
                _rotate_rows(vectors, p, q, c, s)
                rotated |= rotate
        if not rotated.any():
            break
    values = np.diagonal(w, axis1=1, axis2=2).copy()
    order = _selection_order(values, descending=False)
    rows = np.arange(batch)[:, None]
    return values[rows, order], vectors[rows, order]


def _selection_order(keys: np.ndarray, descending: bool) -> np.ndarray:
    """The kernels' selection sort (batch, n): at step ``i`` the first best key from ``i``
    on swaps into place ``i``."""
    keys = keys.copy()
    order = np.broadcast_to(np.arange(keys.shape[1]), keys.shape).copy()
    rows = np.arange(keys.shape[0])
    for i in range(keys.shape[1]):
        rest = keys[:, i:]
        best = i + (np.argmax(rest, axis=1) if descending else np.argmin(rest, axis=1))
        for x in (keys, order):
            at_i, at_best = x[rows, i].copy(), x[rows, best].copy()
            x[rows, i], x[rows, best] = at_best, at_i
    return order


def one_sided_jacobi(x: np.ndarray) -> np.ndarray:
    """``[(a V)^T | V^T]`` (batch, n, m + n) for each ``a`` (given as ``x = a^T``, batch,
    n, m; m >= n): the rows of ``x`` made orthogonal by rotations (Hestenes), ``V`` their
    product; rows sorted by descending norm. Rows ``p < q`` rotate when
    ``|x_p . x_q| > tol |x_p| |x_q|``."""
    batch, n, m = x.shape
    work = np.concatenate([x, np.broadcast_to(np.eye(n, dtype=x.dtype), (batch, n, n))], axis=2)
    tol = rotation_tolerance(x.dtype, m)
    for _ in range(MAX_SWEEPS):
        rotated = np.zeros(batch, bool)
        for p in range(n - 1):
            for q in range(p + 1, n):
                xp, xq = work[:, p, :m], work[:, q, :m]
                alpha, beta, gamma = np.sum(xp * xp, 1), np.sum(xq * xq, 1), np.sum(xp * xq, 1)
                rotate = ~(np.abs(gamma) <= tol * np.sqrt(alpha) * np.sqrt(beta))  # NaN spreads
                c, s = rotation(alpha, beta, gamma)
                c, s = np.where(rotate, c, 1).astype(x.dtype), np.where(rotate, s, 0).astype(x.dtype)
                _rotate_rows(work, p, q, c, s)
                rotated |= rotate
        if not rotated.any():
            break
    norms = np.sum(work[:, :, :m] ** 2, axis=2)
    order = _selection_order(norms, descending=True)
    return work[np.arange(batch)[:, None], order]


# ---------------------------------------------------------------------------
# ops


@irdl_op_definition
class EighOp(MatrixOp):
    """Eigenvectors and eigenvalues of each symmetric ``a`` ``(..., n, n)`` (only its
    ``lower`` or upper triangle read) -> ``(..., n + 1, n)``: row ``i < n`` the unit
    eigenvector of the ``i``-th smallest eigenvalue, row ``n`` the eigenvalues ascending.
    Each vector's sign is the rotations' (LAPACK's may differ).

    Example: ``%e = graph.eigh %a {lower = true} : tensor<3x5x5xf32> -> tensor<3x6x5xf32>``
    """

    name = "graph.eigh"
    lower = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, input: SSAValue | Operation, lower: bool = True):
        self._build([input], {"lower": BoolAttr.from_bool(lower)})

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        _square("input", shape)
        _, n = _static_matrices("input", shape)
        return tensor_type((*shape[:-2], n + 1, n), _float_element("input", self.input.type))

    def reference(self, a: np.ndarray) -> np.ndarray:
        w, _, batch = _batched(a, None)
        lower = np.tril(w) if self.lower.value.data else np.triu(w)
        symmetric = lower + np.swapaxes(np.tril(lower, -1) + np.triu(lower, 1), 1, 2)
        values, vectors = jacobi_eigh(symmetric)
        n = a.shape[-1]
        return np.concatenate([vectors, values[:, None, :]], axis=1).reshape(*batch, n + 1, n)


@irdl_op_definition
class JacobiSVDOp(MatrixOp):
    """One-sided Jacobi of each ``a`` ``(..., m, n)``, ``m >= n`` -> ``(..., n, m + n)``: row
    ``i`` is ``[(a v_i)^T | v_i^T]`` for an orthogonal ``V`` that makes the columns of
    ``a V`` orthogonal, rows in descending order of ``|a v_i|``. So ``a = U S V^T`` with
    ``S_i = |a v_i|`` and ``U``'s columns ``a v_i / S_i``: the SVD, whose left vectors
    (for every ``S_i``, also 0) a QR of ``a V`` gives (``frontends/torch/ops/decompositions.py``).

    Example: ``%s = graph.jacobi_svd %a : tensor<7x4xf64> -> tensor<4x11xf64>``
    """

    name = "graph.jacobi_svd"

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        m, n = _static_matrices("input", shape)
        if m < n:
            raise VerifyException(f"input must have at least as many rows as columns, got shape {format_shape(shape)}")
        return tensor_type((*shape[:-2], n, m + n), _float_element("input", self.input.type))

    def reference(self, a: np.ndarray) -> np.ndarray:
        w, _, batch = _batched(a, None)
        m, n = a.shape[-2:]
        return one_sided_jacobi(np.swapaxes(w, 1, 2).copy()).reshape(*batch, n, m + n)


SPECTRAL_OPS: tuple[type[GraphOp], ...] = (EighOp, JacobiSVDOp)
