"""bfloat16 and float16 models: stored in 16 bits, computed in float32 as torch's CPU
kernels do (``passes/legalize_16bit_floats.py``, ``lowering/bf16_storage.py``,
``frontends/torch/opmath.py``). Checked against torch in the same dtype, bit for bit
where torch's rounding is defined (conversions), else against torch's own error."""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph.types import element_type_of
from tensorkiln.frontends.builder import GraphBuilder

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from nvcc import compile_ptx  # noqa: E402

BF16 = ml_dtypes.bfloat16


def _bits(a) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def _torch_bf16(a: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)


def _numpy_bf16(t) -> np.ndarray:
    return t.contiguous().view(torch.int16).numpy().view(BF16)


def _cast_model(frm, to, n):
    b = GraphBuilder()
    return b.finish(b.cast(b.input("x", (n,), frm), element_type_of(to)))


def _hard_floats(rng: np.random.Generator) -> np.ndarray:
    """Ties (even and odd), values that round into the next binade or to infinity,
    subnormals, signed zeros, infinities, and random magnitudes."""
    special = [
        1.00390625, 1.01171875, -1.00390625, 3.3961776e38, 3.38953139e38, -3.3961776e38, 1e-40, -1e-40,
        9.2e-41, 0.0, -0.0, np.inf, -np.inf, 65504.0, 1.9921875, 1.99609375, 255.5, 2.0**-133,
    ]  # fmt: skip
    random = rng.standard_normal(301) * np.exp(rng.uniform(-30, 30, 301))
    return np.concatenate([special, random]).astype(np.float32)


def test_float32_to_bfloat16_rounds_to_nearest_even_as_torch(rng):
    x = _hard_floats(rng)
    x = np.concatenate([x, [np.nan]]).astype(np.float32)
    got = tk.build(_cast_model(np.float32, BF16, x.size))(x)
    want = _numpy_bf16(torch.from_numpy(x).bfloat16())
    assert got.dtype == BF16 and got.shape == x.shape
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(_bits(got)[finite], _bits(want)[finite])
    assert np.isnan(got[-1].astype(np.float32))


def test_bfloat16_widens_exactly_and_other_types_go_through_float32(rng):
    """bfloat16 -> float32 is exact; float64 -> bfloat16 rounds to float32 first (as
    torch: double rounding), ints and bools convert as torch converts them."""
    bits = rng.integers(0, 2**16, 5000, dtype=np.uint32).astype(np.uint16)
    bits = bits[(bits & 0x7F80) != 0x7F80]  # no inf/nan patterns (compared below as numbers)
    x = bits.view(BF16)
    np.testing.assert_array_equal(tk.build(_cast_model(BF16, np.float32, x.size))(x), x.astype(np.float32))

    d = np.concatenate([[1.0039062500001, -1.0039062500001], rng.standard_normal(97) * 1e3])
    got = tk.build(_cast_model(np.float64, BF16, d.size))(d)
    np.testing.assert_array_equal(_bits(got), _bits(_numpy_bf16(torch.from_numpy(d).bfloat16())))

    i = rng.integers(-(2**40), 2**40, 53)
    got = tk.build(_cast_model(np.int64, BF16, i.size))(i)
    np.testing.assert_array_equal(_bits(got), _bits(_numpy_bf16(torch.from_numpy(i).bfloat16())))

    y = (rng.standard_normal(41) * 300).astype(BF16)
    got = tk.build(_cast_model(BF16, np.int32, y.size))(y)
    np.testing.assert_array_equal(got, _torch_bf16(y).to(torch.int32).numpy())


class _Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(37, 61), nn.Linear(61, 9)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class _Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        return F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1)


class _EmbeddingNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.norm = nn.Embedding(50, 24), nn.LayerNorm(24)

    def forward(self, ids):
        return self.norm(self.emb(ids))


MODELS = {
    "mlp": (_Mlp, lambda: (torch.randn(5, 37),)),
    "cnn": (_Cnn, lambda: (torch.randn(2, 3, 11, 13),)),
    "encoder": (lambda: nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), lambda: (torch.randn(2, 7, 32),)),
    "embedding_layernorm": (_EmbeddingNorm, lambda: (torch.randint(0, 50, (3, 6)),)),
}


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_16bit_models_match_torch_in_the_same_dtype(name, dtype):
    """Compiled in the model's dtype: outputs in that dtype, as close to float32 as
    torch's own 16-bit run (each ATen op rounds once, computing in float32)."""
    make, inputs = MODELS[name]
    torch.manual_seed(7)
    dt = getattr(torch, dtype)
    model = make().eval()
    args32 = inputs()
    with torch.no_grad():
        want32 = model(*args32).numpy()
        model = model.to(dt)
        args = tuple(a.to(dt) if a.is_floating_point() else a for a in args32)
        want = model(*args).float().numpy()
    lib = tk.build(from_exported_program(torch.export.export(model, args)))
    got = lib(*args)  # torch tensors in, bfloat16 ones included
    assert got.dtype == np.dtype(BF16 if dtype == "bfloat16" else np.float16) and got.shape == want.shape
    got = got.astype(np.float32)
    torch_error = _relative(want, want32)
    assert _relative(got, want32) <= 1.5 * torch_error + 1e-4, (_relative(got, want32), torch_error)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 if dtype == "bfloat16" else 2e-3)


