"""Compile the bundled models (an MLP 784-512-256-10 and a small CNN), check them against
the numpy interpreter, and print compile time and latency, one line per model.

    tensorkiln demo
    tensorkiln demo --models mlp --repeat 200 --target "llvm -mcpu=skylake-avx512"
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np

import tensorkiln as tk
from tensorkiln.examples.models import BUNDLED
from tensorkiln.runtime.profiler import benchmark

from ..common import UserError

NAME = "demo"
HELP = "build, check and time the bundled models (what a bare 'tensorkiln' runs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", default=",".join(BUNDLED), help=f"comma-separated, from {', '.join(BUNDLED)}")
    parser.add_argument("--target", default="llvm", help='target string, e.g. "llvm -mcpu=skylake-avx512"')
    parser.add_argument("--repeat", type=int, default=100, help="timed runs per model (median reported)")


def _median_seconds(fn: Callable[[], object], repeat: int) -> float:
    return benchmark(fn, number=1, repeat=repeat, warmup=0).median


def run_model(name: str, target: str, repeat: int) -> bool:
    """Build, check and time one bundled model; print one report line. True if correct."""
    module, inputs = BUNDLED[name]()
    start = time.perf_counter()
    lib = tk.build(module, target=target)
    compile_s = time.perf_counter() - start

    start = time.perf_counter()
    got = lib(*inputs)
    first_s = time.perf_counter() - start

    reference = tk.create_executor("interpreter", module).evaluate()
    expected = reference(*inputs)
    error = float(np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-30))
    ok = bool(error <= 1e-5)

    ours = _median_seconds(lambda: lib(*inputs), repeat)
    numpy_s = _median_seconds(lambda: reference(*inputs), max(3, repeat // 10))
    print(
        f"{name:6s} {'OK ' if ok else 'BAD'} rel.err {error:.1e} | compile {compile_s * 1e3:7.1f} ms"
        f" | first run {first_s * 1e3:8.3f} ms | steady {ours * 1e3:8.3f} ms"
        f" | numpy op-by-op {numpy_s * 1e3:8.3f} ms ({numpy_s / ours:5.1f}x)"
    )
    return ok


def run(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUNDLED]
    if unknown:
        raise UserError(f"--models: unknown models {unknown} (bundled: {', '.join(BUNDLED)})")
    if args.repeat < 1:
        raise UserError(f"--repeat must be at least 1, got {args.repeat}")
    print(f"tensorkiln on {llvm.get_host_cpu_name()} (target {args.target!r})")
    results = [run_model(name, args.target, args.repeat) for name in names]
    print("all outputs match the interpreter" if all(results) else "MISMATCH against the interpreter")
    return 0 if all(results) else 1
