"""Small dense linear algebra: inv, det, slogdet/logdet, solve, cholesky, solve_triangular,
cholesky_solve, on batches of matrices (float32, float64), as the graph ops of
``dialects/graph/dense_linalg.py``: ``solve`` (LU with partial pivoting; ``inv(a)`` is
``solve(a, I)``), ``det_factors`` (signed pivots: their product is the determinant),
``cholesky`` and ``triangular_solve``. Right-hand solves (``left=False``) solve the
transposed system; an upper Cholesky factor is the transpose of the lower one of ``a^T``
(so the upper triangle is read, as torch's).

The ``*_ex`` ops' ``info`` (LAPACK's: the first exactly zero pivot of the same
elimination) and the LU factors ``_linalg_det``/``slogdet``/``solve_ex`` also return are
computed where a model uses them. The importer drops torch's ``_linalg_check_errors`` of
``inv``/``solve`` (checking would move every such model onto the VM, and an exactly zero
pivot can depend on roundings): a singular matrix gives infinities or NaNs where torch
raises. ``cholesky``'s check is kept (``ops/checks.py``). The determinant of a singular
matrix is 0, as torch's.
The matrix size must be static (batch dims may be symbolic).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter
from .decompositions import first_failure, lu_factors, matrix_size, transposed as _transposed
from .shape import diagonal


def _size(ctx: ImportContext, a: SSAValue) -> int:
    """The static size ``n`` of ``a``'s ``(..., n, n)`` matrices."""
    return matrix_size(a)[1]


def _solve(ctx: ImportContext, a: SSAValue, b: SSAValue, left: bool = True) -> SSAValue:
    """torch.linalg.solve: ``b`` is a (batch of) vector(s) when it is 1-d or has ``a``'s
    shape without its last axis, else matrices; ``left=False`` solves ``x a = b``."""
    _size(ctx, a)
    a_shape, b_shape = shape_of(a.type), shape_of(b.type)
    vector = len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])
    if not left:
        a = _transposed(ctx, a)
    if vector:
        x = ctx.b.solve(a, ctx.b.reshape(b, (*b_shape, 1)))
        return ctx.b.reshape(x, shape_of(x.type)[:-1])
    if not left:
        return _transposed(ctx, ctx.b.solve(a, _transposed(ctx, b)))
    return ctx.b.solve(a, b)


def _inverse(ctx: ImportContext, a: SSAValue) -> SSAValue:
    n = _size(ctx, a)
    return ctx.b.solve(a, ctx.constant(np.eye(n, dtype=numpy_dtype(a.type.element_type))))


def _factors(ctx: ImportContext, a: SSAValue) -> SSAValue:
    _size(ctx, a)
    return ctx.b.det_factors(a)


def _det(ctx: ImportContext, a: SSAValue) -> SSAValue:
    return ctx.b.reduce_prod(_factors(ctx, a), [-1])


