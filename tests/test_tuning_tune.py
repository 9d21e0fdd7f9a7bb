"""tk.tune end to end on small kernels: logs, resume, apply-best in tk.build, the
template and evolutionary policies, and the optional plot and Dask runner."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from tuning_helpers import CRASHING, FaultyRunner, matmul_module, split, two_layer_module

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.schedule.schedule import kernels
from tensorkiln.tuning.dispatch import schedule_from_log
from tensorkiln.tuning.policy import TemplatePolicy, trace_key
from tensorkiln.tuning.record import ErrorCode, Record, load_records, save_records
from tensorkiln.tuning.runner import Runner, instantiate
from tensorkiln.tuning.sketch import SketchPolicy, generate_sketches
from tensorkiln.tuning.templates import LoopInfo, template_for
from tensorkiln.tuning.tune import tune_tasks


@pytest.fixture(scope="module")
def runner():
    with Runner(timeout=20, min_repeat_ms=1, repeat=2) as r:
        yield r


def test_tune_logs_resumes_and_builds(tmp_path, runner, rng) -> None:
    module = two_layer_module()
    log = tmp_path / "tune.jsonl"
    best = tk.tune(module, "llvm", trials=6, log_file=str(log), tuner="random", runner=runner, batch_size=3,
                   progress=False)
    records = list(load_records(log))
    trials = [r for r in records if r.tuner != "confirm"]
    assert len(trials) == 6
    assert {r.key for r in trials} == set(best) == {t.key for t in tk.extract_tasks(module)}
    # the confirmation round re-measured, per task, the default and the leaders, twice
    confirmed = [r for r in records if r.tuner == "confirm"]
    assert confirmed and len(confirmed) % 2 == 0
    assert {trace_key(r.trace) for r in confirmed} <= {trace_key(r.trace) for r in trials}
    # a rerun with the same budget measures nothing; a larger one only the difference
    tk.tune(module, "llvm", trials=6, log_file=str(log), tuner="random", runner=runner, progress=False)
    assert len(list(load_records(log))) == len(records)
    tk.tune(module, "llvm", trials=9, log_file=str(log), tuner="random", runner=runner, batch_size=3, progress=False)
    again = [r for r in load_records(log) if r.tuner != "confirm"]
    assert len(again) == 9
    assert len({trace_key(r.trace) + r.key for r in again}) == 9, "a candidate was measured twice"
    lib = tk.build(module, "llvm", tuning_log=str(log))
    args = [rng.standard_normal(s).astype(np.float32) for s in ((9, 13), (13, 13), (13, 7), (13, 13))]
    x, w1, w2, w3 = args
    expected = np.maximum(np.maximum(x @ w1, 0) @ w3, 0) @ w2
    np.testing.assert_allclose(lib(*args), expected, rtol=1e-4, atol=1e-4)


def test_each_task_starts_with_its_default_schedule(tmp_path, runner) -> None:
    (task,) = tk.extract_tasks(matmul_module(16, 24, 40))
    states = tune_tasks([task], 3, tuner="xgb", runner=runner, batch_size=3, progress=False)
    first = states[task.key].records[0]
    assert first.config == {"template": "default", "values": None}


def test_tuning_goes_on_after_faulty_candidates(tmp_path) -> None:
    (task,) = tk.extract_tasks(matmul_module())
    log = tmp_path / "faulty.jsonl"

    class Policy:
        """Proposes a crashing candidate between two good ones."""

        name = "scripted"

        def __init__(self):
            self.batches = [[split(2)], [split(1)], [split(4)]]

        def propose(self, n):
            from tensorkiln.tuning.runner import Candidate

            return [Candidate(t) for t in self.batches.pop(0)] if self.batches else []

        def feed(self, records):
            pass

        def exhausted(self):
            return not self.batches

    with FaultyRunner({1: CRASHING}, timeout=20, min_repeat_ms=1) as faulty:
        states = tune_tasks([task], 3, str(log), runner=faulty, batch_size=1, progress=False,
                            policy=lambda t: Policy(), confirm=0)
    errors = [r.error for r in load_records(log)]
    assert errors == ["NO_ERROR", "RUNTIME_ERROR", "NO_ERROR"]
    assert states[task.key].best.trace in (split(2), split(4))


def _fake(task, trace, cost: float, error: str = "NO_ERROR") -> Record:
    return Record(key=task.key, target="llvm", trace=trace, costs=[cost] if error == "NO_ERROR" else [], error=error,
                  flops=task.flops, task=task.name)


def test_apply_best_picks_the_fastest_record(tmp_path, caplog) -> None:
    module = two_layer_module()
    relu, last = tk.extract_tasks(module)
    slow, fast, broken = split(3), split(2, "i1"), split(5)
    log = tmp_path / "best.jsonl"
    save_records(log, [_fake(relu, slow, 3e-3), _fake(relu, fast, 1e-3), _fake(relu, broken, 1e-9, "WRONG_RESULT")])
    loops = lower_to_loops(module)
    from tensorkiln.driver.pipelines import optimize_graph
    from tensorkiln.passes.pipeline import PassContext

    loops = module.clone()
    optimize_graph(loops, PassContext(opt_level=2, dump_ir=False))
    loops = lower_to_loops(loops)
    with caplog.at_level(logging.WARNING, logger="tensorkiln.tuning"):
        report = schedule_from_log(loops, "llvm", log, lambda m: None)
    assert sorted(report["tuned"]) == sorted(relu.names)
    assert report["untuned"] == [last.name]
    untuned_logs = [r for r in caplog.records if "no record" in r.getMessage()]
    assert len(untuned_logs) == 1 and last.name in untuned_logs[0].getMessage()
    names = {k.sym_name.data: str(k) for k in kernels(loops)}
    for name in relu.names:
        assert 'name("i1.outer")' in names[name] and 'name("i0.outer")' not in names[name]


def test_build_with_a_log_for_another_model_uses_defaults(tmp_path, rng, caplog) -> None:
    (other,) = tk.extract_tasks(matmul_module(5, 6, 7))
    log = tmp_path / "other.jsonl"
    save_records(log, [_fake(other, split(2), 1e-3)])
    module = matmul_module()
    with caplog.at_level(logging.WARNING, logger="tensorkiln.tuning"):
        lib = tk.build(module, "llvm", tuning_log=str(log))
    assert any("no record for 1 task" in r.getMessage() for r in caplog.records)
    x, w = rng.standard_normal((8, 12)).astype(np.float32), rng.standard_normal((12, 10)).astype(np.float32)
    np.testing.assert_allclose(lib(x, w), x @ w, rtol=1e-5, atol=1e-5)


def test_build_with_a_missing_log_names_it(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="tuning log not found: .*nope.jsonl"):
        tk.build(matmul_module(), "llvm", tuning_log=str(tmp_path / "nope.jsonl"))


def test_unknown_tuner_is_named() -> None:
    with pytest.raises(ValueError, match="unknown tuner 'annealing'"):
        tk.tune(matmul_module(), trials=1, tuner="annealing", progress=False)


# -- policies without measuring -----------------------------------------------------------


def _feed_fake(policy, candidates, rng) -> None:
    records = []
    for c in candidates:
        r = Record(key=policy.task.key, target="llvm", trace=c.trace, config=c.config, costs=[float(rng.uniform(1, 2))],
                   flops=policy.task.flops)
        records.append(r)
    policy.feed(records)


def test_matmul_template_space_default_and_traces() -> None:
    (task,) = tk.extract_tasks(matmul_module(16, 24, 40))
    template = template_for(task)
    assert template.name == "matmul"
    space = template.space(task, 16)
    default = template.default_config(space, 16)
    assert default["tile_rows"] == 6 and default["tile_cols"] == 64 and default["cache_write"]
    trace = template.trace(task, default)
    # full tiles: 16 rows by 6 (shifted last tile), and 40 columns in one tile of 40 (fewer than 64)
    assert [s["primitive"] for s in trace][:4] == ["split", "split", "reorder", "cache_write"]
    assert [s["args"]["factor"] for s in trace[:2]] == [6, 40]
    assert instantiate(task, trace) == instantiate(task, template.trace(task, space[default.index]))


@pytest.mark.parametrize("tuner", ["xgb", "ga"])
def test_template_policy_proposes_new_schedulable_candidates(tuner, rng) -> None:
    (task,) = tk.extract_tasks(matmul_module(16, 24, 40))
    policy = TemplatePolicy(task, tuner, seed=1)
    seen = set()
    for _ in range(3):
        batch = policy.propose(6)
        assert batch
        for c in batch:
            key = trace_key(c.trace)
            assert key not in seen
            seen.add(key)
            instantiate(task, c.trace)
        _feed_fake(policy, batch, rng)


def test_sketches_follow_the_loop_structure() -> None:
    (mm,) = tk.extract_tasks(matmul_module(16, 24, 40))
    sketches = generate_sketches(LoopInfo.of(mm))
    assert {s["kind"] for s in sketches} == {"tiled"} and {s["pack"] for s in sketches} == {None, 0, 1}
    b = tk.GraphBuilder()
    x = b.input("x", (3, 37))
    (elementwise,) = tk.extract_tasks(b.finish(b.relu(b.add(x, x))))
    assert generate_sketches(LoopInfo.of(elementwise)) == [{"kind": "elementwise"}]


def test_evolutionary_policy_learns_and_proposes_valid_candidates(rng) -> None:
    (task,) = tk.extract_tasks(matmul_module(16, 24, 40))
    policy = SketchPolicy(task, seed=0, population=8, generations=1)
    first = policy.propose(6)
    assert first[0].config == {"sketch": "default", "values": None}
    seen = set()
    for _ in range(3):
        batch = policy.propose(6) if seen else first
        assert len(batch) == 6
        for c in batch:
            key = trace_key(c.trace)
            assert key not in seen
            seen.add(key)
            instantiate(task, c.trace)
        _feed_fake(policy, batch, rng)
    assert len(policy._data) >= 4  # the cost model trained on the fed records


def test_sketch_candidates_compute_the_right_result(runner) -> None:
    """A few evolutionary candidates, measured: all pass the reference check."""
    b = tk.GraphBuilder()
    x = b.input("x", (1, 3, 9, 7))
    module = b.finish(b.relu(b.conv2d(x, b.input("w", (5, 3, 3, 3)), None, strides=1, padding=1)))
    (task,) = [t for t in tk.extract_tasks(module) if t.tag.startswith("conv2d")]  # (layout transposes beside)
    policy = SketchPolicy(task, seed=2, population=8, generations=1)
    records = runner.measure(task, policy.propose(5))
    assert all(r.error in (ErrorCode.NO_ERROR.value,) for r in records), [(r.error, r.message) for r in records]


# -- optional extras -------------------------------------------------------------------


def test_plot(tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="tk.tuning.plot needs matplotlib (optional extra 'tuning')")
    (task,) = tk.extract_tasks(matmul_module())
    log = tmp_path / "p.jsonl"
    save_records(log, [_fake(task, split(k), 1e-3 / k) for k in (1, 2, 3)])
    path = tk.tuning.plot(str(log))
    assert path.endswith(".png") and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_dask_runner_on_a_local_cluster(tmp_path) -> None:
    distributed = pytest.importorskip("distributed", reason="the Dask runner needs dask.distributed (extra 'tuning')")
    from tensorkiln.tuning.distributed import dask_runner

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            runner = dask_runner(client, timeout=30, min_repeat_ms=1)
            log = tmp_path / "dask.jsonl"
            best = tk.tune(matmul_module(), trials=2, log_file=str(log), tuner="random", runner=runner, batch_size=2,
                           progress=False)
    assert len([r for r in load_records(log) if r.tuner != "confirm"]) == 2 and len(best) == 1


def test_tuned_dense_with_a_constant_weight_keeps_its_layout(tmp_path, rng) -> None:
    """The default strategy packs a constant dense weight (and rewrites the caller); a
    tuned schedule of the same kernel reads the original layout: the build must not mix them."""
    w = rng.standard_normal((24, 37)).astype(np.float32)
    bias = rng.standard_normal(24).astype(np.float32)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.dense(b.input("x", (5, 37)), w, bias)))
    (task,) = [t for t in tk.extract_tasks(module) if t.tag.startswith("dense")]
    trace = [{"primitive": "split", "args": {"loop": "i1", "factor": 8}},
             {"primitive": "vectorize", "args": {"loop": "k0"}}]
    instantiate(task, [trace[0]])
    log = tmp_path / "dense.jsonl"
    save_records(log, [_fake(task, [trace[0]], 1e-6)])
    x = rng.standard_normal((5, 37)).astype(np.float32)
    expected = np.maximum(x @ w.T + bias, 0)
    np.testing.assert_allclose(tk.build(module, "llvm")(x), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tk.build(module, "llvm", tuning_log=str(log))(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tuner", ["xgb", "evolutionary"])
def test_a_kernel_without_output_loops_is_tuned_to_its_default(tuner) -> None:
    b = tk.GraphBuilder()
    x = b.input("x", (7, 9))
    tasks = tk.extract_tasks(b.finish(b.reduce_sum(x, [0, 1])))
    assert tasks and not LoopInfo.of(tasks[-1]).outputs
    from tensorkiln.tuning.tune import make_policy

    for task in tasks:
        policy = make_policy(task, tuner)
        batch = policy.propose(4)
        assert batch and batch[0].trace is not None


def test_template_tiles_are_full_with_a_shifted_last_tile(rng) -> None:
    """20 rows by 6: the last row tile is shifted back (rows 14-19), not a partial
    tile; the schedule still computes the product exactly."""
    (task,) = tk.extract_tasks(matmul_module(20, 24, 40))
    template = template_for(task)
    space = template.space(task, 16)
    trace = template.trace(task, template.default_config(space, 16))
    assert trace[0] == {"primitive": "split", "args": {"loop": "i0", "factor": 6, "tail": "shift"}}
    with Runner(timeout=60, min_repeat_ms=1) as runner:
        (record,) = runner.measure(task, [trace])
    assert record.ok, record.message  # checked against the unscheduled kernel


def test_dense_with_a_constant_weight_tunes_its_packed_default(tmp_path, rng) -> None:
    """The default for a dense layer packs its constant weight (transform_layout): the
    task knows the weight is constant, the measurement passes it transposed, and a
    build from the log packs it for the tuned kernel, with the right numbers."""
    w, bias = rng.standard_normal((37, 29)).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.add(b.dense(b.input("x", (13, 29)), w), bias)))
    (task,) = tk.extract_tasks(module)
    assert task.constants == (1, 2)
    b2 = tk.GraphBuilder()
    runtime_weight = b2.finish(b2.relu(b2.add(b2.dense(b2.input("x", (13, 29)), b2.input("w", (37, 29))), bias)))
    assert task.key != tk.extract_tasks(runtime_weight)[0].key  # same kernel, but its weight cannot be packed
    log = tmp_path / "dense.jsonl"
    with Runner(timeout=60, min_repeat_ms=1) as runner:
        states = tune_tasks([task], 4, str(log), tuner="random", runner=runner, batch_size=4, progress=False)
    records = states[task.key].records
    assert records[0].ok, records[0].message
    assert any(step["primitive"] == "transform_layout" for step in records[0].trace)  # the default, measured
    best = states[task.key].best
    lib = tk.build(module, "llvm", tuning_log=str(log))
    x = rng.standard_normal((13, 29)).astype(np.float32)
    np.testing.assert_allclose(lib(x), np.maximum(x @ w.T + bias, 0), rtol=1e-4, atol=1e-4)
    assert best is not None and best.ok
    # a log whose only record re-lays out the weight: the build packs it for that kernel
    packed_log = tmp_path / "packed.jsonl"
    save_records(packed_log, [records[0]])
    from tensorkiln.driver.pipelines import optimize_graph
    from tensorkiln.passes.pipeline import PassContext
    from tensorkiln.schedule.layout import recorded_layouts

    loops = module.clone()
    optimize_graph(loops, PassContext(opt_level=2, dump_ir=False))
    loops = lower_to_loops(loops)
    assert schedule_from_log(loops, "llvm", packed_log, lambda m: None)["tuned"] == task.names
    (kernel,) = [k for k in kernels(loops) if k.sym_name.data in task.names]
    assert recorded_layouts(kernel) == {1: [1, 0]}
    assert "37x29" not in str(loops) and "29x37" in str(loops)  # the host passes the packed weight
    lib = tk.build(module, "llvm", tuning_log=str(packed_log))
    np.testing.assert_allclose(lib(x), np.maximum(x @ w.T + bias, 0), rtol=1e-4, atol=1e-4)
