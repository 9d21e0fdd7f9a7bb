"""Every executor called from several threads at once gives every caller its own right
answer (issue #39: the graph executor shared its intermediates between concurrent
callers, ~46% of the calls were silently wrong).

4 threads x a few hundred calls, each call on a fresh input of its own (so a result
that leaked from another thread's call is wrong), on a small model with temporaries.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.driver import build_vm
from tensorkiln.frontends.control_flow import if_
from tensorkiln.runtime import load_module

THREADS = 4
CALLS = 250


def _chain(rng, batch):
    """dense -> softmax -> dense -> tanh -> dense: every intermediate a kernel of its own."""
    b = tk.GraphBuilder()
    h = x = b.input("x", (batch, 19))
    for k, width in enumerate((23, 17, 7)):
        h = b.dense(h, (rng.standard_normal((width, h.type.get_shape()[1])) / 4).astype("f4"))
        h = b.softmax(h, -1) if k % 2 == 0 else b.tanh(h)
    return b.finish(h)


def _hammer(run, reference, rng, shapes) -> list[str]:
    """Call ``run`` from THREADS threads, CALLS times each, each call on its own input
    (of one of ``shapes``, cycling); the calls that went wrong, described."""
    inputs = [[rng.standard_normal(shapes[(t + c) % len(shapes)]).astype("f4") for c in range(CALLS)] for t in range(THREADS)]
    expected = [[reference(x) for x in per_thread] for per_thread in inputs]
    wrong: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        start.wait()
        for c, x in enumerate(inputs[t]):
            try:
                got = run(x)
            except Exception as e:  # noqa: BLE001 (reported as a wrong call)
                wrong.append(f"thread {t} call {c}: {type(e).__name__}: {e}")
                continue
            if got.shape != expected[t][c].shape or not np.allclose(got, expected[t][c], rtol=1e-4, atol=1e-5):
                wrong.append(f"thread {t} call {c}: wrong result")

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return wrong


@pytest.mark.parametrize("kind", ["graph", "vm", "aot", "interpreter"])
def test_executors_are_safe_to_call_from_several_threads(kind, rng):
    module = _chain(rng, "n")
    reference = tk.create_executor("interpreter", module).evaluate()
    run = tk.create_executor(kind, module).evaluate()
    wrong = _hammer(run, reference, rng, [(5, 19), (3, 19), (5, 19), (8, 19)])
    assert not wrong, f"{len(wrong)} of {THREADS * CALLS} concurrent calls: {wrong[:3]}"


def test_the_graph_executor_of_a_built_module_is_safe_from_several_threads(rng):
    """``lib.graph_executor()`` at one static size: every call shares one binding."""
    module = _chain(rng, 6)
    reference = tk.create_executor("interpreter", module).evaluate()
    wrong = _hammer(tk.build(module).graph_executor(), reference, rng, [(6, 19)])
    assert not wrong, f"{len(wrong)} of {THREADS * CALLS} concurrent calls: {wrong[:3]}"


@pytest.mark.parametrize("executor", ["graph", "aot"])
def test_a_loaded_artifact_is_safe_from_several_threads(executor, rng, tmp_path):
    module = _chain(rng, "n")
    reference = tk.create_executor("interpreter", module).evaluate()
    tk.build(module).export_library(tmp_path / "model.tk")
    run = load_module(tmp_path / "model.tk", executor=executor)
    wrong = _hammer(run, reference, rng, [(4, 19), (4, 19), (9, 19)])
    assert not wrong, f"{len(wrong)} of {THREADS * CALLS} concurrent calls: {wrong[:3]}"


def _branching(rng):
    """A graph.if on the sign of the input's sum (each call's own branch), then dense + tanh:
    the VM runs it (control flow), its functions AOT modules."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 19))
    pred = b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt")
    (y,) = if_(b, pred, [x], then_fn=lambda b, x: [b.softmax(b.mul(x, 2.0), -1)], else_fn=lambda b, x: [b.neg(x)])
    return b.finish(b.tanh(b.dense(y, (rng.standard_normal((7, 19)) / 4).astype("f4"))))


def test_the_vm_with_control_flow_and_its_loaded_artifact_are_safe_from_several_threads(rng, tmp_path):
    """Both branches taken by concurrent calls, in the built VM and in the loaded VM artifact."""
    module = _branching(rng)
    reference = tk.create_executor("interpreter", module).evaluate()
    vm = build_vm(module)
    vm.export_library(tmp_path / "vm.tk")
    loaded = load_module(tmp_path / "vm.tk")
    for run in (vm, loaded):
        wrong = _hammer(run, reference, rng, [(5, 19), (3, 19), (6, 19)])
        assert not wrong, f"{type(run).__name__}: {len(wrong)} of {THREADS * CALLS} concurrent calls: {wrong[:3]}"
