"""Default schedules per kernel kind (TVM's op strategies), applied after te-to-loop.

A strategy is chosen by the kernel's ``tk.kernel`` tag (the op, or the fused group
whose anchor it is) and written with the schedule primitives, so its trace is data a
tuner can replace. A strategy that does not apply to a kernel's shape (a primitive
raises ScheduleError) leaves that kernel with the plain loop nest: correct, slower.

Only matrix products have a strategy so far: a register tile of ``GEMM_ROWS`` rows by
``GEMM_VECTORS`` SIMD vectors of columns, accumulated over k in registers
(cache_write), rows unrolled and columns vectorized -- on AVX-512 a 4 x 64 tile in 16
zmm accumulators, which reaches torch.mm's single-thread speed at 512^3-1024^3 here.
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

from .schedule import Schedule, ScheduleError, kernels

log = logging.getLogger("tensorkiln.schedule")

GEMM_ROWS = 4
GEMM_VECTORS = 4


def _output_loops(schedule: Schedule) -> list[str]:
    return [name for name in schedule.loops() if name.startswith("i") and name[1:].isdigit()]


def gemm(schedule: Schedule, lanes: int) -> None:
    """Register-tile the last two output loops (rows x columns) of a matrix product."""
    *_, rows, cols = _output_loops(schedule)
    schedule.tile(rows, cols, GEMM_ROWS, GEMM_VECTORS * lanes)
    schedule.cache_write(f"{cols}.outer")
    schedule.unroll(f"{rows}.inner")
    for loop in (f"{cols}.inner", f"{cols}.inner.init", f"{cols}.inner.write"):
        schedule.vectorize(loop)


Strategy = Callable[[Schedule, int], None]

#: (op name in the kernel tag, strategy), most specific first
STRATEGIES: tuple[tuple[str, Strategy], ...] = (("batch_matmul", gemm), ("matmul", gemm))


def _op_names(tag: str) -> list[str] | None:
    """The graph ops a kernel tag names (``matmul_add_relu`` -> matmul, add, relu)."""
    from ..dialects.graph import GRAPH_OPS  # schedules know kernels, not the graph dialect

    known = sorted((op.name.removeprefix("graph.") for op in GRAPH_OPS), key=len, reverse=True)
    names, rest = [], tag
    while rest:
        name = next((n for n in known if rest == n or rest.startswith(n + "_")), None)
        if name is None:
            return None
        names.append(name)
        rest = rest[len(name) + 1 :]
    return names


def strategy_for(tag: str) -> Strategy | None:
    """The strategy of a kernel whose output loops are those of its anchor op: the op
    itself, or the op followed by elementwise ops only (an injective op after it, e.g. a
    transpose, would make its own loops the kernel's)."""
    from ..dialects.graph import GRAPH_OPS, OpPatternKind

    names = _op_names(tag)
    if not names:
        return None
    elementwise = {
        op.name.removeprefix("graph.")
        for op in GRAPH_OPS
        if op.PATTERN_KIND in (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST)
    }
    for op_name, strategy in STRATEGIES:
        if op_name in names and all(n in elementwise for n in names[names.index(op_name) + 1 :]):
            return strategy
    return None


def apply_default_schedule(kernel: func.FuncOp, lanes: int) -> bool:
    """Schedule ``kernel`` in place with its strategy; False (kernel untouched) when it
    has none or the strategy does not fit the kernel."""
    strategy = strategy_for(kernel.attributes["tk.kernel"].data)
    if strategy is None:
        return False
    trial = kernel.clone()
    try:
        strategy(Schedule(trial), lanes)
    except ScheduleError as e:
        log.debug("no default schedule for %s: %s", kernel.sym_name.data, e)
        return False
    Rewriter.replace_op(kernel, trial)
    return True


@dataclass(frozen=True)
class DefaultSchedulePass(ModulePass):
    """Apply each kernel's default strategy (``vector_bits``: the target's SIMD width)."""

    name = "default-schedule"

    vector_bits: int = 512

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            element_bits = 32
            apply_default_schedule(kernel, max(1, self.vector_bits // element_bits))
