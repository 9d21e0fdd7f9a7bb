"""NaN and inf through every sort/select/search op, against torch (issue #39: median and
mode ignored NaN where torch propagates it, bucketize put NaN in bucket 0, torch last).

Values must equal torch's exactly (NaN where torch has NaN). Indices must equal torch's
where torch defines them; where several positions hold the selected value (ties, or NaN
among NaNs: torch documents no choice), the index must point at a position holding it.
``mode`` is checked against its stated semantics (NaNs are one value, sorted last; the
smallest of the most frequent) and against torch on rows where torch's answer does not
depend on its unstable sort (see frontends/torch/ops/order.py).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

NAN, INF = float("nan"), float("inf")

#: rows covering NaN first/last/only, inf of both signs, ties, signed zeros
ROWS = [
    [NAN, 1, 2, NAN],
    [1, 2, 3, 4],
    [INF, -INF, 0, 1],
    [NAN, NAN, NAN, NAN],
    [INF, INF, NAN, -INF],
    [-INF, 3, -INF, 2],
    [2, NAN, 2, 1],
    [0.0, -0.0, 0, 5],
]
BOUNDARIES = torch.tensor([-1.0, 0.0, 1.0, INF])


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def rows() -> torch.Tensor:
    return torch.tensor(ROWS)


def mixed(rng, *shape) -> torch.Tensor:
    """Random normals with about 25% NaN, 15% +inf, 15% -inf."""
    x = rng.standard_normal(shape).astype(np.float32)
    u = rng.random(shape)
    x[u < 0.25] = np.nan
    x[(u >= 0.25) & (u < 0.4)] = np.inf
    x[(u >= 0.4) & (u < 0.55)] = -np.inf
    return torch.from_numpy(x)


def _flat(result) -> list:
    if isinstance(result, tuple | list):
        return [t for r in result for t in _flat(r)]
    return [result]


def _compiled(fn, *inputs):
    ep = torch.export.export(_Fn(fn).eval(), inputs)
    got = tk.build(from_exported_program(ep))(*(t.numpy() for t in inputs))
    return list(got) if isinstance(got, tuple) else [got]


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def _index_holds(x: np.ndarray, values: np.ndarray, indices: np.ndarray, dim: int) -> bool:
    """Each index points at a position of ``x`` along ``dim`` holding its value."""
    picked = np.take_along_axis(x, np.expand_dims(indices, dim) if indices.ndim < x.ndim else indices, dim)
    picked = picked.reshape(values.shape)
    return bool(np.all((picked == values) | (np.isnan(picked) & np.isnan(values))))


VALUE_AND_INDEX = [
    ("median.dim", lambda x: torch.median(x, 1), rows, 1),
    ("median.dim0-keepdim", lambda x: torch.median(x, 0, keepdim=True), rows, 0),
    ("median.mixed", lambda x: torch.median(x, -1), "mixed", 1),
    ("nanmedian.dim", lambda x: torch.nanmedian(x, 1), rows, 1),
    ("kthvalue.2", lambda x: torch.kthvalue(x, 2, 1), rows, 1),
    ("kthvalue.4", lambda x: torch.kthvalue(x, 4, 1), rows, 1),
    ("kthvalue.mixed", lambda x: torch.kthvalue(x, 3, 1), "mixed", 1),
    ("topk", lambda x: torch.topk(x, 2, 1), rows, 1),
    ("topk.smallest", lambda x: torch.topk(x, 2, 1, largest=False), rows, 1),
    ("topk.mixed", lambda x: torch.topk(x, 3, 1), "mixed", 1),
    ("max.dim", lambda x: torch.max(x, 1), rows, 1),
    ("min.dim", lambda x: torch.min(x, 1), rows, 1),
    ("cummax", lambda x: torch.cummax(x, 1), rows, 1),
    ("cummin", lambda x: torch.cummin(x, 1), rows, 1),
    ("sort", lambda x: torch.sort(x, 1), rows, 1),
    ("sort.descending", lambda x: torch.sort(x, 1, descending=True), rows, 1),
    ("sort.stable-mixed", lambda x: torch.sort(x, dim=0, stable=True), "mixed", 0),
    ("nanmedian.mixed", lambda x: torch.nanmedian(x, 1), "mixed", 1),
    ("kthvalue.dim0", lambda x: torch.kthvalue(x, 2, 0), rows, 0),
    ("topk.dim0", lambda x: torch.topk(x, 3, 0), rows, 0),
    ("topk.smallest-mixed", lambda x: torch.topk(x, 4, 1, largest=False), "mixed", 1),
    ("max.dim0-keepdim", lambda x: torch.max(x, 0, keepdim=True), rows, 0),
    ("max.mixed", lambda x: torch.max(x, 1), "mixed", 1),
    ("min.mixed", lambda x: torch.min(x, 0), "mixed", 0),
    ("cummax.mixed", lambda x: torch.cummax(x, 1), "mixed", 1),
    ("cummin.dim0-mixed", lambda x: torch.cummin(x, 0), "mixed", 0),
    ("sort.descending-mixed", lambda x: torch.sort(x, 1, descending=True), "mixed", 1),
    ("kthvalue.float64-mixed", lambda x: torch.kthvalue(x.double(), 2, 0), "mixed", 0),
    ("nanmedian.dim0-keepdim-mixed", lambda x: torch.nanmedian(x, 0, keepdim=True), "mixed", 0),
]


@pytest.mark.parametrize("fn, make, dim", [pytest.param(f, m, d, id=n) for n, f, m, d in VALUE_AND_INDEX])
def test_values_and_indices_with_nan_and_inf(rng, fn, make, dim):
    x = rows() if make is rows else mixed(rng, 7, 9)
    values, indices = (t.numpy() for t in _flat(fn(x)))
    got_values, got_indices = _compiled(fn, x)
    assert _same(got_values, values), f"values {got_values.tolist()}, torch {values.tolist()}"
    assert got_indices.dtype == indices.dtype and got_indices.shape == indices.shape
    assert _index_holds(x.numpy(), got_values, got_indices, dim), f"indices {got_indices.tolist()} (torch {indices.tolist()})"


def test_median_is_nan_at_the_first_nan_as_torch():
    """The issue's case: [nan, 1, 2, nan] -> torch nan (we gave 2). Index: the first NaN."""
    x = rows()
    got_values, got_indices = _compiled(lambda t: torch.median(t, 1), x)
    want = torch.median(x, 1)
    assert _same(got_values, want.values.numpy()) and _same(got_indices, want.indices.numpy())
    (overall,) = _compiled(lambda t: torch.median(t), x)
    assert np.isnan(overall)
    (finite,) = _compiled(lambda t: torch.median(t[1:3]), x)
    assert finite == torch.median(x[1:3]).item()


