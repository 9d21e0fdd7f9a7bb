"""A GPU template for matrix products and convolutions as implicit GEMMs (matmul, dense,
batch_matmul, conv2d, with their fused elementwise epilogues): shared-memory tiles and
per-thread register tiles.

A kernel qualifies when its reduction body accumulates a product ``acc += a * b`` whose
factor ``a`` depends on the reduction and on some output loops (the *rows*) but not on
others (the *columns*), and ``b`` the other way round. :func:`gemm_shared` first brings
the nest to the form ``batch..., rows, cols, k``:

* the reduction loops are fused into one k loop (a convolution's ``c, kh, kw``);
* the output loops are grouped from the innermost: the columns are the innermost loops
  that index one factor only, the rows the loops before them that index the other; the
  loops left outside are the batch (``blockIdx.z``); each group is fused into one loop.

So NHWC ``conv2d`` is ``rows = (n, oh, ow)``, ``cols = oc``, ``k = (kh, kw, c)``; NCHW
``conv2d`` is ``batch = n``, ``rows = oc``, ``cols = (oh, ow)``. The nest (its own ops,
cloned) is then rebuilt as::

    for bz blockIdx.z (batch), rt blockIdx.x (row tiles), ct blockIdx.y (column tiles):
      %As = shared [BK][TM + 4], %Bs = shared [BK][TN + 4]   // +4: the k-major stores do
                                                              // not conflict, rows stay 16-byte aligned
      %acc = local [RM][RN]       // per thread: RM x RN outputs, in runs of 4 adjacent rows/columns
      %ra, %rb = local [TM*BK/256], [TN*BK/256]     // per thread: its elements of the next boxes
      for ty, tx threadIdx.y/x: acc[i][j] = init
      for ty, tx: a's TM x BK box at k = 0 -> ra, b's BK x TN box -> rb   (a's ops cloned:
                                                    // loads clamped, 0 outside, a conv's padding test)
      for k0 = 0 to K step BK:
        for ty, tx: ra -> As, rb -> Bs
        for ty, tx: the boxes at k0 + BK -> ra, rb  // in flight during the compute
        for ty, tx: for kk < BK, i < RM, j < RN: acc[i][j] += As[kk][row i] * Bs[kk][col j]
      for ty, tx: for i, j: if (row < M && col < N) { <epilogue on acc[i][j]> }

with barriers placed by loop-to-gpu (before the compute, and at the end of the k0 body).
The global loads of the next boxes are issued before the compute of this one (register
double buffering, as CUTLASS's SIMT GEMMs), so their latency hides behind the compute
of a whole k step instead of stalling the block at the barrier.
A thread's rows are runs of 4 adjacent rows (``ty*4 .. ty*4+3``, then the same 64
rows further, ...), likewise its columns, so the CUDA compiler reads each run from
shared memory with one 16-byte load (``ld.shared.v4.f32``), and the 16 threads of a
half-warp read 16 different runs of B and one run of A (a broadcast). Copies read
along the operand's contiguous axis, so global reads coalesce for both layouts
(dense's ``W[n, k]`` and matmul's ``B[k, n]``). A kernel not of that form raises
ScheduleError (and gets another strategy).

A template, not a trace of primitives: local buffers allocated outside the thread loops
are per-thread (registers), as loop-to-gpu maps them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from ..dialects import loop
from .gpu_reduction import (
    Emitter,
    ReductionNest,
    fuse_all,
    fuse_reduction_loops,
    output_loops_of,
    output_nest,
    reduction_nest,
)
from .nest import Dependence, ScheduleError, body_ops, defined_inside, is_movable, static_value

#: rows and columns each of a block's threads
THREADS = 16
#: adjacent rows (columns) of a thread's register tile: one 16-byte shared-memory load
RUN = 4
#: a row (column) count from which a block's tile along it is 128 (else 64); counted
#: from the static extents only, so a symbolic dim counts as 1
LARGE = 512
#: shared rows are padded by this many elements (a multiple of RUN keeps them aligned)
PAD = 4
#: products with fewer rows than this (known at compile time) are left to a warp per
#: output (``gpu_warp_reduction``): a 64-row tile would compute 4x or more the real rows,
#: in too few blocks to fill the GPU
MIN_ROWS = 16

P = "gemm_shared"


@dataclass(frozen=True)
class GemmTiles:
    """A block's output tile (``rows x cols``) and its k step; each of the
    ``THREADS x THREADS`` threads accumulates ``rows/THREADS x cols/THREADS`` outputs."""

    rows: int
    cols: int
    bk: int

    @property
    def per_row(self) -> int:
        return self.rows // THREADS

    @property
    def per_col(self) -> int:
        return self.cols // THREADS


def choose_tiles(min_rows: int, min_cols: int) -> GemmTiles:
    """128 along a dim of at least LARGE (8 outputs per thread: 4 vector shared loads per
    64 FMAs instead of 2 per 16), else 64; a k step of 16, or 8 when both are 128 (the
    copies stay 4 elements per thread)."""
    rows = 128 if min_rows >= LARGE else 64
    cols = 128 if min_cols >= LARGE else 64
    return GemmTiles(rows, cols, 8 if rows == cols == 128 else 16)


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


def product_factors(nest: ReductionNest) -> tuple[SSAValue, SSAValue]:
    """The two factors of the product the reduction accumulates (``acc += a * b``)."""
    if not isinstance(nest.combine, arith.AddfOp):
        raise ScheduleError(P, "not a sum of products")
    (term,) = [v for v in nest.combine.operands if v is not nest.old]
    if not isinstance(term.owner, arith.MulfOp):
        raise ScheduleError(P, "the reduction does not accumulate a product")
    return term.owner.lhs, term.owner.rhs


@dataclass(frozen=True)
class GemmShape:
    """The rows and columns of a kernel in GEMM form, as far as known at compile time."""

    #: the product of the static extents (a symbolic dim counted as 1)
    min_rows: int
    min_cols: int
    #: whether every row loop's extent is static (then min_rows is the row count)
    rows_static: bool


def _static_extent(loops: list[loop.ForOp]) -> int:
    """The product of the loops' static trip counts (a symbolic one counts as 1)."""
    n = 1
    for f in loops:
        n *= static_value(f.ub) or 1
    return n


