"""The primitives the default strategies added: ``split(..., tail="shift")`` (full
tiles, the last one shifted back) and ``transform_layout`` (a kernel argument with
permuted dims, its constant weight packed at compile time)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.build import jit_loops, lower_to_loops
from tensorkiln.dialects import loop
from tensorkiln.dialects.functions import find_function
from tensorkiln.schedule import Schedule, ScheduleError, kernels
from tensorkiln.schedule.nest import static_value
from tensorkiln.schedule.strategies import pack_constant_arguments
from tensorkiln.dialects.functions import signature_of


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def compiled(module, schedule):
    """Lower to loops, ``schedule(Schedule(kernel))`` on each kernel, pack, JIT."""
    signature = signature_of(find_function(module, "main"))
    loops = lower_to_loops(module)
    for kernel in kernels(loops):
        schedule(Schedule(kernel))
    pack_constant_arguments(loops)
    return jit_loops(loops, signature)


def matmul(m, k, n):
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("x", (m, k)), b.input("y", (k, n))))


@pytest.mark.parametrize("m, n, rows, cols", [(7, 13, 4, 8), (5, 33, 5, 16), (17, 129, 4, 48), (9, 9, 2, 3)])
def test_shifted_tiles(rng, m, n, rows, cols):
    def schedule(s):
        ro, ri = s.split("i0", rows, tail="shift")
        co, ci = s.split("i1", cols, tail="shift")
        assert s.extent(ri) == rows and s.extent(ci) == cols  # full tiles: constant trip counts
        s.reorder(ro, co, ri, ci)
        s.cache_write(co)
        s.vectorize(ci)

    x, y = f32(rng, m, 11), f32(rng, 11, n)
    np.testing.assert_allclose(compiled(matmul(m, 11, n), schedule)(x, y), x @ y, rtol=1e-5, atol=1e-5)


def test_shift_is_recorded_in_the_trace():
    (kernel,) = kernels(lower_to_loops(matmul(7, 3, 5)))
    s = Schedule(kernel)
    s.split("i0", 4, tail="shift")
    s.split("i1", 4)
    assert s.trace[0]["args"] == {"loop": "i0", "factor": 4, "tail": "shift"}
    assert s.trace[1]["args"] == {"loop": "i1", "factor": 4}
    (again,) = kernels(lower_to_loops(matmul(7, 3, 5)))
    assert str(Schedule.replay(again, s.to_json()).kernel) == str(s.kernel)


def test_shift_needs_enough_iterations():
    (kernel,) = kernels(lower_to_loops(matmul(3, 3, 5)))
    with pytest.raises(ScheduleError, match="runs 3 iterations, fewer than the factor 4"):
        Schedule(kernel).split("i0", 4, tail="shift")


def test_shift_needs_constant_bounds():
    b = tk.GraphBuilder()
    (kernel,) = kernels(lower_to_loops(b.finish(b.relu(b.input("x", ("n", 8))))))
    with pytest.raises(ScheduleError, match="needs constant bounds"):
        Schedule(kernel).split("i0", 4, tail="shift")


def test_shift_refuses_a_loop_that_reads_what_it_writes():
    """After cache_write the reduction accumulates into the tile: running a k
    iteration twice would add twice."""
    (kernel,) = kernels(lower_to_loops(matmul(8, 7, 16)))
    s = Schedule(kernel)
    s.tile("i0", "i1", 4, 16)
    s.cache_write("i1.outer")
    with pytest.raises(ScheduleError, match="which it also writes"):
        s.split("k0", 4, tail="shift")


def test_bad_tail():
    (kernel,) = kernels(lower_to_loops(matmul(8, 7, 16)))
    with pytest.raises(ScheduleError, match="tail must be 'guard' or 'shift'"):
        Schedule(kernel).split("i0", 4, tail="wrap")


def test_transform_layout_packs_a_constant_weight(rng):
    w = f32(rng, 13, 7)
    b = tk.GraphBuilder()
    module = b.finish(b.dense(b.input("x", (5, 7)), w))
    x = f32(rng, 5, 7)
    lib = compiled(module, lambda s: s.transform_layout(1, [1, 0]))
    np.testing.assert_allclose(lib(x), x @ w.T, rtol=1e-5, atol=1e-5)


def test_blocked_layout_stores_the_weight_as_panels(rng):
    """``block=(0, 8)`` then ``[0, 2, 1]``: W[24, 7] is stored as 3 panels P[3, 7, 8]; after splitting the column loop by 8, simplify_indices turns the reads
    P[(co + ci) / 8, k, (co + ci) % 8] into P[co / 8, k, ci] (no division per lane)."""
    w = f32(rng, 24, 7)
    b = tk.GraphBuilder()
    module = b.finish(b.dense(b.input("x", ("n", 7)), w))

    def schedule(s):
        s.transform_layout(1, [0, 2, 1], block=(0, 8))
        s.split("i1", 8)
        assert s.simplify_indices() == 2
        text = str(s.kernel)
        assert "memref<3x7x8xf32>" in text and "arith.remui" not in text, text

    lib = compiled(module, schedule)
    for n in (1, 6):
        x = f32(rng, n, 7)
        np.testing.assert_allclose(lib(x), x @ w.T, rtol=1e-5, atol=1e-5)


def test_transform_layout_errors():
    (kernel,) = kernels(lower_to_loops(matmul(3, 4, 5)))
    s = Schedule(kernel)
    with pytest.raises(ScheduleError, match="not a permutation"):
        s.transform_layout(1, [0, 0])
    with pytest.raises(ScheduleError, match="has no argument 7"):
        s.transform_layout(7, [1, 0])
    with pytest.raises(ScheduleError, match=r"block \[0, 3\]: expected \(axis, size\) with size dividing"):
        s.transform_layout(1, [0, 2, 1], block=(0, 3))
    assert s.trace == []


def test_packing_a_non_constant_argument_is_an_error():
    from xdsl.utils.exceptions import PassFailedException

    loops = lower_to_loops(matmul(3, 4, 5))
    Schedule(kernels(loops)[0]).transform_layout(1, [1, 0])
    with pytest.raises(PassFailedException, match="is not a constant weight"):
        pack_constant_arguments(loops)


def test_overcompute_runs_full_tiles_of_a_symbolic_row_count(rng):
    """Rows split by 4 at a symbolic count: the k nest and the tile's init run all 4
    rows (reads of x clamped to its last row), the write-back keeps its guard: right
    at counts that leave 1-3 rows in the last tile, and no guard left on the row loop."""
    w = f32(rng, 16, 7)
    b = tk.GraphBuilder()
    module = b.finish(b.dense(b.input("x", ("n", 7)), w))

    def schedule(s):
        outer, inner = s.split("i0", 4)
        s.reorder(outer, "i1", inner)
        s.cache_write("i1")
        s.overcompute(inner)
        s.overcompute(f"{inner}.init")
        s.unroll(inner)
        loops = {f.loop_name.data: f for f in s.kernel.walk() if isinstance(f, loop.ForOp)}
        assert static_value(loops[inner].ub) == 4 and static_value(loops[f"{inner}.write"].ub) is None

    lib = compiled(module, schedule)
    for n in (1, 3, 6, 9):
        x = f32(rng, n, 7)
        np.testing.assert_allclose(lib(x), x @ w.T, rtol=1e-5, atol=1e-5)


def test_overcompute_refuses_a_loop_that_writes_a_kernel_buffer():
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.input("x", ("n", 8))))
    (kernel,) = kernels(lower_to_loops(module))
    s = Schedule(kernel)
    outer, inner = s.split("i0", 4)
    with pytest.raises(ScheduleError, match=f"loop '{inner}' writes a kernel buffer"):
        s.overcompute(inner)
    with pytest.raises(ScheduleError, match="no constant bound"):
        s.overcompute(outer)