VALUES_ONLY = [
    ("median.all", lambda x: (torch.median(x), torch.median(x[1:3]))),
    ("nanmedian.all", lambda x: (torch.nanmedian(x), torch.nanmedian(x[3:4]))),
    ("argmax", lambda x: torch.argmax(x, 1)),
    ("argmin", lambda x: torch.argmin(x, 1)),
    ("argmax.all", lambda x: torch.argmax(x)),
    ("argmin.all", lambda x: torch.argmin(x[1:3])),
    ("max.all", lambda x: (torch.max(x), torch.max(x[1:3]))),
    ("min.all", lambda x: (torch.min(x), torch.min(x[1:3]))),
    ("amax-amin", lambda x: (torch.amax(x, 1), torch.amin(x, 1))),
    ("aminmax", lambda x: torch.aminmax(x, dim=1)),
    ("maximum-minimum", lambda x: (torch.maximum(x, x.flip(1)), torch.minimum(x, x.flip(1)))),
    ("fmax-fmin", lambda x: (torch.fmax(x, x.flip(1)), torch.fmin(x, x.flip(1)))),
    ("clamp", lambda x: torch.clamp(x, -1, 1)),
    ("argsort.stable", lambda x: torch.argsort(x, dim=1, stable=True)),
    ("argsort.stable-descending", lambda x: torch.argsort(x, dim=1, descending=True, stable=True)),
    ("msort", lambda x: torch.msort(x)),
    ("bucketize", lambda x: torch.bucketize(x, BOUNDARIES)),
    ("bucketize.right-int32", lambda x: torch.bucketize(x, BOUNDARIES, right=True, out_int32=True)),
    ("searchsorted", lambda x: torch.searchsorted(BOUNDARIES, x)),
    ("searchsorted.right", lambda x: torch.searchsorted(BOUNDARIES, x, side="right")),
    ("quantile", lambda x: torch.quantile(x, 0.3, dim=1)),
    ("nanquantile", lambda x: torch.nanquantile(x, 0.3, dim=1)),
    ("logsumexp", lambda x: torch.logsumexp(x, 1)),
    ("isin", lambda x: torch.isin(x, BOUNDARIES)),
    ("histc", lambda x: torch.histc(x, 4, -2, 2)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in VALUES_ONLY])
def test_values_with_nan_and_inf_equal_torch(fn):
    x = rows()
    want = [t.numpy() for t in _flat(fn(x))]
    got = _compiled(fn, x)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _same(np.asarray(g), w), f"output {k}: {np.asarray(g).tolist()}, torch {w.tolist()}"


