"""Jacobi rotation kernels (the graph ops of ``dialects/graph/spectral.py``, whose numpy
references run the same steps)::

    eigh (W: the symmetric matrix in the workspace; the output's rows 0..n-1 the vectors):
      loop.for %sweep = 0 to 40 name("sweep0") {
        loop.for %p = 0 to (done ? 0 : n) name("scan0") {      // a sweep: every pair once
          loop.for %q = p + 1 to n name("scan1") {
            loop.for %once = 0 to (|W[p, q]| > tol sqrt|W[p, p] W[q, q]| ? 1 : 0) {
              <(c, s) zeroing W[p, q]; rotate W's columns p, q, then its rows, and the vectors>
            }
          }
        }
        <done = no pair rotated in this sweep>
      }
      <eigenvalues = W's diagonal, in the output's last row; selection sort, ascending, with the vectors>

    jacobi_svd (the output's row i: [x_i | v_i], x = a^T at first, v = I):
      <the same sweeps; pair (p, q) rotates the whole rows when |x_p . x_q| > tol |x_p| |x_q|>
      <selection sort of the rows, descending |x_i|>
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from ...dialects.graph.spectral import MAX_SWEEPS, rotation_tolerance
from ...dialects.graph.types import numpy_dtype
from .code import BestSoFar, KernelArgs, MatrixAt, ScalarCode, routine, square_workspace, swap


def _rotation(c: ScalarCode, a_pp: SSAValue, a_qq: SSAValue, a_pq: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``(cos, sin)`` zeroing ``a_pq`` of the symmetric 2x2 block (``spectral.rotation``)."""
    theta = c.div(c.sub(a_qq, a_pp), c.mul(c.float(2.0), a_pq))
    sign = c.select(c.compare(theta, c.float(0.0), "oge"), c.float(1.0), c.float(-1.0))
    theta_squared = c.mul(theta, theta)
    t = c.div(sign, c.add(c.abs(theta), c.sqrt(c.add(c.float(1.0), theta_squared))))
    overflow = c.compare(theta_squared, c.float(float("inf")), "oeq")
    t = c.select(overflow, c.div(c.float(0.5), theta), t)
    cos = c.div(c.float(1.0), c.sqrt(c.add(c.float(1.0), c.mul(t, t))))
    return cos, c.mul(t, cos)


def _rotate(
    c: ScalarCode, m: MatrixAt, p: SSAValue, q: SSAValue, cos: SSAValue, sin: SSAValue, length: SSAValue, rows: bool = True
) -> None:
    """Rows (or columns) ``p, q`` of ``m`` <- ``(cos x_p - sin x_q, sin x_p + cos x_q)``."""
    k, cell = c.range(None, length, "rotate")
    at_p, at_q = ((p, k), (q, k)) if rows else ((k, p), (k, q))
    x_p, x_q = m.load(cell, *at_p), m.load(cell, *at_q)
    m.store(cell, cell.sub(cell.mul(cos, x_p), cell.mul(sin, x_q)), *at_p)
    m.store(cell, cell.add(cell.mul(sin, x_p), cell.mul(cos, x_q)), *at_q)


#: ``pair(code, p, q)`` -> (the condition to rotate, the code of the rotation)
PairRule = Callable[[ScalarCode, SSAValue, SSAValue], tuple[SSAValue, Callable[[ScalarCode], None]]]


def _sweeps(c: ScalarCode, n: SSAValue, pair: PairRule) -> None:
    """Up to ``MAX_SWEEPS`` sweeps over the pairs ``p < q < n``; ``pair(code, p, q)``
    returns the condition to rotate and the code that runs when it holds (and then sets
    this sweep's flag); the sweeps after one without rotations run no iterations."""
    done, rotated = c.local(IntegerType(64)), c.local(IntegerType(64))
    zero, one = (c.ins(arith.ConstantOp.from_int_and_width(v, 64)) for v in (0, 1))
    c.store(zero, done)
    _, sweep = c.range(None, c.index(MAX_SWEEPS), "sweep")
    finished = sweep.ins(arith.CmpiOp(sweep.load(done), one, "eq"))
    sweep.store(zero, rotated)
    p, outer = sweep.range(None, sweep.select(finished, sweep.index(0), n), "scan")
    q, inner = outer.range(outer.next(p), n, "scan")
    condition, rotate = pair(inner, p, q)
    body = inner.when(condition, "rotation")
    body.store(one, rotated)
    rotate(body)
    nothing = sweep.ins(arith.CmpiOp(sweep.load(rotated), zero, "eq"))
    sweep.store(sweep.ins(arith.ExtUIOp(nothing, IntegerType(64))), done)


def _selection_sort(
    c: ScalarCode,
    n: SSAValue,
    key: Callable[[ScalarCode, SSAValue], SSAValue],
    predicate: str,
    exchange: Callable[[ScalarCode, SSAValue, SSAValue], None],
) -> None:
    """For ``i < n``: the first ``j >= i`` whose ``key(code, j)`` is best (``predicate``
    against the best so far: ``olt`` ascending, ``ogt`` descending) exchanges with ``i``."""
    search = BestSoFar.allocate(c)
    i, step = c.range(None, n, "sort")
    exchange(step, i, search.first_best(step, i, n, key, predicate, "sort"))


