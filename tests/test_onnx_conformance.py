"""ONNX's backend node suite holds no regression: a deterministic slice of the cases that
pass (every ``STEP``-th by name in ``benchmarks/onnx_conformance_expected.json``) still
pass, and no case that tensorkiln refuses by name turns into a failure (a crash, a wrong
answer, an internal error). The whole suite, with its per-op table, is
``benchmarks/onnx_conformance.py``; rerun it with ``--write-expected`` when cases change
status, and commit the file."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("onnx")

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from onnx_conformance import EXPECTED_FILE, load_cases, run_case  # noqa: E402

#: every STEP-th passing case runs (about 1/8 of them: a few minutes of one CPU)
STEP = 8

if not EXPECTED_FILE.exists():
    pytest.skip(f"{EXPECTED_FILE.name} is missing: run benchmarks/onnx_conformance.py --write-expected", allow_module_level=True)
EXPECTED: dict[str, str] = json.loads(EXPECTED_FILE.read_text())


@cache
def _cases() -> dict:
    return {c.name: c for c in load_cases()}


def _slice() -> list[str]:
    passing = sorted(n for n, status in EXPECTED.items() if status == "pass")
    return passing[::STEP]


@pytest.mark.parametrize("name", _slice())
def test_case_still_passes(name: str) -> None:
    case = _cases().get(name)
    if case is None:
        pytest.skip(f"{name} is not in this onnx version's suite")
    status, detail = run_case(case)
    assert status == "pass", f"{name}: {status}: {detail}"


@pytest.mark.parametrize("name", sorted(n for n, status in EXPECTED.items() if status == "refused"))
def test_refused_case_is_refused_by_name(name: str) -> None:
    case = _cases().get(name)
    if case is None:
        pytest.skip(f"{name} is not in this onnx version's suite")
    status, detail = run_case(case)
    assert status in ("refused", "pass"), f"{name}: {status}: {detail}"
