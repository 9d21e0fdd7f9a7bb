"""Indexing, index-producing and miscellaneous tensor ATen ops, exported from tiny modules,
compiled with tk.build and compared with torch eager on fresh random inputs: index_select,
embedding, gather, x[idx], cumsum, argmax/argmin, max/min with indices, topk, sort,
logical/bitwise ops, masked_fill, where and clamp with scalars or tensors, arange/full/
zeros/ones/*_like, var/std, constant padding, stack, split/chunk/unbind, flip, repeat.

Several variants of one op share one exported module (its outputs are a tuple), so that
each test exports and compiles once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

from torch_op_cases import Fn, flat  # noqa: E402


def check(
    fn: Callable | torch.nn.Module,
    make_inputs: Callable[[np.random.Generator], tuple],
    rng: np.random.Generator,
    *,
    runs: int = 2,
    dynamic_shapes: dict | tuple | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    interpreter: bool = False,
):
    """Export ``fn`` on one set of inputs, compile it, and compare with torch eager on
    ``runs`` fresh sets (``make_inputs(rng)`` gives torch tensors). ``dynamic_shapes``:
    one spec per input (a dict for a single input). Returns the module."""
    model = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    example = make_inputs(rng)
    if isinstance(dynamic_shapes, dict):  # the one input's
        dynamic_shapes = (dynamic_shapes,)
    kwargs = {} if dynamic_shapes is None else {"dynamic_shapes": (tuple(dynamic_shapes),)}  # forward(*args)
    module = from_exported_program(torch.export.export(model.eval(), example, **kwargs))
    executors = [tk.build(module)] + ([tk.create_executor("interpreter", module).evaluate()] if interpreter else [])
    for _ in range(runs):
        inputs = make_inputs(rng)
        with torch.no_grad():
            expected = [t.numpy() for t in flat(model(*inputs))]
        for run in executors:
            got = run(*[t.numpy() for t in inputs])
            got = list(got) if isinstance(got, tuple) else [got]
            assert len(got) == len(expected)
            for k, (g, e) in enumerate(zip(got, expected)):
                assert g.shape == e.shape, f"output {k}: shape {g.shape}, torch {e.shape}"
                assert g.dtype == e.dtype, f"output {k}: dtype {g.dtype}, torch {e.dtype}"
                if e.dtype.kind == "f":
                    np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {k}")
                else:
                    np.testing.assert_array_equal(g, e, err_msg=f"output {k}")
    return module


def randn(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def randint(rng, low, high, shape, dtype=torch.int64):
    return torch.from_numpy(rng.integers(low, high, shape)).to(dtype)


# ---------------------------------------------------------------------------
# index_select, embedding, gather, x[idx]


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select(rng, index_dtype):
    def fn(x, i, j):
        return torch.index_select(x, 1, i), torch.index_select(x, -1, j), torch.index_select(x, 0, j[0])

    check(fn, lambda r: (randn(r, 4, 5, 7), randint(r, 0, 5, (6,), index_dtype), randint(r, 0, 4, (3,), index_dtype)), rng)


def test_embedding(rng):
    torch.manual_seed(0)
    model = torch.nn.Embedding(11, 6)
    check(model, lambda r: (randint(r, 0, 11, (3, 5)),), rng)
    weight = randn(rng, 9, 4)
    check(lambda i: F.embedding(i, weight) * 2.0, lambda r: (randint(r, 0, 9, (7,), torch.int32),), rng)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(rng, mode):
    """Bags of varying sizes (empty ones too: zeros), per-sample weights (sum), the last
    offset included, padding_idx left out of every reduction, 2-d input (fixed bags)."""
    torch.manual_seed(3)
    weight = randn(rng, 13, 5)

    def fn(i, o, p):
        with_last = torch.cat([o, torch.tensor([i.shape[0]])])
        outputs = [
            F.embedding_bag(i, weight, o, mode=mode),
            F.embedding_bag(i, weight, with_last, mode=mode, include_last_offset=True),
            F.embedding_bag(i, weight, o, mode=mode, padding_idx=4),
            F.embedding_bag(i.reshape(3, 3), weight, mode=mode),
        ]
        if mode == "sum":
            outputs.append(F.embedding_bag(i, weight, o, mode="sum", per_sample_weights=p))
        return tuple(outputs)

    def inputs(r):
        offsets = np.sort(r.integers(0, 10, 4))
        offsets[0] = 0
        indices = r.integers(0, 13, 9)
        indices[r.integers(0, 9, 2)] = 4  # some padding entries
        return torch.from_numpy(indices), torch.from_numpy(offsets), torch.from_numpy(r.random(9).astype(np.float32))

    check(fn, inputs, rng)


def test_embedding_with_positions(rng):
    """Token embedding plus learned positions, as in a GPT-style model."""

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(1)
            self.tokens = torch.nn.Embedding(13, 8)
            self.positions = torch.nn.Embedding(10, 8)

        def forward(self, ids):
            return self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))

    check(Embed(), lambda r: (randint(r, 0, 13, (2, 6)),), rng)


def test_gather(rng):
    def fn(x, i, j):
        return torch.gather(x, 1, i), torch.gather(x, -1, j), torch.gather(x, 0, j[:3])

    check(fn, lambda r: (randn(r, 4, 5, 6), randint(r, 0, 5, (4, 3, 6)), randint(r, 0, 4, (4, 5, 2))), rng)


def test_index_tensor(rng):
    def fn(x, i, j):
        return x[i], x[:, i], x[..., j], x[i, j], x[i[:, None], :, j[:2]], x[1:, j, 2:]

    # negative indices wrap, as in torch
    check(fn, lambda r: (randn(r, 5, 4, 6), randint(r, -4, 4, (3,)), randint(r, -4, 4, (3,), torch.int32)), rng)


def test_index_tensor_2d_index(rng):
    check(lambda x, i: x[i] * 2, lambda r: (randn(r, 7, 3), randint(r, -7, 7, (2, 4))), rng)


def test_nonzero_static(rng):
    """The static-size nonzero: fewer non-zeros than rows (filled), more (cut), bools, 1-d."""

    def fn(x, m):
        return (
            torch.nonzero_static(x, size=6), torch.nonzero_static(x, size=40, fill_value=7),
            torch.nonzero_static(m, size=3), torch.nonzero_static(x[0, 0], size=2),
            torch.nonzero_static(x[0, 0, 0], size=4),  # 0-d: (4, 0)
        )  # fmt: skip

    check(fn, lambda r: (randint(r, -1, 2, (3, 4, 5)).float(), torch.from_numpy(r.random(7) > 0.5)), rng, runs=3)


def test_masked_scatter(rng):
    """Marked positions filled from ``source`` in order: a vision-language model's image
    features put in place of its image tokens (a mask broadcast over the hidden axis, a
    symbolic sequence), a mask broadcast against a smaller input, an int tensor."""

    def fn(embeds, is_image, features, x, m, ints):
        placed = embeds.masked_scatter(is_image.unsqueeze(-1), features)
        return placed, x[0].masked_scatter(m[..., :1], x * 2), ints.masked_scatter(m, ints * -3)

    def inputs(r):
        seq = int(r.integers(6, 20))
        is_image = torch.from_numpy(r.random((2, seq)) < 0.4)
        features = randn(r, int(is_image.sum()) + 3, 8)  # (a few to spare: only those needed are read)
        m = torch.from_numpy(r.random((3, 4, 5)) < 0.5)
        return randn(r, 2, seq, 8), is_image, features, randn(r, 3, 4, 5), m, randint(r, -9, 9, (3, 4, 5))

    seq, rows = torch.export.Dim("seq", min=2, max=64), torch.export.Dim("rows", min=1, max=256)
    check(fn, inputs, rng, runs=3, dynamic_shapes=({1: seq}, {1: seq}, {0: rows}, None, None, None))


def test_put(rng):
    """Writes (sums) at flat indices, negative ones from the end, of any index shape."""

    def fn(x, index, source):
        return torch.put(x, index, source), torch.put(x, index[0], source[0] * 2, accumulate=True)

    def inputs(r):
        places = r.permutation(12)[:6]  # distinct places, half of them counted from the end
        index = torch.from_numpy(np.where(r.random(6) < 0.5, places - 12, places).reshape(2, 3))
        return randn(r, 3, 4), index, randn(r, 2, 3)

    check(fn, inputs, rng, runs=3)


# ---------------------------------------------------------------------------
# cumsum, argmax/argmin, max/min with indices, topk, sort


def test_cumsum(rng):
    def fn(x, i):
        return torch.cumsum(x, 1), torch.cumsum(x, -1), torch.cumsum(i, 0), torch.cumsum(x > 0, 1), x.cumsum(0, dtype=torch.float64)

    check(fn, lambda r: (randn(r, 3, 7, 5), randint(r, -9, 9, (4, 3), torch.int32)), rng)


def test_argmax_argmin(rng):
    def fn(x, i):
        return (
            torch.argmax(x, 1), torch.argmax(x, -1, keepdim=True), torch.argmax(x), torch.argmax(x, keepdim=True),
            torch.argmin(x, 0), torch.argmin(x, 2, keepdim=True), torch.argmax(i, 1), torch.argmin(i),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 4, 5, 3), randint(r, -3, 3, (6, 7), torch.int32)), rng)


def test_argmax_first_of_ties(rng):
    # few distinct values: many ties; torch returns the first maximal index
    check(
        lambda x: (torch.argmax(x, 1), torch.argmin(x, 0), x.max(1).indices),
        lambda r: (torch.from_numpy(r.integers(0, 3, (6, 9)).astype(np.float32)),),
        rng,
    )


def test_max_min_with_indices(rng):
    def fn(x):
        values, indices = torch.max(x, 1)
        low = torch.min(x, -1, keepdim=True)
        return values, indices, low.values, low.indices

    check(fn, lambda r: (randn(r, 3, 6, 4),), rng)


def test_topk(rng):
    def fn(x):
        return torch.topk(x, 3), torch.topk(x, 2, dim=0, largest=False), torch.topk(x, 1, dim=1, sorted=False)

    check(fn, lambda r: (randn(r, 5, 7),), rng)


def test_sort(rng):
    def fn(x):
        return torch.sort(x, 1), torch.sort(x, 0, descending=True), torch.argsort(x, -1), torch.sort(x, stable=True).indices

    check(fn, lambda r: (randn(r, 4, 6),), rng)


# ---------------------------------------------------------------------------
# logical and bitwise ops, masked_fill, where, clamp


def test_logical_ops(rng):
    def fn(a, b, x, i):
        return (
            torch.logical_and(a, b), torch.logical_or(a, b), torch.logical_xor(a, b), torch.logical_not(a),
            torch.logical_and(x, b), torch.logical_not(x), torch.logical_or(i, a),
            a & b, a | b, a ^ b, ~a, ~i,
        )  # fmt: skip

    def inputs(r):
        x = randn(r, 4, 5)
        x[0, :2] = 0.0
        return randn(r, 4, 5) > 0, randn(r, 5) > 0, x, randint(r, -2, 2, (4, 5), torch.int32)

    check(fn, inputs, rng)


def test_any_all(rng):
    def fn(m, x):
        return m.any(1), m.all(-1, keepdim=True), m.any(), torch.all(m), x.any(0), torch.any(m, (0, 2)), m[0, 0, 0].any()

    def inputs(r):
        x = torch.from_numpy(r.integers(0, 2, (4, 3, 5)).astype(np.float32))
        return torch.from_numpy(r.random((3, 4, 2)) < 0.7), x

    check(fn, inputs, rng)


def test_masked_fill_and_where_with_scalars(rng):
    def fn(x, m):
        return (
            x.masked_fill(m, -1e9), x.masked_fill(m, torch.tensor(2.0)), x.masked_fill(m[0], float("-inf")),
            torch.where(m, x, 0.0), torch.where(m, 1.0, x), torch.where(m, 1.0, 0.0), torch.where(m, 2, x),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 3, 6), randn(r, 3, 6) > 0), rng)


def test_causal_mask(rng):
    """The causal attention mask as GPT-style blocks build it."""

    def fn(x):
        t = x.shape[-1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        return x.masked_fill(mask, float("-inf")).softmax(-1), torch.tril(x), torch.triu(x, -1)

    check(fn, lambda r: (randn(r, 2, 5, 5),), rng)


def test_clamp_variants(rng):
    def fn(x, low, high):
        return (
            torch.clamp(x, low, high), torch.clamp(x, min=low), torch.clamp(x, max=high),
            torch.clamp_min(x, 0.1), torch.clamp_max(x, high), x.clamp(-0.5, 0.5),
            torch.clamp(x.int(), -1, 1),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 4, 5), randn(r, 5) - 0.5, randn(r, 4, 1) + 0.5), rng)


# ---------------------------------------------------------------------------
# creation


def test_arange_full_zeros_ones(rng):
    def fn(x):
        return (
            x + torch.arange(6), torch.arange(0.5, 3.5, 0.5), torch.arange(1, 12, 3), torch.arange(5, dtype=torch.float32),
            torch.arange(10, 0, -3), torch.full((2, 3), 2.5), torch.zeros(6), torch.ones(2, 6, dtype=torch.int32),
            torch.scalar_tensor(3.0) * x, torch.full((2,), True), torch.empty(3).fill_(1.0),
            torch.empty_permuted((2, 3, 4), (0, 2, 1)).fill_(2.0) + x[:3, :4],
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 4, 6),), rng)


def test_like_and_new(rng):
    def fn(x):
        return (
            torch.full_like(x, 3.0), torch.zeros_like(x), torch.ones_like(x, dtype=torch.bool),
            x.new_zeros(3), x.new_ones((2, 2)), x.new_full((4,), -1.0), torch.zeros_like(x, dtype=torch.int64),
            x.new_empty_strided((2, 3), (1, 2)).fill_(5.0) * x[:2, :3],
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 3, 5),), rng)


def test_take_of_any_rank(rng):
    """``torch.take`` (kept whole in the import: torch's decomposition fails on a 0-d
    input): the input flattened, indexed by a 0-d, 1-d or 2-d index with negative
    positions counted from the end."""

    def fn(x, s, i):
        return torch.take(x, i), torch.take(s, i[0, :1] * 0), torch.take(s, torch.tensor(-1)), torch.take(x, i[1])

    def inputs(r):
        return randn(r, 3, 5), randn(r), torch.from_numpy(r.integers(-15, 15, (2, 4)))

    check(fn, inputs, rng)


def test_eye_and_triangle_indices(rng):
    def fn(x):
        rows, columns = torch.tril_indices(5, 4, -1), torch.triu_indices(3, 6, 2)
        return (
            x @ torch.eye(6), torch.eye(3, 5, dtype=torch.int32), torch.eye(4, dtype=torch.bool), rows, columns,
            x[rows[0], rows[1]], torch.tril_indices(4, 4, dtype=torch.int32),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 5, 6),), rng)


def test_eye_of_a_symbolic_size(rng):
    """torch.eye(n) for a symbolic n: compared aranges (the decomposition's are uint8)."""
    batch = torch.export.Dim("batch", min=2, max=64)

    def fn(x):
        return torch.eye(x.shape[0]) @ x * 2, torch.eye(x.shape[0], 3, dtype=torch.int64)

    check(fn, lambda r: (randn(r, int(r.integers(2, 9)), 5),), rng, runs=3, dynamic_shapes={0: batch})


def test_creation_with_a_dynamic_batch(rng):
    batch = torch.export.Dim("batch", min=2, max=64)

    def fn(x):
        n = x.shape[0]
        return torch.zeros_like(x) + x, torch.full((n, 3), 2.0), torch.arange(n) * 2, torch.ones(n, dtype=torch.int32)

    def inputs(r):
        return (randn(r, int(r.integers(2, 9)), 5),)

    check(fn, inputs, rng, runs=3, dynamic_shapes={0: batch}, interpreter=True)


# ---------------------------------------------------------------------------
# var / std


def test_var_std(rng):
    def fn(x):
        return (
            torch.var(x, 1), torch.var(x, 1, keepdim=True), torch.var(x), torch.std(x, (0, 2), correction=0),
            torch.std(x, -1, keepdim=True, correction=2), *torch.var_mean(x, 1), *torch.std_mean(x, (0, 1), keepdim=True),
            torch.var(x, 0, unbiased=False), torch.std(x),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 4, 5, 3) * 3 + 1,), rng)


