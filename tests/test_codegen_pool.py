"""LLVM code generation in worker processes (backends/llvm/codegen_process.py) over groups
of kernels (driver/kernel_groups.py): the same results as compiling in this process, a
crashed worker fails only its build, errors come back with their message."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.backends.llvm import codegen_process
from tensorkiln.backends.llvm.target import CPUTarget
from tensorkiln.driver import compile_cache, kernel_groups, native_build
from tensorkiln.runtime import load_module


@pytest.fixture
def in_groups(monkeypatch, no_disk_cache):
    """Every build compiles in the workers, a group per ~kernel."""
    monkeypatch.setattr(native_build, "PARALLEL_MIN_OPS", 0)
    monkeypatch.setattr(kernel_groups, "MIN_GROUP_OPS", 1)
    monkeypatch.delenv(codegen_process.IN_PROCESS_VARIABLE, raising=False)


def _model(rng):
    """Kernels of several kinds (a product, a conv, a reduction, elementwise ops), a
    symbolic batch, parallel loops."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 4, 10, 12))
    h = b.relu(b.conv2d(x, rng.standard_normal((6, 4, 3, 3)).astype("f4"), padding=(1, 1, 1, 1)))
    h = b.reduce_mean(b.tanh(h), (2, 3))
    h = b.softmax(b.dense(h, rng.standard_normal((9, 6)).astype("f4")), -1)
    return b.finish(b.exp(h))


def test_a_build_in_groups_computes_what_one_module_does(in_groups, monkeypatch, rng, tmp_path):
    module = _model(rng)
    grouped = tk.build(module)
    code = grouped._keep_alive.code
    assert len(code.objects) > 2 and code.optimized_ir.count("define ") >= len(code.objects)
    monkeypatch.setenv(codegen_process.IN_PROCESS_VARIABLE, "1")
    monkeypatch.setattr(native_build, "PARALLEL_MIN_OPS", 10**9)
    monkeypatch.setattr(kernel_groups, "MIN_GROUP_OPS", 10**9)
    whole = tk.build(module)
    assert len(whole._keep_alive.code.objects) == 1
    assert sorted(whole._keep_alive.code.functions) == sorted(code.functions)
    for n in (1, 3):
        x = rng.standard_normal((n, 4, 10, 12)).astype("f4")
        expected = whole(x)
        np.testing.assert_array_equal(grouped(x), expected)
        np.testing.assert_array_equal(grouped.graph_executor()(x), expected)
    # the objects link into one shared library
    grouped.export_library(tmp_path / "grouped")
    x = rng.standard_normal((2, 4, 10, 12)).astype("f4")
    np.testing.assert_array_equal(load_module(tmp_path / "grouped")(x), whole(x))
    assert "ret" in grouped.assembly()


def test_a_crashed_worker_fails_its_build_and_the_next_build_works(in_groups, monkeypatch, rng):
    module = _model(rng)
    x = rng.standard_normal((2, 4, 10, 12)).astype("f4")
    expected = tk.build(module)(x)
    run = codegen_process._Worker.run

    def die_first(self, request):  # the worker is killed while it has the module
        os.kill(self.process.pid, 9)
        self.process.wait()
        return run(self, request)

    monkeypatch.setattr(codegen_process._Worker, "run", die_first)
    with pytest.raises(codegen_process.CodegenCrashed, match="worker process exited with status -9"):
        tk.build(module)
    monkeypatch.setattr(codegen_process._Worker, "run", run)
    np.testing.assert_array_equal(tk.build(module)(x), expected)


def test_an_error_in_a_worker_comes_back_with_its_message(in_groups):
    future = codegen_process.pool().submit("optimize_and_emit", "define void @f() {\n  ret i32 0\n}\n", CPUTarget.parse("llvm"))
    with pytest.raises(RuntimeError, match="lowering bug"):
        future.result()
    assert codegen_process.pool().submit("optimize_and_emit", "define void @g() {\n  ret void\n}\n",
                                         CPUTarget.parse("llvm")).result().functions == ["g"]  # fmt: skip


def test_workers_are_replaced_after_their_jobs(in_groups, monkeypatch):
    monkeypatch.setattr(codegen_process, "JOBS_PER_PROCESS", 3)
    pool = codegen_process.pool()
    seen = set()
    for k in range(4 * pool.size * 3):
        pool.submit("optimize_and_emit", f"define void @f{k}() {{\n  ret void\n}}\n", CPUTarget.parse("llvm")).result()
        seen.update(pool.pids)
    assert len(seen) >= 4 * pool.size
    assert len(pool.pids) == pool.size


def test_small_builds_compile_here_until_the_pool_runs(monkeypatch):
    monkeypatch.delenv(codegen_process.IN_PROCESS_VARIABLE, raising=False)
    monkeypatch.setattr(codegen_process, "_pool", None)
    monkeypatch.setattr(codegen_process, "_jobs_here", 0)
    assert not codegen_process.use_workers(large=False)
    assert codegen_process.use_workers(large=True)
    monkeypatch.setattr(codegen_process, "_jobs_here", codegen_process.JOBS_IN_PROCESS)
    assert codegen_process.use_workers(large=False)  # (the leak here stays bounded)
    monkeypatch.setenv(codegen_process.IN_PROCESS_VARIABLE, "1")
    assert not codegen_process.use_workers(large=True)


def test_the_host_function_is_a_group_of_its_own_at_the_calls_opt_level(monkeypatch, rng):
    from strategy_helpers import scheduled_loops

    loops = scheduled_loops(_model(rng))
    host = [op for op in loops.ops if kernel_groups.calls_only(op)]
    assert [op.sym_name.data for op in host] == ["main"]
    kernels = len(list(loops.ops)) - 1
    monkeypatch.setattr(kernel_groups, "MIN_GROUP_OPS", 1)  # (the host is small: separate it anyway)
    groups = kernel_groups.split_into_groups(loops, 3)
    levels = [level for _, level in groups]
    assert levels.count(kernel_groups.CALLS_OPT_LEVEL) == 1 and levels.count(None) == len(groups) - 1
    (callers,) = [g for g, level in groups if level == kernel_groups.CALLS_OPT_LEVEL]
    assert [op.sym_name.data for op in callers.ops] == ["main"]
    assert sum(len(list(g.ops)) for g, level in groups if level is None) == kernels
    assert not list(loops.ops)  # (moved into the groups)
