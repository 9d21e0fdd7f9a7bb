"""tensorkiln's thread pool (``backends/llvm/thread_pool_ir.py``) called directly, on a
piece function that counts how often each iteration runs: every iteration exactly once
for any trips, step, thread count and cap; launches from several threads at once (one
launches, the others run serially); a forked child (no workers) still runs every
iteration; and the default thread count's back-off (``runtime/threads.py``)."""

from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.binding as llvm
import numpy as np
import pytest

from tensorkiln.backends.llvm.thread_pool import pool_addresses, spin_microseconds, thread_pool
from tensorkiln.backends.llvm.thread_pool_ir import pool_ir
from tensorkiln.runtime import threads

# piece(data, begin, end): for i in [begin, end) step data.step: counts[i] += 1 (atomic);
# data = {i64* counts, i64 step, i64 spin}: each iteration spins `spin` rounds first
PIECE = r"""
define void @piece(ptr %data, i64 %b, i64 %e) {
entry:
  %counts = load ptr, ptr %data
  %sp = getelementptr i64, ptr %data, i64 1
  %step = load i64, ptr %sp
  %wp = getelementptr i64, ptr %data, i64 2
  %spin = load i64, ptr %wp
  br label %loop
loop:
  %i = phi i64 [%b, %entry], [%i1, %next]
  %more = icmp slt i64 %i, %e
  br i1 %more, label %work, label %exit
work:
  %j = phi i64 [0, %loop], [%j1, %work]
  %j1 = add i64 %j, 1
  %busy = icmp slt i64 %j1, %spin
  br i1 %busy, label %work, label %next
next:
  %p = getelementptr i64, ptr %counts, i64 %i
  %old = atomicrmw add ptr %p, i64 1 monotonic
  %i1 = add i64 %i, %step
  br label %loop
exit:
  ret void
}
"""

LAUNCH = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64
)


@pytest.fixture(scope="module")
def pool():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    module = llvm.parse_assembly(f'target triple = "{triple}"\n' + PIECE)
    machine = llvm.Target.from_triple(triple).create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    launch = LAUNCH(pool_addresses()["tk_parallel_for"])
    yield launch, engine.get_function_address("piece")


def run(pool, lb, ub, step, threads_, cap, spin=0):
    launch, piece = pool
    counts = np.zeros(max(ub, 1) + 1, np.int64)
    data = (ctypes.c_int64 * 3)(counts.ctypes.data, step, spin)
    launch(piece, ctypes.addressof(data), lb, ub, step, threads_, cap)
    return counts


@pytest.mark.parametrize("threads_", [1, 2, 3, 8])
def test_every_iteration_runs_once(pool, threads_):
    for lb, ub, step in [(0, 1, 1), (0, 7, 1), (3, 100, 1), (5, 5, 1), (9, 3, 1), (0, 1000, 7), (2, 61, 3)]:
        for cap in (1, 2, 1 << 30):
            counts = run(pool, lb, ub, step, threads_, cap, spin=50)
            expected = np.zeros_like(counts)
            expected[lb:ub:step] = 1
            np.testing.assert_array_equal(counts, expected, err_msg=f"[{lb}, {ub}) step {step}, {threads_} threads, cap {cap}")


# spans(data, begin, end): spans[(begin - lb) / step] = iterations in [begin, end);
# data = {i64* spans, i64 lb, i64 step}
SPANS = r"""
define void @spans(ptr %data, i64 %b, i64 %e) {
  %spans = load ptr, ptr %data
  %lp = getelementptr i64, ptr %data, i64 1
  %lb = load i64, ptr %lp
  %sp = getelementptr i64, ptr %data, i64 2
  %step = load i64, ptr %sp
  %from = sub i64 %b, %lb
  %at = sdiv i64 %from, %step
  %width = sub i64 %e, %b
  %w1 = add i64 %width, %step
  %w2 = sub i64 %w1, 1
  %count = sdiv i64 %w2, %step
  %p = getelementptr i64, ptr %spans, i64 %at
  store i64 %count, ptr %p
  ret void
}
"""


@pytest.fixture(scope="module")
def spans_piece():
    triple = llvm.get_process_triple()
    module = llvm.parse_assembly(f'target triple = "{triple}"\n' + SPANS)
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_triple(triple).create_target_machine())
    engine.finalize_object()
    yield LAUNCH(pool_addresses()["tk_parallel_for"]), engine.get_function_address("spans")


