"""Applying a tuning log in ``tk.build`` (history-best dispatch).

After ``te-to-loop``, each static kernel's workload key is looked up in the log; a
kernel with a successful record gets the fastest record's trace, every other kernel
its default strategy (the ``default-schedule`` pass). Which tasks had no record is
logged once per build, on the ``tensorkiln.tuning`` logger::

    lib = tk.build(module, "llvm", tuning_log="tune.jsonl")
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import Rewriter

from ..schedule import Schedule, ScheduleError
from ..schedule.schedule import kernels
from .record import Record, best_records, load_records
from .task import is_static, task_of

log = logging.getLogger("tensorkiln.tuning")

_LOADED: dict[tuple[str, float, int], dict[str, Record]] = {}


def best_of_log(log_file: str | Path) -> dict[str, Record]:
    """The best record per workload key of a log (cached while the file is unchanged)."""
    path = Path(log_file)
    if not path.exists():
        raise FileNotFoundError(f"tuning log not found: {path}")
    stat = os.stat(path)
    key = (str(path.resolve()), stat.st_mtime, stat.st_size)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = best_records(load_records(path))
    return _LOADED[key]


def schedule_from_log(loops: ModuleOp, target: str, log_file: str | Path, run_default) -> dict[str, list[str]]:
    """Schedule the kernels of a loop-level module: best records where the log has
    them, ``run_default(loops)`` (the default-schedule pipeline) for the rest.
    Returns ``{"tuned": [kernel names], "untuned": [task names]}``."""
    best = best_of_log(log_file)
    chosen: list[tuple[str, func.FuncOp, Record]] = []
    untuned: list[str] = []
    for kernel in kernels(loops):
        if not is_static(kernel):
            continue
        task = task_of(kernel, target)
        record = best.get(task.key)
        if record is None:
            if task.name not in untuned:
                untuned.append(task.name)
        else:
            chosen.append((kernel.sym_name.data, kernel.clone(), record))
    run_default(loops)
    by_name = {k.sym_name.data: k for k in kernels(loops)}
    tuned = []
    for name, fresh, record in chosen:
        scheduled = by_name[name]
        backup = scheduled.clone()
        Rewriter.replace_op(scheduled, fresh)
        try:
            Schedule.replay(fresh, record.trace)
        except ScheduleError as error:
            log.warning("tuning record for %s does not replay (%s); using the default schedule", name, error)
            Rewriter.replace_op(fresh, backup)
            continue
        tuned.append(name)
    if untuned:
        log.warning("tuning log %s has no record for %d task(s), default schedules used: %s", log_file, len(untuned),
                    "; ".join(untuned))
    return {"tuned": tuned, "untuned": untuned}
