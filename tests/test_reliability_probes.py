"""The reliability probes (tools/reliability_probes, issue #39): the harness counts a
crash and a hang and goes on, and the quick artifact-tampering and bad-input probes
end with no failure (the full run's counts are in docs/reliability.md)."""

from __future__ import annotations

from tensorkiln.tools.reliability_probes import CRASH, HANG, REFUSED, RIGHT, UNCLEAR, WRONG
from tensorkiln.tools.reliability_probes.runner import run_family, table


def test_the_harness_counts_each_ending_and_goes_on_after_a_crash_and_a_hang():
    result = run_family("harness-check", seed=0, quick=True, timeout=10, log=lambda s: None)
    verdicts = {r["name"]: r["verdict"] for r in result.records}
    assert verdicts == {"right": RIGHT, "crash": CRASH, "refused": REFUSED, "hang": HANG, "wrong": WRONG,
                        "unclear": UNCLEAR, "right again": RIGHT}
    assert result.calls == 11 and len(result.failures) == 4
    assert "| harness-check | 7 | 11 | 2 | 1 | 1 | 1 | 1 | 1 |" in table([result])


def test_quick_tampering_and_bad_input_probes_find_nothing():
    for family in ("artifacts", "bad-input"):
        result = run_family(family, seed=1, quick=True, timeout=300, log=lambda s: None)
        assert len(result.records) > 40
        assert not result.failures, [f"{f['name']}: {f['verdict']}: {f['detail']}" for f in result.failures]
