"""Progress of a tuning session: one line per measured batch, with each task's
best-so-far GFLOP/s (a bar redrawn in place on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``Progress(total_trials)``; ``update(task_name, done, best_gflops)`` per batch."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total = max(1, total)
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.done = 0
        self.best: dict[str, float] = {}
        self.start = time.perf_counter()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, task: str, new_trials: int, best_gflops: float) -> None:
        self.done += new_trials
        self.best[task] = best_gflops
        if not self.enabled:
            return
        width = 24
        filled = int(width * min(1.0, self.done / self.total))
        bar = "#" * filled + "." * (width - filled)
        line = (
            f"[{bar}] {self.done}/{self.total} trials {time.perf_counter() - self.start:6.1f}s | "
            f"{task[:48]}: best {best_gflops:7.1f} GFLOP/s"
        )
        self.stream.write(("\r" + line) if self._tty else line + "\n")
        self.stream.flush()

    def close(self, summary: list[str] | None = None) -> None:
        """End the bar; then print ``summary`` (a line per task), or each task's best."""
        if self.enabled and self._tty:
            self.stream.write("\n")
        if not self.enabled:
            return
        lines = summary if summary is not None else [f"{task[:70]}: {g:.1f} GFLOP/s" for task, g in self.best.items()]
        for line in lines:
            self.stream.write(f"  {line}\n")
        self.stream.flush()
