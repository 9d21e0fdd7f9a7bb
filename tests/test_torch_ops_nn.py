"""torch frontend, nn side: 1-d and transposed convolution, upsampling, attention
(scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer, a GPT-style block),
activations, dropout and group norm. Each module is exported from plain torch.nn code with random
weights from a fixed seed, compiled with tk.build, and compared with torch eager on fresh random
inputs (relative L2 error <= 1e-5 in float32)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
nn = torch.nn
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph import nn as graph_nn  # noqa: E402
from tensorkiln.dialects.graph.types import shape_of  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

TOLERANCE = 1e-5


class Fn(nn.Module):
    """A module around a function of its inputs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(got - expected) / (norm if norm else 1.0))


def _fresh(rng: np.random.Generator, example):
    if example.dtype == torch.bool:
        return torch.from_numpy(rng.random(tuple(example.shape)) < 0.5)
    return torch.from_numpy(rng.standard_normal(tuple(example.shape)).astype(np.float32) * 2)


def _flat(result) -> list:
    if isinstance(result, tuple | list):
        return [r for item in result for r in _flat(item)]
    return [] if result is None else [result]


def import_module(model: nn.Module, *examples, **export_kwargs):
    torch.manual_seed(0)
    ep = torch.export.export(model.eval(), tuple(examples), **export_kwargs)
    return from_exported_program(ep)


def check(rng, model: nn.Module, *examples, runs: int = 2, seed: int = 0):
    """Export ``model`` (weights from ``seed``) on ``examples``, compile it, and compare it with torch
    eager on ``runs`` fresh random inputs of the same shapes; return the graph module and the library."""
    torch.manual_seed(seed)
    model = model.eval()
    for p in model.parameters():  # deterministic weights whatever the module's init
        p.data = torch.randn_like(p) * 0.5
    ep = torch.export.export(model, tuple(examples))
    module = from_exported_program(ep)
    lib = tk.build(module)
    for _ in range(runs):
        inputs = [_fresh(rng, x) for x in examples]
        with torch.no_grad():
            expected = [e.numpy() for e in _flat(model(*inputs))]
        got = lib(*(x.numpy() for x in inputs))
        got = list(got) if isinstance(got, tuple) else [got]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype
            assert _relative_error(g, e) <= TOLERANCE, _relative_error(g, e)
    return module, lib


