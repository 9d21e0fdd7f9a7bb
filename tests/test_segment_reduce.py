"""``torch.segment_reduce`` against torch: every reduction with and without ``initial``
(empty segments, a NaN), lengths given at run time or constant, offsets, data of rank 3,
and invalid lengths refused (on import when constant, by a run-time check otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from tensorkiln.runtime.host_checks import RuntimeCheckError  # noqa: E402
from torch_compile import compile_torch_fn  # noqa: E402

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def _every_reduction(data, lengths):
    return tuple(
        torch.segment_reduce(data, reduce, lengths=lengths, initial=initial)
        for reduce in REDUCTIONS
        for initial in (None, 0.5)
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_reduction_matches_torch(rng, dtype):
    data = rng.standard_normal((11, 2, 3)).astype(dtype)
    data[5, 1, 2] = np.nan
    lengths = np.array([3, 0, 4, 1, 3, 0], np.int64)  # empty segments, one at the end
    got = compile_torch_fn(_every_reduction, data, lengths)(data, lengths)
    want = _every_reduction(torch.from_numpy(data), torch.from_numpy(lengths))
    for g, w in zip(got, want):
        assert g.dtype == w.numpy().dtype and g.shape == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, equal_nan=True)
    other = rng.integers(0, 5, 6)
    other[-1] += 11 - other.sum()
    if other[-1] >= 0:  # the same build, other lengths
        got = compile_torch_fn(_every_reduction, data, lengths)(data, other)
        for g, w in zip(got, _every_reduction(torch.from_numpy(data), torch.from_numpy(other))):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, equal_nan=True)


def test_offsets_and_constant_lengths(rng):
    data = rng.standard_normal((9, 4)).astype(np.float32)
    offsets = np.array([0, 2, 2, 9], np.int64)

    def fn(data, offsets):
        return (
            torch.segment_reduce(data, "max", offsets=offsets),
            torch.segment_reduce(data, "mean", lengths=torch.tensor([4, 5])),
        )  # fmt: skip

    for g, w in zip(compile_torch_fn(fn, data, offsets)(data, offsets), fn(torch.from_numpy(data), torch.from_numpy(offsets))):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_invalid_lengths_are_refused(rng):
    data = rng.standard_normal((6, 2)).astype(np.float32)
    lib = compile_torch_fn(lambda d, l: torch.segment_reduce(d, "sum", lengths=l), data, np.array([2, 4]))
    with pytest.raises(RuntimeCheckError, match="lengths must be non-negative and sum to data.shape"):
        lib(data, np.array([2, 3]))
    with pytest.raises(RuntimeCheckError, match="lengths must be non-negative"):
        lib(data, np.array([7, -1]))
    with pytest.raises(ValueError, match=r"lengths \[2, 3\] must be non-negative and sum to data.shape\[0\] = 6"):
        compile_torch_fn(lambda d: torch.segment_reduce(d, "sum", lengths=torch.tensor([2, 3])), data)
