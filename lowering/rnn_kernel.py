"""The loop kernel of a ``te.rnn`` (``graph.rnn``: one direction of an LSTM, GRU or Elman
layer over time). The batch rows are independent recurrences: blocks of :data:`ROWS`
rows outermost (they may run in parallel), in each a serial loop over time doing, per
step, the recurrent product of the block's rows and then the cell, vectorized::

    loop.for %block = 0 to ceil(B / ROWS) name("i0") role(spatial) {
      h[b], c[b] <- initial[b]                          // each row b of the block
      loop.for %s = 0 to T name("t0") role(scan) {      // t = s, or T-1-s (reverse)
        acc[b] = bias + h[b] @ weight                    // blocked: see _product
        the cell at j < H: gates[t, b, g*H + j] + acc[b, g*H + j] -> h[b], c[b]
        (LSTM: c also to out[t, b, P + j]; with a projection: h[b] = m[b] @ projection)
        out[t, b, j] = h[b, j]
      }
    }

The state (``h``, ``c``, the product's accumulators ``acc``, LSTM's ``m`` before a
projection) lives in workspaces the host allocates, ``(B, size)`` each. The kernel's
size does not depend on the number of steps (which may be symbolic): what an unrolled
cell would emit per step is emitted once, inside the time loop.

The recurrent product runs in blocks that stay in L1: for each :data:`COLUMNS` columns
and :data:`DEPTH` rows of the weight (2-8 KiB), every row of the batch block adds its
``DEPTH`` terms to its accumulators in one vectorized pass (one load and store of an
accumulator vector per ``DEPTH`` FMAs), so the weight is read from memory once per step
and block of rows, not once per row. Products are contracted into FMAs; the activations
are the elementwise ops' (``sigmoid`` as ``1 / (1 + exp(-x))``, ``tanh``), which
expand-math makes vector code. Each vectorized loop stores to a buffer at one index only
(the vectorizer's rule), so each state has its own workspace and ``h`` reaches the
output in a loop of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Region, SSAValue

from ..dialects import loop, te
from ..dialects.graph.recurrent import CELLS
from ..dialects.graph.types import shape_of, tensor_type
from .kernel_registry import KernelHost, kernel_rule
from .loop_nest import buffer_bounds, buffer_type, emit_loop_nest
from .scalar_code import LoopNames, ScalarCode

#: the ``tk.kernel`` tag of every ``te.rnn`` kernel (the graph op's name: its anchor)
TAG = "rnn"

#: batch rows per block: a parallel iteration, and the rows sharing each weight block
ROWS = 8
#: columns of a register tile of the product (4 vectors of 16 floats)
COLUMNS = 64
#: batch rows of a register tile: GROUP x COLUMNS / 16 accumulators (16 of AVX-512's 32 registers)
GROUP = 4

#: ``contract``: a multiply and the add consuming it may fuse into one FMA
CONTRACT = arith.FastMathFlagsAttr((FastMathFlag.ALLOW_CONTRACT,))


class _Code(ScalarCode):
    """Scalar code with the cell's arithmetic and the kernel's loops."""

    def sub_code(self, inner: ScalarCode) -> _Code:
        return _Code(inner.b, self.element, self.names, self.n)

    def vector_loop(self, start: SSAValue | int, stop: SSAValue | int) -> tuple[SSAValue, _Code]:
        """A vectorized loop over ``[start, stop)``: its index and the code inside."""
        start, stop = (self.index(v) if isinstance(v, int) else v for v in (start, stop))
        j, inner = self.loop(start, stop, self.index(1), self.names("j"), kind="vectorized")
        return j, self.sub_code(inner)

    def serial_loop(self, start: SSAValue | int, stop: SSAValue | int, prefix: str, role: str | None = None) -> tuple[SSAValue, _Code]:
        start, stop = (self.index(v) if isinstance(v, int) else v for v in (start, stop))
        k, inner = self.loop(start, stop, self.index(1), self.names(prefix), role=role)
        return k, self.sub_code(inner)

    def offset(self, j: SSAValue, by: int | SSAValue) -> SSAValue:
        if isinstance(by, int):
            if by == 0:
                return j
            by = self.index(by)
        return self.ins(arith.AddiOp(j, by))

    def scaled(self, k: SSAValue, by: int) -> SSAValue:
        return self.ins(arith.MuliOp(k, self.index(by)))

    def fma(self, x: SSAValue, y: SSAValue, z: SSAValue) -> SSAValue:
        """``x * y + z``, contracted."""
        return self.ins(arith.AddfOp(self.ins(arith.MulfOp(x, y, CONTRACT)), z, CONTRACT))

    def sigmoid(self, x: SSAValue) -> SSAValue:
        one = self.float(1.0)
        return self.div(one, self.add(one, self.ins(math.ExpOp(self.ins(arith.NegfOp(x))))))

    def tanh(self, x: SSAValue) -> SSAValue:
        return self.ins(math.TanhOp(x))

    def relu(self, x: SSAValue) -> SSAValue:
        return self.ins(arith.MaximumfOp(x, self.float(0.0)))


class _Rows:
    """The batch rows of one block: ``[first, first + count)``."""

    def __init__(self, c: _Code, block: SSAValue, batch: SSAValue):
        self.first = c.scaled(block, ROWS)
        self.count = c.ins(arith.MinSIOp(c.index(ROWS), c.ins(arith.SubiOp(batch, self.first))))

    def each(self, c: _Code) -> tuple[SSAValue, _Code]:
        """A loop over the rows: the row's batch index and the code inside."""
        r, inner = c.serial_loop(0, self.count, "r")
        return inner.offset(r, self.first), inner


