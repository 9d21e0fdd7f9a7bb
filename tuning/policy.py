"""Search policies: what proposes the next candidates of ONE task and learns from
their records. Both families write the same records (a trace, plus the decisions that
made it), so a log written by one resumes the same policy and ``build`` applies either.

* :class:`TemplatePolicy` -- AutoTVM: a template's config space searched by a tuner
  (``grid``, ``random``, ``ga``, ``xgb``);
* ``SketchPolicy`` (``tuning/sketch.py``) -- Ansor: sketches generated from the loops,
  random annotation, evolutionary search guided by a cost model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .defaults import default_trace, lanes_of
from .record import Record, trace_key
from .runner import Candidate
from .task import Task
from .templates import template_for
from .tuners import make_tuner


class SearchPolicy:
    """Proposes candidates for one task; ``feed`` tells it what they measured."""

    name = "base"

    def __init__(self, task: Task, seed: int = 0):
        self.task = task
        self.seed = seed
        self.measured: dict[str, float] = {}  # trace key -> cost (inf: failed)

    def propose(self, n: int) -> list[Candidate]:
        raise NotImplementedError

    def feed(self, records: Sequence[Record]) -> None:
        for r in records:
            self.measured[trace_key(r.trace)] = r.cost

    def exhausted(self) -> bool:
        return False


class TemplatePolicy(SearchPolicy):
    """A template's space and a tuner; the default config is proposed first."""

    def __init__(self, task: Task, tuner: str = "xgb", seed: int = 0):
        super().__init__(task, seed)
        self.name = tuner
        self.lanes = lanes_of(task.target)
        self._default = default_trace(task)
        self._traces: dict[int, list | None] = {}
        # no template fits (e.g. a kernel without output loops): only the default is measured
        self.template = template_for(task)
        self.space = self.template.space(task, self.lanes) if self.template is not None else None
        self.tuner = make_tuner(tuner, self.space, seed) if self.space is not None else None

    def _trace(self, index: int) -> list | None:
        if index not in self._traces:
            try:
                self._traces[index] = self.template.trace(self.task, self.space[index])
            except (ValueError, KeyError, TypeError):  # ScheduleError is a ValueError
                self._traces[index] = None
        return self._traces[index]

    def _config(self, index: int) -> dict[str, Any]:
        return {"template": self.template.name, "values": self.space[index].values}

    def propose(self, n: int) -> list[Candidate]:
        batch: list[Candidate] = []
        if trace_key(self._default) not in self.measured:
            batch.append(Candidate(self._default, {"template": "default", "values": None}))
        attempts = 0
        while self.tuner is not None and len(batch) < n and self.tuner.has_next() and attempts < 20:
            attempts += 1
            for index in self.tuner.next_batch(n - len(batch)):
                trace = self._trace(index)
                known = None if trace is None else self.measured.get(trace_key(trace))
                if trace is None or known is not None:
                    # not schedulable, or the same trace as a measured config: learn without measuring
                    self.tuner.update([index], [math.inf if trace is None else known])
                    continue
                if any(trace_key(c.trace) == trace_key(trace) for c in batch):
                    continue  # the same schedule as another config of this batch: learned when it is measured
                batch.append(Candidate(trace, self._config(index)))
        return batch

    def feed(self, records: Sequence[Record]) -> None:
        super().feed(records)
        for r in records:
            config = r.config or {}
            if self.template is None or config.get("template") != self.template.name or config.get("values") is None:
                continue
            try:
                index = self.space.index_of(config["values"])
            except KeyError:
                continue
            self._traces.setdefault(index, r.trace)
            self.tuner.update([index], [r.cost])

    def exhausted(self) -> bool:
        if self.tuner is None:
            return trace_key(self._default) in self.measured
        return not self.tuner.has_next()
