"""Time a model, against torch eager or ONNX Runtime on the same inputs, and print a table.

    tensorkiln bench model.tk                                  # a compiled directory
    tensorkiln bench model.pt2 --compare torch --threads 1     # built here, then compared
    tensorkiln bench model.onnx --compare onnxruntime --dim n=8

The engines are timed in turns (each round times every engine once: ``--number`` calls,
their mean), and the table gives each one's median over ``--repeat`` rounds, its ratio
to tensorkiln's, and the largest difference of its outputs from tensorkiln's. On a
machine others share, compare with ``--threads 1``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorkiln as tk
from tensorkiln.runtime.threads import set_num_threads

from ..common import UserError, as_outputs, inputs_for, model_or_compiled, signature_of
from .compile import add_build_options, build_options
from .run import add_input_options

NAME = "bench"
HELP = "time MODEL or OUT.tk, optionally against torch / onnxruntime (a table)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL|OUT.tk", help="a model file (.pt2, .onnx, .mlir) or a compiled directory")
    parser.add_argument("--threads", type=int, default=None, help="threads for every engine (default: tensorkiln's default, TK_NUM_THREADS)")
    parser.add_argument("--compare", default="", metavar="ENGINES",
                        help="comma-separated: torch (for .pt2), onnxruntime (for .onnx)")
    parser.add_argument("--number", type=int, default=20, help="calls per measurement")
    parser.add_argument("--repeat", type=int, default=7, help="measurements per engine (median reported)")
    add_input_options(parser)
    add_build_options(parser)


def interleaved_medians(engines: dict[str, Callable[[], Any]], number: int, repeat: int) -> dict[str, float]:
    """Seconds per call of each engine: the median of ``repeat`` rounds, each round timing
    ``number`` calls of every engine in turn (so a noisy moment hits all of them)."""
    for fn in engines.values():
        fn()  # warm up
    samples: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(repeat):
        for name, fn in engines.items():
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(s) for name, s in samples.items()}


def max_difference(ours: list[np.ndarray], theirs: list[np.ndarray]) -> float:
    if len(ours) != len(theirs):
        return float("nan")
    return max((float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0)) for a, b in zip(ours, theirs)), default=0.0)


def format_table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if k == 0 else cell.rjust(w) for k, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.number < 1 or args.repeat < 1:
        raise UserError(f"--number and --repeat must be at least 1 (got {args.number}, {args.repeat})")
    if args.threads is not None:
        if args.threads < 1:
            raise UserError(f"--threads must be at least 1, got {args.threads}")
        set_num_threads(args.threads)
    wanted = [name.strip() for name in args.compare.split(",") if name.strip()]
    start = time.perf_counter()
    lib, model = model_or_compiled(args.model, lambda module: tk.build(module, **build_options(args)))
    compile_seconds = time.perf_counter() - start
    available = model.references if model is not None else {}
    missing = [name for name in wanted if name not in available]
    if missing:
        have = ", ".join(available) or "none: a compiled directory has no original model"
        raise UserError(f"--compare {', '.join(missing)}: not available for {args.model} (available: {have})")
    inputs = inputs_for(signature_of(lib), args.input, args.dim)
    engines: dict[str, Callable[[], Any]] = {"tensorkiln": lambda: lib(*inputs)}
    for name in wanted:
        reference = available[name](args.threads)
        engines[name] = lambda reference=reference: reference(*inputs)
    ours = as_outputs(lib(*inputs))
    differences = {name: max_difference(ours, as_outputs(fn())) for name, fn in engines.items()}
    medians = interleaved_medians(engines, args.number, args.repeat)
    rows = [("engine", "median ms", "x tensorkiln", "max |diff|")]
    for name, seconds in medians.items():
        rows.append((name, f"{seconds * 1e3:.4f}", f"{seconds / medians['tensorkiln']:.2f}", f"{differences[name]:.1e}"))
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in inputs)
    how = f"compiled in {compile_seconds * 1e3:.0f} ms" if model is not None else "loaded"
    threads = "default threads" if args.threads is None else f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    print(f"{args.model} ({how}); inputs {shapes}; {threads}; {args.repeat} x {args.number} calls")
    print(format_table(rows))
    return 0