def ops_of(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


# ---------------------------------------------------------------------------
# 1-d convolution


@pytest.mark.parametrize(
    "channels, out, kernel, kwargs, length",
    [
        (3, 5, 3, {}, 11),
        (4, 6, 3, {"stride": 2, "padding": 1}, 13),
        (6, 9, 3, {"stride": 2, "padding": 2, "dilation": 2, "groups": 3}, 17),
        (5, 5, 5, {"padding": 2, "groups": 5, "bias": False}, 9),  # depthwise, "same"
        (3, 4, 3, {"padding": "same", "dilation": 3}, 10),
        (2, 3, 1, {"stride": 3}, 7),
    ],
)
def test_conv1d(rng, channels, out, kernel, kwargs, length):
    check(rng, nn.Conv1d(channels, out, kernel, **kwargs), torch.zeros(2, channels, length))


class OneValueConv(nn.Module):
    """aten.convolution with one value for both spatial dims (what padding="valid" and
    hand-written ATen calls give)."""

    def __init__(self):
        super().__init__()
        self.valid = nn.Conv2d(4, 6, 3, padding="valid", groups=2)
        self.weight = nn.Parameter(torch.randn(5, 6, 3, 3) * 0.2)

    def forward(self, x):
        return torch.ops.aten.convolution(self.valid(x), self.weight, None, [2], [1], [1], False, [0], 1)


def test_conv2d_with_one_value_for_both_dims(rng):
    check(rng, OneValueConv(), torch.zeros(2, 4, 11, 10))


# ---------------------------------------------------------------------------
# transposed convolution


@pytest.mark.parametrize(
    "channels, out, kernel, kwargs, hw",
    [
        (3, 5, 3, {}, (5, 6)),
        (4, 6, 3, {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (5, 7)),
        (3, 4, (2, 3), {"stride": (1, 2), "padding": (0, 1), "output_padding": (0, 1)}, (4, 5)),
        (4, 4, 3, {"stride": 3, "padding": 2, "output_padding": 2, "dilation": 2, "groups": 4, "bias": False}, (3, 5)),
        (2, 3, 4, {"stride": 2, "padding": 1}, (7, 3)),  # the usual 2x upsampling layer
        (2, 2, 3, {"padding": 1, "dilation": 1}, (1, 1)),
    ],
)
def test_conv_transpose2d(rng, channels, out, kernel, kwargs, hw):
    module, _ = check(rng, nn.ConvTranspose2d(channels, out, kernel, **kwargs), torch.zeros(2, channels, *hw))
    assert "graph.conv2d_transpose" in ops_of(module)


@pytest.mark.parametrize(
    "kwargs", [{}, {"stride": 2, "padding": 1, "output_padding": 1}, {"stride": 3, "dilation": 2, "groups": 2}]
)
def test_conv_transpose1d(rng, kwargs):
    check(rng, nn.ConvTranspose1d(4, 6, 3, **kwargs), torch.zeros(2, 4, 9))


# ---------------------------------------------------------------------------
# upsampling


@pytest.mark.parametrize(
    "mode, kwargs",
    [
        ("nearest", {"scale_factor": 2}),
        ("nearest", {"scale_factor": 2.5}),
        ("nearest", {"scale_factor": (1.7, 0.6)}),
        ("nearest", {"scale_factor": 1.1}),  # same size: torch copies
        ("nearest", {"size": (11, 4)}),
        ("nearest-exact", {"scale_factor": 1.7}),
        ("nearest-exact", {"size": (9, 13)}),
        ("bilinear", {"scale_factor": 2, "align_corners": False}),
        ("bilinear", {"scale_factor": 2.5, "align_corners": True}),
        ("bilinear", {"scale_factor": (0.6, 1.3), "align_corners": False}),
        ("bilinear", {"size": (9, 13), "align_corners": True}),
        ("bilinear", {"size": (1, 2), "align_corners": True}),
        ("bilinear", {"size": (5, 14), "align_corners": False}),  # one axis keeps its size
        ("bilinear", {"scale_factor": 1.7, "recompute_scale_factor": True}),
    ],
)
def test_upsample2d(rng, mode, kwargs):
    module, _ = check(rng, Fn(lambda x: F.interpolate(x, mode=mode, **kwargs)), torch.zeros(2, 3, 5, 7))
    assert ops_of(module) == ["graph.resize2d"]


@pytest.mark.parametrize(
    "model",
    [nn.Upsample(scale_factor=2, mode="nearest"), nn.Upsample(size=(8, 11), mode="bilinear", align_corners=True)],
)
def test_upsample_module(rng, model):
    check(rng, model, torch.zeros(1, 2, 4, 6))


@pytest.mark.parametrize(
    "mode, kwargs",
    [
        ("nearest", {"scale_factor": 2.5}),
        ("nearest-exact", {"size": 10}),
        ("linear", {"scale_factor": 1.7}),
        ("linear", {"size": 4, "align_corners": True}),
    ],
)
def test_upsample1d(rng, mode, kwargs):
    check(rng, Fn(lambda x: F.interpolate(x, mode=mode, **kwargs)), torch.zeros(2, 3, 7))


def test_upsample_in_a_decoder(rng):
    """A U-Net style decoder step: upsample, concat with the skip, conv."""

    class Up(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(6, 3, 2, stride=2)
            self.conv = nn.Conv2d(6, 4, 3, padding=1)

        def forward(self, x, skip):
            h = torch.cat([self.up(x), skip], dim=1)
            return F.relu(self.conv(F.interpolate(h, scale_factor=1.5, mode="bilinear")))

    check(rng, Up(), torch.zeros(2, 6, 3, 4), torch.zeros(2, 3, 6, 8))


# ---------------------------------------------------------------------------
# scaled dot-product attention


def _sdpa(**kwargs):
    return Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs))


def _sdpa_mask(**kwargs):
    return Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs))


