"""Householder reflection kernels (the graph ops of ``dialects/graph/factorizations.py``,
whose numpy references run the same steps)::

    householder_qr (in the output: a copied to rows 0..m-1, tau to row m):
      loop.for %j = 0 to min(m, n) name("scan0") {
        <alpha = W[j, j], |x|^2 = sum of W[r, j]^2 below it>
        <beta = -sign(alpha) |(alpha, x)|, tau = (beta - alpha) / beta, v = x / (alpha - beta)>
        <H_j applied to the columns right of j, row by row: d = v^T W, then W -= tau v d>
      }

    householder_product (Q in the output, the identity's columns at first):
      loop.for %t = 0 to k name("scan0") {               // i = k - 1 - t: H_{k-1} first
        <H_i applied to the columns i..n-1 of Q, rows i..m-1>
      }

``x = 0`` leaves the column (``tau = 0``, ``H = I``), as LAPACK's ``dlarfg``.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from .code import KernelArgs, MatrixAt, ScalarCode, copy_matrix, routine


def _reflect(
    c: ScalarCode, v: MatrixAt, i: SSAValue, tau: SSAValue, w: MatrixAt, rows: SSAValue, first: SSAValue, columns: SSAValue
) -> None:
    """Apply ``H = I - tau v v^T`` to the columns ``first .. columns - 1`` of ``w`` on its
    rows ``i .. rows - 1``, ``v`` the reflector stored below ``v[i, i]`` (its leading 1
    implied): ``d = v^T w`` then ``w -= tau v d``, row by row (the inner loops run along
    rows, contiguous in memory), ``d`` in a local vector."""
    dots = c.local_vector(w.buffer.type.get_shape()[-1])
    col, cell = c.range(first, columns, "dots")
    cell.store(w.load(cell, i, col), dots, [col])
    below = c.next(i)
    r, row = c.range(below, rows, "scan")
    factor = v.load(row, r, i)
    col, cell = row.range(first, columns, "scan")
    cell.store(cell.add(cell.load(dots, [col]), cell.mul(factor, w.load(cell, r, col))), dots, [col])
    col, cell = c.range(first, columns, "scan")
    w.store(cell, cell.sub_product(w.load(cell, i, col), tau, cell.load(dots, [col])), i, col)
    r, row = c.range(below, rows, "scan")
    factor = row.mul(tau, v.load(row, r, i))
    col, cell = row.range(first, columns, "scan")
    w.store(cell, cell.sub_product(w.load(cell, r, col), factor, cell.load(dots, [col])), r, col)


@routine("householder_qr")
def _householder_qr(k: KernelArgs) -> None:
    c, (a,), ((m, n),), w = k.c, k.inputs, k.sizes, k.out
    copy_matrix(c, a, w, m, n)
    q, cell = c.range(None, n, "copy")
    w.store(cell, cell.float(0.0), m, q)
    squares = c.local(c.element)
    j, col = c.range(None, c.ins(arith.MinSIOp(m, n)), "scan")
    alpha = w.load(col, j, j)
    col.store(col.float(0.0), squares)
    below = col.next(j)
    r, term = col.range(below, m, "norm")
    x = w.load(term, r, j)
    term.accumulate(squares, term.mul(x, x))
    x_squared = col.load(squares)
    plain = col.compare(x_squared, col.float(0.0), "oeq")
    norm = col.sqrt(col.add(col.mul(alpha, alpha), x_squared))
    negative = col.compare(alpha, col.float(0.0), "olt")
    beta = col.select(plain, alpha, col.select(negative, norm, col.ins(arith.NegfOp(norm))))
    tau = col.select(plain, col.float(0.0), col.div(col.sub(beta, alpha), beta))
    scale = col.select(plain, col.float(1.0), col.div(col.float(1.0), col.sub(alpha, beta)))
    r, cell = col.range(below, m, "scale")
    w.store(cell, cell.mul(w.load(cell, r, j), scale), r, j)
    w.store(col, beta, j, j)
    w.store(col, tau, m, j)
    _reflect(col, w, j, tau, w, m, below, n)


@routine("householder_product")
def _householder_product(k: KernelArgs) -> None:
    c, (v, taus), ((m, n), (steps,)), q = k.c, k.inputs, k.sizes, k.out
    r, row = c.range(None, m, "identity")
    col, cell = row.range(None, n, "identity")
    diagonal = cell.ins(arith.CmpiOp(r, col, "eq"))
    q.store(cell, cell.select(diagonal, cell.float(1.0), cell.float(0.0)), r, col)
    t, step = c.range(None, steps, "scan")
    i = step.ins(arith.SubiOp(step.last(steps), t))
    _reflect(step, v, i, taus.load(step, i), q, m, i, n)
