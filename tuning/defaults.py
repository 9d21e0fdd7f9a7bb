"""The default schedule of a task as a trace: the first candidate every search measures,
so a tuned task is never slower than the untuned build (the default is in the space)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func

from ..driver import parse_target
from ..driver.pipelines import SCHEDULE_FEATURES
from ..schedule import Schedule, ScheduleError
from ..schedule.strategies import KernelInfo, kernel_info, strategies_for
from .task import Task


def lanes_of(target: str) -> int:
    """f32 SIMD lanes of ``target`` (16 with AVX-512)."""
    return max(1, parse_target(target).config.vector_bits // 32)


def features_of(target: str) -> frozenset[str]:
    """The vector ISA extensions of ``target`` that strategies read (``+avx512vnni``...),
    as ``default-schedule`` is told them in a build (``driver/pipelines.py``)."""
    return frozenset(f for f in parse_target(target).config.enabled_features if f.startswith(SCHEDULE_FEATURES))


def kernel_facts(task: Task, kernel: func.FuncOp | None = None) -> KernelInfo:
    """What strategies know of ``task``'s kernel (or ``kernel``, a fresh copy of it) in
    its model: the target's lanes and ISA extensions, which arguments are constant."""
    kernel = kernel if kernel is not None else task.kernel()
    return kernel_info(kernel, lanes_of(task.target), frozenset(task.constants), features_of(task.target))


def default_trace(task: Task) -> list[dict[str, Any]]:
    """The trace the ``default-schedule`` pass applies to ``task``'s kernel in its model
    ([] for the plain loop nest): the first registered strategy that serves it and
    succeeds, knowing which arguments are constant weights (a dense layer's weight is
    packed at compile time, which the measurement reproduces) and the target's ISA
    extensions."""
    for strategy in strategies_for(kernel_facts(task)):
        kernel = task.kernel()
        schedule = Schedule(kernel)
        try:
            strategy.schedule(schedule, kernel_facts(task, kernel))
        except ScheduleError:
            continue
        return schedule.trace
    return []
