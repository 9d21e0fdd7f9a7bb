"""Gaussian elimination and substitution kernels (the graph ops of
``dialects/graph/dense_linalg.py`` and ``factorizations.py``, whose numpy references run
the same steps)::

    loop.for %i0 ... name("i0") {                       // matrices: independent
      <copy the matrix into the workspace W[%i0] (solve, det_factors), b into out[%i0]>
      loop.for %j = 0 to n name("scan0") {              // columns, in order
        <pivot: the first row r >= j of largest |W[r, j]|, in local scalars>
        <swap rows j and p of W and of out>
        loop.for %r ... name("scan1") {                 // rows below the pivot
          m = W[r, j] / W[j, j]                          // 0 when the pivot is 0
          loop.for %c ... name("scan2") { W[r, c] -= m * W[j, c] }
          <out[r, :] -= m * out[j, :]>
        }
      }
      <back substitution in out, with U in W>
    }

``solve``: elimination with partial pivoting of ``[W | x]``, then back substitution;
``det_factors``: the elimination alone, writing each signed pivot; ``lu_factor``: the
elimination in the output (rectangular, the multipliers kept below the diagonal, whole
rows swapped), the pivots in its last row; ``pivot_permutation``: the pivots' swaps
applied to ``0..size-1``; ``cholesky``: column by column in the output, whose upper
triangle is zeroed; ``triangular_solve``: ``b`` copied into the output, then forward or
back substitution, column by column.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue

from .code import BestSoFar, KernelArgs, MatrixAt, ScalarCode, copy_matrix, routine, square_workspace, swap


def _eliminate(
    c: ScalarCode,
    w: MatrixAt,
    rows: SSAValue,
    columns: SSAValue,
    x: MatrixAt | None = None,
    k: SSAValue | None = None,
    factors: MatrixAt | None = None,
    packed: bool = False,
) -> None:
    """Gaussian elimination with partial pivoting of ``w`` (``rows x columns``) in place
    (its upper triangle becomes U) over its first ``min(rows, columns)`` columns, the same
    row operations applied to ``x`` (``rows x k``); each signed pivot written to
    ``factors`` (``graph.det_factors``). ``packed``: LAPACK's ``getrf`` in ``w`` (whole
    rows swapped, the multipliers kept below the diagonal, the 1-based pivot rows in row
    ``rows``)."""
    search = BestSoFar.allocate(c)
    steps = c.ins(arith.MinSIOp(rows, columns))
    j, col = c.range(None, steps, "scan")
    # the pivot: the first row of largest |w[r, j]| at or below the diagonal
    p = search.first_best(col, j, rows, lambda code, r: code.abs(w.load(code, r, j)), "ogt", "pivot")
    if packed:
        one_based = col.ins(arith.IndexCastOp(col.next(p), IntegerType(64)))
        w.store(col, col.ins(arith.SIToFPOp(one_based, c.element)), rows, j)
    # rows j and p swap (p = j swaps a row with itself)
    for m, width, start in ((w, columns, None if packed else j), (x, k, None)):
        if m is None:
            continue
        q, cell = col.range(start, width, "swap")
        swap(cell, m, (j, q), (p, q))
    pivot = w.load(col, j, j)
    if factors is not None:
        swapped = col.ins(arith.CmpiOp(p, j, "ne"))
        factors.store(col, col.select(swapped, col.ins(arith.NegfOp(pivot)), pivot), j)
    singular = col.compare(pivot, col.float(0.0), "oeq")
    after = col.next(j)
    r, row = col.range(after, rows, "scan")
    multiplier = row.select(singular, row.float(0.0), row.div(w.load(row, r, j), pivot))
    if packed:
        w.store(row, multiplier, r, j)
    q, cell = row.range(after, columns, "scan")
    w.store(cell, cell.sub_product(w.load(cell, r, q), multiplier, w.load(cell, j, q)), r, q)
    if x is not None:
        q, cell = row.range(None, k, "rhs")
        x.store(cell, cell.sub_product(x.load(cell, r, q), multiplier, x.load(cell, j, q)), r, q)


def _substitute(
    c: ScalarCode, t: MatrixAt, x: MatrixAt, n: SSAValue, k: SSAValue, lower: bool, unit_diagonal: bool, counted: bool
) -> None:
    """Solve ``t x' = x`` in place in ``x`` for triangular ``t`` (its ``lower`` or upper
    triangle read), column by column: ``x[j] /= t[j, j]``, then ``x[r] -= t[r, j] x[j]``
    for the rows still to solve. ``counted``: the nest's loops are named ``scan``."""
    prefix = "scan" if counted else "solve"
    step, col = c.range(None, n, prefix)
    j = step if lower else col.ins(arith.SubiOp(col.last(n), step))
    if not unit_diagonal:
        diagonal = t.load(col, j, j)
        q, cell = col.range(None, k, "scale")
        x.store(cell, cell.div(x.load(cell, j, q), diagonal), j, q)
    if lower:
        r, row = col.range(col.next(j), n, prefix)
    else:
        r, row = col.range(None, j, prefix)
    factor = t.load(row, r, j)
    q, cell = row.range(None, k, prefix)
    x.store(cell, cell.sub_product(x.load(cell, r, q), factor, x.load(cell, j, q)), r, q)


