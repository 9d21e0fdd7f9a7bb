"""Matrix product kernels: ``repeated_squaring`` (``dialects/graph/dense_linalg.py``,
whose numpy reference runs the same steps)::

    <copy r into the output>
    loop.for %t = 0 to clamp(s, 0, MAX_SQUARINGS) name("square0") {   // a count read from data
      <W = out @ out, each element summed over k in order>
      <copy W into the output>
    }
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType

from ...dialects.graph.dense_linalg import MAX_SQUARINGS
from .code import KernelArgs, copy_matrix, routine, square_workspace


@routine("repeated_squaring", workspace=square_workspace)
def _repeated_squaring(k: KernelArgs) -> None:
    c, (r, counts), ((n, _), ()), out, w = k.c, k.inputs, k.sizes, k.out, k.workspace
    copy_matrix(c, r, out, n, n)
    count = counts.load(c)
    within = c.ins(arith.MinimumfOp(c.ins(arith.MaximumfOp(count, c.float(0.0))), c.float(float(MAX_SQUARINGS))))
    count = c.select(c.compare(count, count, "oeq"), within, c.float(0.0))  # NaN: 0
    trips = c.ins(arith.IndexCastOp(c.ins(arith.FPToSIOp(count, IntegerType(64))), IndexType()))
    total = c.local(c.element)
    _, step = c.range(None, trips, "square", within_matrix=False)
    i, row = step.range(None, n, "scan")
    j, cell = row.range(None, n, "scan")
    cell.store(cell.float(0.0), total)
    q, term = cell.range(None, n, "scan")
    term.accumulate(total, term.mul(out.load(term, i, q), out.load(term, q, j)))
    w.store(cell, cell.load(total), i, j)
    copy_matrix(step, w, out, n, n)
