"""What lib.profile and lib.pass_timings show a person: tables and a plot."""

from __future__ import annotations

import pytest

import tensorkiln as tk
from tensorkiln.examples.models import small_cnn
from tensorkiln.frontends.control_flow import if_
from tensorkiln.runtime.profiler import PassTimings


def test_pass_timings_table_sums_each_pass_and_sorts_slowest_first():
    timings = PassTimings([("cse", 0.001), ("fuse-ops", 0.004), ("cse", 0.002), ("graph-to-te", 0.003)])
    assert timings[0] == ("cse", 0.001) and len(timings) == 4  # still the list of (pass, seconds)
    assert timings.by_pass() == [("fuse-ops", 1, 0.004), ("cse", 2, 0.003), ("graph-to-te", 1, 0.003)]
    assert timings.total_seconds == pytest.approx(0.010)
    lines = str(timings).splitlines()
    assert lines[0].split() == ["pass", "runs", "total", "ms", "share"]
    assert lines[1].split() == ["fuse-ops", "1", "4.00", "40.0%"]
    assert lines[2].split() == ["cse", "2", "3.00", "30.0%"]
    assert lines[-1] == "4 pass runs, 10.0 ms"


def test_the_vm_reports_its_passes_as_a_table_too():
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3))
    (y,) = if_(b, b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt"), [x],
               then_fn=lambda b, x: [b.relu(x)], else_fn=lambda b, x: [b.neg(x)])
    vm = tk.build(b.finish(y))
    assert isinstance(vm.pass_timings, PassTimings) and "graph-to-te" in str(vm.pass_timings)


def test_a_build_reports_its_passes_and_profile_plot(tmp_path):
    pytest.importorskip("matplotlib")
    module, inputs = small_cnn(size=10)
    lib = tk.build(module)
    assert isinstance(lib.pass_timings, PassTimings)  # print(lib.pass_timings) is the table
    table = str(lib.pass_timings)
    for name in ("fuse-ops", "graph-to-te", "loop-to-llvm"):
        assert any(line.startswith(name) for line in table.splitlines())
    report = lib.profile(*inputs, runs=2)
    path = report.plot(str(tmp_path / "profile.png"))

    data = (tmp_path / "profile.png").read_bytes()
    assert path.endswith("profile.png") and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