@routine("solve", workspace=square_workspace)
def _solve(k: KernelArgs) -> None:
    (a, b), ((n, _), (_, columns)) = k.inputs, k.sizes
    copy_matrix(k.c, b, k.out, n, columns)
    copy_matrix(k.c, a, k.workspace, n, n)
    _eliminate(k.c, k.workspace, n, n, k.out, columns)
    _substitute(k.c, k.workspace, k.out, n, columns, lower=False, unit_diagonal=False, counted=False)


@routine("det_factors", workspace=square_workspace)
def _det_factors(k: KernelArgs) -> None:
    (a,), ((n, _),) = k.inputs, k.sizes
    copy_matrix(k.c, a, k.workspace, n, n)
    _eliminate(k.c, k.workspace, n, n, factors=k.out)


@routine("lu_factor")
def _lu_factor(k: KernelArgs) -> None:
    """The packed LU in rows ``0..m-1`` of the output, the pivots in row ``m`` (zeros past
    ``min(m, n)``)."""
    (a,), ((m, n),) = k.inputs, k.sizes
    copy_matrix(k.c, a, k.out, m, n)
    q, cell = k.c.range(None, n, "copy")
    k.out.store(cell, cell.float(0.0), m, q)
    _eliminate(k.c, k.out, m, n, packed=True)


@routine("pivot_permutation")
def _pivot_permutation(k: KernelArgs) -> None:
    """``perm = 0..size-1``, then ``perm[j] <-> perm[pivots[j] - 1]`` in order (the pivot
    clamped into ``[0, size)``)."""
    c, (pivots,), ((steps,),), (size,) = k.c, k.inputs, k.sizes, k.out_sizes
    integer = k.op.result.type.element_type
    i, fill = c.range(None, size, "fill")
    k.out.store(fill, fill.ins(arith.IndexCastOp(i, integer)), i)
    j, step = c.range(None, steps, "scan")
    p = step.ins(arith.SubiOp(step.ins(arith.IndexCastOp(pivots.load(step, j), IndexType())), step.index(1)))
    p = step.ins(arith.MinSIOp(step.ins(arith.MaxSIOp(p, step.index(0))), step.last(size)))
    swap(step, k.out, (j,), (p,))


@routine("cholesky")
def _cholesky(k: KernelArgs) -> None:
    """``out`` lower triangular with ``out out^T = a`` (``a``'s lower triangle read),
    column by column; its upper triangle zeroed."""
    c, (a,), ((n, _),), out = k.c, k.inputs, k.sizes, k.out
    acc = c.local(c.element)
    j, col = c.range(None, n, "scan")
    col.store(a.load(col, j, j), acc)
    q, dot = col.range(None, j, "diagonal")
    v = out.load(dot, j, q)
    dot.store(dot.sub_product(dot.load(acc), v, v), acc)
    d = col.sqrt(col.load(acc))
    out.store(col, d, j, j)
    after = col.next(j)
    r, row = col.range(after, n, "scan")
    row.store(a.load(row, r, j), acc)
    q, dot = row.range(None, j, "scan")
    dot.store(dot.sub_product(dot.load(acc), out.load(dot, r, q), out.load(dot, j, q)), acc)
    out.store(row, row.div(row.load(acc), d), r, j)
    q, zero = col.range(after, n, "upper")
    out.store(zero, zero.float(0.0), j, q)


@routine("triangular_solve")
def _triangular_solve(k: KernelArgs) -> None:
    (a, b), ((n, _), (_, columns)) = k.inputs, k.sizes
    copy_matrix(k.c, b, k.out, n, columns)
    lower, unit = bool(k.op.lower.value.data), bool(k.op.unit_diagonal.value.data)
    _substitute(k.c, a, k.out, n, columns, lower, unit, counted=True)
