"""The loop kernel of a ``te.rnn`` (``graph.rnn``: one direction of an LSTM, GRU or Elman
layer over time). The batch rows are independent recurrences: blocks of :data:`ROWS`
rows outermost (they may run in parallel), in each a serial loop over time; within a
step, tiles of hidden units (they may run in parallel too: a small batch's steps on
several threads), each computing its units' gates for the block's rows (the recurrent
product) and then their cell update, vectorized::

    loop.for %block = 0 to ceil(B / ROWS) name("i0") role(spatial) {
      h[0, b], c[b] <- initial[b]                       // each row b of the block
      loop.for %s = 0 to T name("t0") role(scan) {      // t = s, or T-1-s (reverse)
        loop.for %u = 0 to ceil(H / U) name("u0") {     // hidden units [u*U, u*U + U)
          acc[b, g, j] = bias[g*H + j] + h[s % 2, b] @ weight[:, g*H + j]   // each gate g
          the cell at those j: gates[t, b, g*H + j] + acc[b, g, j] -> h[(s+1) % 2, b, j], c[b, j]
          (LSTM: c to out[t, b, P + j]); out[t, b, j] = h[(s+1) % 2, b, j]
        }
        (with a projection: m = o * tanh(c) above, then tiles of h[(s+1) % 2] = m @ projection)
      }
    }

``h`` is double-buffered (step ``s`` reads ``h[s % 2]`` and writes ``h[(s + 1) % 2]``), so
that tiles running in parallel never read what another writes. The state (``h``, the
product's accumulators ``acc (B, G, H)``, ``c``, LSTM's ``m`` before a projection)
lives in workspaces the host allocates. The kernel's size does not depend on the number
of steps (which may be symbolic): what an unrolled cell would emit per step is emitted
once, inside the time loop.

The product runs as register tiles: :data:`GROUP` rows x the tile's ``G`` gate vectors of
``U`` units, the accumulators at addresses fixed while ``k`` advances (LLVM keeps them in
registers), each weight vector serving every row of the group. Products are contracted
into FMAs; the activations are the elementwise ops' (``sigmoid`` as ``1 / (1 + exp(-x))``,
``tanh``), which expand-math makes vector code. Each vectorized loop stores to a buffer
at one index only (the vectorizer's rule): each state has its own workspace.
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

#: batch rows per block: a parallel iteration, and the rows sharing each weight vector
ROWS = 8
#: columns of a weight panel (one vector of 16 floats): a tile's units start at multiples
#: of it, so a packed weight (``schedule/strategies/recurrent.py``) is read in whole panels
PANEL = 16
#: batch rows of a register tile: GROUP x (vectors per tile) accumulators
GROUP = 4
#: vectors a tile's product keeps per row: its units per gate are PANEL * max(1, VECTORS // G)
VECTORS = 4


def tile_units(gates: int) -> int:
    """Hidden units per tile for a cell of ``gates`` gates: about :data:`VECTORS` weight
    vectors per ``k`` (LSTM: 4 gates x 16 units; GRU: 3 x 16; Elman: 1 x 64)."""
    return PANEL * max(1, VECTORS // gates)

#: ``contract``: a multiply and the add consuming it may fuse into one FMA
CONTRACT = arith.FastMathFlagsAttr((FastMathFlag.ALLOW_CONTRACT,))


class _Code(ScalarCode):
    """Scalar code with the cell's arithmetic and the kernel's loops."""

    def sub_code(self, inner: ScalarCode) -> _Code:
        return _Code(inner.b, self.element, self.names, self.n)

    def vector_loop(self, start: SSAValue | int, stop: SSAValue | int) -> tuple[SSAValue, _Code]:
        """A vectorized loop over ``[start, stop)``: its index and the code inside."""
        return self._loop(start, stop, "j", "vectorized", None)

    def serial_loop(self, start: SSAValue | int, stop: SSAValue | int, prefix: str, role: str | None = None) -> tuple[SSAValue, _Code]:
        """A serial loop over ``[start, stop)``: its index and the code inside."""
        return self._loop(start, stop, prefix, "serial", role)

    def _loop(self, start: SSAValue | int, stop: SSAValue | int, prefix: str, kind: str, role: str | None) -> tuple[SSAValue, _Code]:
        """The loop counts from 0 and its index is ``start + count``: an index computed from
        the enclosing loops' (a tile's first unit, a block's first row) is then seen to
        follow them (the parallel primitive's check that iterations write apart)."""
        from_zero = isinstance(start, int) and start == 0
        if isinstance(start, int) and isinstance(stop, int):
            trips = self.index(stop - start)
        else:
            trips = self.index(stop) if isinstance(stop, int) else stop
            if not from_zero:
                trips = self.ins(arith.SubiOp(trips, self.index(start) if isinstance(start, int) else start))
        count, inner = self.loop(self.index(0), trips, self.index(1), self.names(prefix), kind=kind, role=role)
        code = self.sub_code(inner)
        return (count if from_zero else code.offset(count, start)), code

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
    """A step's buffers, sizes and positions, for the cell's code."""

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
        self.m = more.pop(0) if self.projection is not None else None
        #: set inside the time loop: the step's position, and the h buffers it reads and writes
        self.t: SSAValue
        self.now: SSAValue
        self.next: SSAValue

    def gate(self, c: _Code, b: SSAValue, k: int, j: SSAValue) -> tuple[SSAValue, SSAValue]:
        """Gate ``k``'s input part and recurrent part at row ``b``, unit ``j``."""
        return c.load(self.gates, [self.t, b, c.offset(j, k * self.hidden)]), c.load(self.acc, [b, c.index(k), j])

    def store_h(self, c: _Code, value: SSAValue, b: SSAValue, j: SSAValue) -> None:
        """The cell's new ``h`` (``m``, before a projection)."""
        if self.m is not None:
            c.store(value, self.m, [b, j])
        else:
            c.store(value, self.h, [self.next, b, j])


def workspace_types(op: te.RNNOp) -> list[TensorType]:
    """The workspaces a ``te.rnn`` kernel takes: ``h (2, B, P)`` (double-buffered),
    ``acc (B, G, H)``, then ``c (B, H)`` for an LSTM and ``m (B, H)`` with a projection."""
    batch = shape_of(op.result.type)[1]
    element = op.result.type.element_type
    cell = CELLS[op.cell.data]
    hidden = shape_of(op.inputs[0].type)[2] // cell.gates
    shapes = [(2, batch, shape_of(op.inputs[1].type)[0]), (batch, cell.gates, hidden)]
    shapes += [(batch, hidden)] * (cell.has_cell_state + (len(op.inputs) == 5))
    return [tensor_type(shape, element) for shape in shapes]


#: the cell's update at row ``b``, unit ``j`` of a step (reads acc, h, c; writes c, c's
#: output and the new h, or m before a projection)
CellCode = Callable[[_Code, _State, SSAValue, SSAValue], None]


def _lstm(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
    i, f, g, o = (c.add(*s.gate(c, b, k, j)) for k in range(4))
    new_c = c.fma(c.sigmoid(f), c.load(s.c, [b, j]), c.mul(c.sigmoid(i), c.tanh(g)))
    c.store(new_c, s.c, [b, j])
    c.store(new_c, s.out, [s.t, b, c.offset(j, s.output)])
    s.store_h(c, c.mul(c.sigmoid(o), c.tanh(new_c)), b, j)


def _gru(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
    reset, update = (c.sigmoid(c.add(*s.gate(c, b, k, j))) for k in range(2))
    x_n, r_n = s.gate(c, b, 2, j)
    n = c.tanh(c.fma(reset, r_n, x_n))
    old = c.load(s.h, [s.now, b, j])
    s.store_h(c, c.fma(update, c.sub(old, n), n), b, j)  # (1 - z) n + z h = n + z (h - n)


def _elman(activation: str) -> CellCode:
    def cell_code(c: _Code, s: _State, b: SSAValue, j: SSAValue) -> None:
        pre = c.add(*s.gate(c, b, 0, j))
        s.store_h(c, c.tanh(pre) if activation == "tanh" else c.relu(pre), b, j)

    return cell_code


#: ``graph.rnn``'s cell -> its update
CELL_CODE: dict[str, CellCode] = {"lstm": _lstm, "gru": _gru, "tanh": _elman("tanh"), "relu": _elman("relu")}


class _Product:
    """``into[b, g, j] = init[g*N + j] + sum_k vector[b, k] * matrix[k, g*N + j]`` (``init``
    None: 0) for the block's rows and the units ``[first, last)`` of each of ``gates``
    column blocks of width ``N``. ``vector_at``: ``vector``'s leading indices (h's buffer);
    ``into_at(b, g, j)``: where ``into`` holds that element."""

    def __init__(
        self,
        vector: SSAValue,
        vector_at: list[SSAValue],
        matrix: SSAValue,
        init: SSAValue | None,
        gates: int,
        width: int,
        into: SSAValue,
        into_at: Callable[[_Code, SSAValue, int, SSAValue], list[SSAValue]],
    ):
        self.vector, self.vector_at, self.matrix, self.init = vector, vector_at, matrix, init
        self.gates, self.width, self.into, self.into_at = gates, width, into, into_at
        self.depth = vector.type.get_shape()[-1]

    def run(self, c: _Code, rows: _Rows, first: SSAValue, last: SSAValue) -> None:
        """Register tiles of :data:`GROUP` rows, then the rows left one by one."""
        groups = c.ins(arith.DivUIOp(rows.count, c.index(GROUP)))
        g, grouped = c.serial_loop(0, groups, "g")
        self._tile(grouped, grouped.offset(grouped.scaled(g, GROUP), rows.first), GROUP, first, last)
        done = c.offset(c.scaled(groups, GROUP), rows.first)
        b, single = c.serial_loop(done, c.offset(rows.first, rows.count), "r")
        self._tile(single, b, 1, first, last)

    def _tile(self, c: _Code, b0: SSAValue, count: int, first: SSAValue, last: SSAValue) -> None:
        rows = [c.offset(b0, r) for r in range(count)]
        j, inner = c.vector_loop(first, last)
        for g in range(self.gates):
            start = inner.load(self.init, [inner.offset(j, g * self.width)]) if self.init is not None else inner.float(0.0)
            for b in rows:
                inner.store(start, self.into, self.into_at(inner, b, g, j))
        k, step = c.serial_loop(0, self.depth, "k", "reduction")
        scales = [step.load(self.vector, [*self.vector_at, b, k]) for b in rows]
        j, inner = step.vector_loop(first, last)
        for g in range(self.gates):
            weight = inner.load(self.matrix, [k, inner.offset(j, g * self.width)])
            for b, scale in zip(rows, scales):
                at = self.into_at(inner, b, g, j)
                inner.store(inner.fma(scale, weight, inner.load(self.into, at)), self.into, at)


def _tiles(c: _Code, size: int, units: int) -> tuple[SSAValue, _Code, SSAValue, SSAValue]:
    """A loop over tiles of ``units`` of ``[0, size)``: the code inside, the tile's index,
    its first and its end (the last tile may be shorter)."""
    u, tile = c.serial_loop(0, -(-size // units), "u")
    first = tile.scaled(u, units)
    last = tile.ins(arith.MinSIOp(tile.offset(first, units), tile.index(size)))
    return u, tile, first, last


def rnn_kernel(op: te.RNNOp, name: str) -> func.FuncOp:
    """The kernel ``name(gates, weight, bias, initial[, projection], out, *workspaces)``
    of ``op`` (module docstring; the workspaces: :func:`workspace_types`)."""
    spaces = workspace_types(op)
    arg_types = [buffer_type(v.type) for v in op.inputs] + [buffer_type(op.result.type)] + [buffer_type(t) for t in spaces]
    entry = Block(arg_types=arg_types)
    n_args = len(op.inputs) + 1
    s = _State(op, list(entry.args[:n_args]), list(entry.args[n_args:]))
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
    init.store(init.load(s.initial, [row_index, j]), s.h, [init.index(0), row_index, j])
    if s.c is not None:
        j, init = row.vector_loop(0, s.hidden)
        init.store(init.load(s.initial, [row_index, init.offset(j, s.output)]), s.c, [row_index, j])

    step, body = code.serial_loop(0, steps, "t", "scan")
    s.t = body.ins(arith.SubiOp(body.last(steps), step)) if op.reverse.value else step
    s.now = body.ins(arith.RemUIOp(step, body.index(2)))
    s.next = body.ins(arith.SubiOp(body.index(1), s.now))
    recurrent = _Product(
        s.h, [s.now], s.weight, s.bias, s.cell.gates, s.hidden, s.acc, lambda c, b, g, j: [b, c.index(g), j]
    )
    _, tile, first, last = _tiles(body, s.hidden, tile_units(s.cell.gates))
    recurrent.run(tile, rows, first, last)
    row_index, row = rows.each(tile)
    j, update = row.vector_loop(first, last)
    CELL_CODE[op.cell.data](update, s, row_index, j)
    if s.projection is not None:  # h = m @ projection, once every unit's m is known
        projected = _Product(s.m, [], s.projection, None, 1, s.output, s.h, lambda c, b, g, j: [s.next, b, j])
        _, tile, first, last = _tiles(body, s.output, tile_units(1))
        projected.run(tile, rows, first, last)
    row_index, row = rows.each(tile)
    j, write = row.vector_loop(first, last)
    write.store(write.load(s.h, [s.next, row_index, j]), s.out, [s.t, row_index, j])

    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, TAG)
    return kernel


@kernel_rule(te.RNNOp)
def rnn(host: KernelHost, op: te.RNNOp, target: SSAValue) -> None:
    """One kernel running ``op``'s recurrence into ``target``, its state in workspaces."""
    workspaces = [host.temporary(t) for t in workspace_types(op)]
    host.call(rnn_kernel(op, host.kernel_name(TAG)), [host.buffer(v) for v in op.inputs] + [target, *workspaces])


__all__ = ["CELL_CODE", "GROUP", "PANEL", "ROWS", "TAG", "rnn_kernel", "tile_units", "workspace_types"]
