"""What operator fusion buys: kernels, bytes of intermediate buffers and latency at O0
(no graph optimization) vs O2 (folding + fuse-ops), per model, with torch eager for
scale. Writes its table to BENCHMARKS.md.

    .venv/bin/python benchmarks/fusion.py [--repeat 30]
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
from tensorkiln.build import lower_to_loops  # noqa: E402
from tensorkiln.dialects import loop  # noqa: E402
from tensorkiln.examples.torch_zoo import BasicBlock  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.dialects.functions import find_function  # noqa: E402
from tensorkiln.driver.pipelines import optimize_graph  # noqa: E402
from tensorkiln.passes.pipeline import PassContext  # noqa: E402


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    ), torch.randn(1, 784)


def resnet_block():
    block = BasicBlock(64, 64)
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return block, torch.randn(1, 64, 56, 56)


def encoder_layer():
    layer = torch.nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, batch_first=True, dropout=0.0)
    return layer, torch.randn(1, 128, 256)


MODELS = {
    "MLP 784-512-256-10": mlp,
    "ResNet basic block 1x64x56x56": resnet_block,
    "transformer encoder layer (d=256, 4 heads, seq 128)": encoder_layer,
}


def kernels_and_intermediate_bytes(module, opt_level: int) -> tuple[int, int]:
    work = module.clone()
    optimize_graph(work, PassContext(opt_level=opt_level, dump_ir=False))
    loops = lower_to_loops(work)
    kernels = len(loop.kernels(loops))
    host = find_function(loops, "main")
    nbytes = 0
    for op in host.walk():
        if isinstance(op, loop.AllocOp) and op.scope.data == "global":
            t = op.result.type
            nbytes += int(np.prod(t.get_shape())) * t.element_type.bitwidth // 8
    return kernels, nbytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, make in MODELS.items():
        model, x = make()
        model.eval()
        module = from_exported_program(torch.export.export(model, (x,)))
        (k0, b0), (k2, b2) = kernels_and_intermediate_bytes(module, 0), kernels_and_intermediate_bytes(module, 2)
        o0, o2 = tk.build(module, opt_level=0), tk.build(module, opt_level=2)
        data = x.numpy()
        with torch.no_grad():
            expected = model(x).numpy()
        for lib in (o0, o2):
            got = lib(data)
            assert np.linalg.norm(got - expected) <= 1e-5 * np.linalg.norm(expected), name

        def eager():
            with torch.no_grad():
                model(x)

        t0, t2, te = interleaved([lambda: o0(data), lambda: o2(data), eager], args.repeat)
        rows.append(
            [name, f"{k0} -> {k2}", f"{b0 / 1024:.0f} -> {b2 / 1024:.0f}", f"{t0 * 1e3:.3f}", f"{t2 * 1e3:.3f}",
             f"{t0 / t2:.2f}x", f"{te * 1e3:.3f}"]
        )
        print(rows[-1])
    body = [
        "## Operator fusion: O0 vs O2",
        "",
        f"`benchmarks/fusion.py` on {machine()}; medians of {args.repeat} interleaved calls, one thread",
        "(torch too). Kernels and KiB of intermediate buffers (allocated by the host function between",
        "kernels) without graph optimization (O0) and with it (O2: constant folding, batch-norm folding,",
        "convert-layout to NHWC, fuse-ops). Both get the default schedules; O0 keeps NCHW convolutions,",
        "whose schedule is far slower, so the ResNet ratio is mostly the layout's, the others fusion's.",
        "The O2 kernel count of the lone ResNet block includes its 2 boundary transposes (NCHW in and out).",
        "",
        table(["model", "kernels O0 -> O2", "intermediates KiB O0 -> O2", "O0 (ms)", "O2 (ms)", "O0/O2", "torch eager (ms)"], rows),
    ]
    write_section("fusion", "\n".join(body))


if __name__ == "__main__":
    main()
