"""Matrix decompositions: LU (``lu_factor(_ex)``, ``lu``, ``lu_unpack``, ``lu_solve``), QR
(``qr``, ``geqrf``, ``householder_product``, ``ormqr``), symmetric eigendecomposition
(``eigh``, ``eigvalsh``) and SVD (``svd``, ``svdvals`` and what torch builds on them:
``matrix_rank``, ``cond``, ``norm(ord=2 / 'nuc')``, ``pinv``), float32 and float64, batched
(batch dims may be symbolic; matrix sizes static).

Each is made of the packed graph ops of ``dialects/graph/factorizations.py`` and
``spectral.py`` (one kernel each) and plain graph ops that slice, mask and multiply:

* LU and QR are LAPACK's algorithms step for step (``getrf``'s pivots, ``geqrf``'s signs):
  the results match torch's to rounding.
* ``eigh``: cyclic Jacobi; ``svd``: a Householder QR of the taller orientation, one-sided
  Jacobi on its square ``R``, ``U`` from a second QR, of ``R V`` (orthonormal also for zero
  singular values; the first QR's ``Q`` completes it to ``m x m`` for ``full_matrices``). Values match torch's to rounding;
  each vector's sign is the algorithm's (torch's LAPACK may flip it: both are valid).

Not done: ``linalg.eig``/``eigvals`` (a general matrix's complex eigenpairs), ``ldl``,
``lstsq`` (torch.export fails on it), LU without pivoting (torch has it on CUDA only).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import broadcast_shapes, numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter
from .shape import diagonal

# ---------------------------------------------------------------------------
# helpers


def matrix_size(a: SSAValue) -> tuple[int, int]:
    """The static ``(m, n)`` of ``a``'s ``(..., m, n)`` matrices."""
    shape = shape_of(a.type)
    if len(shape) < 2:
        raise ValueError(f"expected a batch of matrices (..., m, n), got shape {shape}")
    m, n = shape[-2:]
    if not isinstance(m, int) or not isinstance(n, int):
        raise NotImplementedError(f"a symbolic matrix size ({m} x {n}) is not supported (batch dims may be symbolic)")
    return m, n


def _part(ctx: ImportContext, x: SSAValue, rows: tuple[int, int] | None = None, columns: tuple[int, int] | None = None) -> SSAValue:
    """``x[..., rows[0]:rows[1], columns[0]:columns[1]]`` (None: all)."""
    starts, ends, axes = [], [], []
    for axis, span in ((ctx.rank(x) - 2, rows), (ctx.rank(x) - 1, columns)):
        if span is not None:
            starts.append(span[0])
            ends.append(span[1])
            axes.append(axis)
    return ctx.b.slice(x, starts, ends, axes) if axes else x


def _last_row(ctx: ImportContext, packed: SSAValue, length: int) -> SSAValue:
    """The first ``length`` entries of the last row of each ``packed`` matrix: ``(..., length)``."""
    m = shape_of(packed.type)[-2]
    row = _part(ctx, packed, (m - 1, m), (0, length))
    return ctx.b.reshape(row, (*shape_of(packed.type)[:-2], length))


