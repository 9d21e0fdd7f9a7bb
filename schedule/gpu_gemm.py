"""A GPU template for matrix products (matmul, dense, batch_matmul, with their fused
elementwise epilogues): shared-memory tiles and per-thread register tiles.

The kernel's reduction nest (see ``gpu_reduction.reduction_nest``: output loops, a
scalar accumulator, one k loop, an epilogue) is rebuilt, with its own ops cloned, as::

    for bz blockIdx.z (batch), by blockIdx.y (row tiles), bx blockIdx.x (column tiles):
      %As, %Bs = shared [BK][TILE + 1]          // +1: no bank conflicts on the k-major stores
      %acc = local [R][R]                       // per thread: rows ty + T*i, columns tx + T*j
      for ty, tx threadIdx.y/x: acc[i][j] = init
      for k0 = 0 to K step BK:
        for ty, tx threadIdx: 4 elements each of A's TILE x BK box -> As   (the A load, cloned,
        for ty, tx threadIdx: 4 elements each of B's BK x TILE box -> Bs    indices clamped, 0 outside)
        for ty, tx threadIdx: for kk < BK, i, j < R: acc[i][j] = combine(acc[i][j], As[kk][..] * Bs[kk][..])
      for ty, tx threadIdx: for i, j: if (row < M && col < N) { <epilogue on acc[i][j]> }

with barriers placed by loop-to-gpu (after the copies, and at the end of the k0 body).
The A load is the one load of the k loop that depends on the rows and k but not the
columns, the B load the one depending on the columns and k but not the rows; a kernel
not of that form raises ScheduleError (and gets another strategy). Copies read along
the operand's contiguous axis, so global reads coalesce for both layouts (dense's
``W[n, k]`` and matmul's ``B[k, n]``).

A template, not a trace of primitives: local buffers allocated outside the thread loops
are per-thread (registers), as loop-to-gpu maps them.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from ..dialects import loop
from .gpu_reduction import Emitter, ReductionNest, reduction_nest
from .nest import Dependence, ScheduleError, body_ops, defined_inside, static_value

#: output tile per block (rows = columns), k-slice per step, threads per side
TILE = 64
BK = 16
THREADS = 16
PER_THREAD = TILE // THREADS
#: for products with at least LARGE rows and columns (static): 128 x 128 tiles, 8 x 8
#: outputs per thread (16 shared loads per 64 FMAs instead of 8 per 16)
LARGE = 512
LARGE_CONFIG = (128, 8, 16)

P = "gemm_shared"


def _closure(values: list[SSAValue], among: list[Operation], stop: tuple[Operation, ...] = ()) -> list[Operation]:
    """The ops of ``among`` (in order) that ``values`` are computed from (not looking
    past the ops of ``stop``)."""
    members = set(among)
    needed: set[Operation] = set()
    stack = [v.owner for v in values]
    while stack:
        op = stack.pop()
        if isinstance(op, Operation) and op in members and op not in needed:
            needed.add(op)
            if op not in stop:
                stack.extend(v.owner for v in op.operands)
    return [op for op in among if op in needed]


class _Gemm:
    def __init__(self, kernel: func.FuncOp, nest: ReductionNest):
        self.kernel, self.nest = kernel, nest
        if len(nest.loops) < 2:
            raise ScheduleError(P, "needs rows and columns")
        *self.batch, self.rows, self.cols = nest.loops
        r = nest.reduction
        if static_value(r.lb) != 0 or static_value(r.step) != 1 or defined_inside(r.ub, nest.loops[0]):
            raise ScheduleError(P, "the k loop must run from 0 by 1 to a bound fixed for the kernel")
        if not isinstance(nest.combine, arith.AddfOp):
            raise ScheduleError(P, "not a sum of products")
        if defined_inside(nest.init.value, nest.loops[0]):
            raise ScheduleError(P, "the initial value is computed inside the nest")
        self.k_ops = body_ops(r)
        self.pre = nest.pre
        dep = {name: Dependence([iv]) for name, iv in (("r", self.rows.induction_var), ("c", self.cols.induction_var), ("k", r.induction_var))}
        loads = [op for op in self.k_ops if isinstance(op, loop.LoadOp) and op.buffer is not nest.acc.result]
        a = [op for op in loads if dep["k"](op.result) and dep["r"](op.result) and not dep["c"](op.result)]
        b = [op for op in loads if dep["k"](op.result) and dep["c"](op.result) and not dep["r"](op.result)]
        if len(a) != 1 or len(b) != 1 or len(loads) != 2:
            raise ScheduleError(P, "the k loop does not read one row operand and one column operand")
        self.a_load, self.b_load = a[0], b[0]
        if any(isinstance(op, loop.LoadOp) for op in self.pre):
            raise ScheduleError(P, "loads before the reduction")
        # does each operand's last index run along k (then copies read along k)?
        self.a_k_fastest = dep["k"](self.a_load.indices[-1]) if self.a_load.indices else False
        self.b_k_fastest = dep["k"](self.b_load.indices[-1]) if self.b_load.indices else False
        self.element = nest.acc.result.type.element_type
        sizes = [static_value(self.rows.ub), static_value(self.cols.ub)]
        large = all(n is not None and n >= LARGE for n in sizes)
        self.tile, self.bk, self.threads = LARGE_CONFIG if large else (TILE, BK, THREADS)
        self.per_thread = self.tile // self.threads

    def build(self) -> None:
        nest = self.nest
        anchor = Block()
        e = Emitter(anchor)
        c = {n: e.const(n) for n in (0, 1, self.tile, self.bk, self.threads, self.tile - 1)}
        self.c = c
        m_rows, n_cols, k_len = self.rows.ub, self.cols.ub, nest.reduction.ub
        tiles_r = e.add(arith.DivUIOp(e.add(arith.AddiOp(m_rows, c[self.tile - 1])), c[self.tile]))
        tiles_c = e.add(arith.DivUIOp(e.add(arith.AddiOp(n_cols, c[self.tile - 1])), c[self.tile]))
        mapping_outer: dict[SSAValue, SSAValue] = {}
        body, scope = anchor, e
        if self.batch:
            count = self.batch[0].ub
            for f in self.batch[1:]:
                count = e.add(arith.MuliOp(count, f.ub))
            body, bz = e.loop(c[0], count, c[1], "blockIdx.z", "batch")
            scope = Emitter(body)
            rest = bz
            for f in reversed(self.batch[1:]):
                mapping_outer[f.induction_var] = scope.add(arith.RemUIOp(rest, f.ub))
                rest = scope.add(arith.DivUIOp(rest, f.ub))
            mapping_outer[self.batch[0].induction_var] = rest
        body, by = scope.loop(c[0], tiles_r, c[1], "blockIdx.y", "row_tiles")
        body, bx = Emitter(body).loop(c[0], tiles_c, c[1], "blockIdx.x", "col_tiles")
        blk = Emitter(body)
        row0 = blk.add(arith.MuliOp(by, c[self.tile]))
        col0 = blk.add(arith.MuliOp(bx, c[self.tile]))
        shared = MemRefType(self.element, [self.bk, self.tile + 1])
        a_s = blk.add(loop.AllocOp(shared, scope="shared"))
        b_s = blk.add(loop.AllocOp(shared, scope="shared"))
        acc = blk.add(loop.AllocOp(MemRefType(self.element, [self.per_thread, self.per_thread]), scope="local"))

        # init
        pe, ty, tx = self._threads(blk, "init")
        for i, j, inner in self._register_tile(pe):
            inner.add(loop.StoreOp(nest.init.value, acc, [i, j]))

        # the k steps
        k_body, k0 = blk.loop(c[0], k_len, c[self.bk], "serial", "k.outer")
        kb = Emitter(k_body)
        for load, store_to, k_fastest, along, extent, name in (
            (self.a_load, a_s, self.a_k_fastest, self.rows, m_rows, "copy_a"),
            (self.b_load, b_s, self.b_k_fastest, self.cols, n_cols, "copy_b"),
        ):
            self._copy(kb, load, store_to, k_fastest, along, extent, row0 if along is self.rows else col0, k0, k_len, mapping_outer, name)
        pe, ty, tx = self._threads(kb, "compute")
        kk_body, kk = pe.loop(c[0], c[self.bk], c[1], "unrolled", "k.inner")
        ke = Emitter(kk_body)
        for i, j, inner in self._register_tile(ke):
            a_row = inner.add(arith.AddiOp(ty, inner.add(arith.MuliOp(i, c[self.threads]))))
            b_col = inner.add(arith.AddiOp(tx, inner.add(arith.MuliOp(j, c[self.threads]))))
            mapping = dict(mapping_outer)
            mapping[self.rows.induction_var] = inner.add(arith.AddiOp(row0, a_row))
            mapping[self.cols.induction_var] = inner.add(arith.AddiOp(col0, b_col))
            mapping[nest.reduction.induction_var] = inner.add(arith.AddiOp(k0, kk))
            mapping[self.a_load.result] = inner.add(loop.LoadOp(a_s, [kk, a_row]))
            mapping[self.b_load.result] = inner.add(loop.LoadOp(b_s, [kk, b_col]))
            store = next(op for op in self.k_ops if isinstance(op, loop.StoreOp))
            needed = _closure([store.value], self.pre + self.k_ops, stop=(self.a_load, self.b_load))
            for op in needed:
                if isinstance(op, loop.LoadOp) and op.buffer is nest.acc.result:
                    mapping[op.result] = inner.add(loop.LoadOp(acc, [i, j]))
                elif op is not self.a_load and op is not self.b_load:
                    inner.clone([op], mapping)
            inner.add(loop.StoreOp(mapping[store.value], acc, [i, j]))

        # the epilogue
        pe, ty, tx = self._threads(blk, "write")
        for i, j, inner in self._register_tile(pe):
            row = inner.add(arith.AddiOp(row0, inner.add(arith.AddiOp(ty, inner.add(arith.MuliOp(i, c[self.threads]))))))
            col = inner.add(arith.AddiOp(col0, inner.add(arith.AddiOp(tx, inner.add(arith.MuliOp(j, c[self.threads]))))))
            ok = inner.add(arith.AndIOp(inner.add(arith.CmpiOp(row, m_rows, "slt")), inner.add(arith.CmpiOp(col, n_cols, "slt"))))
            once = inner.add(arith.SelectOp(ok, c[1], c[0]))
            g_body, _ = inner.loop(c[0], once, c[1], "serial", "in_bounds")
            g = Emitter(g_body)
            mapping = dict(mapping_outer)
            mapping[self.rows.induction_var] = row
            mapping[self.cols.induction_var] = col
            final = g.add(loop.AllocOp(nest.acc.result.type, scope="local"))
            g.add(loop.StoreOp(g.add(loop.LoadOp(acc, [i, j])), final, []))
            mapping[nest.acc.result] = final
            g.clone(_closure([v for op in nest.post for v in op.operands], self.pre), mapping)
            g.clone(nest.post, mapping)

        top = nest.loops[0]
        for op in list(anchor.ops):
            op.detach()
            self.kernel.body.block.insert_op_before(op, top)
        top.detach()
        top.erase()

    def _threads(self, outer: Emitter, name: str) -> tuple[Emitter, SSAValue, SSAValue]:
        c = self.c
        body_y, ty = outer.loop(c[0], c[self.threads], c[1], "threadIdx.y", f"{name}.ty")
        body_x, tx = Emitter(body_y).loop(c[0], c[self.threads], c[1], "threadIdx.x", f"{name}.tx")
        return Emitter(body_x), ty, tx

    def _register_tile(self, outer: Emitter):
        """Yields (i, j, emitter inside) for the unrolled self.per_thread x self.per_thread loops."""
        c = self.c
        n = outer.const(self.per_thread)
        body_i, i = outer.loop(c[0], n, c[1], "unrolled", "reg.i")
        inner_i = Emitter(body_i)
        body_j, j = inner_i.loop(c[0], inner_i.const(self.per_thread), c[1], "unrolled", "reg.j")
        yield i, j, Emitter(body_j)

    def _copy(self, kb, load, store_to, k_fastest, along, extent, origin, k0, k_len, mapping_outer, name) -> None:
        """Every thread copies tile * bk / threads^2 elements of the operand's box into
        shared memory, reading along the operand's contiguous axis; 0 outside the operand."""
        c = self.c
        pe, ty, tx = self._threads(kb, name)
        chunks = self.tile * self.bk // (self.threads * self.threads)
        body, part = pe.loop(c[0], pe.const(chunks), c[1], "unrolled", f"{name}.part")
        ce = Emitter(body)
        lin = ce.add(arith.AddiOp(ce.add(arith.MuliOp(ce.add(arith.AddiOp(ce.add(arith.MuliOp(part, c[self.threads])), ty)), c[self.threads])), tx))
        if k_fastest:
            kk, mn = ce.add(arith.RemUIOp(lin, c[self.bk])), ce.add(arith.DivUIOp(lin, c[self.bk]))
        else:
            mn, kk = ce.add(arith.RemUIOp(lin, c[self.tile])), ce.add(arith.DivUIOp(lin, c[self.tile]))
        pos = ce.add(arith.AddiOp(origin, mn))
        k = ce.add(arith.AddiOp(k0, kk))
        ok = ce.add(arith.AndIOp(ce.add(arith.CmpiOp(pos, extent, "slt")), ce.add(arith.CmpiOp(k, k_len, "slt"))))
        last_pos = ce.add(arith.SubiOp(extent, c[1]))
        last_k = ce.add(arith.SubiOp(k_len, c[1]))
        mapping = dict(mapping_outer)
        mapping[along.induction_var] = ce.add(arith.MaxSIOp(c[0], ce.add(arith.MinSIOp(pos, last_pos))))
        mapping[self.nest.reduction.induction_var] = ce.add(arith.MaxSIOp(c[0], ce.add(arith.MinSIOp(k, last_k))))
        ce.clone(_closure([load.result], self.pre + self.k_ops), mapping)
        zero = ce.add(arith.ConstantOp(FloatAttr(0.0, self.element)))
        value = ce.add(arith.SelectOp(ok, mapping[load.result], zero))
        ce.add(loop.StoreOp(value, store_to, [kk, mn]))


def gemm_shared(schedule) -> None:
    """Rebuild a matrix-product kernel with shared-memory and register tiles (module docstring)."""
    kernel: func.FuncOp = schedule.kernel
    _Gemm(kernel, reduction_nest(kernel)).build()


__all__ = ["BK", "LARGE", "LARGE_CONFIG", "PER_THREAD", "THREADS", "TILE", "gemm_shared"]
