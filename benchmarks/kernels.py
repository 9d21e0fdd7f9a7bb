"""Single kernels: tensorkiln vs torch eager, torch.compile, ONNX Runtime and numpy, at
1 and 2 threads, interleaved; GEMM sizes, dense layers (batch 64 and batch 1), conv
layers (7x7/2 stem, 3x3, depthwise, 1x1), softmax, layer norm + GELU, a row reduction, max pooling,
a transpose.
GFLOP/s against the machine's peak (torch.mm 2048^3 in the same run). Writes its table
to BENCHMARKS.md.

    .venv/bin/python benchmarks/kernels.py [--repeat 30] [--no-compile] [--only GEMM]

Each kernel is a torch module: tensorkiln compiles its torch.export, ONNX Runtime runs
its ONNX export (``pip install -e '.[bench]'``), torch.compile its inductor build; a
peer that is missing or fails is ``-``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import (  # noqa: E402
    THREADS,
    compiled_fn,
    eager_fn,
    interleaved_at_threads,
    load_average,
    machine_peak,
    ms,
    onnxruntime_fns,
    ratio,
    tensorkiln_fn,
)
from report import machine, table, write_section  # noqa: E402

import torch  # noqa: E402

from tensorkiln.driver import compile_cache  # noqa: E402

nn, F = torch.nn, torch.nn.functional


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def gemm(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    return f"GEMM {m}x{k}x{n}", Fn(torch.mm), (a, b), lambda: a.numpy() @ b.numpy(), 2 * m * k * n


def dense(batch, k, n):
    model = nn.Sequential(nn.Linear(k, n), nn.ReLU()).eval()
    return f"dense+relu {batch}x{k}->{n}", model, (torch.randn(batch, k),), None, 2 * batch * k * n


def conv(c, size, o, kernel, groups=1, stride=1):
    conv2d = nn.Conv2d(c, o, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False)
    model = nn.Sequential(conv2d, nn.ReLU()).eval()
    name = f"conv{kernel}x{kernel}{f'/{stride}' if stride > 1 else ''} {c}->{o} {size}x{size}"
    name += f" groups {groups}" if groups > 1 else ""
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    flops = 2 * o * out * out * (c // groups) * kernel * kernel
    return name, model, (torch.randn(1, c, size, size),), None, flops


def softmax(rows, cols):
    return f"softmax {rows}x{cols}", Fn(lambda x: torch.softmax(x, -1)), (torch.randn(rows, cols),), None, None


def layernorm_gelu(rows, cols):
    model = nn.Sequential(nn.LayerNorm(cols), nn.GELU()).eval()
    return f"layernorm+gelu {rows}x{cols}", model, (torch.randn(rows, cols),), None, None


def transpose(rows, cols):
    x = torch.randn(rows, cols)
    name = f"transpose {rows}x{cols}"
    return name, Fn(lambda x: x.t().contiguous()), (x,), lambda: x.numpy().T.copy(), None


def row_sum(rows, cols):
    x = torch.randn(rows, cols)
    return f"sum rows {rows}x{cols}", Fn(lambda x: x.sum(-1)), (x,), lambda: x.numpy().sum(-1), None


def max_pool(c, size):
    return f"maxpool3x3/2 {c}x{size}x{size}", Fn(lambda x: F.max_pool2d(x, 3, 2, 1)), (torch.randn(1, c, size, size),), None, None


CASES = [
    lambda: gemm(256, 256, 256),
    lambda: gemm(512, 512, 512),
    lambda: gemm(1024, 1024, 1024),
    lambda: gemm(255, 257, 129),
    lambda: dense(1, 784, 512),
    lambda: dense(1, 768, 3072),  # a transformer's MLP at batch 1 (decoding)
    lambda: dense(64, 784, 512),
    lambda: dense(128, 768, 3072),  # BERT-base's MLP at sequence 128
    lambda: conv(3, 224, 64, 7, stride=2),  # the ResNet stem
    lambda: conv(64, 56, 64, 3),
    lambda: conv(32, 56, 32, 3, groups=32),
    lambda: conv(64, 28, 128, 1),
    lambda: softmax(64, 1024),
    lambda: layernorm_gelu(64, 1024),
    lambda: row_sum(256, 1024),
    lambda: max_pool(64, 56),
    lambda: transpose(3136, 256),
]

PEERS = ["tensorkiln", "torch eager", "torch.compile", "ONNX Runtime", "numpy"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to build)")
    parser.add_argument("--only", default="", help="run the kernels whose name contains this")
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)  # cold builds: no object code from an earlier run
    peak = machine_peak(THREADS)
    print("torch.mm 2048^3 GFLOP/s:", {n: round(g, 1) for n, g in peak.items()})
    rows = []
    for make in CASES:
        name, model, inputs, numpy_fn, flops = make()
        if args.only and args.only not in name:
            continue
        ours = tensorkiln_fn(model, inputs)
        compiled = None if args.no_compile else compiled_fn(model, inputs)
        ort = onnxruntime_fns(model, inputs, THREADS)
        for what in (compiled, ort):
            if isinstance(what, str):
                print(f"  {name}: {what}")
        fns = {
            n: [
                ours,
                eager_fn(model, inputs),
                compiled if callable(compiled) else None,
                ort[n] if isinstance(ort, dict) else None,
                numpy_fn,
            ]
            for n in THREADS
        }
        times = interleaved_at_threads(fns, args.repeat)
        for n in THREADS:
            t = times[n]
            gf = (lambda s: "-" if s is None else f"{flops / s / 1e9:.1f}") if flops else (lambda s: "-")
            of_peak = f"{flops / t[0] / 1e9 / peak[n] * 100:.0f}%" if flops else "-"
            rows.append(
                [name, str(n), *map(ms, t), gf(t[0]), of_peak, gf(t[1]), ratio(t[0], t[1]), ratio(t[0], t[3])]
            )
            print(" | ".join(rows[-1]), flush=True)
    body = [
        "## Kernels: tensorkiln vs torch eager, torch.compile, ONNX Runtime, numpy (1 and 2 threads)",
        "",
        f"`benchmarks/kernels.py` on {machine()}; medians of {args.repeat} calls per thread count, the peers",
        "called in turn and the thread counts alternating in 3 blocks (interleaved). Threads: tensorkiln's",
        "`TK_NUM_THREADS` (`set_num_threads`) and `torch.set_num_threads`; ONNX Runtime one session per count",
        "(`intra_op_num_threads`); numpy (OpenBLAS) on one thread in every row. Idle pool threads of every",
        "peer sleep instead of spinning (`OMP_WAIT_POLICY=passive` for torch's OpenMP, ORT without spinning, tensorkiln's after a spin of microseconds):",
        "with two cores, one peer's spinning workers would steal the core from the next peer timed.",
        f"Machine peak, torch.mm 2048^3 in the same run: {peak[1]:.0f} GFLOP/s at 1 thread, {peak[2]:.0f} at 2.",
        "tk/x > 1: tensorkiln is slower. `-`: peer not run (see the script's output for why).",
        f"Load average at the end of the run: {load_average()} (a shared machine: read the ratios).",
        "",
        table(
            ["kernel", "threads", *[f"{p} (ms)" for p in PEERS], "tk GFLOP/s", "tk % of peak", "torch GFLOP/s",
             "tk/torch", "tk/ORT"],
            rows,
        ),
    ]
    write_section("kernels", "\n".join(body))


if __name__ == "__main__":
    main()
