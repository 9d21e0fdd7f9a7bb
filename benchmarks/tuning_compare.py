"""Model-based search vs random search on the same space, several seeds; writes the
``tuning-compare`` section of BENCHMARKS.md.

    .venv/bin/python benchmarks/tuning_compare.py [--kernel gemm512] [--trials 200] [--seeds 0,1,2]
                                                  [--checkpoints 64,200] [--pairs xgb,evolutionary]
                                                  [--no-write]

Two pairs, each on one search space:

* AutoTVM: ``xgb`` (the cost model ranks configs, simulated annealing proposes) vs
  ``random`` over the same template's config space;
* Ansor: ``evolutionary`` (the cost model guides mutation and picks the batch) vs the
  same sketches annotated at random (the sketch policy with the model's share set to
  nothing: every candidate a fresh random point).

The kernel must have a large space for both: a matmul (the ``matmul`` template's
thousands of configs; a conv's template is its strategy's 40 decisions, which both
tuners exhaust). It is tuned from its bare loop nest at one thread; runs are interleaved seed by
seed so a noisy period hits every tuner. The table gives, per tuner, the median over
seeds of the best GFLOP/s after each checkpoint, and each seed's values.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ["TK_NUM_THREADS"] = "1"  # before tensorkiln loads: workers inherit it
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import machine, table, write_section  # noqa: E402
from tuning import KERNELS, curve, load, main_task  # noqa: E402

from tensorkiln.tuning.record import load_records  # noqa: E402
from tensorkiln.tuning.runner import Runner  # noqa: E402
from tensorkiln.tuning.sketch import SketchPolicy  # noqa: E402
from tensorkiln.tuning.tune import tune_tasks  # noqa: E402


def random_sketches(task, seed: int) -> SketchPolicy:
    """The evolutionary policy without its model: every candidate a random annotation."""
    return SketchPolicy(task, seed=seed, generations=0, epsilon=1.0)


#: label -> (tuner name for the records, policy factory or None for the named tuner)
TUNERS = {
    "xgb": ("xgb", None),
    "random": ("random", None),
    "evolutionary": ("evolutionary", None),
    "random sketches": ("evolutionary", random_sketches),
}
PAIRS = [("xgb", "random"), ("evolutionary", "random sketches")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", default="gemm512", choices=sorted(KERNELS))
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--checkpoints", default="64,200")
    parser.add_argument("--min-repeat-ms", type=float, default=50.0)
    parser.add_argument("--pairs", default="xgb,evolutionary", help="the pairs to run, by their model-based tuner")
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    seeds = [int(s) for s in options.seeds.split(",")]
    checkpoints = [int(c) for c in options.checkpoints.split(",")]
    title, make = KERNELS[options.kernel]
    task = main_task(make())
    workdir = Path(tempfile.mkdtemp(prefix="tk-tuning-compare-"))
    pairs = [pair for pair in PAIRS if pair[0] in options.pairs.split(",")]
    tuners = {label: TUNERS[label] for pair in pairs for label in pair}
    best_at: dict[str, list[list[float]]] = {label: [] for label in tuners}
    loads = [load()]
    with Runner(timeout=60, min_repeat_ms=options.min_repeat_ms, repeat=3) as runner:
        for seed in seeds:
            for label, (tuner, factory) in tuners.items():
                log = workdir / f"{label.replace(' ', '-')}-{seed}.jsonl"
                policy = (lambda t, f=factory, s=seed: f(t, s)) if factory else None
                tune_tasks([task], options.trials, str(log), tuner, runner=runner, batch_size=8, seed=seed,
                           progress=False, policy=policy, confirm=0)
                line = curve(list(load_records(log)))
                best_at[label].append([line[min(c, len(line)) - 1] for c in checkpoints])
                print(label, seed, [f"{v:.1f}" for v in best_at[label][-1]], flush=True)
    loads.append(load())
    rows = []
    for label, per_seed in best_at.items():
        medians = [statistics.median(seed_values[k] for seed_values in per_seed) for k in range(len(checkpoints))]
        rows.append([label, *[f"{m:.1f}" for m in medians],
                     "; ".join("/".join(f"{v:.1f}" for v in values) for values in per_seed)])
    verdicts = []
    for model, baseline in pairs:
        m = {r[0]: r for r in rows}
        wins = [float(m[model][1 + k]) > float(m[baseline][1 + k]) for k in range(len(checkpoints))]
        verdicts.append(f"{model} vs {baseline}: " + ", ".join(
            f"{'beats' if w else 'does NOT beat'} at {c}" for w, c in zip(wins, checkpoints)))
    markdown = "\n".join([
        "## Auto-tuning: model-based vs random search",
        "",
        f"`benchmarks/tuning_compare.py --kernel {options.kernel} --trials {options.trials} --seeds {options.seeds} "
        f"--checkpoints {options.checkpoints} --pairs {options.pairs}` "
        f"on {machine()}: {title} from its bare loop nest, one thread, median of 3 rounds of >= "
        f"{options.min_repeat_ms:.0f} ms per candidate; load average {loads[0]} at start, {loads[1]} at end. "
        "Best GFLOP/s found after N trials: the median over seeds, then each seed's values.",
        "",
        table(["tuner", *[f"best @{c} (median)" for c in checkpoints], "per seed"], rows),
        "",
        *[f"- {v}" for v in verdicts],
    ])
    print(markdown)
    if not options.no_write:
        write_section("tuning-compare", markdown)


if __name__ == "__main__":
    main()