MIXED_VALUES = [
    ("argmax-argmin", lambda x: (torch.argmax(x, 1), torch.argmin(x, 0))),
    ("amax-amin.dims", lambda x: (torch.amax(x, (0, 1)), torch.amin(x, 0, keepdim=True))),
    ("msort", lambda x: torch.msort(x)),
    ("searchsorted.sorted-rows", lambda x: torch.searchsorted(torch.sort(x, 1).values, x)),
    ("searchsorted.sorted-1d-right", lambda x: torch.searchsorted(torch.sort(x.reshape(-1)).values, x, right=True)),
    ("bucketize.boundaries-with-nan", lambda x: torch.bucketize(x, torch.sort(x[0]).values, out_int32=True)),
    ("bucketize", lambda x: torch.bucketize(x, BOUNDARIES, right=True)),
    ("median.all", lambda x: torch.median(x)),
    ("nanmedian.all", lambda x: torch.nanmedian(x)),
    ("aminmax", lambda x: (torch.aminmax(x), torch.aminmax(x, dim=0, keepdim=True))),
    ("maximum-minimum-fmax-fmin", lambda x: (torch.maximum(x, x.flip(0)), torch.minimum(x, x.flip(1)),
                                            torch.fmax(x, x.flip(0)), torch.fmin(x, x.flip(1)))),
    ("clamp.tensor-bounds", lambda x: torch.clamp(x, x[0], x[1])),
    ("isin.tensor", lambda x: torch.isin(x, x[0])),
    ("searchsorted.sorter", lambda x: torch.searchsorted(x[0], x, sorter=torch.argsort(x[0], stable=True))),
    ("quantile.interpolations", lambda x: tuple(torch.quantile(x, torch.tensor([0.2, 0.7]), dim=1, interpolation=i)
                                                for i in ("linear", "lower", "higher", "nearest", "midpoint"))),
    ("nanquantile.all", lambda x: torch.nanquantile(x, torch.tensor([0.0, 0.5, 1.0]))),
    ("histc", lambda x: torch.histc(x, 5, -2, 2)),
    ("histogram", lambda x: torch.histogram(x, torch.tensor([-2.0, 0.0, 1.0, 3.0]))),
    ("unique.dim-no-nan", lambda x: torch.unique(torch.nan_to_num(x, nan=0.5), dim=1, return_inverse=True,
                                                  return_counts=True)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in MIXED_VALUES])
def test_values_on_random_nan_and_inf_equal_torch(rng, fn):
    """About 25% NaN, 15% of each inf among random normals."""
    x = mixed(rng, 7, 9)
    want = [t.numpy() for t in _flat(fn(x))]
    got = _compiled(fn, x)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _same(np.asarray(g), w), f"output {k}: {np.asarray(g).tolist()}, torch {w.tolist()}"


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda t: torch.nn.functional.max_pool2d(t, 3, 2, return_indices=True), id="max_pool2d"),
        pytest.param(lambda t: torch.nn.functional.max_pool2d(t, 2, ceil_mode=True, return_indices=True), id="ceil"),
        pytest.param(lambda t: torch.nn.functional.adaptive_max_pool2d(t, (3, 4), return_indices=True), id="adaptive"),
        pytest.param(lambda t: torch.topk(t.reshape(t.shape[0], t.shape[1], -1), 5), id="topk-of-planes"),
    ],
)
def test_pooling_indices_with_nan_and_inf(rng, fn):
    """Values exact (a window holding NaN gives NaN, as torch); an index into the flattened
    plane points at its value (torch takes a window's last NaN, we its first: both hold it)."""
    x = mixed(rng, 2, 3, 7, 9)
    values, indices = (t.numpy() for t in fn(x))
    got_values, got_indices = _compiled(fn, x)
    assert _same(got_values, values), f"values {got_values.tolist()}, torch {values.tolist()}"
    assert got_indices.dtype == indices.dtype and got_indices.shape == indices.shape
    planes = x.numpy().reshape(2, 3, -1)
    assert _index_holds(planes, got_values.reshape(2, 3, -1), got_indices.reshape(2, 3, -1), 2)


def _unique_columns_reference(x: np.ndarray):
    """Columns in lexicographic order, NaN after every number (as sort); columns holding
    NaN never equal (NaN != NaN, as torch's comparison)."""
    keys = [tuple((bool(np.isnan(v)), 0.0 if np.isnan(v) else float(v)) for v in column) for column in x.T]
    order = sorted(range(len(keys)), key=lambda j: keys[j])
    values, counts, inverse = [], [], np.empty(len(keys), np.int64)
    for j in order:
        if values and not np.isnan(x[:, j]).any() and np.array_equal(values[-1], x[:, j]):
            counts[-1] += 1
        else:
            values.append(x[:, j])
            counts.append(1)
        inverse[j] = len(values) - 1
    return np.stack(values, 1), inverse, np.asarray(counts)


