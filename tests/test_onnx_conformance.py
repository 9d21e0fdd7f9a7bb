"""ONNX's backend node suite holds no regression, on a deterministic slice that fits CI.

``benchmarks/onnx_conformance_expected.json`` holds every case's status from the last full
run (``benchmarks/onnx_conformance.py --write-expected``) and its stratum (the op it tests,
or ``(expanded)`` for function cases expanded into their bodies). Here run:

- every ``STEP``-th case of each stratum (by name; every op's first case included): a case
  expected to pass must pass, any other must be refused by name or pass;
- every case expected to be refused (refusals are cheap: at import): refused by name, or
  passing (progress: rerun the full suite with ``--write-expected`` and commit the file);
- and the file itself must hold no failing case (a wrong answer, a crash, an internal error).

A crash of the process running a case fails that test (pytest-xdist reports the worker lost).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from onnx_conformance import EXPECTED_FILE, load_cases, run_case  # noqa: E402

#: every STEP-th case of each stratum runs (with the refused ones ~640 of 1,884 cases: ~2 CPU-minutes)
STEP = 4

_RECORDED = json.loads(EXPECTED_FILE.read_text())
#: the onnx version whose suite the file records (another version's suite may differ)
RECORDED_ONNX: str = _RECORDED["onnx"]
EXPECTED: dict[str, dict[str, str]] = _RECORDED["cases"]


def _sliced() -> list[str]:
    strata: dict[str, list[str]] = defaultdict(list)
    for name, record in EXPECTED.items():
        strata[record["stratum"]].append(name)
    chosen = {name for names in strata.values() for name in sorted(names)[::STEP]}
    chosen |= {name for name, record in EXPECTED.items() if record["status"] == "refused"}
    return sorted(chosen)


@cache
def _cases() -> dict:
    return {c.name: c for c in load_cases()}


def test_no_case_is_expected_to_fail() -> None:
    failing = sorted(n for n, record in EXPECTED.items() if record["status"] not in ("pass", "refused"))
    assert not failing, f"{EXPECTED_FILE.name} records failing cases: {failing}"


def test_expected_statuses_cover_this_onnx_suite() -> None:
    """The file and the installed onnx's suite name the same cases (else: rerun the suite)."""
    if onnx.__version__ != RECORDED_ONNX:
        pytest.skip(f"{EXPECTED_FILE.name} records onnx {RECORDED_ONNX}'s suite; onnx {onnx.__version__} is installed")
    names = set(_cases())
    assert names == set(EXPECTED), f"missing: {sorted(names - set(EXPECTED))[:10]}, gone: {sorted(set(EXPECTED) - names)[:10]}"


@pytest.mark.parametrize("name", _sliced())
def test_case_holds_its_status(name: str) -> None:
    case = _cases().get(name)
    if case is None:
        pytest.skip(f"{name} is not in this onnx version's suite")
    status, detail = run_case(case)
    if EXPECTED[name]["status"] == "pass":
        assert status == "pass", f"{name} passed before: now {status}: {detail}"
    else:
        assert status in ("refused", "pass"), f"{name}: {status}: {detail}"
