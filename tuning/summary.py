"""What a tuning session came to, per task: its trials, the default schedule's time, the
time of the schedule ``build`` will apply, and the verdict in words (the speed-up, "the
default schedule is fastest", or why a task got no search), as ``tk.tune`` prints it at
the end and ``tensorkiln tune``'s table shows it.

    for o in outcomes(tasks, load_records("tune.jsonl")):
        print(o.name, o.verdict)          # "dense_relu[...]  1.42x faster than the default"
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .defaults import default_trace
from .record import CONFIRM_TUNER, Record, pooled_cost, ranked_traces, trace_key
from .task import Task


@dataclass(frozen=True)
class TaskOutcome:
    """One task after tuning. Costs are seconds per call (the median of a trace's
    measurements, as ``build`` ranks them); None where nothing was measured."""

    name: str
    trials: int
    default_cost: float | None
    best_cost: float | None
    default_won: bool

    @property
    def speedup(self) -> float | None:
        """Default time over the applied schedule's time (1.0 when the default won)."""
        if self.default_won:
            return 1.0
        if self.default_cost is None or self.best_cost is None:
            return None
        return self.default_cost / self.best_cost

    @property
    def verdict(self) -> str:
        if self.trials == 0 and self.best_cost is None:
            return "no trial (the budget ran out first): default schedule"
        if self.best_cost is None:
            return "every candidate failed: default schedule"
        if self.default_won:
            return "the default schedule is fastest (kept)"
        if self.speedup is None:
            return "default schedule not measured"
        return f"{self.speedup:.2f}x faster than the default"


def outcome(task: Task, records: Iterable[Record], default: list | None = None) -> TaskOutcome:
    """``task``'s outcome from its records (``default``: its default trace, if at hand)."""
    own = [r for r in records if r.key == task.key]
    default_key = trace_key(default if default is not None else default_trace(task))
    ranked = ranked_traces(own)
    default_cost = pooled_cost(r for r in own if trace_key(r.trace) == default_key)
    best = pooled_cost(ranked[0]) if ranked else math.inf
    return TaskOutcome(
        name=task.name,
        trials=sum(r.tuner != CONFIRM_TUNER for r in own),
        default_cost=default_cost if math.isfinite(default_cost) else None,
        best_cost=best if math.isfinite(best) else None,
        default_won=bool(ranked) and trace_key(ranked[0][-1].trace) == default_key,
    )


def outcomes(tasks: Sequence[Task], records: Iterable[Record]) -> list[TaskOutcome]:
    """The outcome of each of ``tasks`` (in order) from a log's records."""
    records = list(records)
    return [outcome(task, records) for task in tasks]
