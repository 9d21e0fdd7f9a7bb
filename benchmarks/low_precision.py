"""bfloat16 and float16 models: tensorkiln vs torch eager in the same dtype, and both in float32.

Each model is exported in the 16-bit dtype (weights and inputs converted with
``.to(dtype)``) and in float32. tensorkiln stores 16-bit tensors and computes in float32
(``passes/legalize_16bit_floats.py``); torch's CPU kernels do the same per op (oneDNN
for matmul and convolution). The error columns compare each 16-bit run with torch's
float32 run on the same (rounded) weights: tensorkiln should be as accurate as torch.

    python benchmarks/low_precision.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import THREADS, eager_fn, interleaved_at_threads, load_average, ms, ratio  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.driver import compile_cache  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.context import tensor_to_numpy  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


WORKLOADS = [
    ("MLP 784-512-256-10, batch 64",
     lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)),
     lambda: (torch.randn(64, 784),)),
    ("transformer encoder layer (d=256, 4 heads, seq 128)",
     lambda: nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
     lambda: (torch.randn(1, 128, 256),)),
    ("ResNet basic block 1x64x28x28", lambda: BasicBlock(64), lambda: (torch.randn(1, 64, 28, 28),)),
]  # fmt: skip


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _compiled(model: nn.Module, inputs: tuple) -> tuple:
    start = time.perf_counter()
    lib = tk.build(from_exported_program(torch.export.export(model, inputs)))
    build = time.perf_counter() - start
    arrays = [tensor_to_numpy(t) for t in inputs]
    return lib, arrays, build


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)  # cold builds
    rows = []
    for name, make, inputs in WORKLOADS:
        torch.manual_seed(0)
        model32, x32 = make().eval(), inputs()
        lib32, arrays32, _ = _compiled(model32, x32)
        with torch.no_grad():
            for dtype in (torch.bfloat16, torch.float16):
                model16 = make().eval()
                model16.load_state_dict(model32.state_dict())
                model16 = model16.to(dtype)
                x16 = tuple(t.to(dtype) for t in x32)
                # the float32 reference on the same rounded weights and inputs (.float() converts
                # the module in place; back to 16 bits after, exactly: the weights are 16-bit values)
                reference = model16.float()(*(t.float() for t in x16)).numpy()
                model16 = model16.to(dtype)
                lib16, arrays16, build = _compiled(model16, x16)
                got = np.asarray(lib16(*arrays16)).astype(np.float32)
                theirs = model16(*x16).float().numpy()
                fns = {
                    n: [lambda: lib16(*arrays16), lambda: lib32(*arrays32), eager_fn(model16, x16), eager_fn(model32, x32)]
                    for n in THREADS
                }
                times = interleaved_at_threads(fns, args.repeat)
                for n in THREADS:
                    t16, t32, torch16, torch32 = times[n]
                    rows.append([
                        name, str(dtype).removeprefix("torch."), str(n), f"{build:.1f}", *map(ms, (t16, t32, torch16, torch32)),
                        ratio(t16, torch16), ratio(t16, t32),
                        f"{_relative(got, reference):.1e}", f"{_relative(theirs, reference):.1e}",
                    ])  # fmt: skip
                    print(" | ".join(rows[-1]), flush=True)
    body = [
        "## 16-bit floats: bfloat16 and float16 models vs torch eager",
        "",
        f"`benchmarks/low_precision.py` on {machine()}: each model exported in the 16-bit dtype and in float32;",
        f"medians of {args.repeat} calls per thread count, the four runs called in turn, thread counts alternating",
        "in 3 blocks. build = one cold `tk.build` of the 16-bit model (s). tensorkiln stores 16-bit tensors and",
        "computes in float32 (weights cast once, at compile time). rel. L2 err: each 16-bit run vs torch in",
        "float32 on the same rounded weights and inputs (the error of rounding, not a difference of models).",
        f"Load average at the end: {load_average()} (a shared machine: read the ratios).",
        "",
        table(
            ["model", "dtype", "threads", "build (s)", "tk 16-bit (ms)", "tk float32 (ms)", "torch 16-bit (ms)",
             "torch float32 (ms)", "tk/torch 16-bit", "tk 16-bit/float32", "tk rel. L2 err", "torch rel. L2 err"],
            rows,
        ),
    ]  # fmt: skip
    write_section("low-precision", "\n".join(body))


if __name__ == "__main__":
    main()
