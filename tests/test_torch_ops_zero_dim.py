"""Ops taking a dim on 0-d tensors: torch treats a 0-d tensor as a one-element vector
(dim 0 or -1, keepdim keeps it 0-d). The converters registered with
``scalars_as_vectors=True`` see such tensors as shape (1,) and their results are reshaped
back; each group below is compared with torch eager (values, shapes and dtypes)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from torch_op_cases import Fn  # noqa: E402


def _reductions(x):
    return (
        x.sum(0), x.sum(-1, keepdim=True), x.mean(0), x.prod(0), x.amax(0), x.amin(-1), x.max(0), x.min(0, keepdim=True),
        x.argmax(0), x.argmin(0, keepdim=True), x.logsumexp(0), x.var(0, correction=0), x.std(0, correction=0),
        torch.var_mean(x, 0, correction=0), x.norm(dim=0), (x > 0).all(0), (x > 0).any(-1), x.count_nonzero(0),
        x.nansum(0), x.nanmean(0), torch.aminmax(x, dim=0),
    )  # fmt: skip


def _along_dim(x):
    return (
        x.softmax(0), x.log_softmax(-1), x.cumsum(0), x.cumprod(0), x.cummax(0), x.logcumsumexp(0), x.flip(0),
        x.sort(0), x.argsort(0), x.topk(1, 0), x.kthvalue(1, 0), x.median(0), x.nanmedian(0), x.unfold(0, 1, 1),
    )  # fmt: skip


def _indexing(x, i):
    return (
        x.index_select(0, i.reshape(1)), x.index_select(0, i), x.gather(0, i),
        x.scatter(0, i, x * 2), x.scatter_add(0, i, x), x.scatter_reduce(0, i, x * 3, "amax"),
    )  # fmt: skip


@pytest.mark.parametrize(
    "fn, n_tensors",
    [(_reductions, 1), (_along_dim, 1), (_indexing, 2)],
    ids=["reductions", "along-dim", "indexing"],
)
def test_dim_ops_on_zero_dim_tensors(rng, fn, n_tensors):
    example = (torch.tensor(0.5), torch.tensor(0))[:n_tensors]
    lib = tk.build(from_exported_program(torch.export.export(Fn(fn), example)))
    for _ in range(2):
        inputs = (torch.tensor(np.float32(rng.uniform(-3, 3))), torch.tensor(0))[:n_tensors]
        expected = torch.utils._pytree.tree_leaves(fn(*inputs))
        got = lib(*[t.numpy() for t in inputs])
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype, (g.shape, e.shape, g.dtype, e.dtype)
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-6)
