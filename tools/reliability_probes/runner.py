"""Running probe families in worker processes, so that a crash or a hang is counted
instead of ending the run.

A worker (``python -m tensorkiln.tools.reliability_probes --worker FAMILY --start K``)
makes the family's probes (the same list for the same seed), prints ``COUNT n``, then for
each probe from K on ``START k <name>`` and ``DONE k <json>``. The parent reads those lines:
a worker that exits after ``START k`` without ``DONE k`` crashed on probe k; one that
prints nothing for ``timeout`` seconds hangs on it (it is killed). Either way a new
worker goes on from probe k + 1.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import CRASH, FAILURES, HANG, REFUSED, RIGHT, UNCLEAR, WRONG, Probe, verdict_of

#: family name -> module of this package with ``probes(rng, workdir, quick) -> list[Probe]``
FAMILIES = {
    "concurrency": "concurrency",
    "overflow": "overflow",
    "artifacts": "artifacts",
    "cache": "cache",
    "nan-ops": "nan_ops",
    "bad-input": "bad_input",
}
#: families run only when named (``--only``): the harness's own check
EXTRA_FAMILIES = {"harness-check": "harness_check"}
VERDICTS = (RIGHT, REFUSED, WRONG, UNCLEAR, CRASH, HANG)


def family_probes(family: str, seed: int, workdir: Path, quick: bool) -> list[Probe]:
    module = importlib.import_module(f"{__package__}.{(FAMILIES | EXTRA_FAMILIES)[family]}")
    return module.probes(np.random.default_rng(seed), workdir, quick)


def work(family: str, start: int, seed: int, quick: bool) -> None:
    """The worker: run ``family``'s probes from ``start``, reporting on stdout."""
    with tempfile.TemporaryDirectory(prefix=f"tk-probe-{family}-") as tmp:
        found = family_probes(family, seed, Path(tmp), quick)
        print(f"COUNT {len(found)}", flush=True)
        for k in range(start, len(found)):
            print(f"START {k} {found[k].name}", flush=True)
            verdict, detail = verdict_of(found[k])
            record = {"name": found[k].name, "verdict": verdict, "detail": detail, "calls": found[k].calls}
            print(f"DONE {k} {json.dumps(record)}", flush=True)


@dataclass
class FamilyResult:
    """The verdicts of one family's probes."""

    family: str
    records: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: str) -> int:
        return sum(r["verdict"] == verdict for r in self.records)

    @property
    def calls(self) -> int:
        return sum(r.get("calls", 1) for r in self.records)

    @property
    def failures(self) -> list[dict]:
        return [r for r in self.records if r["verdict"] in FAILURES]


def _lines(process: subprocess.Popen, timeout: float) -> Iterator[str | None]:
    """The worker's stdout lines; None once it has been silent for ``timeout`` seconds."""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    while True:
        if not selector.select(timeout):
            yield None
            return
        line = process.stdout.readline()
        if not line:
            return
        yield line.rstrip("\n")


def run_family(family: str, seed: int, quick: bool, timeout: float, log: Callable[[str], None] = print) -> FamilyResult:
    """Every probe of ``family``, in as many workers as crashes and hangs need."""
    result = FamilyResult(family)
    began = time.perf_counter()
    start, total = 0, None
    while total is None or start < total:
        command = [sys.executable, "-m", __package__, "--worker", family, "--start", str(start), "--seed", str(seed)]
        process = subprocess.Popen(
            command + (["--quick"] if quick else []), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"}, start_new_session=True,
        )
        current, finished = None, False
        for line in _lines(process, timeout):
            if line is None:  # silent too long: the probe in progress hangs
                os.killpg(process.pid, signal.SIGKILL)
                break
            word, _, rest = line.partition(" ")
            if word == "COUNT":
                total = int(rest)
            elif word == "START":
                number, _, name = rest.partition(" ")
                current = int(number)
            elif word == "DONE":
                _, _, record = rest.partition(" ")
                result.records.append(json.loads(record))
                current, start = None, int(rest.split()[0]) + 1
        else:
            finished = True
        process.wait()
        stderr = process.stderr.read().strip().splitlines()
        process.stdout.close()
        process.stderr.close()
        if total is None:  # the family could not even make its probes
            result.records.append({"name": "(making the probes)", "verdict": CRASH, "calls": 0,
                                   "detail": f"exit status {process.returncode}: {stderr[-1] if stderr else ''}"})
            break
        if current is not None:
            verdict = CRASH if finished else HANG
            detail = f"exit status {process.returncode}" if finished else f"no answer in {timeout:.0f} s"
            result.records.append({"name": name, "verdict": verdict, "calls": 1,
                                   "detail": detail + (f": {stderr[-1]}" if stderr else "")})
            log(f"  {family}: {name}: {verdict} ({detail})")
            start = current + 1
    result.seconds = time.perf_counter() - began
    return result


def table(results: list[FamilyResult]) -> str:
    """A Markdown table: probes (and calls) per family and how each ended."""
    header = "| family | probes | calls | right | clear error | wrong | unclear error | crash | hang | seconds |"
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        counts = [r.count(v) for v in VERDICTS]
        lines.append(f"| {r.family} | {len(r.records)} | {r.calls} | " + " | ".join(map(str, counts)) + f" | {r.seconds:.0f} |")
    totals = [sum(r.count(v) for r in results) for v in VERDICTS]
    lines.append(f"| **all** | {sum(len(r.records) for r in results)} | {sum(r.calls for r in results)} | "
                 + " | ".join(map(str, totals)) + f" | {sum(r.seconds for r in results):.0f} |")
    return "\n".join(lines)
