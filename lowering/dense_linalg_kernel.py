"""The loop kernel of a ``te.dense_linalg``: the routine's sequential algorithm run on each
matrix of the batch, the batch loops outermost (named ``i0, i1, ...`` as te-to-loop's
output loops, so the CPU default schedule may run them in parallel and the GPU's
``one_thread_per_element`` gives each matrix a thread)::

    loop.for %i0 ... name("i0") {                       // matrices: independent
      <copy the matrix into the workspace W[%i0] (solve, det_factors), b into out[%i0]>
      loop.for %j = 0 to n name("scan0") {              // columns, in order
        <pivot: the first row r >= j of largest |W[r, j]|, in local scalars>
        <swap rows j and p of W (columns j..n) and of out>
        loop.for %r ... name("scan1") {                 // rows below the pivot
          m = W[r, j] / W[j, j]                          // 0 when the pivot is 0
          loop.for %c ... name("scan2") { W[r, c] -= m * W[j, c] }
          <out[r, :] -= m * out[j, :]>
        }
      }
      <back substitution in out, with U in W>
    }

Routines (the graph ops of ``dialects/graph/dense_linalg.py``, whose numpy references
run the same steps): ``solve`` (elimination with partial pivoting of ``[W | x]``, then
back substitution), ``det_factors`` (the elimination alone, writing each signed pivot),
``cholesky`` (column by column in the output, whose upper triangle is zeroed) and
``triangular_solve`` (``b`` copied into the output, then forward or back substitution,
column by column). Every access is inside its buffer: the loops run over the matrix
sizes only, and the pivot row is one of them.

The three loops of the main ``O(n^3)`` nest are named ``scan0..2`` (the schedule's
serial loops per output line: ``schedule/strategies/analysis.py`` counts them as work,
so large batches go parallel). A loop over ``[start, stop)`` runs ``t`` from 0 to
``min(n, stop - start)`` (``n`` the static matrix size): the schedule reads its most
iterations, ``n``, from that bound, as from the inner loop of a split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerType, MemRefType, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ..dialects import loop, te
from ..dialects.graph.types import shape_of, tensor_type
from .line_nest import index_const
from .te_to_loop import _bounds, buffer_type, emit_loop_nest

#: routines that factor a copy of each matrix in a workspace the host allocates
WITH_WORKSPACE = ("solve", "det_factors")


def workspace_type(op: te.DenseLinalgOp) -> TensorType | None:
    """The workspace of ``op``'s kernel: one ``n x n`` matrix per matrix of the result's
    batch, or None for routines working in their output."""
    routine = op.routine.data
    if routine not in WITH_WORKSPACE:
        return None
    shape = shape_of(op.result.type)
    batch = shape[:-1] if routine == "det_factors" else shape[:-2]
    n = shape_of(op.inputs[0].type)[-1]
    return tensor_type((*batch, n, n), op.result.type.element_type)


@dataclass
class _Names:
    """Unique loop names within one kernel."""

    counts: dict[str, int] = field(default_factory=dict)

    def __call__(self, prefix: str) -> str:
        k = self.counts.get(prefix, 0)
        self.counts[prefix] = k + 1
        return f"{prefix}{k}"


@dataclass
class _Code:
    """Scalar code at one insertion point of the kernel."""

    b: Builder
    element: Attribute
    names: _Names
    #: the static matrix size (None when symbolic)
    n: int | None

    def ins(self, op: Operation) -> SSAValue:
        return self.b.insert(op).results[0]

    def index(self, k: int) -> SSAValue:
        return index_const(self.b, k)

    def float(self, x: float) -> SSAValue:
        return self.ins(arith.ConstantOp(FloatAttr(x, self.element)))

    def range(self, start: SSAValue | None, stop: SSAValue, prefix: str) -> tuple[SSAValue, _Code]:
        """A serial loop over ``[start, stop)`` (``start`` None: 0); its index and the code inside."""
        zero, one = self.index(0), self.index(1)
        trips = stop if start is None else self.ins(arith.SubiOp(stop, start))
        if self.n is not None and not (start is None and isinstance(stop.owner, arith.ConstantOp)):
            trips = self.ins(arith.MinSIOp(self.index(self.n), trips))
        body = Block(arg_types=[IndexType()])
        self.b.insert(loop.ForOp(zero, trips, one, body, kind="serial", name=self.names(prefix)))
        body.add_op(loop.YieldOp())
        inner = _Code(Builder(InsertPoint.before(body.last_op)), self.element, self.names, self.n)
        t = body.args[0]
        return (t if start is None else inner.ins(arith.AddiOp(start, t))), inner

    def local(self, t: Attribute) -> SSAValue:
        return self.ins(loop.AllocOp(MemRefType(t, []), scope="local"))

    def load(self, buffer: SSAValue, indices: Sequence[SSAValue] = ()) -> SSAValue:
        return self.ins(loop.LoadOp(buffer, list(indices)))

    def store(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue] = ()) -> None:
        self.b.insert(loop.StoreOp(value, buffer, list(indices)))

    def sub_product(self, x: SSAValue, y: SSAValue, z: SSAValue) -> SSAValue:
        """``x - y * z`` (no fast-math flags: the numpy reference's roundings)."""
        return self.ins(arith.SubfOp(x, self.ins(arith.MulfOp(y, z))))


@dataclass(frozen=True)
class _Matrix:
    """One matrix (or vector) of a buffer: the batch indices, then the element's."""

    buffer: SSAValue
    batch: tuple[SSAValue, ...]

    def load(self, c: _Code, *at: SSAValue) -> SSAValue:
        return c.load(self.buffer, [*self.batch, *at])

    def store(self, c: _Code, value: SSAValue, *at: SSAValue) -> None:
        c.store(value, self.buffer, [*self.batch, *at])


def _batch_of(c: _Code, buffer: SSAValue, ivs: Sequence[SSAValue], rank: int) -> tuple[SSAValue, ...]:
    """The batch indices into ``buffer`` (its leading ``rank`` axes) of the result's
    matrix at ``ivs``: numpy broadcasting (static size-1 axes read index 0; missing
    leading axes are dropped)."""
    shape = buffer.type.get_shape()[:rank]
    offset = len(ivs) - rank
    return tuple(c.index(0) if size == 1 else ivs[offset + axis] for axis, size in enumerate(shape))


def _copy(c: _Code, source: _Matrix, target: _Matrix, rows: SSAValue, columns: SSAValue) -> None:
    r, row = c.range(None, rows, "copy")
    k, cell = row.range(None, columns, "copy")
    target.store(cell, source.load(cell, r, k), r, k)


def _eliminate(
    c: _Code, w: _Matrix, n: SSAValue, x: _Matrix | None, k: SSAValue | None, factors: _Matrix | None
) -> None:
    """Gaussian elimination with partial pivoting of ``w`` in place (its upper triangle
    becomes U), the same row operations applied to ``x``; each signed pivot written to
    ``factors`` (``graph.det_factors``)."""
    best, where = c.local(c.element), c.local(IntegerType(64))
    j, col = c.range(None, n, "scan")
    # the pivot: the first row of largest |w[r, j]| at or below the diagonal
    col.store(col.ins(math.AbsFOp(w.load(col, j, j))), best)
    col.store(col.ins(arith.IndexCastOp(j, IntegerType(64))), where)
    r, search = col.range(col.ins(arith.AddiOp(j, col.index(1))), n, "pivot")
    v = search.ins(math.AbsFOp(w.load(search, r, j)))
    so_far = search.load(best)
    take = search.ins(arith.CmpfOp(v, so_far, "ogt"))
    search.store(search.ins(arith.SelectOp(take, v, so_far)), best)
    here = search.ins(arith.IndexCastOp(r, IntegerType(64)))
    search.store(search.ins(arith.SelectOp(take, here, search.load(where))), where)
    p = col.ins(arith.IndexCastOp(col.load(where), IndexType()))
    # rows j and p swap (p = j swaps a row with itself)
    for m, width, start in ((w, n, j), (x, k, None)):
        if m is None:
            continue
        q, swap = col.range(start, width, "swap")
        top, pivot_row = m.load(swap, j, q), m.load(swap, p, q)
        m.store(swap, pivot_row, j, q)
        m.store(swap, top, p, q)
    pivot = w.load(col, j, j)
    if factors is not None:
        swapped = col.ins(arith.CmpiOp(p, j, "ne"))
        factors.store(col, col.ins(arith.SelectOp(swapped, col.ins(arith.NegfOp(pivot)), pivot)), j)
    singular = col.ins(arith.CmpfOp(pivot, col.float(0.0), "oeq"))
    after = col.ins(arith.AddiOp(j, col.index(1)))
    r, row = col.range(after, n, "scan")
    quotient = row.ins(arith.DivfOp(w.load(row, r, j), pivot))
    multiplier = row.ins(arith.SelectOp(singular, row.float(0.0), quotient))
    q, cell = row.range(after, n, "scan")
    w.store(cell, cell.sub_product(w.load(cell, r, q), multiplier, w.load(cell, j, q)), r, q)
    if x is not None:
        q, cell = row.range(None, k, "rhs")
        x.store(cell, cell.sub_product(x.load(cell, r, q), multiplier, x.load(cell, j, q)), r, q)


def _substitute(
    c: _Code, t: _Matrix, x: _Matrix, n: SSAValue, k: SSAValue, lower: bool, unit_diagonal: bool, counted: bool
) -> None:
    """Solve ``t x' = x`` in place in ``x`` for triangular ``t`` (its ``lower`` or upper
    triangle read), column by column: ``x[j] /= t[j, j]``, then ``x[r] -= t[r, j] x[j]``
    for the rows still to solve. ``counted``: the nest's loops are named ``scan``."""
    prefix = "scan" if counted else "solve"
    step, col = c.range(None, n, prefix)
    j = step if lower else col.ins(arith.SubiOp(col.ins(arith.SubiOp(n, col.index(1))), step))
    if not unit_diagonal:
        diagonal = t.load(col, j, j)
        q, cell = col.range(None, k, "scale")
        x.store(cell, cell.ins(arith.DivfOp(x.load(cell, j, q), diagonal)), j, q)
    if lower:
        r, row = col.range(col.ins(arith.AddiOp(j, col.index(1))), n, prefix)
    else:
        r, row = col.range(None, j, prefix)
    factor = t.load(row, r, j)
    q, cell = row.range(None, k, prefix)
    x.store(cell, cell.sub_product(x.load(cell, r, q), factor, x.load(cell, j, q)), r, q)


def _cholesky(c: _Code, a: _Matrix, out: _Matrix, n: SSAValue) -> None:
    """``out`` lower triangular with ``out out^T = a`` (``a``'s lower triangle read),
    column by column; its upper triangle zeroed."""
    acc = c.local(c.element)
    j, col = c.range(None, n, "scan")
    col.store(a.load(col, j, j), acc)
    q, dot = col.range(None, j, "diagonal")
    v = out.load(dot, j, q)
    dot.store(dot.sub_product(dot.load(acc), v, v), acc)
    d = col.ins(math.SqrtOp(col.load(acc)))
    out.store(col, d, j, j)
    after = col.ins(arith.AddiOp(j, col.index(1)))
    r, row = col.range(after, n, "scan")
    row.store(a.load(row, r, j), acc)
    q, dot = row.range(None, j, "scan")
    dot.store(dot.sub_product(dot.load(acc), out.load(dot, r, q), out.load(dot, j, q)), acc)
    out.store(row, row.ins(arith.DivfOp(row.load(acc), d)), r, j)
    q, zero = col.range(after, n, "upper")
    out.store(zero, zero.float(0.0), j, q)


def dense_linalg_kernel(op: te.DenseLinalgOp, name: str) -> func.FuncOp:
    """The kernel ``name(inputs..., out[, workspace])`` of ``op`` (module docstring)."""
    routine = op.routine.data
    workspace = workspace_type(op)
    types = [buffer_type(v.type) for v in op.inputs] + [buffer_type(op.result.type)]
    types += [buffer_type(workspace)] if workspace is not None else []
    entry = Block(arg_types=types)
    inputs, out = entry.args[: len(op.inputs)], entry.args[len(op.inputs)]
    b = Builder(InsertPoint.at_end(entry))
    a_bounds = _bounds(b, inputs[0])
    n = a_bounds[-1]
    k = _bounds(b, inputs[1])[-1] if len(inputs) == 2 else None
    out_bounds = _bounds(b, out)
    batch_rank = len(out_bounds) - (1 if routine == "det_factors" else 2)
    ivs, inner = emit_loop_nest(b, out_bounds[:batch_rank], "i")
    static = inputs[0].type.get_shape()[-1]
    c = _Code(inner, op.result.type.element_type, _Names(), static if static >= 0 else None)
    result = _Matrix(out, tuple(ivs))
    a = _Matrix(inputs[0], _batch_of(c, inputs[0], ivs, len(inputs[0].type.get_shape()) - 2))
    if len(inputs) == 2:
        rhs = _Matrix(inputs[1], _batch_of(c, inputs[1], ivs, len(inputs[1].type.get_shape()) - 2))
        _copy(c, rhs, result, n, k)
    if workspace is not None:
        w = _Matrix(entry.args[-1], tuple(ivs))
        _copy(c, a, w, n, n)
        if routine == "solve":
            _eliminate(c, w, n, result, k, None)
            _substitute(c, w, result, n, k, lower=False, unit_diagonal=False, counted=False)
        else:
            _eliminate(c, w, n, None, None, result)
    elif routine == "cholesky":
        _cholesky(c, a, result, n)
    else:
        lower, unit = bool(op.lower.value.data), bool(op.unit_diagonal.value.data)
        _substitute(c, a, result, n, k, lower, unit, counted=True)
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (types, []), Region(entry))
    kernel.attributes["tk.kernel"] = StringAttr(routine)
    return kernel


__all__ = ["WITH_WORKSPACE", "dense_linalg_kernel", "workspace_type"]
