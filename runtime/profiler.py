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

    def plot(self, path: str, top: int = 30) -> str:
        """Save per-kernel time bars (the ``top`` slowest, total ms per run) as a picture
        (PNG, SVG or PDF by the suffix; needs matplotlib); returns ``path``.

        Example: ``lib.profile(x).plot("profile.png")``
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as error:
            raise ImportError("ProfileReport.plot needs matplotlib (pip install matplotlib)") from error
        shown = self.kernels[:top][::-1]  # slowest at the top
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.28 * len(shown)))
        try:
            ax.barh([k.name[:48] for k in shown], [k.total_seconds * 1e3 for k in shown], color="#e4572e")
            for y, k in enumerate(shown):
                ax.text(k.total_seconds * 1e3, y, f" {k.share * 100:.1f}%", va="center", fontsize=8)
            ax.set_xlabel("ms per run (all calls of the kernel)")
            ax.set_title(f"{len(self.kernels)} kernels, {self.kernel_total_seconds * 1e3:.3f} ms per run; "
                         f"steady state ({self.executor}) {self.steady_state_seconds * 1e3:.3f} ms", fontsize=9)
            ax.tick_params(axis="y", labelsize=8)
            fig.tight_layout()
            fig.savefig(path)
        finally:
            plt.close(fig)
        return path

    def __str__(self) -> str:
        compile_text = "n/a" if self.compile_seconds is None else f"{self.compile_seconds * 1e3:.1f} ms"
        first = "n/a" if self.first_run_seconds is None else f"{self.first_run_seconds * 1e3:.4f} ms"
        return (
            f"{self.table()}\n"
            f"kernels total {self.kernel_total_seconds * 1e3:.4f} ms per run ({self.runs} runs)\n"
            f"compile {compile_text} | first run {first} | "
            f"steady state ({self.executor}) {self.steady_state_seconds * 1e3:.4f} ms"
        )


class PassTimings(list):
    """``lib.pass_timings``: ``(pass, seconds)`` in the order the passes ran (a list, as
    before), printed as a table: one row per pass name (a pass may run several times),
    slowest first, with its runs, total and share of the compile's pass time.

    Example: ``print(lib.pass_timings)``; ``lib.pass_timings.total_seconds``
    """

    @property
    def total_seconds(self) -> float:
        return sum(seconds for _, seconds in self)

    def by_pass(self) -> list[tuple[str, int, float]]:
        """``(pass, runs, total seconds)``, slowest first."""
        runs: dict[str, int] = {}
        totals: dict[str, float] = {}
        for name, seconds in self:
            runs[name] = runs.get(name, 0) + 1
            totals[name] = totals.get(name, 0.0) + seconds
        return sorted(((n, runs[n], totals[n]) for n in totals), key=lambda row: row[2], reverse=True)

    def table(self) -> str:
        total = self.total_seconds
        lines = [f"{'pass':<40} {'runs':>5} {'total ms':>10} {'share':>7}"]
        for name, runs, seconds in self.by_pass():
            lines.append(f"{name[:40]:<40} {runs:>5} {seconds * 1e3:>10.2f} {seconds / total * 100 if total else 0.0:>6.1f}%")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"{self.table()}\n{len(self)} pass runs, {self.total_seconds * 1e3:.1f} ms"


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


__all__ = ["BenchmarkResult", "KernelStat", "PassTimings", "ProfileReport", "benchmark", "profile_kernels"]
