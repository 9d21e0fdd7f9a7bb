"""Small torch models that exercise every default GPU strategy (shared by the GPU tests)."""

from __future__ import annotations

import torch

F = torch.nn.functional


class Elementwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(37))

    def forward(self, x):
        return torch.tanh(x * torch.sigmoid(x) + self.bias) - x.abs()


class LinearGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(45, 29)

    def forward(self, x):
        return F.gelu(self.fc(x))


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class ConvReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1)

    def forward(self, x):
        return F.relu(self.conv(x))


class Pools(torch.nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 3, stride=2) + F.avg_pool2d(x, 3, stride=2)


class Norms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(53)

    def forward(self, x):
        return torch.softmax(self.ln(x), dim=-1) + x.sum(dim=-1, keepdim=True)


CASES = {
    "elementwise": (Elementwise, [(3, 5, 37)]),
    "linear_gelu": (LinearGelu, [(7, 45)]),
    "matmul": (MatMul, [(67, 45), (45, 71)]),
    "batch_matmul": (MatMul, [(3, 19, 23), (3, 23, 17)]),
    "conv_relu": (ConvReLU, [(2, 3, 17, 15)]),
    "pools": (Pools, [(2, 4, 13, 11)]),
    "layernorm_softmax_sum": (Norms, [(6, 53)]),
}


class LongRows(torch.nn.Module):
    """Rows long enough for the block reduction (and a partial last chunk of threads)."""

    def forward(self, x):
        return torch.softmax(x, dim=-1) * x.amax(dim=-1, keepdim=True) + x.mean(dim=-1, keepdim=True)


CASES["long_rows"] = (LongRows, [(5, 301)])


class RowKernels(torch.nn.Module):
    """Layer norm then log_softmax over rows of 257: two kernels of row stages (one block
    per row: mean and variance, then max and sum of exp), rows over two leading dims."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(257)

    def forward(self, x):
        return torch.log_softmax(self.ln(x) * 3.0, dim=-1)


CASES["row_kernels"] = (RowKernels, [(2, 3, 257)])


class LargeMatMulEpilogue(torch.nn.Module):
    """Big enough (>= 512 rows and columns) for the 128 x 128 GEMM tiles, with partial
    tiles on both axes, a short k, and a fused bias + relu epilogue."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(530))

    def forward(self, a, b):
        return F.relu(a @ b + self.bias)


CASES["large_matmul_epilogue"] = (LargeMatMulEpilogue, [(520, 45), (45, 530)])


class ScatterAndFullReductions(torch.nn.Module):
    """Index assignment, scatter_add and a full reduction to a 0-d value: scatter kernels
    (a thread per line applying its updates in order) and a one-block sum."""

    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.tensor([4, 0, -2, 7]))
        self.register_buffer("cols", torch.tensor([[1, 3, 3, 0, 5], [2, 2, 6, 1, 0], [0, 4, 1, 1, 6]]))

    def forward(self, x, u):
        y = x.clone()
        y[self.rows] = u[:4, : x.shape[1]]
        added = torch.zeros_like(x[:3]).scatter_add(1, self.cols, u[:3, :5])
        return y * 2.0 + added.sum() + x.amax()


CASES["scatter_full_reductions"] = (ScatterAndFullReductions, [(9, 11), (6, 13)])


class ReductionsNorms(torch.nn.Module):
    """Products over long rows (a block reduction: a mul combiner in the shuffles) and
    short ones, a prefix product, a vector norm, instance norm (statistics over rows of
    143) then adaptive max pooling."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(4, affine=True)
        with torch.no_grad():
            self.norm.weight.normal_()
            self.norm.bias.normal_()

    def forward(self, x, rows):
        near_one = 1 + rows / 16
        return (
            near_one.prod(-1), near_one[:, :9].prod(-1, keepdim=True), near_one.cumprod(0),
            torch.linalg.vector_norm(rows, dim=-1), F.adaptive_max_pool2d(self.norm(x), (3, 2)),
        )  # fmt: skip


CASES["reductions_norms"] = (ReductionsNorms, [(2, 4, 13, 11), (5, 301)])


class Scans(torch.nn.Module):
    """Scans (te.scan: one line per thread, serial along the axis): position ids from a
    mask's running sum, a running product down the columns, the running maximum (its
    positions, the values gathered there), a running log-sum-exp, and a 1-d running
    sum (a single line: one thread)."""

    def forward(self, x, v):
        mask = (x > 0).long()
        return (
            (mask.cumsum(-1) - 1) * mask, (1 + x / 16).cumprod(0), *torch.cummax(x, 1),
            torch.logcumsumexp(x, -1), v.cumsum(0),
        )  # fmt: skip


CASES["scans"] = (Scans, [(6, 300), (37,)])


class GridSample(torch.nn.Module):
    """Bilinear resampling at grid points partly outside the image (gathers over the
    flattened image, zero padding)."""

    def forward(self, x, grid):
        return F.grid_sample(x, grid * 0.8, align_corners=False)


CASES["grid_sample"] = (GridSample, [(2, 3, 7, 9), (2, 5, 6, 2)])