def test_float16_sums_accumulate_in_float32(rng):
    """A float16 sum of 4099 terms: in float16 it would lose its last digits (about
    2% off); torch and we accumulate in float32 and round once."""
    x = rng.uniform(0.5, 1.5, (3, 4099)).astype(np.float16)
    b = GraphBuilder()
    module = b.finish(b.reduce_sum(b.input("x", x.shape, np.float16), (1,)))
    got = tk.build(module)(x)
    want = torch.from_numpy(x).sum(1).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_arguments_are_checked_and_numpy_bfloat16_accepted(rng):
    b = GraphBuilder()
    module = b.finish(b.relu(b.input("x", (4, 3), BF16)))
    lib = tk.build(module)
    x = rng.standard_normal((4, 3)).astype(BF16)
    np.testing.assert_array_equal(_bits(lib(x)), _bits(np.maximum(x, 0)))
    with pytest.raises(ValueError, match="argument 'x': expected dtype bfloat16, got float32"):
        lib(x.astype(np.float32))
    with pytest.raises(ValueError, match="argument 'x': expected dtype bfloat16, got float16"):
        lib(torch.randn(4, 3).half())


def _embedding_model():
    """An embedding table kept in bfloat16 (a gather only moves data), then compute."""
    torch.manual_seed(11)
    model = _EmbeddingNorm().eval().to(torch.bfloat16)
    ids = torch.randint(0, 50, (2, 5))
    return model, from_exported_program(torch.export.export(model, (ids,)))


@pytest.mark.parametrize("kind", ["interpreter", "graph", "vm", "aot"])
def test_every_executor_runs_bfloat16(kind):
    model, module = _embedding_model()
    ids = torch.randint(0, 50, (2, 5))
    with torch.no_grad():
        want = model(ids).float().numpy()
    got = tk.create_executor(kind, module).evaluate()(ids.numpy())
    assert np.asarray(got).dtype == BF16
    np.testing.assert_allclose(np.asarray(got).astype(np.float32), want, rtol=2e-2, atol=2e-2)


def test_exported_artifact_keeps_bfloat16_weights(tmp_path):
    from tensorkiln.runtime.artifact import load_module

    model, module = _embedding_model()
    lib = tk.build(module)
    lib.export_library(tmp_path / "emb.tk")
    deployed = load_module(tmp_path / "emb.tk")
    ids = torch.randint(0, 50, (2, 5))
    np.testing.assert_array_equal(_bits(deployed(ids.numpy())), _bits(lib(ids.numpy())))
    assert np.dtype(BF16) in {w.dtype for w in deployed._weights}  # the table, not a float32 copy


def test_bfloat16_on_the_emulated_gpu():
    """The GPU path's kernels (bfloat16 as 16-bit integers there too), run on the CPU."""
    from tensorkiln.driver.cuda import build_emulated

    torch.manual_seed(5)
    model = _Mlp().eval().to(torch.bfloat16)
    x = torch.randn(6, 37).bfloat16()
    module = from_exported_program(torch.export.export(model, (x,)))
    got = build_emulated(module)(x)
    with torch.no_grad():
        want = model(x).float().numpy()
    assert got.dtype == BF16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    source = tk.emit_source(module, target="cuda")
    assert "bf16" not in source and "bfloat" not in source


def test_bfloat16_cuda_source_compiles(tmp_path):
    torch.manual_seed(5)
    model = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval().to(torch.bfloat16)
    x = torch.randn(2, 7, 32).bfloat16()
    source = tk.emit_source(from_exported_program(torch.export.export(model, (x,))), target="cuda -arch=sm_90")
    assert ".entry" in compile_ptx(source, tmp_path, "enc")


def test_mixed_dtypes_within_one_op():
    """torch's kernels take a bfloat16 input with float32 parameters (a float32 LayerNorm
    on bfloat16 activations): converted in float32, rounded once to the output's dtype."""
    torch.manual_seed(2)
    norm = nn.LayerNorm(16).eval()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5), norm.bias.uniform_(-1, 1)
    x = torch.randn(3, 5, 16).bfloat16()
    with torch.no_grad():
        want = norm(x)
    got = tk.build(from_exported_program(torch.export.export(norm, (x,))))(x)
    assert got.dtype == BF16 and want.dtype == torch.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), want.float().numpy())


def test_bfloat16_sources_and_data_movement(rng):
    """arange/full in bfloat16 (computed in float32, rounded once), pads with a value,
    flips, concats and slices (which stay in bfloat16), against torch bit for bit."""

    class Sources(nn.Module):
        def forward(self, x):
            ramp = torch.arange(x.shape[1], dtype=torch.bfloat16) * 0.3 + torch.full_like(x, 1.7)
            moved = torch.cat([F.pad(x, (1, 2), value=-1.5), x.flip(1)[:, :3]], 1)
            return x + ramp, moved

    x = torch.from_numpy(rng.standard_normal((3, 11)).astype(np.float32)).bfloat16()
    got = tk.build(from_exported_program(torch.export.export(Sources(), (x,))))(x)
    for g, w in zip(got, Sources()(x)):
        assert g.dtype == BF16
        np.testing.assert_array_equal(_bits(g), _bits(_numpy_bf16(w)))
