"""torch's random ops through export, import and build: shapes, dtypes, ranges and the
statistics of the distributions (the values are our generator's, not torch's), dropout
and rrelu in training, and symbolic batch sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models are written in torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402


def _build(fn, *inputs, dynamic_shapes=None):
    class Model(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    ep = torch.export.export(Model(), inputs, dynamic_shapes=dynamic_shapes)
    return tk.build(from_exported_program(ep))


def _x(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def _close(value: float, want: float, spread: float, count: int) -> bool:
    """``value`` within 6 standard errors of ``want`` (``spread``: one draw's std)."""
    return abs(value - want) < 6 * spread / math.sqrt(count)


N = (211, 293)  # 61823 draws


def test_rand_randn_dtypes_and_moments():
    lib = _build(lambda x: (torch.rand(*N), torch.randn(*N, dtype=torch.float64), torch.rand_like(x, dtype=torch.float16)), _x(37, 5))
    u, n, h = lib(_x(37, 5).numpy())
    assert u.dtype == np.float32 and n.dtype == np.float64 and h.dtype == np.float16 and h.shape == (37, 5)
    assert 0 <= u.min() and u.max() < 1 and 0 <= h.min() and h.max() <= 1
    assert _close(u.mean(), 0.5, math.sqrt(1 / 12), u.size) and abs(u.var() - 1 / 12) < 0.003
    assert _close(n.mean(), 0.0, 1.0, n.size) and abs(n.std() - 1) < 0.02


def test_randint_ranges_and_dtypes():
    lib = _build(lambda x: (torch.randint(3, 11, N), torch.randint_like(x, 7, dtype=torch.int32), torch.randint(5, (9,))), _x(4, 6))
    a, b, c = lib(_x(4, 6).numpy())
    assert a.dtype == np.int64 and b.dtype == np.int32 and b.shape == (4, 6)
    assert set(np.unique(a)) == set(range(3, 11))
    counts = np.bincount(a.ravel() - 3) / a.size
    assert np.all(np.abs(counts - 1 / 8) < 6 * math.sqrt(1 / 8 * 7 / 8 / a.size))
    assert b.min() >= 0 and b.max() < 7 and c.min() >= 0 and c.max() < 5


def test_in_place_samplers():
    def sample(x):
        e = torch.empty_like(x)
        return (
            e.clone().uniform_(-2.0, 3.0), e.clone().normal_(1.5, 0.5), e.clone().exponential_(4.0),
            e.clone().geometric_(0.3), e.clone().log_normal_(0.1, 0.2), e.clone().cauchy_(1.0, 2.0),
        )

    x = _x(*N)
    u, n, e, g, ln, c = _build(sample, x)(x.numpy())
    count = u.size
    assert -2 <= u.min() and u.max() < 3 and _close(u.mean(), 0.5, 5 / math.sqrt(12), count)
    assert _close(n.mean(), 1.5, 0.5, count) and abs(n.std() - 0.5) < 0.01
    assert e.min() >= 0 and _close(e.mean(), 0.25, 0.25, count)
    assert g.min() >= 1 and np.all(g == np.round(g)) and _close(g.mean(), 1 / 0.3, math.sqrt(0.7) / 0.3, count)
    assert _close(np.log(ln).mean(), 0.1, 0.2, count)
    assert abs(np.median(c) - 1.0) < 0.05 and abs(np.mean(np.abs(c - 1) < 2) - 0.5) < 0.01  # quartiles at 1 -+ 2


def test_normal_with_tensor_parameters():
    mean, std = _x(50, 40), torch.rand(40) + 0.5
    lib = _build(lambda m, s: (torch.normal(m, s), torch.normal(m, 2.0), torch.normal(3.0, s.expand(50, 40))), mean, std)
    samples = [lib(mean.numpy(), std.numpy()) for _ in range(60)]
    a = np.stack([s[0] for s in samples])
    assert a.shape == (60, 50, 40)
    z = (a - mean.numpy()) / std.numpy()
    assert _close(z.mean(), 0, 1, z.size) and abs(z.std() - 1) < 0.02
    b = np.stack([s[1] for s in samples])
    assert abs(((b - mean.numpy()) / 2).std() - 1) < 0.02
    c = np.stack([s[2] for s in samples])
    assert _close(((c - 3) / std.numpy()).mean(), 0, 1, c.size)


def test_bernoulli():
    p = torch.rand(97, 113)
    lib = _build(lambda p: (torch.bernoulli(p), torch.bernoulli(torch.zeros_like(p), 0.25)), p)
    hits = [lib(p.numpy()) for _ in range(40)]
    a, b = np.stack([h[0] for h in hits]), np.stack([h[1] for h in hits])
    assert set(np.unique(a)) <= {0.0, 1.0} and a.dtype == np.float32
    assert np.abs(a.mean(0) - p.numpy()).max() < 6 * 0.5 / math.sqrt(40)
    assert _close(b.mean(), 0.25, math.sqrt(0.25 * 0.75), b.size)


def test_randperm_is_a_permutation_and_varies():
    lib = _build(lambda x: torch.randperm(101) + x.sum().long(), torch.zeros(3))
    first, second = lib(np.zeros(3, np.float32)), lib(np.zeros(3, np.float32))
    assert sorted(first) == list(range(101)) and sorted(second) == list(range(101))
    assert not np.array_equal(first, second) and first.dtype == np.int64


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_frequencies(replacement):
    weights = torch.rand(3, 7) + 0.05
    draws = 7 if not replacement else 50
    lib = _build(lambda w: torch.multinomial(w, draws, replacement=replacement), weights)
    samples = np.concatenate([lib(weights.numpy()) for _ in range(400)], axis=1)
    assert samples.dtype == np.int64 and samples.min() >= 0 and samples.max() < 7
    if not replacement:  # each row of each call is a permutation of the categories
        assert np.all(np.sort(lib(weights.numpy()), axis=1) == np.arange(7))
        first = samples[:, ::7]  # the first pick follows the weights
        p = weights.numpy() / weights.numpy().sum(1, keepdims=True)
        freq = np.stack([np.bincount(r, minlength=7) for r in first]) / first.shape[1]
        assert np.abs(freq - p).max() < 6 * 0.5 / math.sqrt(first.shape[1])
        return
    p = weights.numpy() / weights.numpy().sum(1, keepdims=True)
    freq = np.stack([np.bincount(r, minlength=7) for r in samples]) / samples.shape[1]
    assert np.abs(freq - p).max() < 6 * 0.5 / math.sqrt(samples.shape[1])


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_checks_its_weights_as_torch(replacement):
    lib = _build(lambda w: torch.multinomial(w, 2, replacement=replacement), torch.rand(2, 5) + 0.1)
    good = np.array([[0.2, 0.0, 0.3, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0, 2.0]], np.float32)
    assert lib(good).shape == (2, 2) and set(lib(good)[1]) <= {0, 4}
    bad = {
        "contains either `inf`, `nan` or element < 0": [[0.2, -0.1, 0.3, 0.5, 0.0]], "`nan`": [[0.2, np.nan, 0, 0, 0]],
        "`inf`": [[np.inf, 0, 0, 0, 0]], r"sum of probabilities <= 0": [[0, 0, 0, 0, 0]],
    }  # fmt: skip
    for words, row in bad.items():
        weights = np.concatenate([np.array(row, np.float32), good[1:]])
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.from_numpy(weights), 2, replacement=replacement)
        with pytest.raises(RuntimeError, match=words):
            lib(weights)
    one = lib(np.concatenate([np.array([[0, 0, 0, 0, 1.0]], np.float32), good[1:]]))[0]  # one positive weight is enough
    assert one[0] == 4 and (replacement and one[1] == 4 or not replacement and one[1] != 4)


