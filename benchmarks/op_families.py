"""The op families added for real models beyond the zoo: tensorkiln vs torch eager (and
torch.compile where it builds), 1 and 2 threads, interleaved; compile time, first run
and steady state reported apart. Writes its table to BENCHMARKS.md (section
``op-families``).

    .venv/bin/python benchmarks/op_families.py [--repeat 30] [--no-compile]

Workloads: a 3-d convolution layer and a small 3-d U-Net (one 2-d convolution over
stacked depth taps), scatter_add / index_put (line-by-line scatter kernels), instance norm,
F.normalize + cosine similarity (vector norms), rotary position embedding (sin/cos), cumsum
(a te.scan: one running value per row); batched matrix inverse and solve (one sequential
kernel per matrix), FFTs (a Stockham FFT kernel per axis: FNet token mixing, an FFT long
convolution, a Fourier neural operator layer, a spectrogram), volumetric grid_sample,
antialiased resize.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import WORKLOAD_COLUMNS, load_average, relative_error, run_workloads  # noqa: E402
from kernels import Fn  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import torch  # noqa: E402


nn, F = torch.nn, torch.nn.functional


def conv3d_layer():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv3d(16, 32, 3, padding=1), nn.ReLU()).eval()
    return "conv3d 16->32 3x3x3 on 16x32x32, batch 1", model, (torch.randn(1, 16, 16, 32, 32),)


class UNet3d(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU())

        self.down, self.bottom = block(1, 8), block(8, 16)
        self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
        self.out = nn.Sequential(block(16, 8), nn.Conv3d(8, 2, 1))

    def forward(self, x):
        skip = self.down(x)
        return self.out(torch.cat([skip, self.up(self.bottom(F.max_pool3d(skip, 2)))], 1))


def unet3d():
    torch.manual_seed(1)
    return "3-d U-Net (8/16 channels) on 1x16x32x32", UNet3d().eval(), (torch.randn(1, 1, 16, 32, 32),)


def scatter_add():
    index = torch.randint(0, 512, (4096, 64))
    return (
        "scatter_add 4096x64 updates into 512x64 (GNN sum)",
        Fn(lambda x, u: x.scatter_add(0, index, u)),
        (torch.randn(512, 64), torch.randn(4096, 64)),
    )


def index_put():
    rows = torch.randperm(1024)[:64]
    return (
        "x[rows] = v: 64 rows of a 1024x256 table",
        Fn(lambda x, v: x.index_put((rows,), v)),
        (torch.randn(1024, 256), torch.randn(64, 256)),
    )


def instance_norm():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.InstanceNorm2d(32, affine=True), nn.ReLU()).eval()
    return "conv 3x3 + instance norm + relu, 32x64x64", model, (torch.randn(1, 32, 64, 64),)


def cosine():
    return (
        "F.normalize + cosine_similarity, 256x512",
        Fn(lambda a, b: F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T + F.cosine_similarity(a, b).sum()),
        (torch.randn(256, 512), torch.randn(256, 512)),
    )


def rope():
    def fn(q):
        half = q.shape[-1] // 2
        inv = 1.0 / (10000 ** (torch.arange(0, half).float() / half))
        angles = torch.outer(torch.arange(q.shape[2]).float(), inv)
        x1, x2 = q[..., :half], q[..., half:]
        return torch.cat([x1 * angles.cos() - x2 * angles.sin(), x1 * angles.sin() + x2 * angles.cos()], -1)

    return "rotary embedding (sin/cos) of 8x256x64 queries", Fn(fn), (torch.randn(1, 8, 256, 64),)


def cumsum():
    return (
        "cumsum over 4096 positions, 64 rows (HF position ids)",
        Fn(lambda x: x.cumsum(-1)),
        (torch.randn(64, 4096),),
    )


def inverse():
    a = torch.randn(64, 32, 32) + 32 * torch.eye(32)
    return "torch.linalg.inv of 64 32x32 matrices", Fn(lambda a: torch.linalg.inv(a)), (a,)


def solve():
    a = torch.randn(16, 96, 96) + 96 * torch.eye(96)
    return "torch.linalg.solve, 16 96x96 systems, 8 right-hand sides", Fn(torch.linalg.solve), (a, torch.randn(16, 96, 8))


def fnet_mixing():
    return (
        "FNet mixing: fft2(x).real, 4x128x256",
        Fn(lambda x: torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real),
        (torch.randn(4, 128, 256),),
    )


def fft_long_convolution():
    def fn(u, k):
        n = u.shape[-1]
        return torch.fft.irfft(torch.fft.rfft(u, n=2 * n) * torch.fft.rfft(k, n=2 * n), n=2 * n)[..., :n]

    return "FFT long convolution (Hyena), 64 channels x 1024", Fn(fn), (torch.randn(1, 64, 1024), torch.randn(64, 1024))


class SpectralConv2d(nn.Module):
    def __init__(self, channels=32, modes=12):
        super().__init__()
        torch.manual_seed(3)
        self.modes = modes
        self.weight = nn.Parameter(torch.randn(channels, channels, modes, modes, dtype=torch.cfloat) / channels)

    def forward(self, x):
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out = torch.zeros(x.shape[0], self.weight.shape[1], x.shape[-2], x.shape[-1] // 2 + 1, dtype=torch.cfloat)
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weight)
        return torch.fft.irfft2(out, s=(x.shape[-2], x.shape[-1]))


def fno_layer():
    return "FNO spectral conv, 32 channels on 64x64, 12 modes", SpectralConv2d().eval(), (torch.randn(4, 32, 64, 64),)


def grid_sample_3d():
    grid = torch.rand(1, 32, 32, 32, 3) * 2 - 1
    return (
        "grid_sample of a 8x32x32x32 volume (trilinear, VoxelMorph)",
        Fn(lambda x: F.grid_sample(x, grid, align_corners=True)),
        (torch.randn(1, 8, 32, 32, 32),),
    )


def spectrogram():
    return (
        "power spectrogram (Whisper's front end: stft 400/160, hann), 2 x 1 s at 16 kHz",
        Fn(lambda x: torch.stft(x, 400, 160, window=torch.hann_window(400), return_complex=True).abs() ** 2),
        (torch.randn(2, 16000),),
    )


def antialias_resize():
    return (
        "antialiased bilinear resize 3x512x512 -> 224x224",
        Fn(lambda x: F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True)),
        (torch.randn(1, 3, 512, 512),),
    )


CASES = [
    conv3d_layer, unet3d, scatter_add, index_put, instance_norm, cosine, rope, cumsum, inverse, solve, fnet_mixing,
    fft_long_convolution, fno_layer, spectrogram, grid_sample_3d, antialias_resize,
]  # fmt: skip


def main() -> None:
    rows, repeat = run_workloads(CASES, relative_error)
    body = [
        "## Op families beyond the zoo: 3-d convolution, scatter, norms, rotary embedding, linalg, FFT, resampling",
        "",
        f"`benchmarks/op_families.py` on {machine()}; build = one cold `tk.build` (s; disk cache off), first run = its first call,",
        f"steady state = medians of {repeat} calls per thread count, tensorkiln, torch eager and torch.compile",
        "called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower. rel. L2 err:",
        "compiled vs torch eager. Scatter ops: the input copied, then each line (every axis but the scatter",
        "axis) applies its updates in order, lines in parallel; along a leading axis blocks of 16 neighbouring lines",
        f"apply each update together (contiguous reads). Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "rel. L2 err"], rows),
    ]
    write_section("op-families", "\n".join(body))


if __name__ == "__main__":
    main()