@pytest.mark.parametrize(
    "kwargs, q_shape, kv_shape",
    [
        ({}, (2, 3, 5, 8), (2, 3, 7, 8)),
        ({"is_causal": True}, (2, 3, 5, 8), (2, 3, 5, 8)),
        ({"is_causal": True}, (1, 2, 7, 4), (1, 2, 5, 4)),  # more queries than keys
        ({"scale": 0.3}, (3, 5, 6), (3, 9, 6)),  # rank 3
        ({"is_causal": True, "enable_gqa": True}, (2, 6, 5, 4), (2, 2, 5, 4)),
    ],
)
def test_sdpa(rng, kwargs, q_shape, kv_shape):
    q, k, v = torch.zeros(q_shape), torch.zeros(kv_shape), torch.zeros(kv_shape)
    module, _ = check(rng, _sdpa(**kwargs), q, k, v)
    names = ops_of(module)
    assert names.count("graph.batch_matmul") == 2 and names.count("graph.softmax") == 1


def test_sdpa_value_head_size_differs(rng):
    check(rng, _sdpa(), torch.zeros(2, 3, 5, 8), torch.zeros(2, 3, 7, 8), torch.zeros(2, 3, 7, 6))


@pytest.mark.parametrize("mask_shape", [(5, 7), (2, 1, 5, 7), (2, 3, 5, 7)])
def test_sdpa_float_mask(rng, mask_shape):
    check(rng, _sdpa_mask(), torch.zeros(2, 3, 5, 8), torch.zeros(2, 3, 7, 8), torch.zeros(2, 3, 7, 8),
          torch.zeros(mask_shape))  # fmt: skip


@pytest.mark.parametrize("mask_shape", [(5, 7), (2, 1, 1, 7)])
def test_sdpa_bool_mask(rng, mask_shape):
    check(rng, _sdpa_mask(scale=0.25), torch.zeros(2, 3, 5, 8), torch.zeros(2, 3, 7, 8), torch.zeros(2, 3, 7, 8),
          torch.zeros(mask_shape, dtype=torch.bool))  # fmt: skip


def test_sdpa_fully_masked_rows_give_zeros(rng):
    """torch eager (and its safe softmax) gives zeros for a query that may attend to nothing."""
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1] = False
    float_mask = torch.zeros(4, 6)
    float_mask[2] = float("-inf")
    model = Fn(lambda q, k, v: (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                                F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)))  # fmt: skip
    examples = [torch.zeros(1, 2, 4, 3), torch.zeros(1, 2, 6, 3), torch.zeros(1, 2, 6, 3)]
    _, lib = check(rng, model, *examples)
    masked, float_masked = lib(*(_fresh(rng, x).numpy() for x in examples))
    assert np.all(masked[:, :, 1] == 0) and np.all(float_masked[:, :, 2] == 0)
    assert np.all(np.isfinite(masked)) and np.all(np.isfinite(float_masked))


# ---------------------------------------------------------------------------
# transformer layers


class SelfAttention(nn.Module):
    def __init__(self, batch_first: bool, need_weights: bool, **kwargs):
        super().__init__()
        self.attn = nn.MultiheadAttention(12, 3, batch_first=batch_first, **kwargs)
        self.need_weights = need_weights

    def forward(self, x):
        return self.attn(x, x, x, need_weights=self.need_weights)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention(rng, batch_first, need_weights):
    shape = (2, 5, 12) if batch_first else (5, 2, 12)
    check(rng, SelfAttention(batch_first, need_weights), torch.zeros(shape))


def test_multihead_attention_float_mask(rng):
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x, mask):
            return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]

    check(rng, Masked(), torch.zeros(2, 5, 8), torch.zeros(5, 5))


def _missing_converters(*names: str) -> list[str]:
    from tensorkiln.frontends.torch.registry import CONVERTERS

    return [name for name in names if name not in CONVERTERS]


