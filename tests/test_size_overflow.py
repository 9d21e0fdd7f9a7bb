"""Sizes computed from symbols never wrap (issue #39: four inputs of 2**16 broadcast to a
2**64-element temporary whose byte count wrapped to 0, a one-byte buffer, then SIGSEGV).
Every executor refuses such a call with a TensorTooLargeError naming the tensor, before
anything is allocated; sizes that fit but cannot be allocated name their tensors too."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.runtime import load_module
from tensorkiln.runtime.sizes import MAX_BYTES, TensorTooLargeError, buffer_bytes

N = 2**16


def _outer_sum(output_whole: bool = False):
    """x0 + x1 + x2 + x3 broadcast to (n, m, k, l), materialized (a cumsum reads it)."""
    b = tk.GraphBuilder()
    xs = [b.input(f"x{k}", tuple(s if j == k else 1 for j in range(4))) for k, s in enumerate("nmkl")]
    h = b.add(b.add(xs[0], xs[1]), b.add(xs[2], xs[3]))
    return b.finish(b.cumsum(h, 3) if output_whole else b.reduce_sum(b.cumsum(h, 3), [0, 1, 2, 3], False))


def _inputs(size):
    return [np.ones(tuple(size if j == k else 1 for j in range(4)), "f4") for k in range(4)]


def test_buffer_bytes_is_exact_and_refuses_past_64_bits():
    assert buffer_bytes((3, 5), 4, "t") == 60
    assert buffer_bytes((2**61 - 1,), 4, "t") == (2**61 - 1) * 4
    with pytest.raises(TensorTooLargeError, match=r"tensor 't7' of shape \[65536, 65536, 65536, 65536\]"):
        buffer_bytes((N, N, N, N), 4, "t7")  # 2**66 bytes: np.prod(int64) gives 0
    with pytest.raises(TensorTooLargeError):
        buffer_bytes((0, MAX_BYTES + 1), 1, "t")  # no elements, but a dim no int64 holds
    assert issubclass(TensorTooLargeError, MemoryError)


@pytest.mark.parametrize("kind", ["graph", "aot", "vm"])
def test_a_temporary_past_64_bits_is_refused_by_every_executor(kind):
    module = _outer_sum()
    run = tk.create_executor(kind, module).evaluate()
    with pytest.raises(TensorTooLargeError, match=r"tensor '\w+' of shape \[65536, 65536, 65536, 65536\]"):
        run(*_inputs(N))
    small = _inputs(3)
    np.testing.assert_allclose(run(*small), np.cumsum(sum(small), 3).sum(), rtol=1e-5)  # still right when small


def test_an_output_past_64_bits_is_refused():
    run = tk.build(_outer_sum(output_whole=True))
    with pytest.raises(TensorTooLargeError, match="output0"):
        run(*_inputs(N))


@pytest.mark.parametrize("executor", ["graph", "aot"])
def test_a_loaded_artifact_refuses_it_too(executor, tmp_path):
    tk.build(_outer_sum()).export_library(tmp_path / "m.tk")
    run = load_module(tmp_path / "m.tk", executor=executor)
    with pytest.raises(TensorTooLargeError):
        run(*_inputs(N))


def test_a_temporary_too_large_to_allocate_names_its_tensors():
    """2**44 elements fit in 64 bits but not in memory: a MemoryError naming the tensor."""
    run = tk.create_executor("graph", _outer_sum()).evaluate()
    with pytest.raises(MemoryError, match=r"intermediate tensors t\d"):
        run(*_inputs(2**11))