def _slogdet(ctx: ImportContext, a: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(sign, log |det|): the product of the factors' signs (0 for a singular matrix) and
    the sum of their ``log |.|`` (``-inf`` for a singular matrix), as torch's."""
    b, factors = ctx.b, _factors(ctx, a)
    zero = ctx.scalar(0, factors)
    dtype = numpy_dtype(factors.type.element_type)
    signs = b.sub(ctx.cast(b.compare(factors, zero, "gt"), dtype), ctx.cast(b.compare(factors, zero, "lt"), dtype))
    return b.reduce_prod(signs, [-1]), b.reduce_sum(b.log(b.abs(factors)), [-1])


def _cholesky(ctx: ImportContext, a: SSAValue, upper: bool = False) -> SSAValue:
    _size(ctx, a)
    if upper:  # a = u^T u: u is the transposed lower factor of a^T (a's upper triangle read)
        return _transposed(ctx, ctx.b.cholesky(_transposed(ctx, a)))
    return ctx.b.cholesky(a)


def _triangular_solve(ctx: ImportContext, a, b, upper: bool, left: bool = True, unitriangular: bool = False):
    """``a x = b`` (``x a = b`` when not ``left``: ``a^T x^T = b^T``, the other triangle)."""
    _size(ctx, a)
    if left:
        return ctx.b.triangular_solve(a, b, not upper, unitriangular)
    solved = ctx.b.triangular_solve(_transposed(ctx, a), _transposed(ctx, b), upper, unitriangular)
    return _transposed(ctx, solved)


# ---------------------------------------------------------------------------
# what Core ATen decomposes the linalg functions to (extra results not computed: None)


def _singular_info(ctx: ImportContext, a: SSAValue) -> SSAValue:
    """LAPACK's ``getrf`` info: the 1-based step of the first exactly zero pivot, else 0."""
    factors = _factors(ctx, a)
    zero = ctx.cast(ctx.b.compare(factors, ctx.scalar(0, factors), "eq"), np.dtype(np.int32))
    return first_failure(ctx, zero)


# the extra results (info, LU, pivots) are computed where used: unused ones are dead code


@converter("aten.linalg_inv_ex.default")
def linalg_inv_ex(ctx: ImportContext, node, a, check_errors=False):
    return _inverse(ctx, a), _singular_info(ctx, a)


@converter("aten._linalg_det.default")
def linalg_det_with_lu(ctx: ImportContext, node, a):
    """``(det, LU, pivots)``; torch factors ``a^T`` here (LAPACK's column-major ``a``)."""
    return _det(ctx, a), *lu_factors(ctx, _transposed(ctx, a))


@converter("aten._linalg_slogdet.default")
def linalg_slogdet_with_lu(ctx: ImportContext, node, a):
    """``(sign, log |det|, LU, pivots)``, the LU of ``a^T`` as torch's."""
    return *_slogdet(ctx, a), *lu_factors(ctx, _transposed(ctx, a))


@converter("aten._linalg_solve_ex.default")
def linalg_solve_ex(ctx: ImportContext, node, a, b, *, left=True, check_errors=False):
    return _solve(ctx, a, b, left), *lu_factors(ctx, a), _singular_info(ctx, a)


@converter("aten.linalg_cholesky_ex.default")
def linalg_cholesky_ex(ctx: ImportContext, node, a, upper=False, check_errors=False):
    """The factor and LAPACK's ``info`` (int32): 0, or the order of the first leading minor
    that is not positive definite, found as the first pivot (the factor's diagonal) that
    is not positive (NaN: the square root of a negative number). Where ``info > 0`` the
    factor's entries from that pivot on are unspecified, as in torch."""
    b = ctx.b
    factor = _cholesky(ctx, a, upper)
    pivots = diagonal(ctx, node, factor, 0, -2, -1)
    positive = ctx.cast(b.compare(pivots, ctx.scalar(0, pivots), "gt"), np.dtype(np.int32))
    return factor, first_failure(ctx, b.sub(ctx.scalar(1, positive), positive))  # (NaN: failed)


@converter("aten.linalg_solve_triangular.default")
def linalg_solve_triangular(ctx: ImportContext, node, a, b, *, upper, left=True, unitriangular=False):
    return _triangular_solve(ctx, a, b, upper, left, unitriangular)


@converter("aten.triangular_solve.default")
def triangular_solve(ctx: ImportContext, node, b, a, upper=True, transpose=False, unitriangular=False):
    """torch's older spelling: ``(x, a)`` with ``a x = b`` (``a^T x = b`` when ``transpose``:
    the transposed matrix's other triangle)."""
    solved = _transposed(ctx, a) if transpose else a
    return _triangular_solve(ctx, solved, b, upper != transpose, True, unitriangular), a


@converter("aten.cholesky_solve.default")
def cholesky_solve(ctx: ImportContext, node, b, factor, upper=False):
    """``x`` with ``a x = b``, ``a = l l^T`` (``u^T u`` when ``upper``): two triangular solves."""
    factor_t = _transposed(ctx, factor)
    lower, upper_factor = (factor_t, factor) if upper else (factor, factor_t)
    return ctx.b.triangular_solve(upper_factor, ctx.b.triangular_solve(lower, b, True), False)


@converter("aten.cholesky_inverse.default")
def cholesky_inverse(ctx: ImportContext, node, factor, upper=False):
    """``a^-1`` from ``a``'s Cholesky factor: ``a x = I`` solved as :func:`cholesky_solve`."""
    n = _size(ctx, factor)
    eye = ctx.constant(np.eye(n, dtype=numpy_dtype(factor.type.element_type)))
    return cholesky_solve(ctx, node, ctx.b.broadcast_to(eye, shape_of(factor.type)), factor, upper)


# ---------------------------------------------------------------------------
# the same functions in a program imported without decomposing it


@converter("aten.linalg_inv.default", "aten.inverse.default")
def linalg_inv(ctx: ImportContext, node, a):
    return _inverse(ctx, a)


@converter("aten.linalg_det.default", "aten.det.default")
def linalg_det(ctx: ImportContext, node, a):
    return _det(ctx, a)


@converter("aten.linalg_slogdet.default")
def linalg_slogdet(ctx: ImportContext, node, a):
    return _slogdet(ctx, a)


@converter("aten.logdet.default")
def logdet(ctx: ImportContext, node, a):
    """``log det``: NaN for a negative determinant, ``-inf`` for a singular matrix."""
    sign, logabs = _slogdet(ctx, a)
    negative = ctx.b.compare(sign, ctx.scalar(0, sign), "lt")
    return ctx.b.where(negative, ctx.scalar(float("nan"), logabs), logabs)


@converter("aten.linalg_solve.default")
def linalg_solve(ctx: ImportContext, node, a, b, *, left=True):
    return _solve(ctx, a, b, left)


@converter("aten.linalg_cholesky.default", "aten.cholesky.default")
def linalg_cholesky(ctx: ImportContext, node, a, upper=False):
    return _cholesky(ctx, a, upper)