# MultiheadAttention turns bool masks into float ones (full_like, scalar_tensor) and splits its
# packed projection for kdim/vdim (split_with_sizes): tensor-op converters, not this module's.
_TENSOR_OPS = ("aten.full_like.default", "aten.scalar_tensor.default", "aten.split_with_sizes.default")


@pytest.mark.skipif(bool(_missing_converters(*_TENSOR_OPS)), reason=f"needs converters for {_TENSOR_OPS}")
def test_multihead_cross_attention_with_masks(rng):
    class Cross(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=5)

        def forward(self, x, memory, values, padding, mask):
            return self.attn(x, memory, values, key_padding_mask=padding, attn_mask=mask, need_weights=False)[0]

    padding = torch.zeros(2, 7, dtype=torch.bool)
    mask = torch.zeros(4, 7, dtype=torch.bool)
    check(rng, Cross(), torch.zeros(2, 4, 8), torch.zeros(2, 7, 6), torch.zeros(2, 7, 5), padding, mask)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer(rng, norm_first, activation):
    layer = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.1, activation=activation, norm_first=norm_first,
                                       batch_first=norm_first)  # fmt: skip
    shape = (2, 5, 16) if norm_first else (5, 2, 16)
    check(rng, layer, torch.zeros(shape))


class GPTBlock(nn.Module):
    """nanoGPT's block: pre-LayerNorm causal self-attention and a GELU (tanh) MLP, with residuals."""

    def __init__(self, width: int = 24, heads: int = 3):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attention(self, x):
        batch, length, width = x.shape
        qkv = self.c_attn(x)
        # slices rather than qkv.split(width, dim=2): same maths, no split converter needed here
        q, k, v = (qkv[:, :, i * width : (i + 1) * width] for i in range(3))
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(batch, length, width))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def test_gpt_block(rng):
    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wpe = nn.Parameter(torch.zeros(7, 24))
            self.block = GPTBlock()
            self.ln_f = nn.LayerNorm(24)

        def forward(self, x):  # x: embeddings of the tokens (the lookup is tested elsewhere)
            return self.ln_f(self.block(x + self.wpe))

    check(rng, TinyGPT(), torch.zeros(2, 7, 24))


# ---------------------------------------------------------------------------
# activations, dropout, group norm


@pytest.mark.parametrize(
    "model",
    [
        nn.ReLU6(),
        nn.Hardtanh(-2.0, 1.5),
        nn.Hardswish(),
        nn.Hardsigmoid(),
        nn.LeakyReLU(),
        nn.LeakyReLU(0.2),
        nn.ELU(),
        nn.ELU(0.7),
        nn.SELU(),
        nn.CELU(1.3),
        nn.Softplus(),
        nn.Softplus(2.0, 5.0),
        nn.Mish(),
        nn.Dropout(0.3),
        nn.Dropout2d(0.3),
        nn.Identity(),
    ],
    ids=lambda m: repr(m),
)
def test_activation(rng, model):
    x = torch.zeros(2, 3, 5, 7)
    if isinstance(model, nn.Identity):
        model = nn.Sequential(model, nn.ReLU())  # a program with no op at all returns its input
    check(rng, model, x)


def test_activations_far_from_zero_and_near_it(rng):
    """Large inputs (softplus threshold, no exp overflow) and tiny ones (expm1/log1p accuracy)."""
    model = Fn(lambda x: (F.softplus(x), F.mish(x), F.elu(x), F.selu(x), F.softplus(x, beta=3.0)))
    ep = torch.export.export(model, (torch.zeros(64),))
    lib = tk.build(from_exported_program(ep))
    for scale in (1e-4, 1.0, 40.0):
        x = torch.from_numpy(rng.standard_normal(64).astype(np.float32) * scale)
        for got, expected in zip(lib(x.numpy()), model(x)):
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, expected.numpy(), rtol=2e-6, atol=1e-30)


