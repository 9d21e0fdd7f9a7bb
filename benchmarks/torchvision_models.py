"""Full-size torchvision models at 224x224, batch 1: tensorkiln against torch eager (and
ONNX Runtime with ``--ort``), at 1 and 2 threads, with compile time, first run and the
relative error against torch. Writes the ``torchvision`` section of BENCHMARKS.md.

    python benchmarks/torchvision_models.py [--models resnet50,vit_b_16] [--repeat 20] [--ort]

torchvision is not a dependency: its PyPI wheels need the torch release they were built
for (torchvision 0.29.1 with torch 2.14.1; the dev set-up's torch 2.13.0 CPU wheel has
no matching torchvision here), so run this in an environment that has both, e.g.
``python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.14.1 torchvision==0.29.1
-e .``. Weights are random (``weights=None``), zero-initialised ones redrawn so that
every output depends on every layer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import THREADS, eager_fn, interleaved_at_threads, load_average, onnxruntime_fns, ratio  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.tools.model_check import randomize_zeros  # noqa: E402

MODELS = (
    "resnet50", "mobilenet_v3_large", "efficientnet_b0", "regnet_y_400mf", "densenet121",
    "convnext_tiny", "vit_b_16", "swin_t", "resnext50_32x4d",
)  # fmt: skip


def _model(name: str) -> torch.nn.Module:
    import torchvision

    return randomize_zeros(getattr(torchvision.models, name)(weights=None).eval())


def bench(name: str, repeat: int, with_ort: bool) -> list[str]:
    torch.manual_seed(0)
    model = _model(name)
    x = torch.randn(1, 3, 224, 224)
    start = time.perf_counter()
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    compile_s = time.perf_counter() - start
    array = x.numpy()
    start = time.perf_counter()
    got = lib(array)
    first_s = time.perf_counter() - start
    with torch.no_grad():
        want = model(x).numpy()
    error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    eager = eager_fn(model, (x,))
    ort = onnxruntime_fns(model, (x,), THREADS) if with_ort else None
    fns = {
        n: [lambda: lib(array), eager, ort[n] if isinstance(ort, dict) else None] for n in THREADS
    }
    times = interleaved_at_threads(fns, repeat)
    row = [name, f"{error:.1e}", f"{compile_s:.1f}", f"{first_s * 1e3:.0f}"]
    for n in THREADS:
        ours, theirs, onnx = times[n]
        row += [f"{ours * 1e3:.1f}", f"{theirs * 1e3:.1f}", ratio(ours, theirs)]
        if with_ort:
            row += ["-" if onnx is None else f"{onnx * 1e3:.1f}", ratio(ours, onnx)]
    print(" | ".join(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--ort", action="store_true", help="also time ONNX Runtime (export takes a while)")
    args = parser.parse_args()
    try:
        import torchvision  # noqa: F401
    except Exception as e:  # (a torchvision built for another torch fails at import with RuntimeError)
        sys.exit(f"torchvision is needed (see the module docstring): {e}")
    header = ["model", "rel. err", "compile s", "first run ms"]
    for n in THREADS:
        header += [f"tk {n}T ms", f"torch {n}T ms", f"tk/torch {n}T"]
        if args.ort:
            header += [f"ORT {n}T ms", f"tk/ORT {n}T"]
    rows = [bench(name, args.repeat, args.ort) for name in args.models.split(",")]
    text = (
        f"torchvision models (random weights), 1x3x224x224, torch {torch.__version__} eager"
        + (" and ONNX Runtime" if args.ort else "")
        + f"; steady state = median of {args.repeat} calls interleaved with the peers, thread counts"
        f" alternating in blocks; load average at the end {load_average()}. {machine()}\n\n"
        + table(header, rows)
    )
    write_section("torchvision", text)


if __name__ == "__main__":
    main()
