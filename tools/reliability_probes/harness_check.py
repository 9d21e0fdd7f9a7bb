"""A family that checks the harness itself (not run by default): one probe of each
ending, so that a crash and a hang are seen to be counted and the run goes on."""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

import numpy as np

from . import RIGHT, WRONG, Probe


def _crash() -> tuple[str, str]:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return RIGHT, ""


def _hang() -> tuple[str, str]:
    time.sleep(3600)
    return RIGHT, ""


def _refuse() -> tuple[str, str]:
    raise ValueError("argument 'x': a clear error")


def _unclear() -> tuple[str, str]:
    raise KeyError("t7")


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    return [
        Probe("right", lambda: (RIGHT, "")),
        Probe("crash", _crash),
        Probe("refused", _refuse, clear=(ValueError,)),
        Probe("hang", _hang),
        Probe("wrong", lambda: (WRONG, "2 != 3")),
        Probe("unclear", _unclear, clear=(ValueError,)),
        Probe("right again", lambda: (RIGHT, ""), calls=5),
    ]
