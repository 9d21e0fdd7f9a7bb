"""Tasks and measurement: workload keys and weights, FLOPs, trace replay, and the
isolated runner -- crashing, hanging and wrong candidates end as recorded errors
while the good ones around them are measured."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from tuning_helpers import CRASHING, HANGING, FaultyRunner, matmul_module, split, two_layer_module, wrong_kernel

import tensorkiln as tk
from tensorkiln.tuning.executor import CallTimeout, IsolatedProcessPool, WorkerCrashed
from tensorkiln.tuning.record import ErrorCode
from tensorkiln.tuning.runner import Runner, instantiate
from tensorkiln.tuning.task import workload_key

# -- tasks -----------------------------------------------------------------------------


def test_extract_tasks_dedups_kernels_with_weights_and_flops() -> None:
    tasks = tk.extract_tasks(two_layer_module(), "llvm")
    assert [(t.tag, t.weight) for t in tasks] == [("matmul_relu", 2), ("matmul", 1)]
    relu, last = tasks
    assert relu.flops == 2 * 9 * 13 * 13 + 9 * 13  # multiply-add per k, one max per element
    assert last.flops == 2 * 9 * 13 * 7
    assert relu.arg_shapes == [((9, 13), "f32"), ((13, 13), "f32"), ((9, 13), "f32")]
    assert relu.outputs == [2]
    assert len(relu.names) == 2 and relu.key != last.key


def test_workload_key_is_stable_and_target_specific() -> None:
    (a,) = tk.extract_tasks(matmul_module(), "llvm")
    (b,) = tk.extract_tasks(matmul_module(), "llvm")
    (c,) = tk.extract_tasks(matmul_module(8, 12, 11), "llvm")
    assert a.key == b.key != c.key
    assert "@kernel" in a.kernel_text and "matmul_0" not in a.kernel_text
    other_cpu = workload_key(a.kernel_text, "llvm -mattr=-avx512f")
    assert other_cpu != a.key


def test_trace_replay_is_deterministic() -> None:
    (task,) = tk.extract_tasks(matmul_module(), "llvm")
    trace = [
        {"primitive": "tile", "args": {"x": "i0", "y": "i1", "x_factor": 4, "y_factor": 16}},
        {"primitive": "cache_write", "args": {"at_loop": "i1.outer"}},
        {"primitive": "vectorize", "args": {"loop": "i1.inner"}},
    ]
    first = instantiate(task, trace)
    assert first == instantiate(task, trace)
    assert 'vectorized name("i1.inner")' in first and 'name("i1.inner.write")' in first


# -- the isolated executor ---------------------------------------------------------------


def _crash() -> None:
    os.abort()


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def _fail() -> None:
    raise KeyError("from the worker")


def test_isolated_pool_survives_crashes_hangs_and_exceptions() -> None:
    with IsolatedProcessPool(1, timeout=5) as pool:
        assert pool.submit(pow, 2, 10).result() == 1024
        with pytest.raises(WorkerCrashed, match="SIGABRT"):
            pool.submit(_crash).result()
        with pytest.raises(KeyError, match="from the worker"):
            pool.submit(_fail).result()
        pool.timeout = 1
        with pytest.raises(CallTimeout):
            pool.submit(_sleep, 30).result()
        pool.timeout = 5
        assert pool.submit(_sleep, 0).result() == "woke"


def test_isolated_pool_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="max_workers"):
        IsolatedProcessPool(0)
    pool = IsolatedProcessPool(1)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(pow, 1, 1)


# -- the runner --------------------------------------------------------------------------


def test_runner_records_crash_hang_and_wrong_result_and_goes_on() -> None:
    (task,) = tk.extract_tasks(matmul_module(), "llvm")
    faults = {1: CRASHING, 2: HANGING, 3: wrong_kernel}
    with FaultyRunner(faults, timeout=8, min_repeat_ms=1, repeat=2) as runner:
        records = runner.measure(task, [[], split(1), split(2), split(3), split(4), split(9, "nope")])
    errors = [r.error for r in records]
    assert errors == [
        ErrorCode.NO_ERROR.value,
        ErrorCode.RUNTIME_ERROR.value,
        ErrorCode.TIMEOUT.value,
        ErrorCode.WRONG_RESULT.value,
        ErrorCode.NO_ERROR.value,
        ErrorCode.INSTANTIATION_ERROR.value,
    ]
    assert "SIGSEGV" in records[1].message
    assert "differs from the reference" in records[3].message
    assert "no loop named 'nope'" in records[5].message
    good = records[4]
    assert len(good.costs) == 2 and all(c > 0 for c in good.costs)
    assert good.key == task.key and good.flops == task.flops and good.trace == split(4)


def test_runner_reports_compile_errors() -> None:
    (task,) = tk.extract_tasks(matmul_module(), "llvm")
    with FaultyRunner({5: "builtin.module { not mlir"}, min_repeat_ms=1) as runner:
        (record,) = runner.measure(task, [split(5)])
    assert record.error == ErrorCode.COMPILE_ERROR.value and record.message


def test_measured_kernel_equals_numpy(rng: np.random.Generator) -> None:
    """The worker's reference is the unscheduled kernel; check it against numpy here."""
    from tensorkiln.tuning.measure import random_arguments, reference_outputs

    (task,) = tk.extract_tasks(matmul_module(7, 5, 19), "llvm")
    request = {"module": task.kernel_text, "target": "llvm", "args": task.arg_shapes, "outputs": task.outputs,
               "seed": 3}
    (out,) = reference_outputs(request)
    x, w, _ = random_arguments(task.arg_shapes, 3)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-5)


def test_large_buffers_stay_alive_while_timed() -> None:
    """Megabyte buffers (mmapped, unmapped when freed) must outlive the timing loop."""
    b = tk.GraphBuilder()
    x = b.input("x", (1024, 1536))
    (task,) = tk.extract_tasks(b.finish(b.relu(b.add(x, x))))
    with Runner(timeout=60, min_repeat_ms=20, repeat=3) as runner:
        (record,) = runner.measure(task, [[]])
    assert record.error == ErrorCode.NO_ERROR.value, record.message
    assert len(record.costs) == 3


def test_each_timing_round_places_the_buffers_elsewhere() -> None:
    """The same values at other lines of their pages, argument by argument, so a
    record's rounds sample where a model's memory plan may put the buffers."""
    from tensorkiln.tuning.measure import measure_candidate, random_arguments

    (task,) = tk.extract_tasks(matmul_module(9, 70, 33), "llvm")
    first, second = random_arguments(task.arg_shapes, 3, 0), random_arguments(task.arg_shapes, 3, 1)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
        assert a.ctypes.data % 64 == 0 and b.ctypes.data % 64 == 0
    lines = [[a.ctypes.data % 4096 // 64 for a in arrays] for arrays in (first, second)]
    assert lines[0] != lines[1] and len(set(lines[0])) == len(lines[0])
    request = {"module": task.kernel_text, "target": "llvm", "args": task.arg_shapes, "outputs": task.outputs,
               "seed": 3, "repeat": 4, "min_repeat_ms": 1}
    answer = measure_candidate(request)
    assert answer["error"] == "NO_ERROR" and len(answer["costs"]) == 4
