"""Shared by the benchmark scripts: medians, machine description, BENCHMARKS.md sections.

Each script owns one section of BENCHMARKS.md, between ``<!-- begin:NAME -->`` and
``<!-- end:NAME -->``, and rewrites only that section.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"


def median_time(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(name: str, markdown: str) -> None:
    """Replace (or append) section ``name`` of BENCHMARKS.md with ``markdown``."""
    begin, end = f"<!-- begin:{name} -->", f"<!-- end:{name} -->"
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else "# tensorkiln benchmarks\n"
    block = f"{begin}\n{markdown.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS_MD.write_text(text)


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def interleaved(fns: list, repeat: int) -> list[float]:
    """Median seconds of each of ``fns``, called alternately ``repeat`` times (after one
    warm-up call each), so that machine noise hits all of them alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]
