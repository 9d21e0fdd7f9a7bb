"""NaN and inf through the sort/select/search ops, against torch: each op is imported
and built once, then called on fresh random rows holding ~25% NaN and ~15% of each
infinity. Values must equal torch's exactly (NaN where torch has NaN); indices must
equal torch's where torch defines them (a stable sort, a first occurrence), else point
at a position holding the value. (``mode`` and ``unique(dim=)`` are left out: torch's
own answers on NaN depend on its unstable sort or on comparisons NaN breaks;
tests/test_nan_semantics.py checks their stated semantics.)
Needs torch; without it the family has no probes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

import tensorkiln as tk

from . import RIGHT, WRONG, Probe

ROWS, COLUMNS = 6, 9


def _ops(torch) -> dict[str, tuple[Callable, str, int]]:
    """name -> (function, how its outputs are compared, the dim its indices run along):
    "values" (all exact), "stable" (values and indices exact), "index-holds" (values
    exact, indices point at them along the dim), "flat-holds" (the same in the flattened
    input) or "pool-holds" (values exact, indices into the plane of a (1, H, W) input point
    at them)."""
    boundaries = torch.tensor([-1.0, 0.0, 0.5, float("inf")])
    functional = torch.nn.functional
    return {
        "sort(stable)": (lambda x: torch.sort(x, dim=1, stable=True), "stable", 1),
        "sort(descending)": (lambda x: torch.sort(x, 0, descending=True), "index-holds", 0),
        "argsort(stable)": (lambda x: torch.argsort(x, dim=1, stable=True), "values", 1),
        "argsort(stable, descending)": (lambda x: torch.argsort(x, dim=0, descending=True, stable=True), "values", 0),
        "msort": (lambda x: torch.msort(x), "values", 0),
        "topk": (lambda x: torch.topk(x, 3, 1), "index-holds", 1),
        "topk(smallest)": (lambda x: torch.topk(x, 2, 0, largest=False), "index-holds", 0),
        "topk(all elements)": (lambda x: torch.topk(x.reshape(-1), 7), "flat-holds", 0),
        "kthvalue": (lambda x: torch.kthvalue(x, 4, 1), "index-holds", 1),
        "kthvalue(float64)": (lambda x: torch.kthvalue(x.double(), 2, 0), "index-holds", 0),
        "median(dim)": (lambda x: torch.median(x, 1), "index-holds", 1),
        "median": (lambda x: torch.median(x), "values", 0),
        "nanmedian(dim)": (lambda x: torch.nanmedian(x, 0), "index-holds", 0),
        "nanmedian": (lambda x: torch.nanmedian(x), "values", 0),
        "max(dim)": (lambda x: torch.max(x, 1), "index-holds", 1),
        "min(dim)": (lambda x: torch.min(x, 0, keepdim=True), "index-holds", 0),
        "argmax/argmin": (lambda x: (torch.argmax(x, 1), torch.argmin(x, 0), torch.argmax(x)), "values", 0),
        "amax/amin": (lambda x: (torch.amax(x, 1), torch.amin(x, (0, 1)), torch.max(x), torch.min(x)), "values", 0),
        "aminmax": (lambda x: (torch.aminmax(x, dim=1), torch.aminmax(x)), "values", 0),
        "maximum/minimum/fmax/fmin": (lambda x: (torch.maximum(x, x.flip(1)), torch.minimum(x, x.flip(0)),
                                                 torch.fmax(x, x.flip(1)), torch.fmin(x, x.flip(0))), "values", 0),
        "clamp(tensor bounds)": (lambda x: torch.clamp(x, x[0], x[1]), "values", 0),
        "cummax": (lambda x: torch.cummax(x, 1), "index-holds", 1),
        "cummin": (lambda x: torch.cummin(x, 0), "index-holds", 0),
        "max_pool2d(indices)": (lambda x: functional.max_pool2d(x[None], 3, 2, return_indices=True), "pool-holds", 0),
        "adaptive_max_pool2d(indices)": (lambda x: functional.adaptive_max_pool2d(x[None], (2, 4), return_indices=True),
                                         "pool-holds", 0),
        "unique": (lambda x: torch.unique(x[0]), "values", 0),
        "unique(inverse, counts)": (lambda x: torch.unique(x[:2], return_inverse=True, return_counts=True), "inverse-holds", 0),
        "unique_consecutive": (lambda x: torch.unique_consecutive(x[1], return_inverse=True, return_counts=True),
                               "values", 0),
        "searchsorted(sorted rows)": (lambda x: torch.searchsorted(torch.sort(x, 1).values, x), "values", 0),
        "searchsorted(right)": (lambda x: torch.searchsorted(torch.sort(x.reshape(-1)).values, x, right=True),
                                "values", 0),
        "searchsorted(sorter)": (lambda x: torch.searchsorted(x[0], x, sorter=torch.argsort(x[0], stable=True)),
                                 "values", 0),
        "bucketize": (lambda x: torch.bucketize(x, boundaries), "values", 0),
        "bucketize(NaN boundaries)": (lambda x: torch.bucketize(x, torch.sort(x[1]).values, right=True), "values", 0),
        "isin": (lambda x: torch.isin(x, x[0]), "values", 0),
        "quantile": (lambda x: torch.quantile(x, torch.tensor([0.1, 0.5]), dim=0, interpolation="higher"), "values", 0),
        "nanquantile": (lambda x: torch.nanquantile(x, 0.3, dim=1), "values", 0),
        "histc": (lambda x: torch.histc(x, 5, -2, 2), "values", 0),
        "histogram": (lambda x: torch.histogram(x, torch.tensor([-2.0, 0.0, 1.0, 3.0])), "values", 0),
    }


def _rows(rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((ROWS, COLUMNS)).astype(np.float32)
    u = rng.random(x.shape)
    x[u < 0.25] = np.nan
    x[(u >= 0.25) & (u < 0.4)] = np.inf
    x[(u >= 0.4) & (u < 0.55)] = -np.inf
    return x


def _flat(result) -> list[np.ndarray]:
    if isinstance(result, tuple | list):
        return [a for r in result for a in _flat(r)]
    return [np.asarray(result)]


def _exact(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def _holds(x: np.ndarray, values: np.ndarray, indices: np.ndarray, want_values: np.ndarray, dim: int) -> bool:
    """Each index points at a position of ``x`` along ``dim`` holding its value."""
    if indices.shape != want_values.shape or indices.dtype != np.int64:
        return False
    ix = indices if indices.ndim == x.ndim else np.expand_dims(indices, dim)
    picked = np.take_along_axis(x, ix, dim).reshape(values.shape)
    return bool(np.all((picked == values) | (np.isnan(picked) & np.isnan(values))))


def _inverse_holds(x: np.ndarray, got: list[np.ndarray], want: list[np.ndarray]) -> tuple[str, str]:
    """unique's values and counts exact; the inverse maps each element to an entry holding
    it, each entry as often as its count (which NaN entry a NaN maps to is torch's
    unstable sort's choice)."""
    (values, inverse, counts), (want_values, want_inverse, want_counts) = got, want
    for k, (g, w) in enumerate(((values, want_values), (counts, want_counts))):
        if not _exact(g, w):
            return WRONG, f"output {2 * k}: {g.ravel()[:8].tolist()}..., torch {w.ravel()[:8].tolist()}..."
    if inverse.shape != want_inverse.shape or inverse.dtype != want_inverse.dtype:
        return WRONG, f"inverse {inverse.dtype}{inverse.shape}, torch {want_inverse.dtype}{want_inverse.shape}"
    picked, original = values[inverse], x[: inverse.shape[0]]
    if not np.all((picked == original) | (np.isnan(picked) & np.isnan(original))):
        return WRONG, f"inverse {inverse.ravel()[:8].tolist()}... does not map the input to its values"
    if not np.array_equal(np.bincount(inverse.ravel(), minlength=len(values)), counts):
        return WRONG, "the inverse maps to entries other than their counts say"
    return RIGHT, ""


def _compare(x: np.ndarray, got: list[np.ndarray], want: list[np.ndarray], how: str, dim: int) -> tuple[str, str]:
    if len(got) != len(want):
        return WRONG, f"{len(got)} outputs, torch {len(want)}"
    if how in ("values", "stable"):
        for k, (g, w) in enumerate(zip(got, want)):
            if not _exact(g, w):
                return WRONG, f"output {k}: {g.ravel()[:8].tolist()}..., torch {w.ravel()[:8].tolist()}..."
        return RIGHT, ""
    if how == "inverse-holds":
        return _inverse_holds(x, got, want)
    (values, indices), (want_values, _) = got, want
    if not _exact(values, want_values):
        return WRONG, f"values {values.ravel()[:8].tolist()}..., torch {want_values.ravel()[:8].tolist()}..."
    if how == "pool-holds":  # (1, H, W) input: indices into the flattened plane
        x, values, indices, want_values = (a.reshape(1, -1) for a in (x, values, indices, want_values))
        dim = 1
    elif how == "flat-holds":  # an op of the flattened input
        x = x.reshape(-1)
    if not _holds(x, values, indices, want_values, dim):
        return WRONG, f"indices {indices.ravel()[:8].tolist()}... do not point at the values"
    return RIGHT, ""


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    try:
        import torch
        from tensorkiln.frontends.torch import from_exported_program
    except ImportError:
        return []

    class Fn(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x)

    found = []
    inputs = [_rows(rng) for _ in range(3 if quick else 12)]
    for name, (fn, how, dim) in _ops(torch).items():
        compiled: list = []

        def build(fn=fn, compiled=compiled):
            if not compiled:
                program = torch.export.export(Fn(fn).eval(), (torch.from_numpy(inputs[0]),))
                compiled.append(tk.build(from_exported_program(program)))
            return compiled[0]

        for k, x in enumerate(inputs):
            def run(fn=fn, how=how, dim=dim, x=x, build=build) -> tuple[str, str]:
                got = build()(x)
                want = _flat(fn(torch.from_numpy(x)))
                return _compare(x, _flat(got), [w.numpy() if hasattr(w, "numpy") else w for w in want], how, dim)

            found.append(Probe(f"{name} on random rows #{k}", run))
    return found