def transposed(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """``x`` with its last two axes swapped."""
    rank = ctx.rank(x)
    return ctx.b.transpose(x, [*range(rank - 2), rank - 1, rank - 2])


def _triangle(ctx: ImportContext, x: SSAValue, upper: bool, offset: int = 0) -> SSAValue:
    """``triu(x, offset)`` (``tril`` when not ``upper``) of each matrix."""
    m, n = matrix_size(x)
    keep = np.triu(np.ones((m, n), np.bool_), offset) if upper else np.tril(np.ones((m, n), np.bool_), offset)
    return ctx.b.where(ctx.constant(keep), x, ctx.scalar(0, x))


def _with_columns(ctx: ImportContext, x: SSAValue, columns: int) -> SSAValue:
    """``x`` padded with zero columns to ``columns``."""
    n = shape_of(x.type)[-1]
    if n >= columns:
        return x
    return ctx.b.pad(x, [0] * ctx.rank(x), [0] * (ctx.rank(x) - 1) + [columns - n], 0)


def batched_matmul(ctx: ImportContext, x: SSAValue, y: SSAValue) -> SSAValue:
    """``x @ y`` of batches of matrices, the batch dims broadcast (torch.matmul's rule)."""
    rank = max(ctx.rank(x), ctx.rank(y))
    if rank == 2:
        return ctx.b.matmul(x, y)
    rank = max(rank, 3)
    x, y = (ctx.b.reshape(v, (1,) * (rank - ctx.rank(v)) + shape_of(v.type)) if ctx.rank(v) < rank else v for v in (x, y))
    return ctx.b.batch_matmul(x, y)


def _empty(ctx: ImportContext, like: SSAValue) -> SSAValue:
    """torch's empty result (shape ``(0,)``) for an output it did not compute."""
    return ctx.constant(np.zeros((0,), numpy_dtype(like.type.element_type)))


def first_failure(ctx: ImportContext, failed: SSAValue) -> SSAValue:
    """LAPACK's ``info`` (int32, ``(...)``) of a ``failed`` flag per step (``(..., k)``, 0/1
    int32): 0 when no step failed, else the 1-based index of the first that did."""
    b = ctx.b
    if shape_of(failed.type)[-1] == 0:
        return ctx.b.reduce_sum(failed, [-1])  # no steps: zeros of the batch's shape
    first = ctx.cast(b.argmax(failed, -1, keepdims=False), np.dtype(np.int32))
    any_failed = b.compare(b.reduce_max(failed, [-1]), ctx.scalar(0, failed), "gt")
    return b.where(any_failed, b.add(first, ctx.scalar(1, first)), ctx.scalar(0, first))


def _rows_in_order(ctx: ImportContext, x: SSAValue, order: SSAValue, batch, inverse: bool = False) -> SSAValue:
    """``y[..., i, :] = x[..., order[i], :]`` (``inverse``: ``y[..., order[i], :] = x[..., i, :]``),
    ``x`` and ``order`` broadcast to the batch ``batch``."""
    n, k = shape_of(x.type)[-2:]
    x = ctx.b.broadcast_to(x, (*batch, n, k))
    index = ctx.b.broadcast_to(ctx.b.reshape(ctx.cast(order, np.dtype(np.int64)), (*shape_of(order.type), 1)), (*batch, n, k))
    if inverse:
        return ctx.b.scatter(x, index, x, ctx.rank(x) - 2)
    return ctx.b.gather(x, index, ctx.rank(x) - 2)


def _permutation_matrix(ctx: ImportContext, perm: SSAValue, dtype: np.dtype) -> SSAValue:
    """``P`` with ``P[perm[i], i] = 1``, so that ``(P^T a)[i] = a[perm[i]]``."""
    m = shape_of(perm.type)[-1]
    columns = ctx.b.reshape(perm, (*shape_of(perm.type)[:-1], 1, m))
    rows = ctx.constant(np.arange(m, dtype=numpy_dtype(perm.type.element_type)).reshape(m, 1))
    return ctx.cast(ctx.b.compare(columns, rows, "eq"), dtype)


# ---------------------------------------------------------------------------
# LU


def lu_factors(ctx: ImportContext, a: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(packed LU ``(..., m, n)``, int32 pivots ``(..., min(m, n))``)."""
    m, n = matrix_size(a)
    factored = ctx.b.lu_factor(a)
    return _part(ctx, factored, (0, m)), ctx.cast(_last_row(ctx, factored, min(m, n)), np.dtype(np.int32))


def _unpack(ctx: ImportContext, packed: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``(L, U)``: ``L`` ``(..., m, k)`` unit lower triangular, ``U`` ``(..., k, n)``."""
    m, n = matrix_size(packed)
    k = min(m, n)
    eye = ctx.constant(np.eye(m, k, dtype=numpy_dtype(packed.type.element_type)))
    lower = ctx.b.add(_triangle(ctx, _part(ctx, packed, None, (0, k)), upper=False, offset=-1), eye)
    return lower, _triangle(ctx, _part(ctx, packed, (0, k)), upper=True)


def _check_pivoting(pivot: bool) -> None:
    if not pivot:
        raise NotImplementedError("LU without pivoting (pivot=False) is not supported (torch has it on CUDA only)")


@converter("aten.linalg_lu_factor_ex.default")
def linalg_lu_factor_ex(ctx: ImportContext, node, a, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: ``info`` the first zero on U's diagonal (1-based), as LAPACK."""
    _check_pivoting(pivot)
    packed, pivots = lu_factors(ctx, a)
    u_diagonal = diagonal(ctx, node, packed, 0, -2, -1)
    zero = ctx.cast(ctx.b.compare(u_diagonal, ctx.scalar(0, u_diagonal), "eq"), np.dtype(np.int32))
    return packed, pivots, first_failure(ctx, zero)


@converter("aten.linalg_lu.default")
def linalg_lu(ctx: ImportContext, node, a, *, pivot=True):
    """``(P, L, U)`` with ``a = P L U``."""
    _check_pivoting(pivot)
    packed, pivots = lu_factors(ctx, a)
    perm = ctx.b.pivot_permutation(pivots, matrix_size(a)[0])
    return (_permutation_matrix(ctx, perm, numpy_dtype(a.type.element_type)), *_unpack(ctx, packed))


@converter("aten.lu_unpack.default")
def lu_unpack(ctx: ImportContext, node, packed, pivots, unpack_data=True, unpack_pivots=True):
    m, _ = matrix_size(packed)
    if unpack_pivots:
        perm = ctx.b.pivot_permutation(ctx.cast(pivots, np.dtype(np.int32)), m)
        p = _permutation_matrix(ctx, perm, numpy_dtype(packed.type.element_type))
    else:
        p = _empty(ctx, packed)
    lower, upper = _unpack(ctx, packed) if unpack_data else (_empty(ctx, packed), _empty(ctx, packed))
    return p, lower, upper


@converter("aten.linalg_lu_solve.default")
def linalg_lu_solve(ctx: ImportContext, node, packed, pivots, b, *, left=True, adjoint=False):
    """``x`` with ``a x = b`` (``a^T x = b`` when ``adjoint``; ``x a = b`` when not ``left``)
    for ``a = P L U`` given as ``lu_factor``'s result: two triangular solves and the rows
    put in order."""
    if not left:  # x a = b  <=>  a^T x^T = b^T (and x a^T = b  <=>  a x^T = b^T)
        return transposed(ctx, linalg_lu_solve(ctx, node, packed, pivots, transposed(ctx, b), adjoint=not adjoint))
    n, _ = matrix_size(packed)
    perm = ctx.b.pivot_permutation(ctx.cast(pivots, np.dtype(np.int32)), n)
    batch = broadcast_shapes(shape_of(packed.type)[:-2], shape_of(b.type)[:-2])
    if not adjoint:  # L U x = P^T b
        y = ctx.b.triangular_solve(packed, _rows_in_order(ctx, b, perm, batch), True, True)
        return ctx.b.triangular_solve(packed, y, False)
    # U^T L^T (P^T x) = b
    factors_t = transposed(ctx, packed)
    y = ctx.b.triangular_solve(factors_t, b, True)
    z = ctx.b.triangular_solve(factors_t, y, False, True)
    return _rows_in_order(ctx, z, perm, batch, inverse=True)


# ---------------------------------------------------------------------------
# QR


def _geqrf(ctx: ImportContext, a: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(LAPACK's packed R and reflectors ``(..., m, n)``, ``tau`` ``(..., min(m, n))``)."""
    m, n = matrix_size(a)
    factored = ctx.b.householder_qr(a)
    return _part(ctx, factored, (0, m)), _last_row(ctx, factored, min(m, n))


def _full_q(ctx: ImportContext, reflectors: SSAValue, tau: SSAValue) -> SSAValue:
    """The ``m x m`` product of the reflectors in the first columns of ``reflectors``
    (``(..., m, k)``; as many as ``tau`` has, at most ``m``)."""
    m, _ = matrix_size(reflectors)
    count = min(m, shape_of(tau.type)[-1])
    columns = _part(ctx, reflectors, None, (0, count))
    return ctx.b.householder_product(_with_columns(ctx, columns, m), tau)


@converter("aten.geqrf.default")
def geqrf(ctx: ImportContext, node, a):
    return _geqrf(ctx, a)


@converter("aten.linalg_householder_product.default")
def linalg_householder_product(ctx: ImportContext, node, v, tau):
    return ctx.b.householder_product(v, tau)


@converter("aten.ormqr.default")
def ormqr(ctx: ImportContext, node, reflectors, tau, other, left=True, transpose=False):
    """``op(Q) other`` (``other op(Q)`` when not ``left``), ``Q`` the ``mn x mn`` product
    of the reflectors, ``op`` the transpose when ``transpose``."""
    q = _full_q(ctx, reflectors, tau)
    if transpose:
        q = transposed(ctx, q)
    return batched_matmul(ctx, q, other) if left else batched_matmul(ctx, other, q)


@converter("aten.linalg_qr.default")
def linalg_qr(ctx: ImportContext, node, a, mode="reduced"):
    """``(Q, R)``: ``reduced`` (``m x k``, ``k x n``), ``complete`` (``m x m``, ``m x n``) or
    ``r`` (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    m, n = matrix_size(a)
    k = min(m, n)
    packed, tau = _geqrf(ctx, a)
    r = _triangle(ctx, _part(ctx, packed, (0, m if mode == "complete" else k)), upper=True)
    if mode == "r":
        return _empty(ctx, a), r
    if mode == "complete":
        return _full_q(ctx, _part(ctx, packed, None, (0, k)), tau), r
    return ctx.b.householder_product(_part(ctx, packed, None, (0, k)), tau), r


# ---------------------------------------------------------------------------
# eigh and SVD


@converter("aten._linalg_eigh.default")
def linalg_eigh(ctx: ImportContext, node, a, UPLO="L", compute_v=True):
    """``(eigenvalues ascending, eigenvectors as columns)``; only ``a``'s ``UPLO`` triangle read."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    n, _ = matrix_size(a)
    packed = ctx.b.eigh(a, UPLO == "L")
    values = _last_row(ctx, packed, n)
    return values, (transposed(ctx, _part(ctx, packed, (0, n))) if compute_v else _empty(ctx, a))


def _square_svd(ctx: ImportContext, r: SSAValue, compute_uv: bool) -> tuple[SSAValue | None, SSAValue, SSAValue]:
    """``(U, S, V^T)`` of each square ``r``: one-sided Jacobi gives ``r V`` and ``V``; ``S``
    is the norms of ``r V``'s columns, ``U`` a QR's ``Q`` of ``r V`` (orthonormal also
    where ``S`` is 0), each column's sign made that of ``r V``'s (None unless ``compute_uv``)."""
    b = ctx.b
    n, _ = matrix_size(r)
    rotated = b.jacobi_svd(r)
    rv_t, v_t = _part(ctx, rotated, None, (0, n)), _part(ctx, rotated, None, (n, 2 * n))
    s = b.sqrt(b.reduce_sum(b.mul(rv_t, rv_t), [-1]))
    if not compute_uv:
        return None, s, v_t
    packed, tau = _geqrf(ctx, transposed(ctx, rv_t))
    d = diagonal(ctx, None, packed, 0, -2, -1)
    signs = b.where(b.compare(d, ctx.scalar(0, d), "lt"), ctx.scalar(-1, d), ctx.scalar(1, d))
    u = b.mul(b.householder_product(packed, tau), b.reshape(signs, (*shape_of(signs.type)[:-1], 1, n)))
    return u, s, v_t


def svd(ctx: ImportContext, a: SSAValue, full_matrices: bool, compute_uv: bool) -> tuple[SSAValue, SSAValue, SSAValue]:
    """``(U, S, Vh)`` of each ``a`` ``(..., m, n)``, ``S`` descending (``U``, ``Vh`` empty when
    not ``compute_uv``). The taller orientation ``x`` (``M x N``, ``M >= N``) is first
    reduced to its QR's square ``R`` (Jacobi's rotations then work on rows of ``N``, not
    ``M``): ``x = Q R = (Q U_r) S V^T``."""
    m, n = matrix_size(a)
    tall = m >= n
    x = a if tall else transposed(ctx, a)
    rows, columns = max(m, n), min(m, n)
    if rows > columns:
        packed, tau = _geqrf(ctx, x)
        square = _triangle(ctx, _part(ctx, packed, (0, columns)), upper=True)
    else:
        square = x
    u, s, v_t = _square_svd(ctx, square, compute_uv)
    if not compute_uv:
        return _empty(ctx, a), s, _empty(ctx, a)
    if rows > columns and full_matrices:
        q = _full_q(ctx, packed, tau)
        u = ctx.b.concat([batched_matmul(ctx, _part(ctx, q, None, (0, columns)), u), _part(ctx, q, None, (columns, rows))], -1)
    elif rows > columns:
        u = batched_matmul(ctx, ctx.b.householder_product(packed, tau), u)
    # x = u S v_t; a = x, or a = x^T = v_t^T S u^T
    return (u, s, v_t) if tall else (transposed(ctx, v_t), s, transposed(ctx, u))


@converter("aten._linalg_svd.default")
def linalg_svd(ctx: ImportContext, node, a, full_matrices=False, compute_uv=True, driver=None):
    return svd(ctx, a, full_matrices, compute_uv)


def _tolerance(ctx: ImportContext, a: SSAValue, largest: SSAValue, atol, rtol) -> SSAValue:
    """torch's ``max(atol, rtol * largest)`` (``(..., 1)``): ``rtol`` defaults to
    ``eps * max(m, n)``, or to 0 where ``atol > 0``; each a number or a tensor of the batch."""

    def column(t) -> SSAValue:
        if not isinstance(t, SSAValue):
            return ctx.scalar(float(t), largest)
        t = ctx.cast(t, numpy_dtype(largest.type.element_type))
        return ctx.b.reshape(t, (*shape_of(t.type), 1))

    b = ctx.b
    absolute = column(0.0 if atol is None else atol)
    if rtol is None:
        default = column(float(np.finfo(numpy_dtype(a.type.element_type)).eps) * max(matrix_size(a)))
        relative = default if atol is None else b.where(b.compare(absolute, column(0.0), "gt"), column(0.0), default)
    else:
        relative = column(rtol)
    return b.max(absolute, b.mul(relative, largest))


@converter("aten.linalg_pinv.atol_rtol_tensor", "aten.linalg_pinv.atol_rtol_float")
def linalg_pinv(ctx: ImportContext, node, a, atol=None, rtol=None, hermitian=False):
    """``right diag(1 / s) left^T`` over the ``s > max(atol, rtol * s_max)`` (torch's rule,
    :func:`_tolerance`): from the SVD (``right = V``, ``left = U``), or with ``hermitian``
    from ``eigh`` (``s = |eigenvalue|``, ``right = left = V``, ``1 / eigenvalue`` kept)."""
    b = ctx.b
    m, n = matrix_size(a)
    if min(m, n) == 0:
        return b.broadcast_to(ctx.scalar(0, a), (*shape_of(a.type)[:-2], n, m))
    if hermitian:
        s, left = linalg_eigh(ctx, node, a)
        right, size = left, b.abs(s)
    else:
        left, s, right_t = svd(ctx, a, False, True)
        right, size = transposed(ctx, right_t), s
    kept = b.compare(size, _tolerance(ctx, a, b.reduce_max(size, [-1], keepdims=True), atol, rtol), "gt")
    inverse = b.where(kept, b.div(ctx.scalar(1, s), b.where(kept, s, ctx.scalar(1, s))), ctx.scalar(0, s))
    scaled = b.mul(right, b.reshape(inverse, (*shape_of(inverse.type)[:-1], 1, shape_of(inverse.type)[-1])))
    return batched_matmul(ctx, scaled, transposed(ctx, left))
