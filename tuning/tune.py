"""``tk.tune``: tune every task of a model, appending records to a log, resuming from it.

The trial budget is shared by the tasks. A task scheduler (Ansor's idea, simplified)
gives each task one batch, then each next batch to the task with the largest
estimated end-to-end gain: its weight x best time so far, times how much its best time
dropped in its last batches (or an optimistic share for tasks measured little)::

    best = tk.tune(module, target="llvm", trials=200, log_file="tune.jsonl", tuner="xgb")
    lib = tk.build(module, target="llvm", tuning_log="tune.jsonl")

Records already in the log for these tasks count toward ``trials`` and are never
measured again: running the same call twice measures nothing new the second time.
Every task gets its default schedule and at least one candidate when ``trials`` is at
least twice the number of tasks; a smaller budget leaves some tasks untuned, and a
:class:`TuningWarning` names them.

When the budget is spent, a **confirmation round** (``confirm`` leaders per task, not
counted in ``trials``) measures each task's default schedule and its fastest traces
again, side by side, twice in opposite orders. Among hundreds of candidates the
fastest-looking one is often a lucky measurement (a quiet second on a shared machine);
``build`` ranks a trace measured several times by the median of its measurements
(:func:`~tensorkiln.tuning.record.best_records`), so the choice rests on measurements
taken together, and a task whose default is as fast as anything found keeps it.

With ``progress=True`` the session ends with a summary, a line per task: its best
GFLOP/s and the speed-up over its default schedule, or that the default schedule is
fastest (``build`` then keeps it), or why the task got no search.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from .cost_model import xgboost_available
from .defaults import default_trace
from .policy import SearchPolicy, TemplatePolicy
from .progress import Progress
from .record import CONFIRM_TUNER, Record, load_records, pooled_cost, ranked_traces, save_records, trace_key
from .runner import Runner
from .summary import TaskOutcome, outcome
from .task import Task, extract_tasks

TUNER_NAMES = ("evolutionary", "xgb", "ga", "random", "grid")
#: leaders per task re-measured by the confirmation round
CONFIRM_LEADERS = 4


class TuningWarning(UserWarning):
    """A tuning session that does less than asked: a fallback, or tasks left untuned."""


def _warn_about_the_cost_model(tuner: str) -> None:
    """``xgb`` ranks configs with xgboost's trees; without xgboost it ranks them with
    ridge regression (numpy), and says so."""
    if tuner == "xgb" and not xgboost_available():
        warnings.warn(
            "tuner='xgb': xgboost is not installed, so its cost model is ridge regression (numpy) instead of "
            "gradient-boosted trees; install it for the xgb model: pip install xgboost (or 'tensorkiln[tuning]')",
            TuningWarning,
            stacklevel=3,
        )


def make_policy(task: Task, tuner: str, seed: int = 0) -> SearchPolicy:
    """The search policy of ``tuner``: ``evolutionary`` (Ansor-style, no template) or a
    template tuner (``xgb``, ``ga``, ``random``, ``grid``)."""
    if tuner == "evolutionary":
        from .sketch import SketchPolicy

        return SketchPolicy(task, seed=seed)
    if tuner in TUNER_NAMES:
        return TemplatePolicy(task, tuner, seed=seed)
    raise ValueError(f"unknown tuner {tuner!r} (known: {', '.join(TUNER_NAMES)})")


@dataclass
class TaskState:
    """One task in a session: its policy, its records, its best-so-far curve."""

    task: Task
    policy: SearchPolicy
    records: list[Record] = field(default_factory=list)
    curve: list[float] = field(default_factory=list)  # best cost after each batch

    @property
    def best(self) -> Record | None:
        """The latest record of the fastest trace (see :func:`best_records`)."""
        ranked = ranked_traces(self.records)
        return ranked[0][-1] if ranked else None

    @property
    def best_cost(self) -> float:
        ranked = ranked_traces(self.records)
        return pooled_cost(ranked[0]) if ranked else math.inf

    @property
    def trials(self) -> int:
        """Records that count toward the budget (confirmation measurements do not)."""
        return sum(r.tuner != CONFIRM_TUNER for r in self.records)

    @cached_property
    def default(self) -> list[dict]:
        """The task's default schedule trace (what ``build`` applies untuned)."""
        return default_trace(self.task)

    def outcome(self) -> TaskOutcome:
        """Trials, default and best time, and the verdict (``tuning/summary.py``)."""
        return outcome(self.task, self.records, self.default)

    def leaders(self, n: int) -> list[list[dict]]:
        """The traces of the ``n`` fastest distinct successful candidates."""
        return [group[-1].trace for group in ranked_traces(self.records)[:n]]

    def add(self, records: Sequence[Record]) -> None:
        self.records += records
        self.policy.feed(records)
        self.curve.append(self.best_cost)

    def gain(self, window: int = 3) -> float:
        """Estimated seconds of end-to-end latency one more batch saves."""
        best = self.best_cost
        if not math.isfinite(best):
            return math.inf if len(self.curve) < 2 else 0.0
        weighted = self.task.weight * best
        if len(self.curve) <= window:
            return weighted / (len(self.curve) + 1)  # optimistic early on
        past = self.curve[-window - 1]
        slope = (past - best) / window if math.isfinite(past) else best / window
        return self.task.weight * max(slope, 0.0) + 0.05 * weighted / len(self.curve)


def _pick(states: Sequence[TaskState]) -> TaskState | None:
    live = [s for s in states if not s.policy.exhausted()]
    if not live:
        return None
    fresh = [s for s in live if not s.curve]
    if fresh:  # warm-up round: every task once, the most work first
        return max(fresh, key=lambda s: s.task.flops * s.task.weight)
    return max(live, key=lambda s: s.gain())


