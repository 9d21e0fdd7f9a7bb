"""Helpers for the default-strategy tests: the scheduled loop module of a graph module
and the strategy each kernel got."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tensorkiln.driver.pipelines import TO_LOOPS
from tensorkiln.driver.pipelines import optimize_graph
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.schedule import kernels
from tensorkiln.schedule.strategies.parallel import assumed_cores


def scheduled_loops(module: ModuleOp, vector_bits: int = 512, cores: int | None = 2) -> ModuleOp:
    """A copy of ``module`` optimized (O2), lowered to loops and default-scheduled for a
    machine of ``cores`` cores (the parallel loops' fusion depends on them; None: as
    the caller's ``assumed_cores`` or this machine)."""
    work = module.clone()
    ctx = PassContext(opt_level=2, dump_ir=False)
    optimize_graph(work, ctx)
    schedule = TO_LOOPS + (f"default-schedule{{vector_bits={vector_bits}}}",)
    if cores is None:
        run_pipeline(work, schedule, ctx)
    else:
        with assumed_cores(cores):
            run_pipeline(work, schedule, ctx)
    return work


def chosen_strategies(module: ModuleOp) -> dict[str, str | None]:
    """Kernel tag -> the strategy that scheduled it (None: plain loops)."""
    found = {}
    for kernel in kernels(scheduled_loops(module)):
        strategy = kernel.attributes.get("tk.strategy")
        found[kernel.attributes["tk.kernel"].data] = strategy.data if strategy else None
    return found
