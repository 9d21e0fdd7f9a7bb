"""Parallel default schedules give bit-identical results at any thread count (each
output element is computed by one iteration, with the same arithmetic, whichever
thread takes it), and kernels too small to pay for a launch stay serial."""

from __future__ import annotations

import numpy as np
import pytest
from strategy_helpers import scheduled_loops

import tensorkiln as tk
from tensorkiln.runtime.threads import num_threads
from tensorkiln.schedule import kernels


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _models(rng):
    b = tk.GraphBuilder()
    yield "dense", b.finish(b.relu(b.dense(b.input("x", (67, 300)), f32(rng, 129, 300)))), [(67, 300)]
    b = tk.GraphBuilder()
    yield "gemv", b.finish(b.dense(b.input("x", (1, 784)), f32(rng, 512, 784))), [(1, 784)]
    b = tk.GraphBuilder()
    yield "batch_matmul", b.finish(b.batch_matmul(b.input("x", (3, 65, 33)), b.input("y", (3, 33, 97)))), [
        (3, 65, 33),
        (3, 33, 97),
    ]
    b = tk.GraphBuilder()
    yield "softmax", b.finish(b.softmax(b.input("x", (129, 1001)), -1)), [(129, 1001)]
    b = tk.GraphBuilder()
    yield "sum0", b.finish(b.reduce_sum(b.input("x", (1001, 131)), [0])), [(1001, 131)]
    b = tk.GraphBuilder()
    x = b.input("x", (257, 513))
    yield "elementwise", b.finish(b.tanh(b.add(x, x))), [(257, 513)]


@pytest.mark.parametrize("index", range(6))
def test_thread_count_gives_identical_results(rng, index):
    name, module, shapes = list(_models(rng))[index]
    parallel = [k for k in kernels(scheduled_loops(module)) if "parallel" in str(k)]
    assert parallel, f"{name}: no parallel loop"
    lib = tk.build(module)
    inputs = [f32(rng, *s) for s in shapes]
    results = []
    for threads in (1, 2, 3, 1):
        with num_threads(threads):
            results.append(lib(*inputs))
    for other in results[1:]:
        np.testing.assert_array_equal(results[0], other)


def test_small_kernels_stay_serial():
    b = tk.GraphBuilder()
    x = b.input("x", (8, 16))
    module = b.finish(b.relu(b.matmul(x, b.input("w", (16, 16)))))
    for kernel in kernels(scheduled_loops(module)):
        assert " parallel " not in str(kernel)


@pytest.mark.parametrize(
    "channels, size, parallel",
    [(8, 8, False), (16, 8, True), (64, 28, True)],
    ids=["8ch-8x8", "16ch-8x8", "64ch-28x28"],
)
def test_convolutions_go_parallel_by_their_multiply_adds(rng, channels, size, parallel):
    """A conv whose pixel loops were fused still knows its work: 8 channels on 8x8
    pixels (37K multiply-adds, under a microsecond) stays on one thread; 16 (147K,
    ~4 us: above the cost model's break-even of ~2.6 us) and 64 on 28x28 (29M) run in
    parallel."""
    b = tk.GraphBuilder()
    x = b.input("x", (1, channels, size, size))
    module = b.finish(b.relu(b.conv2d(x, f32(rng, channels, channels, 3, 3), None, padding=1)))
    convs = [k for k in kernels(scheduled_loops(module)) if k.sym_name.data.startswith("conv2d")]
    assert convs and all((" parallel " in str(k)) == parallel for k in convs)


def test_symbolic_sizes_run_in_parallel():
    """Unknown at compile time: assumed large enough."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 64))
    module = b.finish(b.relu(x))
    (kernel,) = kernels(scheduled_loops(module))
    assert " parallel " in str(kernel)
