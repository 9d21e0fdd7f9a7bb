"""NaN and inf through the sort/select/search ops, against torch: each op is imported
and built once, then called on fresh random rows holding ~25% NaN and ~15% of each
infinity. Values must equal torch's exactly (NaN where torch has NaN); indices must
equal torch's where torch defines them (a stable sort, a first occurrence), else point
at a position holding the value. (``mode`` is left out: torch's own answer on NaN
depends on its unstable sort; tests/test_nan_semantics.py checks its stated semantics.)
Needs torch; without it the family has no probes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

import tensorkiln as tk

from . import RIGHT, WRONG, Probe

ROWS, COLUMNS = 6, 9


def _ops(torch) -> dict[str, tuple[Callable, str]]:
    """name -> (function, how its outputs are compared): "values" (all exact), "stable"
    (values and indices exact) or "index-holds" (values exact, indices point at them)."""
    boundaries = torch.tensor([-1.0, 0.0, 0.5, float("inf")])
    return {
        "sort(stable)": (lambda x: torch.sort(x, dim=1, stable=True), "stable"),
        "sort(descending)": (lambda x: torch.sort(x, 0, descending=True), "index-holds"),
        "argsort(stable)": (lambda x: torch.argsort(x, dim=1, stable=True), "values"),
        "msort": (lambda x: torch.msort(x), "values"),
        "topk": (lambda x: torch.topk(x, 3, 1), "index-holds"),
        "topk(smallest)": (lambda x: torch.topk(x, 2, 0, largest=False), "index-holds"),
        "kthvalue": (lambda x: torch.kthvalue(x, 4, 1), "index-holds"),
        "median(dim)": (lambda x: torch.median(x, 1), "index-holds"),
        "median": (lambda x: torch.median(x), "values"),
        "nanmedian(dim)": (lambda x: torch.nanmedian(x, 0), "index-holds"),
        "nanmedian": (lambda x: torch.nanmedian(x), "values"),
        "max(dim)": (lambda x: torch.max(x, 1), "index-holds"),
        "min(dim)": (lambda x: torch.min(x, 0, keepdim=True), "index-holds"),
        "argmax/argmin": (lambda x: (torch.argmax(x, 1), torch.argmin(x, 0), torch.argmax(x)), "values"),
        "amax/amin": (lambda x: (torch.amax(x, 1), torch.amin(x, (0, 1)), torch.max(x), torch.min(x)), "values"),
        "cummax": (lambda x: torch.cummax(x, 1), "index-holds"),
        "cummin": (lambda x: torch.cummin(x, 0), "index-holds"),
        "unique": (lambda x: torch.unique(x[0]), "values"),
        "searchsorted(sorted rows)": (lambda x: torch.searchsorted(torch.sort(x, 1).values, x), "values"),
        "searchsorted(right)": (lambda x: torch.searchsorted(torch.sort(x.reshape(-1)).values, x, right=True), "values"),
        "bucketize": (lambda x: torch.bucketize(x, boundaries), "values"),
        "bucketize(NaN boundaries)": (lambda x: torch.bucketize(x, torch.sort(x[1]).values, right=True), "values"),
        "quantile": (lambda x: torch.nanquantile(x, 0.3, dim=1), "values"),
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


def _compare(x: np.ndarray, got: list[np.ndarray], want: list[np.ndarray], how: str, dim: int) -> tuple[str, str]:
    if len(got) != len(want):
        return WRONG, f"{len(got)} outputs, torch {len(want)}"
    if how in ("values", "stable"):
        for k, (g, w) in enumerate(zip(got, want)):
            if not _exact(g, w):
                return WRONG, f"output {k}: {g.ravel()[:8].tolist()}..., torch {w.ravel()[:8].tolist()}..."
        return RIGHT, ""
    (values, indices), (want_values, _) = got, want
    if not _exact(values, want_values):
        return WRONG, f"values {values.ravel()[:8].tolist()}..., torch {want_values.ravel()[:8].tolist()}..."
    if not _holds(x, values, indices, want_values, dim):
        return WRONG, f"indices {indices.ravel()[:8].tolist()}... do not point at the values"
    return RIGHT, ""


def _dim_of(name: str) -> int:
    return 0 if name in ("sort(descending)", "topk(smallest)", "nanmedian(dim)", "min(dim)", "cummin") else 1


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
    for name, (fn, how) in _ops(torch).items():
        compiled: list = []

        def build(fn=fn, compiled=compiled):
            if not compiled:
                program = torch.export.export(Fn(fn).eval(), (torch.from_numpy(inputs[0]),))
                compiled.append(tk.build(from_exported_program(program)))
            return compiled[0]

        for k, x in enumerate(inputs):
            def run(fn=fn, how=how, x=x, name=name, build=build) -> tuple[str, str]:
                got = build()(x)
                want = _flat(fn(torch.from_numpy(x)))
                return _compare(x, _flat(got), [w.numpy() if hasattr(w, "numpy") else w for w in want], how, _dim_of(name))

            found.append(Probe(f"{name} on random rows #{k}", run))
    return found
