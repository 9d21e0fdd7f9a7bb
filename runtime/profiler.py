"""Profiling and benchmarking of compiled models, with numpy and the stdlib only.

``lib.profile(*inputs)`` times every kernel call through the graph executor (one
Python-level call per kernel, so each can be timed) and reports, per kernel, the
calls, total and mean time and the share of the total, sorted by total time; plus
the compile time, the first-run latency and the steady-state latency of the default
executor as separate figures. ``lib.benchmark(*inputs, number=, repeat=)`` is TVM's
``time_evaluator``: ``repeat`` measurements, each the mean of ``number`` calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class KernelStat:
    """One kernel's share of a profile."""

    name: str
    calls: int
    total_seconds: float
    mean_seconds: float
    share: float


@dataclass
class BenchmarkResult:
    """Seconds per call: each of ``results`` is the mean over ``number`` calls."""

    results: list[float]
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    def __str__(self) -> str:
        return (
            f"median {self.median * 1e3:.4f} ms, mean {self.mean * 1e3:.4f} ms, min {self.min * 1e3:.4f} ms, "
            f"max {self.max * 1e3:.4f} ms ({len(self.results)} x {self.number} calls)"
        )


@dataclass
class ProfileReport:
    """Per-kernel times (sorted, slowest first) and the three latency figures."""

    kernels: list[KernelStat]
    compile_seconds: float | None
    first_run_seconds: float | None
    steady_state_seconds: float
    kernel_total_seconds: float
    runs: int
    executor: str = "aot"
    extra: dict[str, Any] = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"{'kernel':<40} {'calls':>6} {'total ms':>10} {'mean us':>10} {'share':>7}"]
        for k in self.kernels:
            lines.append(
                f"{k.name:<40} {k.calls:>6} {k.total_seconds * 1e3:>10.4f} "
                f"{k.mean_seconds * 1e6:>10.2f} {k.share * 100:>6.1f}%"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        compile_text = "n/a" if self.compile_seconds is None else f"{self.compile_seconds * 1e3:.1f} ms"
        first = "n/a" if self.first_run_seconds is None else f"{self.first_run_seconds * 1e3:.4f} ms"
        return (
            f"{self.table()}\n"
            f"kernels total {self.kernel_total_seconds * 1e3:.4f} ms per run ({self.runs} runs)\n"
            f"compile {compile_text} | first run {first} | "
            f"steady state ({self.executor}) {self.steady_state_seconds * 1e3:.4f} ms"
        )


def benchmark(fn: Callable[[], Any], number: int = 10, repeat: int = 5, warmup: int = 1) -> BenchmarkResult:
    """Time ``fn()``: ``repeat`` means over ``number`` calls each, after ``warmup`` calls."""
    if number < 1 or repeat < 1:
        raise ValueError(f"benchmark: number and repeat must be >= 1, got number={number}, repeat={repeat}")
    for _ in range(warmup):
        fn()
    clock = time.perf_counter
    results = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        results.append((clock() - start) / number)
    return BenchmarkResult(results, number)


def profile_kernels(
    run_timed: Callable[..., tuple[Any, list[float]]],
    kernel_names: Sequence[str],
    args: Sequence[Any],
    runs: int,
) -> tuple[list[KernelStat], float]:
    """Per-kernel statistics over ``runs`` timed runs (``run_timed`` gives seconds per node)."""
    totals: dict[str, float] = {}
    calls: dict[str, int] = {}
    for _ in range(runs):
        _, seconds = run_timed(*args)
        for name, s in zip(kernel_names, seconds):
            totals[name] = totals.get(name, 0.0) + s
            calls[name] = calls.get(name, 0) + 1
    total = sum(totals.values())
    stats = [
        KernelStat(name, calls[name] // runs, totals[name] / runs, totals[name] / calls[name], totals[name] / total if total else 0.0)
        for name in totals
    ]
    stats.sort(key=lambda k: k.total_seconds, reverse=True)
    return stats, total / runs


__all__ = ["BenchmarkResult", "KernelStat", "ProfileReport", "benchmark", "profile_kernels"]
