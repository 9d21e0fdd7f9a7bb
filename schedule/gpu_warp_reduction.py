"""A GPU template for many reductions of moderate length, one warp each: matrix products
with few rows (a dense layer at batch 1 to 16, a matrix-vector product), where a tiled
GEMM would compute a whole 64-row tile for each real row and launch too few blocks to
fill the GPU.

For a reduction nest (see ``gpu_reduction.reduction_nest``), :func:`warp_reduction`
rebuilds it, with the nest's own ops cloned, as::

    loop.for %b = 0 to ceil(outputs / 8) blockIdx.x {
      loop.for %t = 0 to 256 threadIdx.x {                // 8 warps, one output each
        %o = min(%b * 8 + %t / 32, outputs - 1)           // idle warps redo the last one
        <output loops from %o, the FIRST loop fastest>; <pre ops>
        %p = local; %p[] = init
        loop.for %k = lb + (%t % 32) * s to ub step 32 * s { <k body on %p> }
        %v = combine(%p[], shuffle_xor(%p[], 16)) ... offsets 8, 4, 2, 1
        loop.for %_ = 0 to (lane 0 and %b * 8 + %t / 32 < outputs) { <epilogue on %v> }
      }
    }

No shared memory and no barrier: each warp's lanes take every 32nd iteration (reading
consecutive elements along the reduction: coalesced for dense's ``W[n, k]``), then
combine with xor shuffles. Outputs are numbered with the first output loop fastest,
so the 8 warps of a block are 8 rows of a dense layer for the same output column and
read the same weight row (one trip from memory, the others hit L1). As in
``block_reduction``, only reassociable combiners are accepted. Idle warps compute a
real output again instead of skipping the shuffles, which every lane must reach.

Example::

    s = Schedule(dense_kernel)       # dense of 8 rows: i0 (8), i1 (1024), k0 (4096)
    warp_reduction(s)                # 1024 blocks of 8 warps
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.ir import Block

from ..dialects import loop
from .gpu_reduction import (
    REDUCTION_THREADS,
    Combiner,
    Emitter,
    decompose,
    reduction_nest,
    strided_partial,
    warp_allreduce,
    write_result,
)
from .nest import ScheduleError, static_value

#: warps (outputs) per block
WARPS = REDUCTION_THREADS // loop.WARP_SIZE

P = "warp_reduction"


def warp_reduction(schedule) -> None:
    """Rebuild a reduction kernel as one warp per output element (module docstring)."""
    kernel: func.FuncOp = schedule.kernel
    nest = reduction_nest(kernel)
    trips = static_value(nest.reduction.ub)
    if trips is not None and trips < loop.WARP_SIZE:
        raise ScheduleError(P, f"a reduction of {trips} is shorter than a warp")
    element_type = nest.acc.result.type.element_type
    if not loop.shuffle_type_ok(element_type):
        raise ScheduleError(P, f"warp shuffles do not move {element_type}")
    anchor = Block()
    e = Emitter(anchor)
    count = nest.loops[0].ub
    for f in nest.loops[1:]:
        count = e.add(arith.MuliOp(count, f.ub))
    zero, one, warps = e.const(0), e.const(1), e.const(WARPS)
    blocks = e.add(arith.DivUIOp(e.add(arith.AddiOp(count, e.const(WARPS - 1))), warps))
    block_body, b = e.loop(zero, blocks, one, "blockIdx.x", "outputs")
    be = Emitter(block_body)
    thread_body, t = be.loop(be.const(0), be.const(REDUCTION_THREADS), be.const(1), "threadIdx.x", "lanes")
    te = Emitter(thread_body)
    width = te.const(loop.WARP_SIZE)
    lane = te.add(arith.RemUIOp(t, width))
    o = te.add(arith.AddiOp(te.add(arith.MuliOp(b, warps)), te.add(arith.DivUIOp(t, width))))
    last = te.add(arith.SubiOp(count, te.const(1)))
    mapping = decompose(te, te.add(arith.MinUIOp(o, last)), list(reversed(nest.loops)))
    te.clone(nest.pre, mapping)
    partial = strided_partial(te, nest, mapping, lane, width)
    value = warp_allreduce(te, partial, Combiner(nest.combine, nest.old))
    writes = te.add(
        arith.AndIOp(te.add(arith.CmpiOp(lane, te.const(0), "eq")), te.add(arith.CmpiOp(o, count, "ult")))
    )
    write_body, _ = te.loop(te.const(0), te.add(arith.SelectOp(writes, te.const(1), te.const(0))), te.const(1), "serial", "write")
    write_result(Emitter(write_body), nest, mapping, value)
    top = nest.loops[0]
    for op in list(anchor.ops):
        op.detach()
        kernel.body.block.insert_op_before(op, top)
    top.detach()
    top.erase()


__all__ = ["WARPS", "warp_reduction"]