class _State:
    """A step's buffers and sizes, for the cell's code."""

    def __init__(self, op: te.RNNOp, args: list[SSAValue], workspaces: list[SSAValue]):
        self.gates, self.weight, self.bias, self.initial, *rest = args[:-1]
        self.projection = rest[0] if rest else None
        self.out = args[-1]
        self.cell = CELLS[op.cell.data]
        self.width = shape_of(op.inputs[0].type)[2]
        self.hidden = self.width // self.cell.gates
        self.output = shape_of(op.inputs[1].type)[0]
        self.h, self.acc, *more = workspaces
        self.c = more.pop(0) if self.cell.has_cell_state else None
        #: o * tanh(c) before the projection (the new h without one)
        self.m = more.pop(0) if self.projection is not None else self.h
        #: the time step being computed (set inside the time loop)
        self.t: SSAValue

    def gate(self, c: _Code, b: SSAValue, k: int, j: SSAValue) -> tuple[SSAValue, SSAValue]:
        """Gate ``k``'s input part and recurrent part at row ``b``, column ``j``."""
        at = c.offset(j, k * self.hidden)
        return c.load(self.gates, [self.t, b, at]), c.load(self.acc, [b, at])


def workspace_types(op: te.RNNOp) -> list[TensorType]:
    """The workspaces a ``te.rnn`` kernel takes: ``h (B, P)``, ``acc (B, G*H)``, then
    ``c (B, H)`` for an LSTM and ``m (B, H)`` with a projection."""
    batch = shape_of(op.result.type)[1]
    element = op.result.type.element_type
    width = shape_of(op.inputs[0].type)[2]
    cell = CELLS[op.cell.data]
    sizes = [shape_of(op.inputs[1].type)[0], width]
    sizes += [width // cell.gates] * (cell.has_cell_state + (len(op.inputs) == 5))
    return [tensor_type((batch, size), element) for size in sizes]


#: the cell's update at row ``b``, column ``j < H`` of a step (reads acc, h, c; writes c,
#: c's output and the new h, or m before a projection)
CellCode = Callable[[_Code, _State, SSAValue, SSAValue], None]


def _lstm(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
    i, f, g, o = (c.add(*s.gate(c, b, k, j)) for k in range(4))
    new_c = c.fma(c.sigmoid(f), c.load(s.c, [b, j]), c.mul(c.sigmoid(i), c.tanh(g)))
    c.store(new_c, s.c, [b, j])
    c.store(new_c, s.out, [s.t, b, c.offset(j, s.output)])
    c.store(c.mul(c.sigmoid(o), c.tanh(new_c)), s.m, [b, j])


def _gru(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
    reset, update = (c.sigmoid(c.add(*s.gate(c, b, k, j))) for k in range(2))
    x_n, r_n = s.gate(c, b, 2, j)
    n = c.tanh(c.fma(reset, r_n, x_n))
    old = c.load(s.h, [b, j])
    c.store(c.fma(update, c.sub(old, n), n), s.h, [b, j])  # (1 - z) n + z h = n + z (h - n)


def _elman(activation: str) -> CellCode:
    def cell_code(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
        pre = c.add(*s.gate(c, b, 0, j))
        c.store(c.tanh(pre) if activation == "tanh" else c.relu(pre), s.h, [b, j])

    return cell_code


#: ``graph.rnn``'s cell -> its update
CELL_CODE: dict[str, CellCode] = {"lstm": _lstm, "gru": _gru, "tanh": _elman("tanh"), "relu": _elman("relu")}


def _product(
    c: _Code, rows: _Rows, into: SSAValue, vector: SSAValue, matrix: SSAValue, depth: int, width: int, init: SSAValue | None
) -> None:
    """``into[b, j] = init[j] + sum_k vector[b, k] * matrix[k, j]`` (``init`` None: 0) for
    the block's rows, as register tiles: for each :data:`COLUMNS` columns and
    :data:`GROUP` rows (then the rows left one by one), a loop over ``k`` adds
    ``vector[b, k] * matrix[k, j]`` to the tile's accumulators, whose addresses do not
    change with ``k`` (LLVM keeps them in registers); each weight vector loaded serves
    every row of the tile."""
    full, tail = divmod(width, COLUMNS)
    if full:
        jt, tile = c.serial_loop(0, full, "jb")
        _column_tile(tile, rows, tile.scaled(jt, COLUMNS), COLUMNS, into, vector, matrix, depth, init)
    if tail:
        _column_tile(c, rows, c.index(full * COLUMNS), tail, into, vector, matrix, depth, init)


def _column_tile(
    c: _Code, rows: _Rows, first: SSAValue, size: int, into: SSAValue, vector: SSAValue, matrix: SSAValue, depth: int,
    init: SSAValue | None,
) -> None:
    """Columns ``[first, first + size)`` of :func:`_product`: the block's rows by
    :data:`GROUP`, then one by one."""
    last = c.offset(first, size)
    groups = c.ins(arith.DivUIOp(rows.count, c.index(GROUP)))
    g, grouped = c.serial_loop(0, groups, "g")
    _tile(grouped, grouped.offset(grouped.scaled(g, GROUP), rows.first), GROUP, into, vector, matrix, depth, first, last, init)
    done = c.offset(c.scaled(groups, GROUP), rows.first)
    b, single = c.serial_loop(done, c.offset(rows.first, rows.count), "r")
    _tile(single, b, 1, into, vector, matrix, depth, first, last, init)


def _tile(
    c: _Code, b0: SSAValue, count: int, into: SSAValue, vector: SSAValue, matrix: SSAValue, depth: int,
    first: SSAValue, last: SSAValue, init: SSAValue | None,
) -> None:
    """Rows ``b0 .. b0 + count - 1`` x columns ``[first, last)`` of :func:`_product`."""
    rows = [c.offset(b0, r) for r in range(count)]
    j, inner = c.vector_loop(first, last)
    start = inner.load(init, [j]) if init is not None else inner.float(0.0)
    for b in rows:
        inner.store(start, into, [b, j])
    k, step = c.serial_loop(0, depth, "k", "reduction")
    scales = [step.load(vector, [b, k]) for b in rows]
    j, inner = step.vector_loop(first, last)
    weight = inner.load(matrix, [k, j])
    for b, scale in zip(rows, scales):
        inner.store(inner.fma(scale, weight, inner.load(into, [b, j])), into, [b, j])


def rnn_kernel(op: te.RNNOp, name: str) -> func.FuncOp:
    """The kernel ``name(gates, weight, bias, initial[, projection], out, *workspaces)``
    of ``op`` (module docstring; the workspaces: :func:`workspace_types`)."""
    spaces = workspace_types(op)
    arg_types = [buffer_type(v.type) for v in op.inputs] + [buffer_type(op.result.type)] + [buffer_type(t) for t in spaces]
    entry = Block(arg_types=arg_types)
    n_args = len(op.inputs) + 1
    args, workspaces = list(entry.args[:n_args]), list(entry.args[n_args:])
    s = _State(op, args, workspaces)
    b = Builder(InsertPoint.at_end(entry))
    steps, batch, _ = buffer_bounds(b, s.gates)
    code = _Code(b, op.result.type.element_type, LoopNames(), None)
    static = batch.owner.value.value.data if isinstance(batch.owner, arith.ConstantOp) else None
    if static is not None:
        blocks = code.index(-(-static // ROWS))
    else:
        blocks = code.ins(arith.DivUIOp(code.offset(batch, ROWS - 1), code.index(ROWS)))  # ceil(B / ROWS)
    (block,), inner = emit_loop_nest(b, [blocks], "i", role="spatial")
    code = code.sub_code(ScalarCode(inner, code.element, code.names, None))
    rows = _Rows(code, block, batch)

    row_index, row = rows.each(code)
    j, init = row.vector_loop(0, s.output)
    init.store(init.load(s.initial, [row_index, j]), s.h, [row_index, j])
    if s.c is not None:
        j, init = row.vector_loop(0, s.hidden)
        init.store(init.load(s.initial, [row_index, init.offset(j, s.output)]), s.c, [row_index, j])

    step, body = code.serial_loop(0, steps, "t", "scan")
    s.t = body.ins(arith.SubiOp(body.last(steps), step)) if op.reverse.value else step
    _product(body, rows, s.acc, s.h, s.weight, s.output, s.width, s.bias)
    row_index, row = rows.each(body)
    j, update = row.vector_loop(0, s.hidden)
    CELL_CODE[op.cell.data](update, s, row_index, j)
    if s.projection is not None:
        _product(body, rows, s.h, s.m, s.projection, s.hidden, s.output, None)
    row_index, row = rows.each(body)
    j, write = row.vector_loop(0, s.output)
    write.store(write.load(s.h, [row_index, j]), s.out, [s.t, row_index, j])

    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, TAG)
    return kernel


@kernel_rule(te.RNNOp)
def rnn(host: KernelHost, op: te.RNNOp, target: SSAValue) -> None:
    """One kernel running ``op``'s recurrence into ``target``, its state in workspaces."""
    workspaces = [host.temporary(t) for t in workspace_types(op)]
    host.call(rnn_kernel(op, host.kernel_name(TAG)), [host.buffer(v) for v in op.inputs] + [target, *workspaces])


__all__ = ["CELL_CODE", "COLUMNS", "GROUP", "ROWS", "TAG", "rnn_kernel", "workspace_types"]
