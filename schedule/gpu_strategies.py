"""Default GPU schedules per kernel kind, applied after te-to-loop for ``target="cuda"``.

Like ``strategies/`` for the CPU, a strategy is chosen by the kernel's anchor op (what
te-to-loop records: ``tk.anchor``) and written with the schedule primitives (``split``, ``fuse``, ``bind``, ...), so
its trace is data a tuner can replace. Every kernel must end up bound to GPU axes (a
kernel with no bound loop would run in one GPU thread), so when a kernel's own
strategy does not fit it (a primitive raises ScheduleError), the simple mapping is
used: one thread per output element.

* ``grid_stride`` (elementwise and injective kernels: no reduction): a capped grid,
  each thread striding over the flattened output (``gpu_injective.py``).
* ``one_thread_per_element`` (every other kernel): the output loops fused into one,
  split by ``BLOCK_THREADS``, the outer part bound to ``blockIdx.x``, the inner to
  ``threadIdx.x``; reductions stay serial loops inside each thread.
* ``row_blocks`` (kernels of row stages: softmax, layer norm; argmax/argmin, whose two
  stages end in a store): one block per row, a block reduction per stage with a barrier
  between stages, then the row's elements strided over the block's threads (or one
  thread's epilogue); ``one_thread_per_row`` where it does not fit (``gpu_rows.py``).
* ``block_reduction`` (any kernel reducing along one loop of at least
  ``MIN_BLOCK_REDUCTION`` iterations with a reassociable combiner: softmax's max and
  sum, layer-norm statistics, sums): one block per output element, its threads'
  partials combined by warp shuffles, then across warps through shared memory
  (``gpu_reduction.py``).
* ``gemm_shared`` (matmul, batch_matmul, dense, conv2d as an implicit GEMM, and their
  elementwise epilogues): shared-memory tiles of A and B per k step and a register
  tile per thread (``gpu_gemm.py``); for products of fewer than ``MIN_ROWS`` rows
  ``warp_reduction`` (a warp per output, ``gpu_warp_reduction.py``); ``gemm`` where
  neither fits (grouped convolutions).
* ``gemm_tf32`` (opt-in: the pass option ``tf32``, ``target="cuda -tf32"``): the same
  kernels as ``gemm_shared`` on the tensor cores, inputs rounded to TF32
  (``gpu_mma.py``).
* ``gemm``: a 2-D grid
  of ``GEMM_TILE x GEMM_TILE`` output tiles, ``GEMM_THREADS x GEMM_THREADS`` threads
  per block, each thread accumulating a register tile of ``GEMM_TILE / GEMM_THREADS``
  squared outputs (``cache_write``); batch dims are fused into ``blockIdx.z``.

Example::

    s = Schedule(kernel)
    one_thread_per_element(s)     # i0, i1 -> i0.i1.fused.outer (blockIdx.x), .inner (threadIdx.x)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ..dialects import loop
from .gpu_gemm import gemm_shared
from .gpu_injective import grid_stride
from .gpu_mma import gemm_tf32
from .gpu_reduction import block_reduction, fuse_all, unit_output_loop
from .gpu_rows import one_thread_per_row, row_blocks
from .gpu_warp_reduction import warp_reduction
from .schedule import Schedule, ScheduleError, kernels, schedule_on_clone

log = logging.getLogger("tensorkiln.schedule")

#: threads per block of the one-thread-per-element mapping
BLOCK_THREADS = 256
#: output tile of a GEMM block (rows = columns) and its threads per side
GEMM_TILE = 64
GEMM_THREADS = 16


def output_loops(schedule: Schedule) -> list[str]:
    """The kernel's output loops ``i0, i1, ...`` (role ``spatial``), outermost first."""
    return [f.loop_name.data for f in loop.loops_with_role(schedule.kernel, "spatial")]


def one_thread_per_element(schedule: Schedule) -> None:
    """Fuse the output loops, split by ``BLOCK_THREADS``, bind to blocks and threads."""
    loops = output_loops(schedule)
    if not loops:
        return  # a 0-d output: one thread computes it
    fused = fuse_all(schedule, loops)
    if schedule.extent(fused) == 1:
        # one element (a scan along a 1-d tensor: a single line): one block of one thread
        schedule.bind(fused, "threadIdx.x")
        return
    outer, inner = schedule.split(fused, BLOCK_THREADS)
    schedule.bind(outer, "blockIdx.x")
    schedule.bind(inner, "threadIdx.x")


