"""Tuning records: one JSON object per line, the same for every tuner.

A record says what was measured, for which workload, and what came out::

    {"version": 1, "key": "ddd98d2b2b1eb052", "target": "llvm", "task": "matmul[64x48,...]",
     "tuner": "ga", "trace": [{"primitive": "tile", "args": {...}}, ...],
     "config": {"tile_rows": [16, 4], ...} or null, "costs": [1.2e-05, ...],
     "error": "NO_ERROR", "message": "", "flops": 301056, "time": 1764451200.0,
     "compile_s": 0.31, "threads": 1}

``trace`` is what ``build`` replays; ``config`` is the template's knob choice when a
template made the trace (so a template tuner can resume), ``null`` for generated ones.
A log is appended to as measurements arrive, so an interrupted session loses nothing
and a later one resumes from it.
"""

from __future__ import annotations

import enum
import json
import math
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RECORD_VERSION = 1
#: the ``tuner`` of records a confirmation round measured again (not search trials)
CONFIRM_TUNER = "confirm"


class ErrorCode(str, enum.Enum):
    """Why a candidate has no time (``NO_ERROR`` when it has one)."""

    NO_ERROR = "NO_ERROR"
    INSTANTIATION_ERROR = "INSTANTIATION_ERROR"  # the schedule does not apply to the kernel
    COMPILE_ERROR = "COMPILE_ERROR"  # lowering or JIT failed
    RUNTIME_ERROR = "RUNTIME_ERROR"  # the kernel crashed (or the worker died)
    TIMEOUT = "TIMEOUT"  # build + run took longer than the runner's timeout
    WRONG_RESULT = "WRONG_RESULT"  # outputs differ from the unscheduled kernel's
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass
class Record:
    """One measured (or failed) candidate of one task."""

    key: str
    target: str
    trace: list[dict[str, Any]]
    costs: list[float] = field(default_factory=list)
    error: str = ErrorCode.NO_ERROR.value
    message: str = ""
    config: dict[str, Any] | None = None
    task: str = ""
    tuner: str = ""
    flops: int = 0
    compile_s: float = 0.0
    threads: int = 1
    time: float = field(default_factory=time.time)
    version: int = RECORD_VERSION

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NO_ERROR.value and bool(self.costs)

    @property
    def cost(self) -> float:
        """Median seconds per call; infinite for a failed candidate."""
        return statistics.median(self.costs) if self.ok else math.inf

    @property
    def gflops(self) -> float:
        return self.flops / self.cost / 1e9 if self.ok and self.cost > 0 else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(line: str) -> Record:
        data = json.loads(line)
        if not isinstance(data, dict) or "key" not in data or "trace" not in data:
            raise ValueError(f"not a tuning record (needs 'key' and 'trace'): {line[:120]!r}")
        version = data.get("version", RECORD_VERSION)
        if version > RECORD_VERSION:
            raise ValueError(f"tuning record version {version} is newer than this tensorkiln's ({RECORD_VERSION})")
        known = set(Record.__dataclass_fields__)
        return Record(**{k: v for k, v in data.items() if k in known})


def save_records(path: str | Path, records: Iterable[Record]) -> None:
    """Append records to a JSON-lines log (created if missing)."""
    with open(path, "a") as f:
        for r in records:
            f.write(r.to_json() + "\n")


def load_records(path: str | Path) -> Iterator[Record]:
    """The records of a log, in order. A truncated last line (an interrupted write) is
    skipped; any other malformed line is an error naming its line number."""
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield Record.from_json(line)
        except (json.JSONDecodeError, TypeError, ValueError) as error:
            if number == len(lines) and isinstance(error, json.JSONDecodeError):
                continue
            raise ValueError(f"{path}:{number}: {error}") from error


def trace_key(trace: Iterable[dict[str, Any]]) -> str:
    """A canonical text of a schedule trace: equal traces, equal keys."""
    return json.dumps(list(trace), sort_keys=True)


def pooled_cost(records: Iterable[Record]) -> float:
    """The median of the costs of several measurements of one trace (each record's
    median round): one lucky or unlucky session does not decide."""
    costs = [r.cost for r in records if r.ok]
    return statistics.median(costs) if costs else math.inf


def ranked_traces(records: Iterable[Record]) -> list[list[Record]]:
    """One task's successful records grouped by trace, in measurement order within a
    group, the groups fastest first by :func:`pooled_cost`."""
    by_trace: dict[str, list[Record]] = {}
    for r in records:
        if r.ok:
            by_trace.setdefault(trace_key(r.trace), []).append(r)
    return sorted(by_trace.values(), key=pooled_cost)


def best_records(records: Iterable[Record], target_keys: Iterable[str] | None = None) -> dict[str, Record]:
    """The fastest successful trace per workload key (``target_keys``: only those), as
    its latest record. A trace measured more than once (the confirmation round of
    ``tune`` re-measures the leaders next to the default) counts with its
    :func:`pooled_cost`."""
    wanted = set(target_keys) if target_keys is not None else None
    by_key: dict[str, list[Record]] = {}
    for r in records:
        if r.ok and (wanted is None or r.key in wanted):
            by_key.setdefault(r.key, []).append(r)
    return {key: ranked_traces(rs)[0][-1] for key, rs in by_key.items()}
