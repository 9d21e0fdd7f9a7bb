"""Order statistics and searches (frontends/torch/ops/order.py), and rrelu in eval():
kthvalue, median and nanmedian (lower median, over a dim and over everything), bucketize and
searchsorted with exact ties, both sides, int32 results and per-row sequences; compared
with torch eager on fresh random inputs (values and indices exactly)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

from torch_op_cases import check  # noqa: E402


def f32(*shape):
    return lambda rng: torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def steps(*shape):
    """Floats on a grid of halves, so values land exactly on boundaries (ties)."""
    return lambda rng: torch.from_numpy((rng.integers(-6, 7, shape) / 2).astype(np.float32))


BOUNDARIES = torch.tensor([-2.0, -1.0, -0.5, 0.0, 1.0, 2.5])


@pytest.mark.parametrize(
    "fn, makers, expect",
    [
        (lambda x: torch.kthvalue(x, 3), (f32(5, 9),), "kthvalue.default"),
        (lambda x: torch.kthvalue(x, 1, 0, keepdim=True), (f32(4, 7, 3),), "kthvalue.default"),
        (lambda x: torch.kthvalue(x, 7, 1), (f32(4, 7, 3),), "kthvalue.default"),
        (lambda x: torch.median(x, -1), (f32(6, 9),), "median.dim"),
        (lambda x: torch.median(x, 0, keepdim=True), (f32(8, 5),), "median.dim"),
        (lambda x: torch.median(x), (f32(4, 5),), "median.default"),
    ],
    ids=["kth", "kth-keepdim-dim0", "kth-last-dim1", "median-odd", "median-even-keepdim", "median-all"],
)
def test_order_statistics(rng, fn, makers, expect):
    check(fn, makers, rng, (expect,))


def small_ints(*shape, dtype=np.float32):
    """Values from a handful, so that runs tie (the mode is the smallest of the tied)."""
    return lambda rng: torch.from_numpy(rng.integers(-2, 3, shape).astype(dtype))


@pytest.mark.parametrize(
    "fn, makers",
    [
        (lambda x: torch.mode(x, 1), (small_ints(5, 9),)),
        (lambda x: torch.mode(x, 0, keepdim=True), (small_ints(7, 4, 3),)),
        (lambda x: (torch.mode(x), torch.mode(x[..., :1])), (small_ints(3, 4, 11, dtype=np.int64),)),
        (lambda x: torch.mode(x, -1), (f32(4, 6),)),
    ],
    ids=["ties-dim1", "keepdim-dim0", "int64-last-and-length-1", "distinct"],
)
def test_mode(rng, fn, makers):
    """Values and the last position holding them, as torch."""
    check(fn, makers, rng, ("mode.default",))


def with_nans(*shape):
    """Floats with about a third NaN, and whole rows of NaN."""

    def make(rng):
        x = rng.standard_normal(shape).astype(np.float32)
        x[rng.random(shape) < 0.35] = np.nan
        x[0] = np.nan
        return torch.from_numpy(x)

    return make


def numbers_only(median):
    """(values, indices) with the index of an all-NaN row as -1: torch's is whatever its
    partial sort leaves first there."""
    values, indices = median
    return values, torch.where(values.isnan(), -1, indices)


@pytest.mark.parametrize(
    "fn, makers, expect",
    [
        (lambda x: numbers_only(torch.nanmedian(x, -1)), (with_nans(6, 9),), "nanmedian.dim"),
        (lambda x: numbers_only(torch.nanmedian(x, 0, keepdim=True)), (with_nans(8, 5),), "nanmedian.dim"),
        (lambda x: (torch.nanmedian(x), torch.nanmedian(x[1:])), (with_nans(4, 5),), "nanmedian.default"),
        (lambda x: torch.nanmedian(x, 1), (f32(3, 6),), "nanmedian.dim"),
    ],
    ids=["dim", "keepdim-dim0", "all", "no-nans"],
)
def test_nanmedian_ignores_nans(rng, fn, makers, expect):
    """The lower median of the numbers of each row; NaN where all are NaN."""
    check(fn, makers, rng, (expect,))


@pytest.mark.parametrize(
    "fn, makers, expect",
    [
        (lambda x: torch.bucketize(x, BOUNDARIES), (steps(5, 7),), "bucketize.Tensor"),
        (lambda x: torch.bucketize(x, BOUNDARIES, right=True, out_int32=True), (steps(3, 4, 5),), "bucketize.Tensor"),
        (lambda x: torch.searchsorted(BOUNDARIES, x), (steps(11,),), "searchsorted.Tensor"),
        (lambda x: torch.searchsorted(BOUNDARIES, x, side="right"), (steps(4, 6),), "searchsorted.Tensor"),
        (
            lambda s, x: torch.searchsorted(torch.sort(s, -1)[0], x, right=True),
            (steps(3, 8), steps(3, 5)),
            "searchsorted.Tensor",
        ),
    ],
    ids=["bucketize", "bucketize-right-int32", "searchsorted", "searchsorted-side-right", "searchsorted-rows"],
)
def test_searches(rng, fn, makers, expect):
    check(fn, makers, rng, (expect,))


def test_rrelu_in_eval_is_leaky_relu_with_the_mean_slope(rng):
    check(lambda x: torch.nn.functional.rrelu(x, 0.1, 0.3, training=False), (f32(4, 9),), rng)


def test_searchsorted_with_a_sorter(rng):
    """The sequence read in the sorter's order (1-d, and per row)."""

    def fn(s, x, rows, y):
        return (
            torch.searchsorted(s, x, sorter=torch.argsort(s)),
            torch.searchsorted(s, x, right=True, sorter=torch.argsort(s)),
            torch.searchsorted(rows, y, sorter=torch.argsort(rows, dim=-1)),
        )

    check(fn, (steps(9), steps(4, 5), steps(3, 6), steps(3, 4)), rng, ("searchsorted.Tensor",))


