"""Where compile time goes: each stage of tk.build timed for the bundled models and a
500-op chain (a graph 10x larger than the MLP/CNN). Writes its table to BENCHMARKS.md.

    .venv/bin/python benchmarks/compile_time.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# cold builds: the disk compile cache would serve the repeats (benchmarks/executors.py
# measures warm builds)
os.environ.setdefault("TK_CACHE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import machine, table, write_section  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.models import elementwise_chain, mlp, small_cnn  # noqa: E402

MODELS = {
    "MLP 784-512-256-10": lambda: mlp(),
    "CNN (2 conv, pool, dense)": lambda: small_cnn(),
    "chain of 500 elementwise ops": lambda: elementwise_chain(500),
}


def stage_times(make_model) -> tuple[dict[str, float], int]:
    """Seconds per stage of one build of the model (a pass run twice is summed), and its
    number of graph ops."""
    start = time.perf_counter()
    module, _ = make_model()
    times = {"build IR (builder)": time.perf_counter() - start}
    n_ops = sum(1 for _ in module.walk()) - 2
    start = time.perf_counter()
    module.verify()
    times["verify"] = time.perf_counter() - start
    start = time.perf_counter()
    lib = tk.build(module)
    wall = time.perf_counter() - start
    for name, seconds in lib.pass_timings:
        times[name] = times.get(name, 0.0) + seconds
    times[OTHER] = wall - sum(seconds for _, seconds in lib.pass_timings)
    with tk.PassContext(verify="each"):
        start = time.perf_counter()
        tk.build(module)
        times[EACH] = time.perf_counter() - start
    return times, n_ops


#: build time outside the passes: each pipeline's input and result verified, modules cloned...
OTHER = "verification and bookkeeping (build's wall time minus its passes)"
#: a second build verifying after every pass (not in the total)
EACH = "*whole build with verify='each' (not in the total)*"


def _total(times: dict[str, float]) -> float:
    return sum(seconds for stage, seconds in times.items() if stage != EACH)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = {}
    for name, make in MODELS.items():
        stage_times(make)  # warm-up: in-process caches (imports, strategies) filled for both builds below
        runs = [stage_times(make) for _ in range(args.repeat)]
        stages = runs[0][0].keys()
        results[name] = ({s: statistics.median(r[0][s] for r in runs) for s in stages}, runs[0][1])
        total = _total(results[name][0])
        print(f"{name}: {total * 1e3:.0f} ms total, {results[name][1]} graph ops")
    stages = list(dict.fromkeys(s for r, _ in results.values() for s in r))
    header = [f"stage (ms, median of {args.repeat})"] + [f"{n} ({ops} ops)" for n, (_, ops) in results.items()]
    rows = [[s] + [f"{r.get(s, 0.0) * 1e3:.1f}" for r, _ in results.values()] for s in stages]
    rows.append(["**total**"] + [f"**{_total(r) * 1e3:.0f}**" for r, _ in results.values()])
    body = [
        "## Compile time by stage",
        "",
        f"`benchmarks/compile_time.py` on {machine()}, one `tk.build` at the default O2 split by",
        "stage (the graph passes, the lowerings, then LLVM: IR text, O3 optimisation, machine code).",
        "Each pipeline's input and result are verified (in the verification row); the last row is a",
        "second build that also verifies after every pass (`PassContext(verify=\"each\")`, the default",
        "until 2026-12-03).",
        "",
        table(header, rows),
    ]
    write_section("compile-time", "\n".join(body))


if __name__ == "__main__":
    main()
