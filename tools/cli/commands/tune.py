"""Auto-tune a model's kernels: search schedules on real measurements, log the best.

    tensorkiln tune model.mlir --trials 64 --log tune.jsonl
    tensorkiln compile model.mlir -o model.tk --tuning-log tune.jsonl

The log (JSON lines) is appended to, and a second run resumes from it. After the search,
a table gives each kernel's default schedule time, the time of the schedule compile
will apply and the verdict: the speed-up, "the default schedule is fastest (kept)"
where no candidate beat it, or why a kernel got no search.
"""

from __future__ import annotations

import argparse

import tensorkiln as tk
from tensorkiln.tuning import load_records
from tensorkiln.tuning.summary import outcomes

from ..common import UserError, load_model
from .bench import format_table

NAME = "tune"
HELP = "auto-tune MODEL's kernels into a log that compile --tuning-log applies"

TUNERS = ("evolutionary", "xgb", "ga", "random", "grid")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help=".pt2, .onnx or .mlir file")
    parser.add_argument("--trials", type=int, required=True, help="measurements in all (over every kernel)")
    parser.add_argument("--log", required=True, metavar="FILE", help="the JSON-lines log to append to (and resume from)")
    parser.add_argument("--target", default="llvm", help='target string, e.g. "llvm -mcpu=znver4"')
    parser.add_argument("--tuner", default="evolutionary", choices=TUNERS, help="search strategy (default: evolutionary)")
    parser.add_argument("--seed", type=int, default=0)


def summary(module: object, target: str, log: str) -> list[tuple[str, ...]]:
    """One row per task: its name, trials, default and applied milliseconds, verdict."""
    rows = [("kernel", "trials", "default ms", "applied ms", "result")]
    for o in outcomes(tk.extract_tasks(module, target), load_records(log)):
        ms = ["-" if cost is None else f"{cost * 1e3:.4f}" for cost in (o.default_cost, o.best_cost)]
        rows.append((o.name[:48], str(o.trials), *ms, o.verdict))
    return rows


def run(args: argparse.Namespace) -> int:
    if args.trials < 1:
        raise UserError(f"--trials must be at least 1, got {args.trials}")
    model = load_model(args.model)
    tk.tune(model.module, args.target, trials=args.trials, log_file=args.log, tuner=args.tuner, seed=args.seed, progress=True)
    print(format_table(summary(model.module, args.target, args.log)))
    print(f"log: {args.log} (apply with: tensorkiln compile {args.model} -o OUT.tk --tuning-log {args.log})")
    return 0