def to_gemm_form(schedule) -> GemmShape:
    """Fuse the kernel's reduction loops into one and its output loops into ``batch...,
    rows, cols`` (module docstring); returns what is known of the sizes."""
    kernel: func.FuncOp = schedule.kernel
    fuse_reduction_loops(schedule)
    loops = output_nest(kernel)
    a, b = product_factors(reduction_nest(kernel))
    uses = [(Dependence([f.induction_var])(a), Dependence([f.induction_var])(b)) for f in loops]
    # from the innermost loop: the columns index one factor only, the rows the other
    cols = _run(uses, len(loops), uses[-1])
    if uses[-1] not in ((True, False), (False, True)) or not cols:
        raise ScheduleError(P, "the innermost output loop does not index exactly one factor")
    rows = _run(uses, cols[0], (uses[-1][1], uses[-1][0]))
    if not rows:
        raise ScheduleError(P, "no output loop indexes the other factor alone")
    shape = GemmShape(
        _static_extent([loops[k] for k in rows]),
        _static_extent([loops[k] for k in cols]),
        all(static_value(loops[k].ub) is not None for k in rows),
    )
    for group in (rows, cols):
        if len(group) > 1:
            fuse_all(schedule, [loops[k].loop_name.data for k in group])
    return shape


def _run(uses: list[tuple[bool, bool]], end: int, kind: tuple[bool, bool]) -> list[int]:
    """The positions of the loops before ``end`` that use the factors as ``kind`` does,
    contiguously up to ``end``."""
    start = end
    while start > 0 and uses[start - 1] == kind:
        start -= 1
    return list(range(start, end))