def near_edges(rng):
    """Values on, just below and just above the edges of 7 bins over [-1, 2], NaN, values
    outside the range, and random ones."""
    edges = torch.linspace(-1, 2, 8)
    values = torch.cat([
        edges, torch.nextafter(edges, torch.tensor(-9.0)), torch.nextafter(edges, torch.tensor(9.0)),
        torch.tensor([float("nan"), -5.0, 7.0]), torch.from_numpy(rng.uniform(-1.2, 2.2, 300).astype(np.float32)),
    ])  # fmt: skip
    return values.reshape(3, -1)


@pytest.mark.parametrize(
    "fn, makers",
    [
        (lambda x: torch.histc(x, bins=7, min=-1, max=2), (near_edges,)),
        (lambda x: torch.histc(x, bins=13, min=-0.3, max=0.7), (f32(40, 50),)),
        (lambda x: torch.histc(x.double(), bins=5, min=-2, max=2), (f32(99),)),
    ],
    ids=["edges", "odd-range", "float64"],
)
def test_histc_puts_edge_values_where_torch_does(rng, fn, makers):
    """The bin of an element is torch's float arithmetic (an element just below an edge
    can round into the bin above), NaN and out-of-range elements are not counted."""
    check(fn, makers, rng, ("histc.default",))


def test_histc_of_the_datas_own_range(rng):
    """min == max: the bins span the data's own range (widened by one each way for a
    single value), as torch."""

    def fn(x):
        return torch.histc(x, bins=4), torch.histc(x, bins=7, min=3, max=3), torch.histc(x[:1] * 0 + 2.5, bins=3)

    check(fn, (f32(40),), rng, ("histc.default",))


def test_histogram_with_edges_counts_weights_and_densities(rng):
    """torch.histogram: equal bins over the data's range (a single value widened by 0.5)
    or a given one, or given edges (values exactly on them: the bin they open, the last
    edge closing the last bin), weighted, as densities; the edges returned too."""
    edges = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])

    def fn(x, w):
        return (
            *torch.histogram(x, bins=7),
            *torch.histogram(x, bins=4, range=(-1.0, 1.5), weight=w, density=True),
            *torch.histogram(x, edges, weight=w),
            torch.histogram(x[:1, :1], 3)[1],
        )

    check(fn, (steps(5, 9), lambda r: torch.from_numpy(r.random((5, 9)).astype(np.float32))), rng,
          ("histogram.bin_ct", "histogram.bins_tensor"))  # fmt: skip


def test_histogramdd_counts_weights_and_densities(rng):
    """torch.histogramdd of points (..., D): equal bins over each axis' data range or a
    given range (points outside in no bin), given edges per axis (values exactly on
    them), weights, densities (divided by the total and every axis' bin widths), a
    single-valued axis widened by 0.5; the edges returned too."""
    edges = [torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0]), torch.tensor([-1.0, 0.0, 1.0])]

    def fn(x, w):
        counted = torch.histogramdd(x, bins=[3, 4, 5])
        weighted = torch.histogramdd(x[..., :2], bins=[4, 6], range=[-1.0, 1.0, -2.0, 0.5], weight=w, density=True)
        flat = torch.histogramdd(torch.stack([x[..., 0], x[..., 1] * 0 + 1.5], -1), bins=[2, 3])
        return (
            counted.hist, *counted.bin_edges, weighted.hist, *weighted.bin_edges,
            torch.histogramdd(x[..., :2], bins=edges, weight=w).hist, flat.hist, *flat.bin_edges,
        )  # fmt: skip

    check(fn, (steps(6, 7, 3), lambda r: torch.from_numpy(r.random((6, 7)).astype(np.float32))), rng,
          ("_histogramdd_bin_edges.default", "_histogramdd_from_bin_cts.default", "_histogramdd_from_bin_tensors.default"))  # fmt: skip
