"""Tuning records: JSON-lines round trip, interrupted logs, errors naming the line,
and picking the best record per workload."""

from __future__ import annotations

import json
import math

import pytest

from tensorkiln.tuning.record import (
    RECORD_VERSION,
    ErrorCode,
    Record,
    best_records,
    load_records,
    pooled_cost,
    save_records,
)

TRACE = [{"primitive": "split", "args": {"loop": "i0", "factor": 4}}]


def record(key: str = "k1", costs=(1e-3, 2e-3, 3e-3), error: str = "NO_ERROR", **kw) -> Record:
    return Record(key=key, target="llvm", trace=TRACE, costs=list(costs), error=error, flops=2_000_000, **kw)


def test_round_trip(tmp_path) -> None:
    log = tmp_path / "log.jsonl"
    original = [record(config={"template": "matmul", "values": {"tile": [-1, 4]}}), record("k2", [], "TIMEOUT")]
    save_records(log, original)
    loaded = list(load_records(log))
    assert [r.to_json() for r in loaded] == [r.to_json() for r in original]
    first = json.loads(log.read_text().splitlines()[0])
    assert {"key", "target", "trace", "config", "costs", "error", "version"} <= set(first)
    assert first["version"] == RECORD_VERSION
    assert loaded[0].cost == 2e-3 and loaded[0].gflops == pytest.approx(1.0)
    assert not loaded[1].ok and loaded[1].cost == math.inf and loaded[1].gflops == 0.0


def test_truncated_last_line_is_skipped_but_a_bad_middle_line_is_an_error(tmp_path) -> None:
    log = tmp_path / "log.jsonl"
    save_records(log, [record()])
    with open(log, "a") as f:
        f.write('{"key": "k1", "tra')  # an interrupted write
    assert len(list(load_records(log))) == 1
    log.write_text('{"nope": 1}\n' + record().to_json() + "\n")
    with pytest.raises(ValueError, match=r"log.jsonl:1: not a tuning record"):
        list(load_records(log))


def test_newer_version_is_refused(tmp_path) -> None:
    log = tmp_path / "log.jsonl"
    data = json.loads(record().to_json())
    data["version"] = RECORD_VERSION + 1
    log.write_text(json.dumps(data) + "\n")
    with pytest.raises(ValueError, match="newer"):
        list(load_records(log))


def test_missing_log_is_empty(tmp_path) -> None:
    assert list(load_records(tmp_path / "none.jsonl")) == []


def test_best_records_pick_the_fastest_success() -> None:
    records = [
        record("a", [3e-3]),
        record("a", [1e-3, 1e-3, 9.0]),  # median 1e-3
        record("a", [], ErrorCode.WRONG_RESULT.value),
        record("a", [1e-6], ErrorCode.WRONG_RESULT.value),  # fast but wrong: never chosen
        record("b", [], ErrorCode.TIMEOUT.value),
    ]
    best = best_records(records)
    assert set(best) == {"a"}
    assert best["a"].costs == [1e-3, 1e-3, 9.0]
    assert best_records(records, ["b"]) == {}


def test_best_records_rank_a_trace_measured_again_by_its_median() -> None:
    """One lucky measurement does not beat a trace measured faster every other time:
    the confirmation round's re-measurements count with the first one."""
    lucky, steady = [{"primitive": "split", "args": {"loop": "i0", "factor": 2}}], []

    def measured(trace, cost):
        r = record("a", [cost])
        r.trace = trace
        return r

    records = [measured(lucky, 1.0e-3), measured(steady, 1.2e-3), measured(lucky, 1.5e-3), measured(steady, 1.1e-3),
               measured(lucky, 1.6e-3)]
    best = best_records(records)["a"]
    assert best.trace == steady and best.costs == [1.1e-3]  # the latest record of the winning trace
    assert pooled_cost([records[0], records[2], records[4]]) == 1.5e-3