@pytest.mark.parametrize("threads_", [2, 3, 4, 16])
def test_pieces_are_as_even_as_can_be(spans_piece, threads_):
    """The pool cuts a loop into min(4 x threads, trips) pieces whose sizes differ by at
    most one, the longer first: 14 trips on 2 threads are 8 pieces (2 x 6, 1 x 2) that
    two threads share 7 and 7 (pieces of 2 rounded up were 7 of them: 8 and 6)."""
    launch, fn = spans_piece
    for trips, lb, step in [(14, 0, 1), (28, 0, 1), (7, 0, 1), (49, 3, 1), (100, 0, 7), (5, 0, 1), (1000, 0, 1)]:
        spans = np.zeros(trips, np.int64)
        data = (ctypes.c_int64 * 3)(spans.ctypes.data, lb, step)
        launch(fn, ctypes.addressof(data), lb, lb + (trips - 1) * step + 1, step, threads_, 1 << 30)
        sizes = spans[spans > 0]
        pieces = min(4 * threads_, trips)
        q, extra = divmod(trips, pieces)
        expected = [q + 1] * extra + [q] * (pieces - extra)
        assert sizes.tolist() == expected, f"{trips} trips on {threads_} threads"


def test_counters_show_the_parallel_launches(pool):
    pool_ = thread_pool()
    before = pool_.counters()
    run(pool, 0, 64, 1, 1, 1 << 30)  # one thread: one direct call
    run(pool, 0, 64, 1, 2, 1)  # capped at one thread
    middle = pool_.counters()
    assert middle["launches"] - before["launches"] == 2
    assert middle["parallel_launches"] == before["parallel_launches"]
    run(pool, 0, 64, 1, 2, 1 << 30, spin=1000)
    after = pool_.counters()
    assert after["parallel_launches"] - middle["parallel_launches"] == 1
    assert after["workers"] >= 1


def test_launches_from_many_threads_at_once(pool):
    """One caller holds the pool at a time; the others run their loops alone: every
    loop still runs every iteration once."""
    errors = []

    def caller(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            n = int(rng.integers(1, 300))
            counts = run(pool, 0, n, 1, 3, 1 << 30, spin=int(rng.integers(0, 200)))
            if not (counts[:n] == 1).all() or counts[n:].any():
                errors.append((seed, n))

    callers = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_runs_its_loops_without_the_parents_workers(pool):
    run(pool, 0, 100, 1, 2, 1 << 30, spin=100)  # the parent has workers now
    pid = os.fork()
    if pid == 0:  # the child: its own loops must finish (the caller takes every piece)
        ok = all((run(pool, 0, 100, 1, 2, 1 << 30, spin=100)[:100] == 1).all() for _ in range(20))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_pool_ir_names_the_architectures_it_knows():
    assert "@llvm.x86.sse2.pause" in pool_ir("x86_64-unknown-linux-gnu")
    assert "define hidden void @tk_parallel_for" in pool_ir("x86_64-unknown-linux-gnu", hidden=True)
    assert "syscall(i64 98" in pool_ir("aarch64-unknown-linux-gnu")
    with pytest.raises(ValueError, match="futex"):
        pool_ir("wasm32-unknown-unknown")


def test_spin_from_the_environment(monkeypatch):
    monkeypatch.delenv("TK_SPIN_US", raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    assert spin_microseconds() == 0
    monkeypatch.setenv("TK_SPIN_US", "50")
    assert spin_microseconds() == 50
    monkeypatch.setenv("TK_SPIN_US", "soon")
    with pytest.warns(RuntimeWarning, match="TK_SPIN_US"):
        assert spin_microseconds() > 0


# ---------------------------------------------------------------------------
# the default thread count backs off when other processes keep the cores busy


def test_backed_off_threads():
    assert threads.backed_off_threads(2, 2, 0.0) == 2
    assert threads.backed_off_threads(2, 2, 0.3) == 2  # a light neighbour
    assert threads.backed_off_threads(2, 2, 0.9) == 1  # one core taken
    assert threads.backed_off_threads(2, 2, 5.0) == 1  # never below one
    assert threads.backed_off_threads(16, 16, 3.7) == 12
    assert threads.backed_off_threads(4, 16, 3.0) == 4  # others busy on cores we may not use


def test_others_busy_cores_leaves_out_this_process():
    before = threads.CpuSample(busy=100.0, total=400.0, own=10.0, wall=50.0)
    after = threads.CpuSample(busy=102.0, total=404.0, own=11.5, wall=52.0)
    # 2 s of the machine's CPU time in 2 s, 1.5 s of them ours: 0.25 cores others'
    assert threads.others_busy_cores(before, after) == pytest.approx(0.25)
    assert threads.others_busy_cores(after, after) == 0.0


def test_default_thread_count_is_within_the_available_cores():
    assert 1 <= threads.default_num_threads() <= threads.available_cores()
    sample = threads.cpu_sample()
    if sample is not None:
        assert sample.busy <= sample.total


def test_a_set_count_is_not_backed_off():
    saved = threads._chosen, threads._default
    try:
        threads._chosen, threads._default = 0, 1  # as if the watcher saw a busy machine
        threads._apply()
        assert threads.get_num_threads() == 1
        with threads.num_threads(3):
            assert threads.get_num_threads() == 3
        assert threads.get_num_threads() == 1
    finally:
        threads._chosen, threads._default = saved
        threads._apply()