def tune_tasks(
    tasks: Sequence[Task],
    trials: int,
    log_file: str | Path | None = None,
    tuner: str = "evolutionary",
    *,
    runner: Runner | None = None,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
    policy: Callable[[Task], SearchPolicy] | None = None,
    confirm: int = CONFIRM_LEADERS,
) -> dict[str, TaskState]:
    """Tune ``tasks`` with ``trials`` measurements in all (see the module docstring);
    returns each task's state (records, best, curve) by workload key. ``policy``: a
    factory of a custom search policy per task (default: the one ``tuner`` names).
    ``confirm``: leaders per task in the confirmation round (0: none)."""
    if policy is None:
        _warn_about_the_cost_model(tuner)
    factory = policy or (lambda t: make_policy(t, tuner, seed))
    states = {t.key: TaskState(t, factory(t)) for t in tasks}
    if log_file is not None:
        old: dict[str, list[Record]] = {}
        for r in load_records(log_file):
            if r.key in states:
                old.setdefault(r.key, []).append(r)
        for key, records in old.items():
            for start in range(0, len(records), batch_size):
                states[key].add(records[start : start + batch_size])
    used = start = sum(s.trials for s in states.values())
    own_runner = runner is None
    runner = runner or Runner()
    bar = Progress(trials, enabled=progress)
    bar.done = min(used, trials)
    summary = None
    try:
        while used < trials:
            state = _pick(list(states.values()))
            if state is None:
                break
            size = batch_size
            if not state.curve:  # the warm-up round leaves budget for the tasks that gain most
                size = max(2, min(batch_size, trials // (2 * len(states))))
            candidates = state.policy.propose(min(size, trials - used))
            if not candidates:
                state.policy.exhausted = lambda: True  # type: ignore[method-assign]
                continue
            records = runner.measure(state.task, candidates, tuner=tuner)
            if log_file is not None:
                save_records(log_file, records)
            state.add(records)
            used += len(records)
            best = state.best
            bar.update(state.task.name, len(records), best.gflops if best else 0.0)
        _warn_about_untuned(states.values(), trials, out_of_budget=0 < trials <= used)
        if confirm and used > start:
            for state in states.values():
                _confirm(state, runner, confirm, log_file)
        summary = _summary(states.values()) if progress else None
    finally:
        bar.close(summary)
        if own_runner:
            runner.close()
    return states


def _warn_about_untuned(states: Iterable[TaskState], trials: int, out_of_budget: bool) -> None:
    """Name the tasks the budget left without a search (no trial, or only the default)."""
    if not out_of_budget:
        return
    states = list(states)
    untuned = [s for s in states if s.trials == 0 or (s.trials == 1 and not s.policy.exhausted())]
    if not untuned:
        return
    names = "; ".join(f"{s.task.name} ({'no trial' if s.trials == 0 else 'only its default schedule'})" for s in untuned)
    warnings.warn(
        f"trials={trials} left {len(untuned)} of {len(states)} tasks untuned: {names}. They keep their default "
        f"schedule; trials >= {2 * len(states)} gives every task its default and at least one candidate",
        TuningWarning,
        stacklevel=3,
    )


def _summary(states: Iterable[TaskState]) -> list[str]:
    """A line per task for the end of a session: best GFLOP/s and the verdict."""
    lines = []
    for state in states:
        best = state.best
        gflops = f"{best.gflops:.1f} GFLOP/s, " if best is not None else ""
        lines.append(f"{state.task.name[:70]}: {gflops}{state.outcome().verdict}")
    return lines


def _confirm(state: TaskState, runner: Runner, leaders: int, log_file: str | Path | None) -> None:
    """Measure the default schedule and the ``leaders`` fastest traces of one task
    again, in one order and then the reverse (see the module docstring)."""
    default = state.default
    traces = [default] + [t for t in state.leaders(leaders) if trace_key(t) != trace_key(default)]
    if len(traces) < 2 or not any(r.ok for r in state.records):
        return
    for order in (traces, traces[::-1]):
        records = runner.measure(state.task, order, tuner=CONFIRM_TUNER)
        if log_file is not None:
            save_records(log_file, records)
        state.records += records


def tune(
    module: ModuleOp,
    target: str = "llvm",
    trials: int = 200,
    log_file: str | Path | None = None,
    tuner: str = "evolutionary",
    *,
    runner: Runner | None = None,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
    opt_level: int | None = None,
    confirm: int = CONFIRM_LEADERS,
) -> dict[str, Record]:
    """Tune the kernels of a graph module; returns the best record per workload key.

    ``tuner``: ``"evolutionary"`` (Ansor-style search over generated sketches),
    ``"xgb"`` (templates + a learned cost model), ``"ga"``, ``"random"``, ``"grid"``.
    ``log_file``: JSON-lines records, appended to and resumed from. ``runner``: how to
    measure (default: a local isolated process, see :class:`Runner`). ``confirm``:
    leaders per task measured again at the end (see the module docstring). Warns
    (:class:`TuningWarning`) when ``tuner="xgb"`` runs without xgboost, and naming the
    tasks a small budget left untuned. Example::

        tk.tune(module, "llvm", trials=64, log_file="tune.jsonl")
        lib = tk.build(module, "llvm", tuning_log="tune.jsonl")
    """
    tasks = extract_tasks(module, target, opt_level=opt_level)
    states = tune_tasks(tasks, trials, log_file, tuner, runner=runner, batch_size=batch_size, seed=seed,
                        progress=progress, confirm=confirm)
    return {key: s.best for key, s in states.items() if s.best is not None}
