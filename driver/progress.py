"""A progress bar for builds that take a while (tqdm's), on a terminal only.

A build shows it on stderr once it has run :data:`DELAY_SECONDS` (a small model never
shows one) and removes it when done; nothing is written when stderr is not a terminal
(pipes, log files, tests) or with ``TK_PROGRESS=0``, nor without tqdm installed. Steps:
the graph passes, lowering and scheduling, then each group of kernels LLVM compiles
(``native_build.py``)::

    building main:  62%|██████▏   | 8/13 [00:03<00:01, llvm]
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

try:
    from tqdm import tqdm
except ImportError:  # (a dependency; a broken install only loses the bar)
    tqdm = None

#: a build shorter than this shows no bar
DELAY_SECONDS = 2.0
ENV_VARIABLE = "TK_PROGRESS"


def wanted() -> bool:
    """Whether builds show a bar here: stderr is a terminal and ``TK_PROGRESS`` is not 0."""
    if tqdm is None or os.environ.get(ENV_VARIABLE, "").strip().lower() in ("0", "off", "false", "no"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # (replaced or closed)
        return False


class BuildProgress:
    """The steps of one build; a no-op unless :func:`wanted`. Thread-safe (LLVM's groups
    finish on the worker-feeding threads).

    Example::

        with BuildProgress("main", steps=2) as progress:
            progress.step("graph passes"); ...
            progress.add(groups)          # more steps, known later
    """

    def __init__(self, name: str, steps: int):
        self._lock = threading.Lock()
        self._bar: Any = None
        if wanted():
            self._bar = tqdm(
                total=steps, desc=f"building {name}", unit="step", delay=DELAY_SECONDS, leave=False,
                file=sys.stderr, bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {postfix}]",
            )  # fmt: skip

    def add(self, steps: int) -> None:
        """``steps`` more steps to come."""
        if self._bar is not None:
            with self._lock:
                self._bar.total += steps  # (shown at the next step: a refresh now would ignore the delay)

    def step(self, doing: str | None = None) -> None:
        """One step done; ``doing``: what the next ones do (shown after the counts)."""
        if self._bar is not None:
            with self._lock:
                if doing is not None:
                    self._bar.set_postfix_str(doing, refresh=False)
                self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.close()
                self._bar = None

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DELAY_SECONDS", "ENV_VARIABLE", "BuildProgress", "wanted"]