def test_dropout_in_training():
    x = _x(64, 129)
    lib = _build(lambda x: torch.nn.functional.dropout(x, 0.3, training=True), x)
    y = lib(x.numpy())
    dropped = y == 0
    assert _close(dropped.mean(), 0.3, math.sqrt(0.3 * 0.7), y.size)
    np.testing.assert_allclose(y[~dropped], x.numpy()[~dropped] / 0.7, rtol=1e-6)
    assert not np.array_equal(lib(x.numpy()) == 0, dropped)  # a new mask per call


def test_dropout_module_in_train_mode_and_its_mask():
    x = _x(40, 31)
    lib = _build(lambda x: torch.ops.aten.native_dropout(x, 0.6, True), x)
    y, mask = lib(x.numpy())
    assert mask.dtype == np.bool_ and _close((~mask).mean(), 0.6, math.sqrt(0.24), mask.size)
    np.testing.assert_allclose(y, np.where(mask, x.numpy() / 0.4, 0), rtol=1e-6)
    model = torch.nn.Sequential(torch.nn.Linear(31, 8), torch.nn.Dropout(0.5)).train()
    ep = torch.export.export(model, (x,))
    out = tk.build(from_exported_program(ep))(x.numpy())
    assert 0.3 < (out == 0).mean() < 0.7


def test_feature_and_alpha_dropout():
    x = _x(16, 24, 5, 7)
    lib = _build(
        lambda x: (torch.nn.functional.dropout2d(x, 0.5, training=True), torch.nn.functional.alpha_dropout(x, 0.2, training=True)), x
    )
    channels, alpha = lib(x.numpy())
    zero_channel = np.all(channels == 0, axis=(2, 3))
    kept = ~zero_channel
    np.testing.assert_allclose(channels[kept], x.numpy()[kept] * 2, rtol=1e-6)  # whole channels, scaled by 1/(1-p)
    assert _close(zero_channel.mean(), 0.5, 0.5, zero_channel.size)
    big = _x(200, 500)
    a = _build(lambda x: torch.nn.functional.alpha_dropout(x, 0.2, training=True), big)(big.numpy())
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1) < 0.02  # alpha dropout keeps a unit normal's moments
    assert alpha.shape == x.shape