def test_layer_norm_by_hand(rng):
    """LayerNorm written with var, as some models do."""

    def fn(x):
        mean = x.mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)

    check(fn, lambda r: (randn(r, 3, 8),), rng)


# ---------------------------------------------------------------------------
# padding, stack, split, chunk, unbind, flip, repeat, views


def test_constant_pad(rng):
    def fn(x, i):
        return (
            F.pad(x, (1, 2, 0, 3), value=1.5), F.pad(x, (-1, 2)), F.pad(x, (0, 0, -2, -1, 1, 1)),
            F.pad(i, (2, -3, 1, 1), value=7), torch.constant_pad_nd(x, (1, 1)),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 2, 5, 6), randint(r, -9, 9, (3, 5), torch.int32)), rng)


def test_stack(rng):
    check(lambda x, y: (torch.stack([x, y], 1), torch.stack([x, y, x], -1), torch.stack([x])), lambda r: (randn(r, 3, 4), randn(r, 3, 4)), rng)


def test_split_chunk_unbind(rng):
    def fn(x):
        a = torch.split(x, 2, 1)
        b = torch.split(x, [1, 5], -1)
        c = torch.chunk(x, 3, -1)  # sizes 2, 2, 2
        d = torch.chunk(x, 2, 1)  # sizes 3, 2
        e = torch.unbind(x, 1)
        return (*a, *b, *c, *d, *e, x.unbind(-1)[-1])

    check(fn, lambda r: (randn(r, 3, 5, 6),), rng)


