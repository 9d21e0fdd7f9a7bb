"""The default schedule of a task as a trace: the first candidate every search measures,
so a tuned task is never slower than the untuned build (the default is in the space)."""

from __future__ import annotations

from typing import Any

from ..schedule import Schedule, ScheduleError
from .task import Task


def lanes_of(target: str) -> int:
    """f32 SIMD lanes of ``target`` (16 with AVX-512)."""
    from ..backends.llvm.jit import CPUTarget

    return max(1, CPUTarget.parse(target).vector_bits // 32)


def default_trace(task: Task) -> list[dict[str, Any]]:
    """The trace the ``default-schedule`` pass applies to ``task``'s kernel in its model
    ([] for the plain loop nest): the first registered strategy that serves it and
    succeeds, knowing which arguments are constant weights (a dense layer's weight is
    packed at compile time, which the measurement reproduces)."""
    from ..schedule.strategies import kernel_info, strategies_for

    lanes = lanes_of(task.target)
    constants = frozenset(task.constants)
    for strategy in strategies_for(kernel_info(task.kernel(), lanes, constants)):
        kernel = task.kernel()
        schedule = Schedule(kernel)
        try:
            strategy.schedule(schedule, kernel_info(kernel, lanes, constants))
        except ScheduleError:
            continue
        return schedule.trace
    return []
