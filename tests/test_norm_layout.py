"""Group norm and instance norm import without reshaping the activation
(``frontends/torch/ops/normalization.py``), so that convert-layout keeps a GroupNorm ->
SiLU -> conv stack in NHWC: numerics against torch eager on fresh inputs (odd sizes, one
group, a group per channel, 1-d to 3-d inputs, without affine parameters, running
statistics, a symbolic image size), in NHWC and NCHW builds, and the transposes left in
the optimized graph: one into NHWC before the first conv and one back after the last."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph.shape import TransposeOp  # noqa: E402
from tensorkiln.driver.pipelines import optimize_graph  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.passes.pipeline import PassContext  # noqa: E402

F = torch.nn.functional


class NormConvStack(torch.nn.Module):
    """GroupNorm -> SiLU -> conv, three times (a diffusion UNet's residual path), then
    an instance norm."""

    def __init__(self, channels: int = 12, groups: tuple[int, ...] = (4, 1, 12)):
        super().__init__()
        self.norms = torch.nn.ModuleList(torch.nn.GroupNorm(g, channels) for g in groups)
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(channels, channels, 3, padding=1) for _ in groups)
        self.last = torch.nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for norm, conv in zip(self.norms, self.convs):
            x = conv(F.silu(norm(x)))
        return self.last(x)


def _check(model: torch.nn.Module, shape: tuple[int, ...], target: str = "llvm", dynamic_shapes=None, runs=()):
    torch.manual_seed(sum(shape))
    model = model.eval()
    x = torch.randn(*shape) * 3 + 1  # a mean far from 0: the variance is two-pass
    lib = tk.build(from_exported_program(torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes)), target=target)
    for run_shape in (shape, *runs):
        fresh = torch.randn(*run_shape) * 3 + 1
        with torch.no_grad():
            want = model(fresh).numpy()
        got = lib(fresh.numpy())
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["llvm", "llvm -layout=NCHW"])
def test_norm_conv_stack_matches_torch(target):
    _check(NormConvStack(), (2, 12, 9, 7), target)


@pytest.mark.parametrize(
    "model,shape",
    [
        (torch.nn.GroupNorm(3, 6), (4, 6)),
        (torch.nn.GroupNorm(2, 6, affine=False), (2, 6, 11)),
        (torch.nn.GroupNorm(5, 10), (1, 10, 3, 4, 5)),
        (torch.nn.InstanceNorm1d(5, affine=True), (3, 5, 7)),
        (torch.nn.InstanceNorm2d(6), (2, 6, 5, 3)),
        (torch.nn.InstanceNorm3d(4, affine=True), (2, 4, 3, 5, 2)),
    ],
    ids=["group-2d", "group-1d-no-affine", "group-3d", "instance-1d", "instance-2d", "instance-3d"],
)
def test_norms_match_torch(model, shape):
    _check(model, shape)


def test_instance_norm_with_running_statistics():
    model = torch.nn.InstanceNorm2d(5, affine=True, track_running_stats=True)
    with torch.no_grad():
        model.running_mean.uniform_(-1, 1)
        model.running_var.uniform_(0.5, 2)
        model.weight.uniform_(0.5, 2)
    _check(model, (2, 5, 4, 6))


def test_symbolic_image_size():
    size = torch.export.Dim("size", min=2, max=64)
    _check(NormConvStack(8, (2, 8)), (1, 8, 10, 6), dynamic_shapes=({2: size},), runs=[(1, 8, 17, 6), (1, 8, 3, 6)])


def test_native_group_norm_statistics():
    """aten.native_group_norm (what the default decomposition gives) returns the
    statistics too, shaped (N, groups)."""
    torch.manual_seed(0)
    x, w, bias = torch.randn(3, 8, 5), torch.randn(8), torch.randn(8)

    class Native(torch.nn.Module):
        def forward(self, x):
            return torch.ops.aten.native_group_norm(x, w, bias, 3, 8, 5, 4, 1e-5)

    model = Native()
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    for g, want in zip(lib(x.numpy()), model(x), strict=True):
        np.testing.assert_allclose(g, want.numpy(), rtol=1e-5, atol=1e-5)


def test_no_transposes_between_convs():
    """After the graph pipeline (NHWC), the only transposes of 4-d activations are the one
    into NHWC before the first conv and the one back to NCHW at the output; the norms'
    statistics are reshaped (N, C) vectors, never the activations."""
    torch.manual_seed(0)
    model = NormConvStack(64, (32, 16, 64)).eval()
    module = from_exported_program(torch.export.export(model, (torch.randn(1, 64, 16, 16),)))
    optimize_graph(module, PassContext(opt_level=2), layout="NHWC")
    activations = [op for op in module.walk() if isinstance(op, TransposeOp) and np.prod(op.result.type.get_shape()) == 64 * 16 * 16]
    assert [list(op.result.type.get_shape()) for op in activations] == [[1, 16, 16, 64], [1, 64, 16, 16]]


class UpsampleBetweenConvs(torch.nn.Module):
    def __init__(self, mode: str, align_corners: bool | None, **size):
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(6, 6, 3, padding=1), torch.nn.Conv2d(6, 5, 3, padding=1)
        self.mode, self.align_corners, self.size = mode, align_corners, size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = F.interpolate(self.a(x), mode=self.mode, align_corners=self.align_corners, **self.size)
        return self.b(F.silu(up))


@pytest.mark.parametrize(
    "mode,align_corners,size",
    [
        ("nearest", None, {"scale_factor": 2.0}),
        ("nearest-exact", None, {"size": (11, 6)}),
        ("bilinear", False, {"scale_factor": 1.5}),
        ("bilinear", True, {"size": (9, 13)}),
    ],
)
def test_resize_between_convs_runs_in_nhwc(mode, align_corners, size):
    """Upsampling between convolutions (a UNet's decoder) is converted to NHWC: no
    transpose of its input or output; the result matches torch."""
    model = UpsampleBetweenConvs(mode, align_corners, **size).eval()
    _check(model, (2, 6, 5, 7))
    module = from_exported_program(torch.export.export(model, (torch.randn(2, 6, 5, 7),)))
    optimize_graph(module, PassContext(opt_level=2), layout="NHWC")
    resizes = [op for op in module.walk() if op.name == "graph.resize2d"]
    assert [op.layout.data for op in resizes] == ["NHWC"]
    assert sum(isinstance(op, TransposeOp) for op in module.walk()) == 2  # into NHWC, back out
