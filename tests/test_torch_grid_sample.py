"""F.grid_sample (frontends/torch/ops/grid_sample.py) against torch eager: bilinear, nearest
and bicubic on images, trilinear and nearest on volumes, zeros, border and reflection
padding, both align_corners, grids reaching well outside the image (several reflections),
a symbolic batch, a spatial transformer (affine_grid + grid_sample), and a clear error
for symbolic image sizes."""

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


def _inputs(rng, batch=2, image=(7, 9), out=(5, 6), reach=1.3):
    x = torch.from_numpy(rng.standard_normal((batch, 3, *image)).astype(np.float32))
    grid = (rng.random((batch, *out, len(image))) * 2 - 1) * reach  # some points outside
    return x, torch.from_numpy(grid.astype(np.float32))


def _check(rng, model, **shapes):
    lib = tk.build(from_exported_program(torch.export.export(model, _inputs(rng, **shapes))))
    for _ in range(2):
        x, grid = _inputs(rng, **shapes)
        expected = model(x, grid).numpy()
        got = lib(x.numpy(), grid.numpy())
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(rng, mode, padding_mode, align_corners):
    reach = 3.2 if padding_mode == "reflection" else 1.3
    _check(rng, Sample(mode=mode, padding_mode=padding_mode, align_corners=align_corners), reach=reach)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_volumes(rng, mode, padding_mode, align_corners):
    """5-d inputs (aten.grid_sampler_3d): trilinear or nearest over (D, H, W)."""
    reach = 2.6 if padding_mode == "reflection" else 1.3
    model = Sample(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _check(rng, model, image=(4, 6, 5), out=(3, 5, 2), reach=reach)


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


def test_symbolic_image_sizes_are_refused_by_name(rng):
    ep = torch.export.export(Sample(align_corners=False), _inputs(rng), dynamic_shapes=({2: torch.export.Dim("h", min=4)}, None))
    with pytest.raises(TorchImportError, match="symbolic spatial sizes"):
        from_exported_program(ep)