def gemm(schedule: Schedule) -> None:
    """A 2-D tiled matrix product: blocks of ``GEMM_TILE`` squared outputs, each thread
    a register tile accumulated over the whole reduction."""
    loops = output_loops(schedule)
    if len(loops) < 2:
        raise ScheduleError("gemm", "needs at least two output loops")
    *batch, rows, cols = loops
    # fuse the batch dims while the nest is plain (fuse wants no ops between the loops)
    fused_batch = fuse_all(schedule, batch) if batch else None
    per_thread = GEMM_TILE // GEMM_THREADS
    ro, co, ri, ci = schedule.tile(rows, cols, GEMM_TILE, GEMM_TILE)
    # ri -> (threads, per-thread rows): thread t owns rows t, t + GEMM_THREADS, ... would
    # coalesce better; contiguous per-thread rows keep the register tile a plain tile
    rt, rr = schedule.split(ri, per_thread)
    ct, cr = schedule.split(ci, per_thread)
    schedule.reorder(rt, ct, rr, cr)
    schedule.cache_write(ct)
    schedule.bind(ro, "blockIdx.y")
    schedule.bind(co, "blockIdx.x")
    schedule.bind(rt, "threadIdx.y")
    schedule.bind(ct, "threadIdx.x")
    for name in (rr, cr):
        for suffix in ("", ".init", ".write"):
            if f"{name}{suffix}" in schedule.loops():
                schedule.unroll(f"{name}{suffix}")
    if fused_batch:
        schedule.bind(fused_batch, "blockIdx.z")


Strategy = Callable[[Schedule], None]

#: anchor op -> its strategies, best first
GPU_STRATEGIES: dict[str, tuple[Strategy, ...]] = {
    # products of few rows (gemm_shared refuses them): a warp per output
    "batch_matmul": (gemm_shared, warp_reduction, gemm),
    "matmul": (gemm_shared, warp_reduction, gemm),
    "dense": (gemm_shared, warp_reduction, gemm),
    # an implicit GEMM; grouped convolutions (no row/column split): register tiles over
    # the output's rows and columns
    "conv2d": (gemm_shared, gemm),
    # (the gather form of a transposed convolution: gemm's register tiles, as conv2d's)
    "conv2d_transpose": (gemm_shared, gemm),
    # rows reading the matrices of their groups: no shared tile of B is common to a block
    "grouped_matmul": (gemm,),
}


def gpu_strategies_for(kernel: func.FuncOp) -> tuple[Strategy, ...]:
    """The strategies (best first) for ``kernel`` whose anchor op has some and is its
    first op (none for a kernel not made of graph ops). A kernel computing a view
    before its product (``reshape_conv2d_add_relu``: a reshape copied into the group)
    takes the fallbacks, as it always has: the product templates have not been measured
    on such kernels."""
    anchor = loop.kernel_anchor(kernel)
    if anchor is None or anchor.ops[0] != anchor.op:
        return ()
    return GPU_STRATEGIES.get(anchor.op, ())


def _try(kernel: func.FuncOp, strategy: Strategy) -> func.FuncOp | None:
    try:
        return schedule_on_clone(kernel, strategy)
    except ScheduleError as e:
        log.debug("GPU strategy %s does not fit %s: %s", strategy.__name__, kernel.sym_name.data, e)
        return None


#: tried, in order, after the kernel's own strategy (if any): the first that fits wins
FALLBACKS: tuple[Strategy, ...] = (
    row_blocks, block_reduction, grid_stride, one_thread_per_element, one_thread_per_row,
)  # fmt: skip


def apply_gpu_schedule(kernel: func.FuncOp, tf32: bool = False) -> str:
    """Schedule ``kernel`` in place for the GPU; returns the strategy's name
    (``"none"`` if even the simple mapping did not fit: the kernel runs in one thread).
    ``tf32``: the kernels that have the shared-memory GEMM (matrix products, convolutions)
    try ``gemm_tf32`` (tensor cores) first."""
    unit_output_loop(kernel)
    chosen = gpu_strategies_for(kernel)
    if tf32 and gemm_shared in chosen:
        chosen = (gemm_tf32, *chosen)
    for strategy in chosen + FALLBACKS:
        trial = _try(kernel, strategy)
        if trial is not None:
            loop.set_kernel_strategy(trial, strategy.__name__, gpu=True)
            Rewriter.replace_op(kernel, trial)
            return strategy.__name__
    log.warning("kernel %s has no GPU mapping: it runs in one thread", kernel.sym_name.data)
    return "none"


@dataclass(frozen=True)
class GPUDefaultSchedulePass(ModulePass):
    """Bind every kernel's loops to GPU blocks and threads (its default GPU strategy)."""

    name = "gpu-default-schedule"

    #: matrix products and convolutions on the tensor cores, inputs rounded to TF32
    #: (``gpu-default-schedule{tf32=true}``; ``target="cuda -tf32"``)
    tf32: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            apply_gpu_schedule(kernel, self.tf32)


__all__ = [
    "BLOCK_THREADS",
    "GPU_STRATEGIES",
    "GPUDefaultSchedulePass",
    "apply_gpu_schedule",
    "gemm",
    "gpu_strategies_for",
    "gemm_shared",
    "one_thread_per_element",
]
