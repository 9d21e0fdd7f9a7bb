"""graph.argsort of a long axis: te.sort, a merge-sort kernel (``lowering/sort_kernel.py``),
against numpy's stable argsort: ascending and descending (ties in index order both
ways), NaNs (the largest value), integers, the first k (topk), lines of a 3-d tensor,
a symbolic length with 0, 1 and odd lengths; the loop IR it makes; the same kernel on
the emulated GPU, and its CUDA C through nvcc where installed."""

from __future__ import annotations


import numpy as np
import pytest

import tensorkiln as tk
from nvcc import compile_ptx
from tensorkiln.build import lower_to_loops
from tensorkiln.dialects import loop, te
from tensorkiln.frontends.builder import GraphBuilder
from tensorkiln.lowering.graph_to_te.indexing import RANK_SORT_MAX, TOP_K_INSERTION_MAX


def stable_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """numpy's stable argsort in torch's order: NaN largest, descending keeps ties in order."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    key = np.where(np.isnan(a), -np.inf, -a) if a.dtype.kind == "f" else -a.astype(np.int64)
    order = np.argsort(key, axis=axis, kind="stable")
    if a.dtype.kind == "f":  # NaNs first, in index order
        nan_first = np.argsort(~np.isnan(np.take_along_axis(a, order, axis)), axis=axis, kind="stable")
        order = np.take_along_axis(order, nan_first, axis)
    return order


def data(rng, shape, dtype):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 20, shape).astype(dtype)  # many ties
    a = rng.standard_normal(shape).round(1).astype(dtype)  # ties too
    a[rng.random(shape) < 0.05] = np.nan
    return a


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.bool_], ids=lambda d: np.dtype(d).name
)
def test_long_axes_sort_like_numpy(rng, dtype):
    """Keys travel in the workspace widened (float64, int64): every key type sorts as it is."""
    n = 3 * RANK_SORT_MAX + 7
    b = GraphBuilder()
    x = b.input("x", (2, n, 3), dtype)
    module = b.finish(b.argsort(x, 1), b.argsort(x, 1, descending=True), b.argsort(x, 1, descending=True, k=9))
    lib = tk.build(module)
    for _ in range(2):
        a = data(rng, (2, n, 3), dtype)
        up, down, top = lib(a)
        np.testing.assert_array_equal(up, stable_argsort(a, 1, False))
        np.testing.assert_array_equal(down, stable_argsort(a, 1, True))
        np.testing.assert_array_equal(top, stable_argsort(a, 1, True)[:, :9])


@pytest.mark.parametrize("k", [1, 9, TOP_K_INSERTION_MAX, TOP_K_INSERTION_MAX + 1])
def test_top_k_of_long_axes(rng, k):
    """The best k by insertion (k <= TOP_K_INSERTION_MAX) or by a whole sort: random data,
    sorted data (every element the best so far: the most moves), many ties, NaNs."""
    n = 4 * RANK_SORT_MAX + 3
    b = GraphBuilder()
    x = b.input("x", (3, n), np.float32)
    i = b.input("i", (n, 2), np.int64)
    lib = tk.build(b.finish(b.argsort(x, 1, descending=True, k=k), b.argsort(x, 1, k=k), b.argsort(i, 0, k=k)))
    for trial in range(3):
        a, ints = data(rng, (3, n), np.float32), data(rng, (n, 2), np.int64)
        if trial == 1:
            a = np.sort(a, axis=1)
        down, up, small = lib(a, ints)
        np.testing.assert_array_equal(down, stable_argsort(a, 1, True)[:, :k])
        np.testing.assert_array_equal(up, stable_argsort(a, 1, False)[:, :k])
        np.testing.assert_array_equal(small, stable_argsort(ints, 0, False)[:k])
    tags = [op.attributes["tk.kernel"].data for op in lower_to_loops(lib_module(n, k)).ops if "tk.kernel" in op.attributes]
    assert ("topk" in tags) == (k <= TOP_K_INSERTION_MAX) and ("sort" in tags) == (k > TOP_K_INSERTION_MAX)


def lib_module(n: int, k: int):
    b = GraphBuilder()
    return b.finish(b.argsort(b.input("x", (3, n), np.float32), 1, descending=True, k=k))


def test_symbolic_lengths_including_empty(rng):
    b = GraphBuilder()
    x = b.input("x", ("n",), np.float32)
    lib = tk.build(b.finish(b.argsort(x, 0), b.argsort(x, 0, descending=True)))
    for n in (0, 1, 2, 3, 5, 64, 1000, 4099):
        a = data(rng, (n,), np.float32)
        up, down = lib(a)
        np.testing.assert_array_equal(up, stable_argsort(a, 0, False))
        np.testing.assert_array_equal(down, stable_argsort(a, 0, True))


def test_short_axes_keep_the_rank_sort_long_ones_get_the_kernel():
    b = GraphBuilder()
    x = b.input("x", (4, RANK_SORT_MAX), np.float32)
    y = b.input("y", (4, RANK_SORT_MAX + 1), np.float32)
    loops = lower_to_loops(b.finish(b.argsort(x, 1), b.argsort(y, 1)))
    kernels = [op for op in loops.ops if "tk.kernel" in op.attributes]
    tags = sorted(op.attributes["tk.kernel"].data for op in kernels)
    assert tags.count("sort") == 1 and "argsort" in tags
    (sort,) = [op for op in kernels if op.attributes["tk.kernel"].data == "sort"]
    # the line loop; the fill, the pass count, the passes, the pairs of runs, the merge, the copy back
    names = [op.loop_name.data for op in sort.walk() if isinstance(op, loop.ForOp)]
    assert names == ["i0", "scan0", "scan1", "scan2", "scan3", "scan4", "scan5"]
    assert len(sort.function_type.inputs.data) == 3  # input, output, workspace (2 x the result)
    assert not any(isinstance(op, te.ComputeOp) for op in loops.walk())


def test_the_kernel_on_the_emulated_gpu_and_through_nvcc(rng, tmp_path):
    from tensorkiln.driver.cuda import build_emulated

    b = GraphBuilder()
    x = b.input("x", (3, 700), np.float32)
    module = b.finish(b.argsort(x, 1, descending=True, k=5), b.argsort(x, 1))
    a = data(rng, (3, 700), np.float32)
    top, order = build_emulated(module)(a)
    np.testing.assert_array_equal(order, stable_argsort(a, 1, False))
    np.testing.assert_array_equal(top, stable_argsort(a, 1, True)[:, :5])
    assert ".entry sort_" in compile_ptx(tk.emit_source(module, target="cuda -arch=sm_90"), tmp_path, "sort")