def _sink_index_ops(kernel: func.FuncOp) -> None:
    """Move the ops between the output loops (a fused loop's index arithmetic) to the
    start of the innermost body, where the template reads them as part of the body."""
    loops = output_loops_of(kernel)
    first = loops[-1].body.block.first_op
    for outer, inner_loop in zip(loops, loops[1:]):
        for op in body_ops(outer):
            if op is inner_loop:
                continue
            if not is_movable(op, set()) or isinstance(op, loop.LoadOp):
                raise ScheduleError(P, f"'{op.name}' between the output loops")
            op.detach()
            loops[-1].body.block.insert_op_before(op, first)


class _Gemm:
    """Builds the template (module docstring) for one kernel; subclasses change how the
    compute reads the shared boxes and where a thread's outputs lie."""

    #: shared rows are this much longer than the tile
    pad = PAD

    def __init__(self, kernel: func.FuncOp, nest: ReductionNest, tiles: GemmTiles):
        self.kernel, self.nest, self.tiles = kernel, nest, tiles
        if len(nest.loops) < 2:
            raise ScheduleError(P, "needs rows and columns")
        *self.batch, self.rows, self.cols = nest.loops
        r = nest.reduction
        if static_value(r.lb) != 0 or static_value(r.step) != 1 or defined_inside(r.ub, nest.loops[0]):
            raise ScheduleError(P, "the k loop must run from 0 by 1 to a bound fixed for the kernel")
        if defined_inside(nest.init.value, nest.loops[0]):
            raise ScheduleError(P, "the initial value is computed inside the nest")
        self.k_ops = body_ops(r)
        self.pre = nest.pre
        dep = {name: Dependence([iv]) for name, iv in (("r", self.rows.induction_var), ("c", self.cols.induction_var), ("k", r.induction_var))}
        a, b = product_factors(nest)
        if dep["c"](a) or not dep["r"](a):
            a, b = b, a
        for value, mine, other in ((a, "r", "c"), (b, "c", "r")):
            if not (dep["k"](value) and dep[mine](value)) or dep[other](value):
                raise ScheduleError(P, "the product's factors are not a row operand and a column operand")
        self.a, self.b = a, b
        store = next(op for op in self.k_ops if isinstance(op, loop.StoreOp))
        factors = (a.owner, b.owner)
        self.product_ops = _closure([store.value], self.pre + self.k_ops, stop=factors)
        if any(isinstance(op, loop.LoadOp) and op.buffer is not nest.acc.result and op not in factors for op in self.product_ops):
            raise ScheduleError(P, "the reduction reads more than the two factors")
        if any(isinstance(op, loop.LoadOp) for op in self.pre):
            raise ScheduleError(P, "loads before the reduction")
        # does each factor read its operand along k (then copies read along k)?
        self.a_k_fastest, self.b_k_fastest = (self._reads_along_k(v, dep["k"]) for v in (a, b))
        self.element = nest.acc.result.type.element_type

    def _reads_along_k(self, value: SSAValue, depends_on_k: Dependence) -> bool:
        loads = [op for op in _closure([value], self.pre + self.k_ops) if isinstance(op, loop.LoadOp)]
        return any(op.indices and depends_on_k(op.indices[-1]) for op in loads)

    def build(self) -> None:
        nest, t = self.nest, self.tiles
        anchor = Block()
        e = Emitter(anchor)
        c = {n: e.const(n) for n in dict.fromkeys((0, 1, t.rows, t.cols, t.bk, THREADS, RUN, t.rows - 1, t.cols - 1))}
        self.c = c
        m_rows, n_cols, k_len = self.rows.ub, self.cols.ub, nest.reduction.ub
        tiles_r = e.add(arith.DivUIOp(e.add(arith.AddiOp(m_rows, c[t.rows - 1])), c[t.rows]))
        tiles_c = e.add(arith.DivUIOp(e.add(arith.AddiOp(n_cols, c[t.cols - 1])), c[t.cols]))
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
        # row tiles on x (2^31 - 1 blocks): a convolution's rows are its pixels, which
        # can outnumber y's 65535 tiles
        body, row_tile = scope.loop(c[0], tiles_r, c[1], "blockIdx.x", "row_tiles")
        body, col_tile = Emitter(body).loop(c[0], tiles_c, c[1], "blockIdx.y", "col_tiles")
        blk = Emitter(body)
        row0 = blk.add(arith.MuliOp(row_tile, c[t.rows]))
        col0 = blk.add(arith.MuliOp(col_tile, c[t.cols]))
        a_s = blk.add(loop.AllocOp(MemRefType(self.element, [t.bk, t.rows + self.pad]), scope="shared"))
        b_s = blk.add(loop.AllocOp(MemRefType(self.element, [t.bk, t.cols + self.pad]), scope="shared"))
        acc = blk.add(loop.AllocOp(MemRefType(self.element, [t.per_row, t.per_col]), scope="local"))

        # init
        pe, ty, tx = self._threads(blk, "init")
        for i, j, inner in self._register_tile(pe):
            inner.add(loop.StoreOp(nest.init.value, acc, [i, j]))

        # the k steps: each stores the box fetched before into shared memory, then
        # fetches the next (its loads in flight during the compute), then computes
        chunks = [tile * t.bk // (THREADS * THREADS) for tile in (t.rows, t.cols)]
        regs = [blk.add(loop.AllocOp(MemRefType(self.element, [n]), scope="local")) for n in chunks]
        factors = (
            (self.a, regs[0], a_s, self.a_k_fastest, self.rows, m_rows, t.rows, row0, "a"),
            (self.b, regs[1], b_s, self.b_k_fastest, self.cols, n_cols, t.cols, col0, "b"),
        )
        for value, reg, _, k_fastest, along, extent, tile, origin, name in factors:
            self._fetch(blk, value, reg, k_fastest, along, extent, tile, origin, c[0], k_len, mapping_outer, f"fetch_{name}")
        k_body, k0 = blk.loop(c[0], k_len, c[t.bk], "serial", "k.outer")
        kb = Emitter(k_body)
        for value, reg, shared, k_fastest, along, extent, tile, origin, name in factors:
            self._stash(kb, reg, shared, k_fastest, tile, f"stash_{name}")
        k_next = kb.add(arith.AddiOp(k0, c[t.bk]))
        for value, reg, _, k_fastest, along, extent, tile, origin, name in factors:
            self._fetch(kb, value, reg, k_fastest, along, extent, tile, origin, k_next, k_len, mapping_outer, f"next_{name}")
        self._compute(kb, a_s, b_s, acc, k0, row0, col0, mapping_outer)

        # the epilogue
        pe, ty, tx = self._threads(blk, "write")
        for i, j, inner in self._register_tile(pe):
            row = inner.add(arith.AddiOp(row0, self._row_offset(inner, i, ty, tx)))
            col = inner.add(arith.AddiOp(col0, self._col_offset(inner, j, ty, tx)))
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

    def _compute(self, kb: Emitter, a_s, b_s, acc, k0, row0, col0, mapping_outer) -> None:
        """One k step: every thread's register tile accumulates the products of its rows
        of the A box and columns of the B box, the reduction's own ops cloned."""
        nest, c = self.nest, self.c
        pe, ty, tx = self._threads(kb, "compute")
        kk_body, kk = pe.loop(c[0], c[self.tiles.bk], c[1], "unrolled", "k.inner")
        ke = Emitter(kk_body)
        for i, j, inner in self._register_tile(ke):
            a_row = self._row_offset(inner, i, ty, tx)
            b_col = self._col_offset(inner, j, ty, tx)
            mapping = dict(mapping_outer)
            mapping[self.rows.induction_var] = inner.add(arith.AddiOp(row0, a_row))
            mapping[self.cols.induction_var] = inner.add(arith.AddiOp(col0, b_col))
            mapping[nest.reduction.induction_var] = inner.add(arith.AddiOp(k0, kk))
            mapping[self.a] = inner.add(loop.LoadOp(a_s, [kk, a_row]))
            mapping[self.b] = inner.add(loop.LoadOp(b_s, [kk, b_col]))
            store = next(op for op in self.k_ops if isinstance(op, loop.StoreOp))
            for op in self.product_ops:
                if isinstance(op, loop.LoadOp) and op.buffer is nest.acc.result:
                    mapping[op.result] = inner.add(loop.LoadOp(acc, [i, j]))
                elif op is not self.a.owner and op is not self.b.owner:
                    inner.clone([op], mapping)
            inner.add(loop.StoreOp(mapping[store.value], acc, [i, j]))

    def _threads(self, outer: Emitter, name: str) -> tuple[Emitter, SSAValue, SSAValue]:
        c = self.c
        body_y, ty = outer.loop(c[0], c[THREADS], c[1], "threadIdx.y", f"{name}.ty")
        body_x, tx = Emitter(body_y).loop(c[0], c[THREADS], c[1], "threadIdx.x", f"{name}.tx")
        return Emitter(body_x), ty, tx

    def _row_offset(self, e: Emitter, i: SSAValue, ty: SSAValue, tx: SSAValue) -> SSAValue:
        """Where thread (ty, tx)'s ``i``-th row lies in the tile."""
        return self._thread_offset(e, i, ty)

    def _col_offset(self, e: Emitter, j: SSAValue, ty: SSAValue, tx: SSAValue) -> SSAValue:
        """Where thread (ty, tx)'s ``j``-th column lies in the tile."""
        return self._thread_offset(e, j, tx)

    def _thread_offset(self, e: Emitter, i: SSAValue, thread: SSAValue) -> SSAValue:
        """Where a thread's ``i``-th row (column) lies in the tile: runs of RUN adjacent
        ones, ``THREADS * RUN`` apart (``(i / RUN) * THREADS * RUN + thread * RUN + i % RUN``)."""
        c = self.c
        run_start = e.add(arith.MuliOp(e.add(arith.DivUIOp(i, c[RUN])), e.const(THREADS * RUN)))
        lane = e.add(arith.AddiOp(e.add(arith.MuliOp(thread, c[RUN])), e.add(arith.RemUIOp(i, c[RUN]))))
        return e.add(arith.AddiOp(run_start, lane))

    def _register_tile(self, outer: Emitter):
        """Yields (i, j, emitter inside) for the unrolled per_row x per_col loops."""
        c = self.c
        body_i, i = outer.loop(c[0], outer.const(self.tiles.per_row), c[1], "unrolled", "reg.i")
        inner_i = Emitter(body_i)
        body_j, j = inner_i.loop(c[0], inner_i.const(self.tiles.per_col), c[1], "unrolled", "reg.j")
        yield i, j, Emitter(body_j)

    def _box_element(self, ce: Emitter, part: SSAValue, ty: SSAValue, tx: SSAValue, k_fastest: bool, tile: int):
        """(kk, mn): where in a factor's BK x tile box a thread's ``part``-th copied
        element lies; consecutive threads take consecutive elements of the operand's
        contiguous axis."""
        c, bk = self.c, self.tiles.bk
        lin = ce.add(arith.AddiOp(ce.add(arith.MuliOp(ce.add(arith.AddiOp(ce.add(arith.MuliOp(part, c[THREADS])), ty)), c[THREADS])), tx))
        if k_fastest:
            return ce.add(arith.RemUIOp(lin, c[bk])), ce.add(arith.DivUIOp(lin, c[bk]))
        return ce.add(arith.DivUIOp(lin, c[tile])), ce.add(arith.RemUIOp(lin, c[tile]))

    def _parts(self, outer: Emitter, tile: int, name: str):
        """Yields (part, ty, tx, emitter inside) over a thread's elements of a copy."""
        c = self.c
        pe, ty, tx = self._threads(outer, name)
        chunks = tile * self.tiles.bk // (THREADS * THREADS)
        body, part = pe.loop(c[0], pe.const(chunks), c[1], "unrolled", f"{name}.part")
        yield part, ty, tx, Emitter(body)

    def _fetch(self, outer, value, regs, k_fastest, along, extent, tile, origin, k0, k_len, mapping_outer, name) -> None:
        """Every thread reads its tile * bk / THREADS^2 elements of the factor's box at
        ``k0`` into its registers ``regs``; 0 outside the operand."""
        c = self.c
        for part, ty, tx, ce in self._parts(outer, tile, name):
            kk, mn = self._box_element(ce, part, ty, tx, k_fastest, tile)
            pos = ce.add(arith.AddiOp(origin, mn))
            k = ce.add(arith.AddiOp(k0, kk))
            ok = ce.add(arith.AndIOp(ce.add(arith.CmpiOp(pos, extent, "slt")), ce.add(arith.CmpiOp(k, k_len, "slt"))))
            last_pos = ce.add(arith.SubiOp(extent, c[1]))
            last_k = ce.add(arith.SubiOp(k_len, c[1]))
            mapping = dict(mapping_outer)
            mapping[along.induction_var] = ce.add(arith.MaxSIOp(c[0], ce.add(arith.MinSIOp(pos, last_pos))))
            mapping[self.nest.reduction.induction_var] = ce.add(arith.MaxSIOp(c[0], ce.add(arith.MinSIOp(k, last_k))))
            ce.clone(_closure([value], self.pre + self.k_ops), mapping)
            zero = ce.add(arith.ConstantOp(FloatAttr(0.0, self.element)))
            ce.add(loop.StoreOp(ce.add(arith.SelectOp(ok, mapping[value], zero)), regs, [part]))

    def _stash(self, outer, regs, store_to, k_fastest, tile, name) -> None:
        """Every thread stores its fetched elements into the shared box."""
        for part, ty, tx, ce in self._parts(outer, tile, name):
            kk, mn = self._box_element(ce, part, ty, tx, k_fastest, tile)
            ce.add(loop.StoreOp(ce.add(loop.LoadOp(regs, [part])), store_to, [kk, mn]))


def gemm_shared(schedule) -> None:
    """Rebuild a matrix-product or convolution kernel as a GEMM with shared-memory and
    register tiles (module docstring).

    Example::

        s = Schedule(conv_kernel)       # NHWC conv2d: i0..i3 (n, oh, ow, oc), k0..k2
        gemm_shared(s)                  # blockIdx.x over 128-pixel tiles, blockIdx.y over oc
    """
    shape = gemm_nest(schedule)
    kernel: func.FuncOp = schedule.kernel
    _Gemm(kernel, reduction_nest(kernel), choose_tiles(shape.min_rows, shape.min_cols)).build()


def gemm_nest(schedule) -> GemmShape:
    """Bring the kernel to GEMM form (``to_gemm_form``, the index arithmetic of fused
    loops sunk into the body) for a template; ScheduleError if it has too few rows."""
    shape = to_gemm_form(schedule)
    if shape.rows_static and shape.min_rows < MIN_ROWS:
        raise ScheduleError(P, f"{shape.min_rows} rows are too few for a tile (a warp per output is better)")
    _sink_index_ops(schedule.kernel)
    return shape


__all__ = [
    "LARGE",
    "MIN_ROWS",
    "PAD",
    "RUN",
    "THREADS",
    "GemmShape",
    "GemmTiles",
    "choose_tiles",
    "gemm_nest",
    "gemm_shared",
    "product_factors",
    "to_gemm_form",
]
