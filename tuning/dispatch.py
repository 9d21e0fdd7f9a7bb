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
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects import loop
from ..schedule import Schedule, ScheduleError
from ..schedule.strategies.analysis import constant_arguments
from ..schedule.strategies.packing import pack_constant_arguments
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
    Returns ``{"tuned": [kernel names], "untuned": [task names]}``.

    The tuned kernels are hidden from the default pipeline (their ``tk.kernel`` tag is
    taken off while it runs): a default strategy may re-lay out a kernel's constant
    argument and rewrite its callers to pass a packed copy, which a tuned schedule of
    the original kernel would then misread."""
    best = best_of_log(log_file)
    chosen: list[tuple[func.FuncOp, Record]] = []
    untuned: list[str] = []
    constants = constant_arguments(loops)
    for kernel in loop.kernels(loops):
        if not is_static(kernel):
            continue
        task = task_of(kernel, target, constants.get(kernel.sym_name.data, ()))
        record = best.get(task.key)
        if record is None:
            if task.name not in untuned:
                untuned.append(task.name)
        else:
            chosen.append((kernel, record))
    tags = {}
    for kernel, _ in chosen:
        tags[kernel.sym_name.data] = loop.kernel_tag(kernel)
        del kernel.attributes[loop.KERNEL_ATTR]  # hidden from the default pipeline (see above)
    try:
        run_default(loops)
    finally:
        for kernel, _ in chosen:
            loop.set_kernel_tag(kernel, tags[kernel.sym_name.data])
    tuned = []
    for kernel, record in chosen:
        name = kernel.sym_name.data
        trial = kernel.clone()
        Rewriter.insert_op(trial, InsertPoint.after(kernel))  # in the module: tensorize adds functions there
        try:
            Schedule.replay(trial, record.trace)
        except ScheduleError as error:
            log.warning("tuning record for %s does not replay (%s); it keeps its plain loop nest", name, error)
            Rewriter.erase_op(trial)
            continue
        Rewriter.erase_op(kernel)
        tuned.append(name)
    pack_constant_arguments(loops, only=tuned)  # a tuned schedule may re-lay out a constant weight
    if untuned:
        log.warning("tuning log %s has no record for %d task(s), default schedules used: %s", log_file, len(untuned),
                    "; ".join(untuned))
    return {"tuned": tuned, "untuned": untuned}
