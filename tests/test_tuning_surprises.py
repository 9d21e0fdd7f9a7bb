"""Tuning says what it did (issue #40 item 3): ``tuner="xgb"`` without xgboost names its
fallback; a budget too small for every task names the tasks it left untuned; the
summary says when the default schedule won; ``tk.tuning.plot`` returns where it wrote.

The scheduling tests measure with a stub runner (a cost per trace, no compilation):
what is tested is which candidates the session asks for and what it reports.
"""

from __future__ import annotations

import importlib
import io
import warnings

import pytest

import tensorkiln as tk
from tensorkiln.examples.models import mlp
from tensorkiln.tuning import cost_model
from tensorkiln.tuning.cost_model import RidgeModel
from tensorkiln.tuning.defaults import default_trace
from tensorkiln.tuning.progress import Progress
from tensorkiln.tuning.record import Record, trace_key
from tensorkiln.tuning.tune import TuningWarning, make_policy, tune_tasks

tune_module = importlib.import_module("tensorkiln.tuning.tune")  # tensorkiln.tuning.tune is also the function


class StubRunner:
    """Records with a made-up cost per candidate: ``cost(task, trace, is_default)``."""

    def __init__(self, cost):
        self.cost = cost
        self.measured: list[tuple[str, str]] = []  # (task key, tuner) per candidate
        self.defaults: dict[str, str] = {}

    def measure(self, task, candidates, tuner=""):
        default = self.defaults.setdefault(task.key, trace_key(default_trace(task)))
        records = []
        for c in candidates:
            trace = list(getattr(c, "trace", c))
            config = getattr(c, "config", None)
            self.measured.append((task.key, tuner))
            seconds = self.cost(task, trace, trace_key(trace) == default)
            records.append(Record(key=task.key, target=task.target, trace=trace, config=config, costs=[seconds],
                                  task=task.name, tuner=tuner, flops=task.flops))
        return records

    def close(self):
        pass


@pytest.fixture(scope="module")
def tasks():
    """Three distinct dense kernels."""
    module, _ = mlp(sizes=(16, 12, 8, 4))
    found = tk.extract_tasks(module)
    assert len(found) == 3
    return found


def _trials_per_task(runner: StubRunner) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key, tuner in runner.measured:
        if tuner != "confirm":
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_xgb_without_xgboost_names_its_fallback(tasks, monkeypatch):
    monkeypatch.setattr(tune_module, "xgboost_available", lambda: False)
    with pytest.warns(TuningWarning, match=r"xgboost is not installed.*ridge regression.*pip install xgboost"):
        tune_tasks(tasks, 0, tuner="xgb", runner=StubRunner(lambda *a: 1e-3), progress=False)


def test_without_xgboost_the_xgb_tuner_ranks_with_ridge_regression(tasks, monkeypatch):
    """What the warning says is what runs."""
    monkeypatch.setattr(cost_model, "xgboost_available", lambda: False)
    assert isinstance(make_policy(tasks[0], "xgb").tuner.model, RidgeModel)


def test_other_tuners_and_xgb_with_xgboost_say_nothing(tasks, monkeypatch):
    monkeypatch.setattr(tune_module, "xgboost_available", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningWarning)
        for tuner in ("random", "evolutionary"):
            tune_tasks(tasks, 0, tuner=tuner, runner=StubRunner(lambda *a: 1e-3), progress=False)
        tune_module._warn_about_the_cost_model("xgb")


def test_a_small_budget_names_the_untuned_tasks(tasks):
    runner = StubRunner(lambda task, trace, default: 1e-3 if default else 2e-3)
    with pytest.warns(TuningWarning, match=r"trials=4 left 1 of 3 tasks untuned: (dense\S+) \(no trial\).*trials >= 6") as caught:
        tune_tasks(tasks, 4, tuner="random", runner=runner, progress=False, confirm=0)
    counts = _trials_per_task(runner)
    untuned = [t.name for t in tasks if counts.get(t.key, 0) == 0]
    assert len(untuned) == 1 and untuned[0] in str(caught[0].message)


def test_a_budget_of_twice_the_tasks_gives_every_task_its_default_and_a_candidate(tasks):
    for trials in (6, 7, 16):
        runner = StubRunner(lambda task, trace, default: 1e-3 if default else 2e-3)
        with warnings.catch_warnings():
            warnings.simplefilter("error", TuningWarning)
            states = tune_tasks(tasks, trials, tuner="random", runner=runner, progress=False, confirm=0)
        counts = _trials_per_task(runner)
        assert sum(counts.values()) == trials
        for task in tasks:
            assert counts.get(task.key, 0) >= 2, f"trials={trials}: {task.name} got {counts.get(task.key, 0)}"
            first = states[task.key].records[0]
            assert first.config == {"template": "default", "values": None}


def test_the_summary_says_when_the_default_won(tasks):
    """The default fastest for the first task, a candidate 2x faster for the others."""
    winner = tasks[0].key
    runner = StubRunner(lambda task, trace, default: (1e-3 if default else 2e-3) if task.key == winner
                        else (2e-3 if default else 1e-3))
    stream = io.StringIO()
    states = tune_tasks(tasks, 9, tuner="random", runner=runner, progress=False)
    lines = {s.task.name: s.outcome().verdict for s in states.values()}
    assert lines[tasks[0].name] == "the default schedule is fastest (kept)"
    for task in tasks[1:]:
        assert lines[task.name] == "2.00x faster than the default"
    # what tk.tune prints at the end (progress=True), a line per task
    summary = tune_module._summary(states.values())
    bar = Progress(9, stream=stream)
    bar.close(summary)
    printed = stream.getvalue()
    assert f"{tasks[0].name}: " in printed and "the default schedule is fastest (kept)" in printed
    assert printed.count("2.00x faster than the default") == 2


def test_the_summary_of_an_untuned_task_says_why(tasks):
    runner = StubRunner(lambda *a: 1e-3)
    with pytest.warns(TuningWarning):
        states = tune_tasks(tasks, 2, tuner="random", runner=runner, progress=False, confirm=0)
    verdicts = sorted(s.outcome().verdict for s in states.values())
    assert verdicts.count("no trial (the budget ran out first): default schedule") == 2


def test_plot_returns_the_path_it_wrote(tmp_path, tasks):
    pytest.importorskip("matplotlib")
    log = tmp_path / "tune.jsonl"
    tune_tasks(tasks, 6, log_file=log, tuner="random", runner=StubRunner(lambda *a: 1e-3), progress=False, confirm=0)
    png = tk.tuning.plot(str(log))
    assert png == str(tmp_path / "tune.png") and (tmp_path / "tune.png").stat().st_size > 0
    other = tk.tuning.plot(str(log), str(tmp_path / "curves.png"))
    assert other == str(tmp_path / "curves.png") and (tmp_path / "curves.png").exists()