def _tolerance(c: ScalarCode, length: int) -> SSAValue:
    return c.float(rotation_tolerance(numpy_dtype(c.element), length))


@routine("eigh", workspace=square_workspace)
def _eigh(k: KernelArgs) -> None:
    c, (a,), ((n, _),), out, w = k.c, k.inputs, k.sizes, k.out, k.workspace
    static_n = a.buffer.type.get_shape()[-1]
    lower = bool(k.op.lower.value.data)
    # W: the symmetric matrix of a's lower (upper) triangle; the vectors: the identity
    r, row = c.range(None, n, "copy")
    col, cell = row.range(None, n, "copy")
    direct = cell.ins(arith.CmpiOp(col, r, "ule" if lower else "uge"))
    w.store(cell, a.load(cell, cell.select(direct, r, col), cell.select(direct, col, r)), r, col)
    out.store(cell, cell.select(cell.ins(arith.CmpiOp(r, col, "eq")), cell.float(1.0), cell.float(0.0)), r, col)
    tol = _tolerance(c, static_n)

    def pair(code: ScalarCode, p: SSAValue, q: SSAValue) -> tuple[SSAValue, Callable[[ScalarCode], None]]:
        a_pp, a_qq, a_pq = w.load(code, p, p), w.load(code, q, q), w.load(code, p, q)
        scale = code.mul(tol, code.mul(code.sqrt(code.abs(a_pp)), code.sqrt(code.abs(a_qq))))

        def rotate(body: ScalarCode) -> None:
            cos, sin = _rotation(body, a_pp, a_qq, a_pq)
            _rotate(body, w, p, q, cos, sin, n, rows=False)
            _rotate(body, w, p, q, cos, sin, n)
            w.store(body, body.float(0.0), p, q)
            w.store(body, body.float(0.0), q, p)
            _rotate(body, out, p, q, cos, sin, n)

        return code.compare(code.abs(a_pq), scale, "ugt"), rotate  # (NaN: rotate, so it spreads)

    _sweeps(c, n, pair)
    i, cell = c.range(None, n, "values")
    out.store(cell, w.load(cell, i, i), n, i)

    def exchange(code: ScalarCode, i: SSAValue, j: SSAValue) -> None:
        swap(code, out, (n, i), (n, j))
        q, cell = code.range(None, n, "exchange")
        swap(cell, out, (i, q), (j, q))

    _selection_sort(c, n, lambda code, j: out.load(code, n, j), "olt", exchange)


@routine("jacobi_svd")
def _jacobi_svd(k: KernelArgs) -> None:
    c, (a,), ((m, n),), out = k.c, k.inputs, k.sizes, k.out
    width = c.ins(arith.AddiOp(m, n))
    i, row = c.range(None, n, "copy")
    r, cell = row.range(None, m, "copy")
    out.store(cell, a.load(cell, r, i), i, r)
    j, cell = row.range(None, n, "copy")
    out.store(cell, cell.select(cell.ins(arith.CmpiOp(i, j, "eq")), cell.float(1.0), cell.float(0.0)), i, cell.ins(arith.AddiOp(m, j)))
    tol = _tolerance(c, a.buffer.type.get_shape()[-2])
    sums = [c.local(c.element) for _ in range(3)]

    def pair(code: ScalarCode, p: SSAValue, q: SSAValue) -> tuple[SSAValue, Callable[[ScalarCode], None]]:
        for s in sums:
            code.store(code.float(0.0), s)
        r, term = code.range(None, m, "scan")
        x_p, x_q = out.load(term, p, r), out.load(term, q, r)
        for s, (x, y) in zip(sums, ((x_p, x_p), (x_q, x_q), (x_p, x_q))):
            term.accumulate(s, term.mul(x, y))
        alpha, beta, gamma = (code.load(s) for s in sums)
        scale = code.mul(tol, code.mul(code.sqrt(alpha), code.sqrt(beta)))

        def rotate(body: ScalarCode) -> None:
            cos, sin = _rotation(body, alpha, beta, gamma)
            _rotate(body, out, p, q, cos, sin, width)

        return code.compare(code.abs(gamma), scale, "ugt"), rotate  # (NaN: rotate, so it spreads)

    _sweeps(c, n, pair)
    squares = c.local(c.element)

    def norm(code: ScalarCode, row: SSAValue) -> SSAValue:
        code.store(code.float(0.0), squares)
        r, term = code.range(None, m, "norm")
        x = out.load(term, row, r)
        term.accumulate(squares, term.mul(x, x))
        return code.load(squares)

    def exchange(code: ScalarCode, i: SSAValue, j: SSAValue) -> None:
        q, cell = code.range(None, width, "exchange")
        swap(cell, out, (i, q), (j, q))

    _selection_sort(c, n, norm, "ogt", exchange)
