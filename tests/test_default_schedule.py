"""Default schedules (schedule/strategies.py): which kernels get one, and the numbers
stay right on odd sizes, fused epilogues and symbolic rows."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.lowering.kernel_anchor import anchor_of_tag
from tensorkiln.schedule.strategies import strategy_for


@pytest.mark.parametrize(
    "tag, scheduled",
    [
        ("matmul", True),
        ("matmul_add_relu", True),
        ("batch_matmul_mul", True),
        ("batch_matmul_transpose_reshape", False),  # the transpose's loops are the kernel's
        ("dense_relu", True),
        ("softmax", False),
        ("not_an_op", False),
    ],
)
def test_strategy_choice(tag, scheduled):
    """What te-to-loop records of a kernel tagged ``tag`` (its anchor op and epilogue)
    decides whether an op strategy can schedule it."""
    assert (strategy_for(anchor_of_tag(tag)) is not None) == scheduled


def _scheduled(lib) -> bool:
    return any(name.startswith("default-schedule") for name, _ in lib.pass_timings)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (7, 13, 5), (17, 31, 65), (64, 96, 128), (5, 300, 3)])
def test_matmul_with_epilogue(rng, m, k, n):
    b = tk.GraphBuilder()
    x, w = b.input("x", (m, k)), b.input("w", (k, n))
    bias = rng.standard_normal(n).astype(np.float32)
    module = b.finish(b.relu(b.add(b.matmul(x, w), bias)))
    lib = tk.build(module)
    assert _scheduled(lib)
    xv, wv = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(lib(xv, wv), np.maximum(xv @ wv + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 3, 9])
def test_symbolic_rows_and_batched(rng, rows):
    b = tk.GraphBuilder()
    x, w = b.input("x", ("n", 2, 7, 11)), b.input("w", (1, 2, 11, 19))
    module = b.finish(b.batch_matmul(x, w))
    lib = tk.build(module)
    xv = rng.standard_normal((rows, 2, 7, 11)).astype(np.float32)
    wv = rng.standard_normal((1, 2, 11, 19)).astype(np.float32)
    np.testing.assert_allclose(lib(xv, wv), xv @ wv, rtol=1e-4, atol=1e-5)


def test_vectorized_register_tile_in_the_assembly(rng):
    b = tk.GraphBuilder()
    module = b.finish(b.matmul(b.input("x", (32, 64)), b.input("w", (64, 128))))
    lib = tk.build(module)
    assert "zmm" in lib.assembly() or "ymm" in lib.assembly()
