"""GPU schedules of kernels of row stages (softmax, log_softmax, layer norm, RMS norm:
``lowering/row_stages.py``). te-to-loop writes such a kernel as::

    loop.for %row ... name("i0") {                     // the row loops (fused first)
      <ops>
      %acc = loop.alloc() {scope = "local"}; loop.store %init, %acc[]
      loop.for %k ... name("k0") { ... %acc[] = combine(%acc[], x) }     // stage 1
      <ops reading %acc[]>
      %acc2 = ...; loop.for %k ... name("k1_0") { ... }                  // stage 2 (may read stage 1)
      <ops>
      loop.for %j ... name("i1") { ... loop.store %y, %out[%row, %j] }   // the row's elements
    }

:func:`row_blocks` rebuilds it as one block per row, its threads sharing each stage
and then the row's elements::

    loop.for %row = 0 to <rows> blockIdx.x {
      stage 1: block_allreduce of each thread's strided partial -> shared %r1[0]
      (barrier)
      stage 2: the same; the ops before it see stage 1 as %r1[0]  -> shared %r2[0]
      (barrier)
      loop.for %t = 0 to 256 threadIdx.x {                 // the elements, strided
        <ops, the stages read from %r1[0], %r2[0]>
        loop.for %j = %t to <cols> step 256 { <element body> }
      }
    }

A row may also end in scalar ops instead of an element loop (argmax: the row's maximum,
then the first index holding it, then one store): one thread of the block runs them,
reading the stages from shared memory (:func:`_stage_rows`).

Each phase replays the row's scalar ops before it (cheap: index arithmetic, a division
by the row length), the stages already reduced replaced by their shared results. The
combination across threads uses :func:`~tensorkiln.schedule.gpu_reduction.block_allreduce`
(warp shuffles), so only reassociable combiners are accepted, as for block_reduction;
each thread's partial keeps several accumulators (``accumulate_strided``).

A row of an input that several of these loops read (softmax's ``x``: the max, the sum
and the elements) is first copied into shared memory by the block (``cache_rows``, up
to ``ROW_CACHE_BYTES``; an unrolled copy when the threads divide the row), and the loops
read that copy: the row crosses device memory once instead of once per loop (on an H200,
softmax over 8192x4096: 80% -> 89% of the copy bandwidth).

:func:`one_thread_per_row` is the fallback (rows too short for a block, a combiner
that cannot be reassociated): the row loops fused, split by ``BLOCK_THREADS`` and bound
to blocks and threads; each thread runs its row's stages and elements serially.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from ..dialects import loop
from .gpu_reduction import (
    MIN_BLOCK_REDUCTION,
    REDUCTION_THREADS,
    Combiner,
    Emitter,
    accumulate_strided,
    block_allreduce,
    reassociable,
)
from .nest import ScheduleError, body_ops, static_value
from .schedule import Schedule
from .strategies.analysis import row_nest

P = "row_blocks"
#: threads per block of the one-thread-per-row fallback
ROW_THREADS = 256
#: shared memory a block may spend on cached input rows (softmax over 8192 floats: 32 KB)
ROW_CACHE_BYTES = 32 * 1024


@dataclass
class _Stage:
    """One stage of a row: its accumulator, initialisation and (single) reduction loop."""

    index: int
    acc: loop.AllocOp
    init: loop.StoreOp
    reduction: loop.ForOp
    combiner: Combiner


def _fuse_band(s: Schedule, outermost: str) -> str:
    """Fuse the perfect nest of loops from ``outermost`` down into one loop; its name."""
    fused = outermost
    while True:
        for_op = next(f for f in s.kernel.walk() if isinstance(f, loop.ForOp) and f.loop_name.data == fused)
        inner = [op for op in body_ops(for_op) if isinstance(op, loop.ForOp)]
        if len(inner) != 1 or len(body_ops(for_op)) != 1:
            return fused
        fused = s.fuse(fused, inner[0].loop_name.data)


def _prepare(s: Schedule) -> tuple[str, list[str], str | None]:
    """Fuse the row loops, each stage's reduction nest and the element nest (None for
    rows that end in scalar ops: :func:`_stage_rows`), each into one loop; returns their
    names."""
    nest = row_nest(s.kernel)
    if nest is not None:
        rows, stage_names, elements = nest.rows, nest.stages, nest.elements[0]
    else:
        rows, stage_names, elements = *_stage_rows(s.kernel), None
    row = rows[0]
    for name in rows[1:]:
        row = s.fuse(row, name)
    stages = [_fuse_band(s, stage) for stage in stage_names]
    return row, stages, elements if elements is None else _fuse_band(s, elements)


def _stage_rows(kernel: func.FuncOp) -> tuple[list[str], list[str]]:
    """The row loops and stage loops of a kernel whose every output element reduces its
    row in two or more stages and ends in scalar ops (argmax: the row's maximum, then the
    first index holding it), without an element loop; one stage is block_reduction's."""
    tops = [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(tops) != 1:
        raise ScheduleError(P, "not a kernel of row stages")
    rows, inner = [tops[0]], body_ops(tops[0])
    while len(inner) == 1 and isinstance(inner[0], loop.ForOp) and inner[0].loop_role == "spatial":
        rows.append(inner[0])
        inner = body_ops(inner[0])
    stages = [op for op in inner if isinstance(op, loop.ForOp)]
    if rows[0].loop_role != "spatial" or len(stages) < 2 or not all(f.loop_role in ("reduction", "init") for f in stages):
        raise ScheduleError(P, "not a kernel of row stages")
    return [f.loop_name.data for f in rows], [f.loop_name.data for f in stages]


def _find(kernel: func.FuncOp, name: str) -> loop.ForOp:
    return next(f for f in kernel.walk() if isinstance(f, loop.ForOp) and f.loop_name.data == name)


def _stage(ops: list[Operation], r: int) -> _Stage:
    """The stage whose reduction loop is ``ops[r]`` (its accumulator two ops before)."""
    if r < 2:
        raise ScheduleError(P, "a stage loop without its accumulator before it")
    acc, init, reduction = ops[r - 2], ops[r - 1], ops[r]
    if not (isinstance(acc, loop.AllocOp) and acc.scope.data == "local" and acc.result.type.get_shape() == ()):
        raise ScheduleError(P, f"stage '{reduction.loop_name.data}' has no scalar accumulator")
    if not isinstance(init, loop.StoreOp) or init.buffer is not acc.result:
        raise ScheduleError(P, f"the accumulator of stage '{reduction.loop_name.data}' is not initialised")
    if any(isinstance(op, loop.ForOp) for op in reduction.walk() if op is not reduction):
        raise ScheduleError(P, f"stage '{reduction.loop_name.data}' has nested loops")
    stores = [op for op in reduction.walk() if isinstance(op, loop.StoreOp)]
    if len(stores) != 1 or stores[0].buffer is not acc.result:
        raise ScheduleError(P, f"stage '{reduction.loop_name.data}' stores elsewhere than its accumulator")
    combine = stores[0].value.owner
    if not isinstance(combine, Operation) or not reassociable(combine) or len(combine.operands) != 2:
        raise ScheduleError(P, f"the combiner of stage '{reduction.loop_name.data}' is not reassociable")
    olds = [v for v in combine.operands if isinstance(v.owner, loop.LoadOp) and v.owner.buffer is acc.result]
    if len(olds) != 1:
        raise ScheduleError(P, "the combiner does not combine the accumulator with one value")
    return _Stage(r - 2, acc, init, reduction, Combiner(combine, olds[0]))


@dataclass
class _RowCache:
    """A row of kernel argument ``buffer`` (the indices before the last: ``prefix``, fixed
    for the row) that ``loads`` read along their loops' induction variables."""

    buffer: SSAValue
    prefix: tuple[SSAValue, ...]
    loads: list[loop.LoadOp]


def _row_caches(kernel: func.FuncOp, top: loop.ForOp, first: int, loops: list[loop.ForOp]) -> list[_RowCache]:
    """The input rows worth a shared copy: read whole by two or more of ``loops`` (which
    all run over the same static columns), their prefixes known before the row's op
    ``first``; as many as fit in ``ROW_CACHE_BYTES``."""
    cols = static_value(loops[0].ub)
    if cols is None or any((static_value(f.lb), static_value(f.step), static_value(f.ub)) != (0, 1, cols) for f in loops):
        return []
    inside = {r for op in top.walk() for r in op.results}
    inside |= {a for op in top.walk() for region in op.regions for block in region.blocks for a in block.args}
    known = {top.induction_var} | {r for op in body_ops(top)[:first] for r in op.results}
    written = {op.buffer for op in kernel.walk() if isinstance(op, loop.StoreOp)}
    arguments = set(kernel.body.block.args) - written  # a copy of a buffer the kernel writes could go stale
    caches: dict[tuple[SSAValue, ...], _RowCache] = {}
    readers: dict[tuple[SSAValue, ...], set[int]] = {}
    for n, for_op in enumerate(loops):
        for load in for_op.walk():
            if not (isinstance(load, loop.LoadOp) and load.buffer in arguments and load.indices):
                continue
            *prefix, last = load.indices
            if last is not for_op.induction_var or any(v in inside and v not in known for v in prefix):
                continue
            key = (load.buffer, *prefix)
            caches.setdefault(key, _RowCache(load.buffer, tuple(prefix), [])).loads.append(load)
            readers.setdefault(key, set()).add(n)
    chosen, budget = [], ROW_CACHE_BYTES
    for key, cache in caches.items():
        size = cols * ((cache.buffer.type.element_type.bitwidth + 7) // 8)
        if len(readers[key]) > 1 and size <= budget:
            chosen.append(cache)
            budget -= size
    return chosen


def _cache_rows(b: Emitter, caches: list[_RowCache], cols: int, threads: SSAValue, replay) -> None:
    """Shared copies of ``caches``' rows, filled by the block's threads; their loads
    (the row's original ops) now read the copies."""
    shared = [b.add(loop.AllocOp(MemRefType(c.buffer.type.element_type, [cols]), scope="shared")) for c in caches]
    body, t = b.loop(b.const(0), threads, b.const(1), "threadIdx.x", "cache_rows")
    pe = Emitter(body)
    mapping = replay(pe)
    for cache, copy in zip(caches, shared):
        if cols % REDUCTION_THREADS == 0:  # the same count for every thread: unrolled, the loads all in flight
            column_body, c = pe.loop(pe.const(0), pe.const(cols // REDUCTION_THREADS), pe.const(1), "unrolled", "cache_column")
            ce = Emitter(column_body)
            j = ce.add(arith.AddiOp(t, ce.add(arith.MuliOp(c, threads))))
        else:
            column_body, j = pe.loop(t, pe.const(cols), threads, "serial", "cache_column")
            ce = Emitter(column_body)
        value = ce.add(loop.LoadOp(cache.buffer, [mapping.get(v, v) for v in cache.prefix] + [j]))
        ce.add(loop.StoreOp(value, copy, [j]))
        for load in cache.loads:
            cached = loop.LoadOp(copy, [load.indices[-1]])
            load.parent_block().insert_op_before(cached, load)
            load.result.replace_all_uses_with(cached.result)
            load.detach()
            load.erase()


def _strided(pe: Emitter, for_op: loop.ForOp, t: SSAValue, threads: SSAValue, mapping: dict[SSAValue, SSAValue]) -> None:
    """``for_op``'s iterations t, t + threads, ... (its body cloned) in thread ``t``."""
    step = mapping.get(for_op.step, for_op.step)
    lb = pe.add(arith.AddiOp(mapping.get(for_op.lb, for_op.lb), pe.add(arith.MuliOp(t, step))))
    body, iv = pe.loop(lb, mapping.get(for_op.ub, for_op.ub), pe.add(arith.MuliOp(threads, step)), "serial", for_op.loop_name.data)
    mapping[for_op.induction_var] = iv
    Emitter(body).clone(body_ops(for_op), mapping)


def row_blocks(schedule: Schedule) -> None:
    """One block per row: a block reduction per stage, then the elements (module docstring)."""
    row_name, stage_names, element_name = _prepare(schedule)
    kernel = schedule.kernel
    top = _find(kernel, row_name)
    if static_value(top.lb) != 0 or static_value(top.step) != 1:
        raise ScheduleError(P, f"the row loop '{row_name}' does not run from 0 by 1")
    ops = body_ops(top)
    if element_name is not None and (not isinstance(ops[-1], loop.ForOp) or ops[-1].loop_name.data != element_name):
        raise ScheduleError(P, "the row's element loop is not last")
    stages = [_stage(ops, k) for k, op in enumerate(ops) if isinstance(op, loop.ForOp) and op.loop_name.data != element_name]
    if [st.reduction.loop_name.data for st in stages] != stage_names:
        raise ScheduleError(P, "unexpected loops in the row")
    trips = [static_value(st.reduction.ub) for st in stages]
    if all(n is not None and n < MIN_BLOCK_REDUCTION for n in trips):
        raise ScheduleError(P, f"rows of {max(trips)} are too short for a block")
    skipped = {id(op) for st in stages for op in (st.acc, st.init, st.reduction)}
    # between the stages only scalar ops (a row without elements ends in its epilogue's stores)
    for op in ops[: stages[-1].index + 3]:
        if id(op) not in skipped and (op.regions or isinstance(op, loop.StoreOp | loop.AllocOp)):
            raise ScheduleError(P, f"unexpected '{op.name}' between the stages")
    if element_name is None and any(op.regions for op in ops[stages[-1].index + 3 :]):
        raise ScheduleError(P, "loops after the last stage")
    threads = REDUCTION_THREADS
    anchor = Block()
    e = Emitter(anchor)
    block_body, row = e.loop(e.const(0), top.ub, e.const(1), "blockIdx.x", "row")
    b = Emitter(block_body)
    t_count = b.const(threads)
    results: dict[SSAValue, SSAValue] = {}

    def replay(pe: Emitter, upto: int) -> dict[SSAValue, SSAValue]:
        """The row's ops before ``ops[upto]``, reduced stages read from shared memory."""
        mapping: dict[SSAValue, SSAValue] = {top.induction_var: row}
        k = 0
        while k < upto:
            op = ops[k]
            if isinstance(op, loop.AllocOp) and op.result in results:
                local = pe.add(loop.AllocOp(op.result.type, scope="local"))
                pe.add(loop.StoreOp(pe.add(loop.LoadOp(results[op.result], [pe.const(0)])), local, []))
                mapping[op.result] = local
                k += 3  # (the accumulator, its initialisation, the reduction loop)
                continue
            pe.clone([op], mapping)
            k += 1
        return mapping

    first = stages[0].index
    readers = [st.reduction for st in stages] + ([ops[-1]] if element_name is not None else [])
    caches = _row_caches(kernel, top, first, readers)
    if caches:
        _cache_rows(b, caches, static_value(readers[0].ub), t_count, lambda pe: replay(pe, first))
    for n, stage in enumerate(stages):

        def partial(pe: Emitter, t: SSAValue, stage: _Stage = stage) -> SSAValue:
            mapping = replay(pe, stage.index)
            return accumulate_strided(pe, stage.reduction, stage.acc, stage.init, stage.combiner, mapping, t, t_count)

        element_type = stage.acc.result.type.element_type
        results[stage.acc.result] = block_allreduce(b, element_type, stage.combiner, partial, threads, f"stage{n}")
    if element_name is None:  # the epilogue, in one thread
        body, _ = b.loop(b.const(0), b.const(1), b.const(1), "threadIdx.x", "write")
        replay(Emitter(body), len(ops))
    else:
        body, t = b.loop(b.const(0), t_count, b.const(1), "threadIdx.x", "elements")
        pe = Emitter(body)
        mapping = replay(pe, len(ops) - 1)
        _strided(pe, ops[-1], t, t_count, mapping)
    for op in list(anchor.ops):
        op.detach()
        kernel.body.block.insert_op_before(op, top)
    top.detach()
    top.erase()


def one_thread_per_row(schedule: Schedule) -> None:
    """Each thread one row: the row loops fused, split by ``ROW_THREADS``, bound."""
    nest = row_nest(schedule.kernel)
    if nest is None:
        raise ScheduleError("one_thread_per_row", "not a kernel of row stages")
    row = nest.rows[0]
    for name in nest.rows[1:]:
        row = schedule.fuse(row, name)
    outer, inner = schedule.split(row, ROW_THREADS)
    schedule.bind(outer, "blockIdx.x")
    schedule.bind(inner, "threadIdx.x")


__all__ = ["ROW_CACHE_BYTES", "ROW_THREADS", "one_thread_per_row", "row_blocks"]
