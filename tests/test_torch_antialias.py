"""Antialiased resizing (``F.interpolate(..., antialias=True)``, frontends/torch/ops/antialias.py)
against torch eager: bilinear and bicubic, shrinking and growing per axis, align_corners,
explicit scale factors, float32/float64 to rounding error and uint8 images."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from torch_op_cases import Fn  # noqa: E402


def _resizes(x):
    return (
        F.interpolate(x, size=(5, 9), mode="bicubic", antialias=True),
        F.interpolate(x, scale_factor=0.4, mode="bilinear", antialias=True),
        F.interpolate(x, size=(4, 20), mode="bilinear", antialias=True),
        F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True, align_corners=True),
        F.interpolate(x, size=(17, 5), mode="bicubic", antialias=True, align_corners=True),
        F.interpolate(x, scale_factor=(0.3, 1.7), mode="bicubic", antialias=True, recompute_scale_factor=False),
        F.interpolate(x, size=(1, 1), mode="bicubic", antialias=True),
    )


def _compiled(fn, x):
    return tk.build(from_exported_program(torch.export.export(Fn(fn), (x,))))


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-13)])
def test_antialiased_resize_matches_torch(rng, dtype, tolerance):
    shape = (2, 3, 11, 13)
    lib = _compiled(_resizes, torch.randn(shape, dtype=dtype))
    for _ in range(2):
        x = torch.from_numpy(rng.standard_normal(shape)).to(dtype)
        got, expected = lib(x.numpy()), _resizes(x)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
            np.testing.assert_allclose(g, e.numpy(), rtol=tolerance, atol=tolerance)


def test_uint8_images(rng):
    """torch resizes uint8 with fixed-point weights, each pass rounded; ours are float
    weights, each pass rounded: within one level, on under 2% of the pixels."""

    def fn(x):
        return (
            F.interpolate(x, size=(50, 41), mode="bilinear", antialias=True),
            F.interpolate(x, size=(64, 40), mode="bicubic", antialias=True),
        )

    x = torch.from_numpy(rng.integers(0, 256, (1, 3, 111, 93)).astype(np.uint8))
    for got, expected in zip(_compiled(fn, x)(x.numpy()), fn(x), strict=True):
        assert got.dtype == np.uint8 and got.shape == tuple(expected.shape)
        difference = np.abs(got.astype(int) - expected.numpy().astype(int))
        assert difference.max() <= 1 and (difference > 0).mean() < 0.02


def test_symbolic_spatial_size_is_refused_by_name():
    x = torch.randn(1, 2, 12, 12)
    ep = torch.export.export(
        Fn(lambda x: F.interpolate(x, size=(5, 5), mode="bilinear", antialias=True)), (x,),
        dynamic_shapes=(({2: torch.export.Dim("h", min=6)},),),
    )  # fmt: skip
    with pytest.raises(TorchImportError, match="antialiased bilinear resizing of symbolic spatial sizes"):
        from_exported_program(ep)
