"""Auto-tuning curves and tuned-vs-default latency; writes the ``tuning`` section of
BENCHMARKS.md and PNGs of the curves next to this script.

    .venv/bin/python benchmarks/tuning.py [--trials 40] [--tuners evolutionary,xgb,random]
                                          [--kernels gemm1024,conv3x3,depthwise] [--zoo resnet18]
                                          [--zoo-trials 64] [--no-write (no BENCHMARKS.md, no PNGs)]

Every kernel is tuned from its bare computation (the unscheduled loop nest of
te-to-loop; the first candidate of every search is the default strategy's schedule)
at ONE thread (``TK_NUM_THREADS=1``), measured in an isolated worker process, checked
against the unscheduled kernel. Per tuner: the default's GFLOP/s, best-so-far after
16 trials and at the end, the trial that reached the final best, wall time; then the
best record re-measured in a fresh worker process (the replay check). The zoo model
is tuned end to end (all its tasks, one shared budget, evolutionary search) and its
latency compared with the default build's, interleaved, medians.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["TK_NUM_THREADS"] = "1"  # before tensorkiln loads: workers inherit it
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the sgemm ceiling on one core
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.tuning.defaults import default_trace  # noqa: E402
from tensorkiln.tuning.record import best_records, load_records, pooled_cost, ranked_traces, trace_key  # noqa: E402
from tensorkiln.tuning.runner import Runner  # noqa: E402
from tensorkiln.tuning.task import gflops  # noqa: E402
from tensorkiln.tuning.tune import CONFIRM_TUNER, tune_tasks  # noqa: E402

HERE = Path(__file__).resolve().parent


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def gemm1024():
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("x", (1024, 1024)), b.input("w", (1024, 1024))))


def gemm512():
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("x", (512, 512)), b.input("w", (512, 512))))


def conv3x3():
    """A ResNet stage-2 3x3 conv: 1x64x56x56, 64 filters, pad 1."""
    b = tk.GraphBuilder()
    y = b.conv2d(b.input("x", (1, 64, 56, 56)), b.input("w", (64, 64, 3, 3)), None, strides=1, padding=1)
    return b.finish(y)


def depthwise():
    """A MobileNet depthwise 3x3 conv: 1x32x56x56, groups 32, pad 1."""
    b = tk.GraphBuilder()
    y = b.conv2d(b.input("x", (1, 32, 56, 56)), b.input("w", (32, 1, 3, 3)), None, strides=1, padding=1, groups=32)
    return b.finish(y)


KERNELS = {"gemm1024": ("GEMM 1024^3", gemm1024), "gemm512": ("GEMM 512^3", gemm512),
           "conv3x3": ("conv3x3 64->64 56x56", conv3x3), "depthwise": ("depthwise 3x3 32ch 56x56", depthwise)}


def main_task(module):
    """The task doing the arithmetic (layout transposes beside a conv are left out)."""
    tasks = tk.extract_tasks(module, "llvm")
    return max(tasks, key=lambda t: t.flops)


def curve(records) -> list[float]:
    out, best = [], 0.0
    for r in records:
        best = max(best, r.gflops)
        out.append(best)
    return out


def plot(name: str, curves: dict[str, list[float]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for tuner, line in curves.items():
        ax.plot(range(1, len(line) + 1), line, label=tuner)
    ax.set_title(f"{name}, 1 thread")
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def tune_kernel(key: str, tuners: list[str], trials: int, runner: Runner, workdir: Path, draw: bool = True):
    title, make = KERNELS[key]
    task = main_task(make())
    rows, curves = [], {}
    for tuner in tuners:
        log = workdir / f"{key}-{tuner}.jsonl"
        start = time.perf_counter()
        loads = [load()]
        tune_tasks([task], trials, str(log), tuner, runner=runner, batch_size=8, progress=True)
        wall = time.perf_counter() - start
        loads.append(load())
        records = list(load_records(log))
        searched = [r for r in records if r.tuner != CONFIRM_TUNER]
        line = curve(searched)
        curves[tuner] = line
        reached = next(k for k, g in enumerate(line, 1) if g >= line[-1])
        errors = sum(not r.ok for r in searched)
        # what build applies: the fastest trace by the median of its measurements (the
        # confirmation round measured it again next to the default)
        pooled = {trace_key(group[0].trace): pooled_cost(group) for group in ranked_traces(records)}
        chosen = best_records(records)[task.key]
        chosen_s = pooled[trace_key(chosen.trace)]
        default_s = pooled.get(trace_key(default_trace(task)), float("inf"))
        # replay: the chosen record re-measured in a fresh worker process
        with Runner(timeout=120, min_repeat_ms=100, repeat=5) as fresh:
            (again,) = fresh.measure(task, [chosen.trace])
        replay = again.cost / chosen_s if again.ok else float("nan")
        rows.append([title, tuner, f"{gflops(task.flops, default_s):.1f}", f"{line[min(15, len(line) - 1)]:.1f}",
                     f"{line[-1]:.1f}", str(reached), f"{gflops(task.flops, chosen_s):.1f}",
                     f"{default_s / chosen_s:.2f}x", str(len(searched)), str(errors), f"{replay:.2f}", f"{wall:.0f}",
                     "/".join(loads)])
        print(" | ".join(rows[-1]), flush=True)
    png = HERE / f"tuning-{key}.png"
    drawn = draw and plot(title, curves, png)
    return rows, (png.name if drawn else None)


#: calls of each build, interleaved, for the end-to-end median (a call is ~50 us)
ZOO_CALLS = 400


def zoo_end_to_end(name: str, trials: int, runner: Runner, workdir: Path) -> list[str]:
    import torch

    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    torch.set_num_threads(1)
    entry = ZOO[name]
    args = random_inputs(entry, seed=1)
    module = from_exported_program(torch.export.export(entry.build(), args))  # static shapes: every kernel tunable
    tasks = tk.extract_tasks(module, "llvm")
    log = workdir / f"zoo-{name}.jsonl"
    start = time.perf_counter()
    tune_tasks(tasks, trials, str(log), "evolutionary", runner=runner, batch_size=8, progress=True)
    wall = time.perf_counter() - start
    default = tk.build(module, "llvm")
    tuned = tk.build(module, "llvm", tuning_log=str(log))
    inputs = [a.numpy() for a in args]
    np.testing.assert_allclose(tuned(*inputs), default(*inputs), rtol=1e-3, atol=1e-3)
    records = list(load_records(log))
    chosen = best_records(records)
    kept_default = sum(trace_key(chosen[t.key].trace) == trace_key(default_trace(t)) for t in tasks if t.key in chosen)
    times: dict[str, list[float]] = {"default": [], "tuned": []}
    for _ in range(ZOO_CALLS):  # interleaved
        for label, lib in (("default", default), ("tuned", tuned)):
            t0 = time.perf_counter()
            lib(*inputs)
            times[label].append(time.perf_counter() - t0)
    d, t = (float(np.median(times[k])) * 1e3 for k in ("default", "tuned"))
    return [name, str(len(tasks)), str(kept_default), str(trials), f"{d:.3f}", f"{t:.3f}", f"{d / t:.2f}x", f"{wall:.0f}",
            load()]


def ceilings_line() -> str:
    """The FMA peak and numpy's sgemm on this core now (see ceilings.py)."""
    from ceilings import fma_peak_gflops, openblas_gflops

    return (f"Ceilings measured in this run, one thread: register-only FMA peak {fma_peak_gflops():.1f} GFLOP/s, "
            f"numpy sgemm (OpenBLAS) 1024^3 {openblas_gflops():.1f} GFLOP/s.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--gemm-trials", type=int, default=None, help="trials for gemm1024 (default: --trials)")
    parser.add_argument("--tuners", default="evolutionary,xgb,random")
    parser.add_argument("--kernels", default="gemm1024,conv3x3,depthwise")
    parser.add_argument("--zoo", default="resnet18")
    parser.add_argument("--zoo-trials", type=int, default=64)
    parser.add_argument("--conditions", default="", help="a sentence on the machine's state, for the report")
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tk-tuning-bench-"))
    runner = Runner(timeout=60, min_repeat_ms=100, repeat=3)
    rows, pngs = [], []
    ceilings = [ceilings_line()]
    try:
        for key in [k for k in options.kernels.split(",") if k]:
            trials = options.gemm_trials if key == "gemm1024" and options.gemm_trials else options.trials
            r, png = tune_kernel(key, options.tuners.split(","), trials, runner, workdir, not options.no_write)
            rows += r
            if png:
                pngs.append(png)
        zoo = [zoo_end_to_end(options.zoo, options.zoo_trials, runner, workdir)] if options.zoo else []
    finally:
        runner.close()
    ceilings.append(ceilings_line())
    gemm_trials = options.gemm_trials or options.trials
    text = [
        "## Auto-tuning (one thread)",
        "",
        f"`benchmarks/tuning.py --trials {options.trials} --gemm-trials {gemm_trials} --zoo-trials "
        f"{options.zoo_trials}` on {machine()}. {options.conditions} "
        "Each kernel tuned from its bare loop nest (the first candidate is the default strategy's schedule), "
        "one thread, candidates measured in an isolated worker (median of 3 rounds of >= 100 ms) and checked "
        "against the unscheduled kernel. best @16 / best searched: the best-so-far curve (single measurements). "
        "chosen: what `build` applies after the confirmation round (the default and the 4 leaders measured "
        "again side by side, twice; a trace is ranked by the median of its measurements), and its speed-up over "
        "the default measured the same way. replay = the chosen record re-measured in a fresh process / its "
        "pooled time. Load average at start/end of each run in the last column.",
        "",
        " ".join(ceilings[:1]) + " At the end: " + ceilings[1].split(": ", 1)[1],
        "",
        table(["kernel", "tuner", "default GFLOP/s", "best @16", "best searched", "reached at", "chosen GFLOP/s",
               "vs default", "trials", "errors", "replay", "wall s", "load"], rows),
    ]
    if pngs:
        text += ["", "Curves: " + ", ".join(f"[{p}](benchmarks/{p})" for p in pngs)]
    if zoo:
        text += ["", "End to end, tuned vs default build on the zoo's example input (resnet18: 2x3x32x32), one thread, "
                 f"interleaved medians of {ZOO_CALLS} calls (kept default: tasks whose chosen schedule is the default):",
                 "",
                 table(["model", "tasks", "kept default", "trials", "default ms", "tuned ms", "speed-up",
                        "tuning wall s", "load"], zoo)]
    markdown = "\n".join(text)
    print(markdown)
    if not options.no_write:
        write_section("tuning", markdown)


if __name__ == "__main__":
    main()
