"""Single kernels against torch eager (and numpy for GEMM), one thread, interleaved:
GEMM sizes, a dense layer, conv layers, softmax and layer-norm rows. GFLOP/s where it
means something. Writes its table to BENCHMARKS.md.

    .venv/bin/python benchmarks/kernels.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import interleaved, machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402

F = torch.nn.functional
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def gemm(n, k, m):
    b = tk.GraphBuilder()
    module = b.finish(b.matmul(b.input("a", (n, k)), b.input("b", (k, m))))
    a, bb = randn(n, k), randn(k, m)
    ta, tb = torch.from_numpy(a), torch.from_numpy(bb)
    return f"GEMM {n}x{k}x{m}", module, (a, bb), lambda: torch.mm(ta, tb), lambda: a @ bb, 2 * n * k * m


def dense(batch, k, n):
    w, bias = randn(n, k), randn(n)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.dense(b.input("x", (batch, k)), w, bias)))
    x = randn(batch, k)
    tx, tw, tb = map(torch.from_numpy, (x, w, bias))
    return f"dense+relu {batch}x{k}->{n}", module, (x,), lambda: F.relu(F.linear(tx, tw, tb)), None, 2 * batch * k * n


def conv(c, size, o, kernel, groups=1):
    w = randn(o, c // groups, kernel, kernel) * 0.1
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.conv2d(b.input("x", (1, c, size, size)), w, padding=kernel // 2, groups=groups)))
    x = randn(1, c, size, size)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    name = f"conv{kernel}x{kernel} {c}->{o} {size}x{size}" + (f" groups {groups}" if groups > 1 else "")
    flops = 2 * o * size * size * (c // groups) * kernel * kernel
    return name, module, (x,), lambda: F.relu(F.conv2d(tx, tw, padding=kernel // 2, groups=groups)), None, flops


def softmax(rows, cols):
    b = tk.GraphBuilder()
    module = b.finish(b.softmax(b.input("x", (rows, cols)), -1))
    x = randn(rows, cols)
    tx = torch.from_numpy(x)
    return f"softmax {rows}x{cols}", module, (x,), lambda: torch.softmax(tx, -1), None, None


CASES = [
    lambda: gemm(256, 256, 256),
    lambda: gemm(512, 512, 512),
    lambda: gemm(1024, 1024, 1024),
    lambda: gemm(255, 257, 129),
    lambda: dense(1, 784, 512),
    lambda: dense(64, 784, 512),
    lambda: conv(64, 56, 64, 3),
    lambda: conv(32, 56, 32, 3, groups=32),
    lambda: conv(64, 28, 128, 1),
    lambda: softmax(64, 1024),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for make in CASES:
        name, module, inputs, torch_fn, numpy_fn, flops = make()
        lib = tk.build(module)
        fns = [lambda: lib(*inputs), torch_fn] + ([numpy_fn] if numpy_fn else [])
        times = interleaved(fns, args.repeat)
        ours, eager = times[0], times[1]
        gflops = (lambda t: f"{flops / t / 1e9:.1f}") if flops else (lambda t: "-")
        rows.append(
            [name, f"{ours * 1e3:.3f}", f"{eager * 1e3:.3f}", f"{times[2] * 1e3:.3f}" if numpy_fn else "-",
             gflops(ours), gflops(eager), f"{ours / eager:.2f}"]
        )
        print(rows[-1])
    body = [
        "## Kernels vs torch eager (one thread)",
        "",
        f"`benchmarks/kernels.py` on {machine()}; medians of {args.repeat} interleaved calls, torch with",
        "`set_num_threads(1)`; numpy uses its own OpenBLAS threads (both cores). tk/torch > 1: tensorkiln is",
        "slower. GEMM and batch matmul have a default",
        "schedule (register tile, vectorized); dense, conv and softmax still run the plain loop nests",
        "of the default lowering.",
        "",
        table(["kernel", "tensorkiln (ms)", "torch (ms)", "numpy (ms)", "tk GFLOP/s", "torch GFLOP/s", "tk/torch"], rows),
    ]
    write_section("kernels", "\n".join(body))


if __name__ == "__main__":
    main()