def test_channel_shuffle_with_chunk(rng):
    """ShuffleNet style: split the channels, work on one half, concatenate, shuffle."""

    def fn(x):
        left, right = x.chunk(2, dim=1)
        y = torch.cat([left, torch.relu(right)], 1)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

    check(fn, lambda r: (randn(r, 2, 8, 3, 3),), rng)


def test_flip_repeat_views(rng):
    def fn(x):
        return (
            torch.flip(x, (0, -1)), x.flip(1), x.repeat(2, 1, 3), torch.tile(x, (2,)), x.repeat(2, 1, 1, 1),
            x[:, :1].squeeze(1), x.unsqueeze(-1), x.flatten(1), x[:, -1], x[-2], x[:, ::2, 1::3],
        )  # fmt: skip

    check(fn, lambda r: (randn(r, 3, 4, 5),), rng)


# ---------------------------------------------------------------------------
# a dynamic batch: the ops above with a symbolic leading dim, compiled and interpreted


def _batch(r) -> int:
    return int(r.integers(2, 7))


def test_index_ops_with_a_dynamic_batch(rng):
    batch = torch.export.Dim("batch", min=2, max=64)
    weight = randn(rng, 11, 4)

    def fn(ids, x, i):
        return F.embedding(ids, weight), x[:, i], torch.index_select(x, 1, ids[:, 0].abs()), x.flip(0), torch.gather(x, 1, ids)

    def inputs(r):
        n = _batch(r)
        return randint(r, 0, 6, (n, 3)), randn(r, n, 6), randint(r, -6, 6, (4,))  # x[:, i] wraps negatives

    check(fn, inputs, rng, runs=3, dynamic_shapes=({0: batch}, {0: batch}, None), interpreter=True)


def test_reductions_and_shape_ops_with_a_dynamic_batch(rng):
    batch = torch.export.Dim("batch", min=2, max=64)

    def fn(x):
        return (
            x.argmax(1), x.argmin(0, keepdim=True), torch.topk(x, 2, 1), torch.sort(x, 0), x.var(1), x.std(0, correction=0),
            x.cumsum(0), (x > 0).any(0), F.pad(x, (1, 2)), torch.split(x, [2, 4], 1), torch.stack([x, x], 1),
            x.masked_fill(x > 0, 0.0), torch.where(x > 0, x, 1.0),
        )  # fmt: skip

    check(fn, lambda r: (randn(r, _batch(r), 6),), rng, runs=3, dynamic_shapes={0: batch}, interpreter=True)
