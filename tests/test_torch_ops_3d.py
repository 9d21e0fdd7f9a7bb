"""3-d convolution and pooling (frontends/torch/ops/volumetric.py: the 2-d graph ops over
depth slices) against torch eager on fresh random inputs with odd sizes: strides,
padding, dilation and groups on every axis, transposed convolutions, pooling windows
with padding and ceil mode, a symbolic batch, a small 3-d U-Net, and the emulated GPU
kernels of one model."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
nn = torch.nn
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.driver.cuda import build_emulated  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.importer import _decompose  # noqa: E402
from tensorkiln.frontends.torch.ops import volumetric  # noqa: E402
from tensorkiln.frontends.torch.registry import CONVERTERS  # noqa: E402


def check(model, shapes, rng, *, dynamic_batch=False, build=tk.build, runs=2):
    model = model.eval()
    example = tuple(torch.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes)
    kwargs = {}
    if dynamic_batch:
        kwargs["dynamic_shapes"] = tuple({0: torch.export.Dim("batch")} for _ in shapes)
    lib = build(from_exported_program(torch.export.export(model, example, **kwargs)))
    for run in range(runs):
        batch = shapes[0][0] + (run if dynamic_batch else 0)
        inputs = [torch.from_numpy(rng.standard_normal((batch, *s[1:])).astype(np.float32)) for s in shapes]
        with torch.no_grad():
            expected = model(*inputs)
        got = lib(*[t.numpy() for t in inputs])
        assert got.shape == tuple(expected.shape) and got.dtype == np.float32
        np.testing.assert_allclose(got, expected.numpy(), rtol=2e-5, atol=2e-5)


def seeded(make, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return make()


@pytest.mark.parametrize(
    "conv",
    [
        dict(in_channels=3, out_channels=5, kernel_size=3),
        dict(in_channels=4, out_channels=6, kernel_size=(3, 1, 2), stride=(2, 1, 2), padding=(1, 0, 1), bias=False),
        dict(in_channels=4, out_channels=6, kernel_size=3, dilation=(2, 1, 2), padding=2, groups=2),
        dict(in_channels=6, out_channels=6, kernel_size=3, stride=2, padding=1, groups=6),  # depthwise
    ],
)
def test_conv3d(rng, conv):
    check(seeded(lambda: nn.Conv3d(**conv)), [(2, conv["in_channels"], 7, 9, 8)], rng)


@pytest.mark.parametrize(
    "conv",
    [
        dict(in_channels=4, out_channels=3, kernel_size=2, stride=2),
        dict(in_channels=3, out_channels=5, kernel_size=3, stride=(2, 1, 2), padding=1, output_padding=(1, 0, 1)),
        dict(in_channels=3, out_channels=2, kernel_size=(3, 2, 2), dilation=(2, 1, 1), bias=False),
        dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, groups=2),
        dict(in_channels=6, out_channels=3, kernel_size=(2, 3, 3), stride=(1, 2, 1), groups=3, bias=False),
    ],
)
def test_conv_transpose3d(rng, conv):
    check(seeded(lambda: nn.ConvTranspose3d(**conv), 1), [(2, conv["in_channels"], 5, 6, 7)], rng)


class Pools3d(nn.Module):
    def forward(self, x):
        return torch.cat(
            [
                F.max_pool3d(x, 3, stride=2, padding=1).flatten(1),
                F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True).flatten(1),
                F.avg_pool3d(x, 2).flatten(1),
                F.avg_pool3d(x, 3, stride=(2, 1, 2), padding=1).flatten(1),
                F.adaptive_avg_pool3d(x, (2, 3, 1)).flatten(1),
                F.adaptive_avg_pool3d(x, 1).flatten(1),
                F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True, divisor_override=5).flatten(1),
                F.avg_pool3d(x, 2, divisor_override=3).flatten(1),
                F.adaptive_max_pool3d(x, (2, 3, 5)).flatten(1),
            ],
            1,
        )


def test_pools3d(rng):
    check(Pools3d(), [(2, 3, 7, 9, 8)], rng)


class Pools3dWithIndices(nn.Module):
    """Indices (flat ``d * H * W + h * W + w`` of each window's first maximum) of 3-d max
    pooling, adaptive 3-d and 2-d pooling with short bins, and max_unpool3d scattering by them."""

    def forward(self, x):
        return (
            F.max_pool3d(x, 3, 2, 1, return_indices=True),
            F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True, return_indices=True),
            F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
            F.adaptive_max_pool3d(x[0], 3, return_indices=True),
            F.adaptive_max_pool2d(x[:, 0], (3, 5), return_indices=True),
            F.adaptive_max_pool1d(x[0, 0, 0], 3, return_indices=True),
            F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2, output_size=x.shape[-3:]),
        )


def test_pool_indices_match_torch_with_ties_and_nan(rng):
    """Rounded inputs tie often (the first maximum in scan order wins); a NaN is the
    maximum of its windows and its own index, as in torch."""
    shape = (2, 3, 5, 7, 6)
    example = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    lib = tk.build(from_exported_program(torch.export.export(Pools3dWithIndices(), (example,))))
    for x in (rng.standard_normal(shape), rng.integers(-2, 3, shape)):
        x = torch.from_numpy(x.astype(np.float32))
        x[0, 1, 2, 3, 4] = float("nan")
        got = lib(x.numpy())
        expected = torch.utils._pytree.tree_leaves(Pools3dWithIndices()(x))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
            np.testing.assert_array_equal(g, e.numpy())


class UNet3d(nn.Module):
    """A two-level 3-d U-Net: conv + batch norm + relu, max pooling, a transposed
    convolution up, skip concatenation; the batch is symbolic."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(2)

        def block(cin, cout):
            return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU())

        self.down, self.bottom = block(2, 4), block(4, 8)
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.out = nn.Sequential(block(8, 4), nn.Conv3d(4, 3, 1))
        for m in self.modules():
            if isinstance(m, nn.BatchNorm3d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        skip = self.down(x)
        return self.out(torch.cat([skip, self.up(self.bottom(F.max_pool3d(skip, 2)))], 1))


def test_unet3d_with_a_symbolic_batch(rng):
    check(UNet3d(), [(2, 2, 6, 8, 10)], rng, dynamic_batch=True)


def test_conv3d_on_the_emulated_gpu(rng):
    check(nn.Sequential(nn.Conv3d(3, 4, 3, stride=(1, 2, 2), padding=1), nn.ReLU(), nn.MaxPool3d(2)).eval(),
          [(1, 3, 5, 9, 7)], rng, build=build_emulated, runs=1)  # fmt: skip


def test_symbolic_depth_is_refused_by_name():
    model = nn.Conv3d(2, 3, 3)
    x = torch.randn(1, 2, 6, 7, 7)
    ep = torch.export.export(model, (x,), dynamic_shapes=({2: torch.export.Dim("depth", min=4)},))
    with pytest.raises(TorchImportError, match="symbolic depth"):
        from_exported_program(ep)


def test_every_volumetric_overload_is_tested():
    """The pooling overloads registered in volumetric.py are the ones the tests above
    export (the convolutions come through aten.convolution)."""
    registered = {name for name, fn in CONVERTERS.items() if fn.__module__ == volumetric.__name__}
    exported = set()
    models = ((Pools3d(), torch.randn(1, 2, 7, 9, 8)), (UNet3d(), torch.randn(1, 2, 6, 8, 10)),
              (Pools3dWithIndices(), torch.randn(2, 3, 5, 7, 6)))  # fmt: skip
    for model, x in models:
        ep = _decompose(torch.export.export(model.eval(), (x,)))
        exported |= {f"aten.{n.target._opname}.{n.target._overloadname}" for n in ep.graph.nodes if n.op == "call_function" and hasattr(n.target, "_opname")}
    assert registered - {"aten.adaptive_avg_pool3d.default"} <= exported, registered - exported