def test_rrelu_in_training():
    x = _x(80, 90)
    y, noise = _build(lambda x: torch.ops.aten.rrelu_with_noise_functional(x, torch.empty_like(x), 0.1, 0.3, True), x)(x.numpy())
    positive = x.numpy() > 0
    np.testing.assert_array_equal(y[positive], x.numpy()[positive])
    slopes = noise[~positive]
    assert 0.1 <= slopes.min() and slopes.max() < 0.3 and np.all(noise[positive] == 1)
    np.testing.assert_allclose(y[~positive], x.numpy()[~positive] * slopes, rtol=1e-6)


def test_symbolic_batch_randn_like():
    x = _x(6, 9)
    lib = _build(lambda x: x + torch.randn_like(x), x, dynamic_shapes=(({0: torch.export.Dim("batch")},),))
    for batch in (2, 1031):
        inp = _x(batch, 9).numpy()
        noise = lib(inp) - inp
        assert noise.shape == (batch, 9)
    assert abs(noise.std() - 1) < 0.05


def test_a_vae_reparameterisation_trains_nothing_but_samples():
    """The classic use in a model's forward: z = mu + exp(logvar / 2) * eps."""

    class VAE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.dec = torch.nn.Linear(20, 2 * 4), torch.nn.Linear(4, 20)

        def forward(self, x):
            mu, logvar = self.enc(x).chunk(2, dim=-1)
            z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
            return self.dec(z), mu

    model, x = VAE().eval(), _x(300, 20)
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    out, mu = lib(x.numpy())
    np.testing.assert_allclose(mu, model(x)[1].detach().numpy(), rtol=1e-5, atol=1e-5)
    # averaged over many calls the decoder sees mu plus zero-mean noise: E[dec(z)] = dec(mu)
    mean_out = np.mean([lib(x.numpy())[0] for _ in range(200)], axis=0)
    want = model.dec(model(x)[1]).detach().numpy()
    assert np.abs(mean_out - want).mean() < 0.05


def test_an_explicit_generator_is_refused():
    """torch exports a call with a generator as its own overload: named as unsupported."""
    g = torch.Generator().manual_seed(0)
    with pytest.raises(tk.UnsupportedOperatorError, match="aten.rand.generator"):
        _build(lambda x: x + torch.rand(3, generator=g), torch.zeros(3))


def test_random_ops_inside_control_flow_are_refused_by_name():
    def branchy(x):
        return torch.cond(x.sum() > 0, lambda x: x + torch.rand_like(x), lambda x: x - 1, (x,))

    class Model(torch.nn.Module):
        def forward(self, x):
            return branchy(x)

    ep = torch.export.export(Model(), (torch.randn(3, 4),))
    with pytest.raises(Exception, match="random numbers inside control flow"):
        from_exported_program(ep)


ALPHA = 1.7580993408473766  # SELU's negative saturation, -alpha * scale


@pytest.mark.parametrize("flavour, per_channel, alpha", [
    (torch.nn.functional.dropout2d, True, False),
    (torch.nn.functional.feature_alpha_dropout, True, True),
    (torch.nn.functional.alpha_dropout, False, True),
])
def test_dropout_flavours_without_decomposition(flavour, per_channel, alpha):
    """aten.feature_dropout / alpha_dropout / feature_alpha_dropout kept whole: dropped
    elements take 0 (alpha: the saturation value, scaled), kept ones x / (1 - p) (alpha:
    a * x + alpha * a * p); a channel's elements share their decision when per channel."""
    p = 0.4

    class Model(torch.nn.Module):
        def forward(self, x):
            return flavour(x, p, training=True)

    x = torch.randn(6, 40, 9, 11)
    y = tk.build(from_exported_program(torch.export.export(Model(), (x,)), decompose=False))(x.numpy())
    if alpha:
        a = 1 / math.sqrt((ALPHA**2 * p + 1) * (1 - p))
        kept_value, dropped_value = a * x.numpy() + ALPHA * a * p, np.full(y.shape, ALPHA * a * (p - 1))
    else:
        kept_value, dropped_value = x.numpy() / (1 - p), np.zeros(y.shape)
    kept = np.isclose(y, kept_value, rtol=1e-5, atol=1e-5)
    dropped = np.isclose(y, dropped_value, rtol=1e-5, atol=1e-5)
    assert np.all(kept | dropped)
    assert _close(dropped.mean(), p, 0.5, 240 if per_channel else y.size)
    channel_decisions = kept.reshape(6, 40, -1)
    assert np.all(channel_decisions == channel_decisions[:, :, :1]) == per_channel