def test_activations_without_decomposition(rng):
    """The whole ops, as they appear when the program is imported as exported (no decomposition)."""
    model = Fn(lambda x: F.relu6(x) + F.hardswish(x) + F.hardsigmoid(x) + F.celu(x) + F.selu(x)
               + F.dropout(x, 0.5, training=False))  # fmt: skip
    x = torch.zeros(3, 8)
    module = from_exported_program(torch.export.export(model, (x,)), decompose=False)
    data = rng.standard_normal((3, 8)).astype(np.float32) * 3
    expected = model(torch.from_numpy(data)).numpy()
    assert _relative_error(tk.build(module)(data), expected) <= TOLERANCE


@pytest.mark.parametrize("groups, channels, affine", [(2, 4, True), (3, 6, False), (1, 5, True), (5, 5, True)])
def test_group_norm(rng, groups, channels, affine):
    check(rng, nn.GroupNorm(groups, channels, affine=affine), torch.zeros(2, channels, 5, 3))


def test_group_norm_1d_input(rng):
    check(rng, nn.GroupNorm(2, 6), torch.zeros(3, 6, 7))


def test_native_batch_norm_in_eval_returns_its_empty_statistics(rng):
    """aten.native_batch_norm called directly in eval: the normalised tensor and the
    saved statistics, which torch leaves empty (shape (0,))."""
    stats = [torch.from_numpy(rng.standard_normal(4).astype(np.float32)) for _ in range(3)]
    mean, var = stats[0], stats[1].abs() + 0.5

    def fn(x):
        return torch.ops.aten.native_batch_norm(x, stats[2], None, mean, var, False, 0.1, 1e-5)

    x = torch.from_numpy(rng.standard_normal((2, 4, 5)).astype(np.float32))
    got = tk.build(from_exported_program(torch.export.export(Fn(fn), (x,))))(x.numpy())
    for g, e in zip(got, fn(x)):
        assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)


def test_training_dropout_without_decomposition(rng):
    """aten.dropout itself (not decomposed) in training: kept values scaled by 1/(1-p)
    (the random masks are tested in test_torch_random.py)."""
    model = Fn(lambda x: F.dropout(x, 0.5, training=True))
    x = torch.from_numpy(rng.standard_normal((30, 41)).astype(np.float32))
    ep = torch.export.export(model, (x,))
    y = tk.build(from_exported_program(ep, decompose=False))(x.numpy())
    kept = y != 0
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_allclose(y[kept], 2 * x.numpy()[kept], rtol=1e-6)


# ---------------------------------------------------------------------------
# a small model of all of it, with a dynamic batch (through the interpreter)


def test_dynamic_batch_through_the_interpreter(rng):
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 8, 3, padding=1)
            self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.norm = nn.GroupNorm(2, 4)

        def forward(self, x):
            q = self.conv(x).transpose(1, 2).unsqueeze(1)  # (B, 1, 6, 8)
            a = F.scaled_dot_product_attention(q, q * 0.5, q + 1.0, is_causal=True)
            image = a.squeeze(1).transpose(1, 2).unflatten(2, (2, 3))
            return F.hardswish(self.norm(F.interpolate(self.up(image), scale_factor=2, mode="bilinear")))

    model = Mixed().eval()
    ep = torch.export.export(model, (torch.zeros(3, 4, 6),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    module = from_exported_program(ep)
    assert isinstance(shape_of(module.body.block.ops.first.body.block.args[0].type)[0], str)
    run = tk.create_executor("interpreter", module).evaluate()
    for batch in (1, 5):
        x = torch.from_numpy(rng.standard_normal((batch, 4, 6)).astype(np.float32))
        with torch.no_grad():
            expected = model(x).numpy()
        assert _relative_error(run(x.numpy()), expected) <= TOLERANCE


def test_resize_op_is_kept_whole_for_interpolate():
    module = import_module(Fn(lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact")),
                           torch.zeros(1, 2, 4, 4))  # fmt: skip
    (op,) = [op for op in module.walk() if isinstance(op, graph_nn.Resize2dOp)]
    assert op.mode.data == "nearest_exact"
