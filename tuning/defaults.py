"""The default schedule of a task as a trace: the first candidate every search measures,
so a tuned task is never slower than the untuned build (the default is in the space)."""

from __future__ import annotations

import logging
from typing import Any

from ..schedule import Schedule, ScheduleError
from .task import Task

log = logging.getLogger("tensorkiln.tuning")


def lanes_of(target: str) -> int:
    """f32 SIMD lanes of ``target`` (16 with AVX-512)."""
    from ..backends.llvm.jit import CPUTarget

    return max(1, CPUTarget.parse(target).vector_bits // 32)


def default_trace(task: Task) -> list[dict[str, Any]]:
    """The trace the ``default-schedule`` pass would apply to ``task``'s kernel measured
    alone ([] for the plain loop nest): the first registered strategy that serves it and
    succeeds. (Strategies that need a constant argument, e.g. a pre-packed dense weight,
    do not apply to a kernel alone.)"""
    try:
        from ..schedule.strategies import kernel_info, strategies_for
    except ImportError as error:
        log.warning("no strategy registry (%s); the default schedule is the plain loop nest", error)
        return []
    lanes = lanes_of(task.target)
    for strategy in strategies_for(kernel_info(task.kernel(), lanes)):
        kernel = task.kernel()
        schedule = Schedule(kernel)
        try:
            strategy.schedule(schedule, kernel_info(kernel, lanes))
        except ScheduleError:
            continue
        return schedule.trace
    return []