def test_unique_columns_with_nan_and_inf(rng):
    """torch's unique(dim=) with NaN sorts by comparisons NaN breaks, so its order, and
    whether equal NaN-free columns end up adjacent and merged, vary (no oracle): ours
    sorts as torch.sort does, merges equal columns and never merges columns holding NaN.
    (NaN-free input is checked against torch in MIXED_VALUES.)"""
    x = mixed(rng, 3, 11)
    x[:, 5] = x[:, 2]  # a repeated column (merged only if it holds no NaN)
    x[:, 7] = torch.tensor([1.0, INF, -INF])
    x[:, 9] = x[:, 7]
    values, inverse, counts = _compiled(lambda t: torch.unique(t, dim=1, return_inverse=True, return_counts=True), x)
    want_values, _, want_counts = _unique_columns_reference(x.numpy())
    assert _same(values, want_values) and _same(counts, want_counts), f"{values.tolist()} {counts.tolist()}"
    assert np.array_equal(values[:, inverse], x.numpy(), equal_nan=True)


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_orders_nan_and_inf_as_torch_sort(rng, descending):
    """The default argsort (not stable: ties in any order) puts each value where torch's sort does."""
    x = mixed(rng, 7, 9)
    (got,) = _compiled(lambda t: torch.argsort(t, 1, descending=descending), x)
    assert got.dtype == np.int64 and sorted(got[0].tolist()) == list(range(9))
    values = np.take_along_axis(x.numpy(), got, 1)
    assert _same(values, torch.sort(x, 1, descending=descending).values.numpy())


def test_bucketize_puts_nan_past_the_last_boundary():
    x = torch.tensor([NAN, -2.0, 0.5, INF, NAN])
    for right in (False, True):
        (got,) = _compiled(lambda t: torch.bucketize(t, BOUNDARIES, right=right), x)
        np.testing.assert_array_equal(got, torch.bucketize(x, BOUNDARIES, right=right).numpy())
        assert got[0] == got[-1] == len(BOUNDARIES)


UNIQUE_INPUTS = [torch.tensor([NAN, 1, 1, INF, -INF, INF, NAN]), torch.tensor([2.0, 1, 1, INF, -INF, INF, 0])]


def test_unique_with_nan_and_inf():
    for x in UNIQUE_INPUTS:
        got = _compiled(lambda t: torch.unique(t), x)[0]
        assert _same(got, torch.unique(x).numpy())


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda t: torch.unique(t, return_inverse=True, return_counts=True), id="unique.inverse-counts"),
        pytest.param(lambda t: torch.unique_consecutive(t, return_counts=True), id="unique_consecutive"),
    ],
)
def test_unique_with_counts_and_inverse_with_nan_and_inf(fn):
    for x in UNIQUE_INPUTS:
        want = [t.numpy() for t in _flat(fn(x))]
        got = _compiled(fn, x)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert _same(np.asarray(g), w), f"{x.tolist()} output {k}: {np.asarray(g).tolist()}, torch {w.tolist()}"


def _mode_reference(row: list[float]) -> float:
    """NaNs one value, larger than every number; the smallest of the most frequent."""
    keys = ["nan" if np.isnan(v) else v for v in row]
    counts = {k: keys.count(k) for k in keys}
    best = max(counts.values())
    tied = [k for k, c in counts.items() if c == best]
    numbers = sorted(k for k in tied if k != "nan")
    return numbers[0] if numbers else NAN


MODE_ROWS = ROWS + [[NAN, NAN, 1, 1], [3, NAN, NAN, 3], [NAN, 2, NAN, 2]]


@pytest.mark.parametrize("dim", [1, 0])
def test_mode_counts_nans_as_one_value(dim):
    """(torch's own mode along dim 0 of these rows answers values that occur once: not an oracle.)"""
    x = torch.tensor(MODE_ROWS)
    values, indices = _compiled(lambda t: torch.mode(t.T if dim == 0 else t, dim), x)
    for k, row in enumerate(x.tolist()):
        want = _mode_reference(row)
        assert values[k] == want or (np.isnan(want) and np.isnan(values[k])), f"row {row}: {values[k]}, expected {want}"
        last = max(j for j, v in enumerate(row) if v == want or (np.isnan(v) and np.isnan(want)))
        assert indices[k] == last, f"row {row}: index {indices[k]}, expected the last position {last}"


@pytest.mark.parametrize("row", [[NAN, 1, 2, NAN], [NAN, NAN, NAN, NAN], [INF, INF, NAN, -INF], [NAN, NAN, 1, 1], [1, 2, 3, 4]])
def test_mode_agrees_with_torch_where_torch_is_unambiguous(row):
    x = torch.tensor([row])
    values, _ = _compiled(lambda t: torch.mode(t, 1), x)
    assert _same(values, torch.mode(x, 1).values.numpy())
