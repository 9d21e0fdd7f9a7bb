"""F.grid_sample (frontends/torch/ops/grid_sample.py) against torch eager: bilinear and
nearest, zeros and border padding, both align_corners, grids reaching outside the image,
a symbolic batch, a spatial transformer (affine_grid + grid_sample), and clear errors
for the modes we do not support."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402


class Sample(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.options)


def _inputs(rng, batch=2):
    x = torch.from_numpy(rng.standard_normal((batch, 3, 7, 9)).astype(np.float32))
    grid = torch.from_numpy((rng.random((batch, 5, 6, 2)) * 2.6 - 1.3).astype(np.float32))  # some points outside
    return x, grid


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(rng, mode, padding_mode, align_corners):
    model = Sample(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    lib = tk.build(from_exported_program(torch.export.export(model, _inputs(rng))))
    for _ in range(2):
        x, grid = _inputs(rng)
        expected = model(x, grid).numpy()
        got = lib(x.numpy(), grid.numpy())
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


class SpatialTransformer(torch.nn.Module):
    """A localisation net predicts an affine transform; the image is resampled by it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.loc = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 7 * 9, 6))

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3) * 0.3 + torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        grid = F.affine_grid(theta, [x.shape[0], 3, 5, 4], align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)


def test_spatial_transformer_with_a_symbolic_batch(rng):
    model = SpatialTransformer().eval()
    x = _inputs(rng)[0]
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    lib = tk.build(from_exported_program(ep))
    for batch in (1, 3):
        x = _inputs(rng, batch)[0]
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(lib(x.numpy()), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("options", [dict(mode="bicubic"), dict(padding_mode="reflection")])
def test_unsupported_modes_are_named(rng, options):
    ep = torch.export.export(Sample(align_corners=False, **options), _inputs(rng))
    with pytest.raises(TorchImportError, match="bicubic|reflection"):
        from_exported_program(ep)
