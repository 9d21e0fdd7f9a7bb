"""Auto-tuning: search schedule traces per kernel, measure them in isolation, keep the
best in a JSON-lines log that ``tk.build(..., tuning_log=...)`` applies.

    import tensorkiln as tk

    tasks = tk.extract_tasks(module, "llvm")        # distinct kernels, weights, FLOPs
    tk.tune(module, "llvm", trials=200, log_file="tune.jsonl", tuner="evolutionary")
    lib = tk.build(module, "llvm", tuning_log="tune.jsonl")
    tk.tuning.plot("tune.jsonl")                     # writes and returns "tune.png" (matplotlib)

Two searches write the same records: AutoTVM-style templates with knobs searched by
``grid``/``random``/``ga``/``xgb`` tuners (``templates.py``, ``space.py``,
``tuners.py``), and Ansor-style ``evolutionary`` search over sketches generated from
the loop structure (``sketch.py``). Measurement (``runner.py``, ``measure.py``,
``executor.py``) builds each candidate kernel alone in worker processes with timeouts;
``distributed.py`` runs them on a Dask cluster.
"""

from __future__ import annotations

from .cost_model import RidgeModel, XGBModel, make_model
from .curves import plot
from .executor import IsolatedProcessPool
from .record import ErrorCode, Record, best_records, load_records, save_records
from .runner import Candidate, Runner
from .space import Config, ConfigSpace
from .task import Task, extract_tasks
from .templates import TEMPLATES, Template, register_template, template_for
from .summary import TaskOutcome, outcomes
from .tune import TuningWarning, tune, tune_tasks
from .tuners import GATuner, GridTuner, ModelBasedTuner, RandomTuner, make_tuner


__all__ = [
    "Candidate",
    "Config",
    "ConfigSpace",
    "ErrorCode",
    "GATuner",
    "GridTuner",
    "IsolatedProcessPool",
    "ModelBasedTuner",
    "RandomTuner",
    "Record",
    "RidgeModel",
    "Runner",
    "TEMPLATES",
    "Task",
    "TaskOutcome",
    "Template",
    "TuningWarning",
    "XGBModel",
    "best_records",
    "extract_tasks",
    "load_records",
    "make_model",
    "make_tuner",
    "outcomes",
    "plot",
    "register_template",
    "save_records",
    "template_for",
    "tune",
    "tune_tasks",
]
