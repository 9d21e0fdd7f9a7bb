"""Writes the generated kernels that ``run.py`` times into DIR: softmax with and without
the shared copy of its row (``schedule/gpu_rows.py``), the same with ``fmaxf`` for the
NaN-propagating max, layer norm, sum(|x|). Needs xDSL (run it where tensorkiln builds).

    python benchmarks/gpu_variants/gen.py DIR
"""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpu_bench  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.schedule import gpu_rows  # noqa: E402


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    workloads = gpu_bench.workloads(tk, torch, np, device="cpu")

    def source(name: str) -> str:
        return tk.emit_source(workloads[name]()[0], target="cuda")

    softmax = source("softmax 8192x4096")
    (out / "softmax_cached.cu").write_text(softmax)
    (out / "softmax_cached_fmaxf.cu").write_text(softmax.replace("tk_maximumf(v", "fmaxf(v"))
    (out / "layer_norm_cached.cu").write_text(source("layer norm 8192x4096"))
    (out / "sum_abs.cu").write_text(source("sum(|x|) of 64M"))
    budget, gpu_rows.ROW_CACHE_BYTES = gpu_rows.ROW_CACHE_BYTES, 0
    try:
        (out / "softmax_plain.cu").write_text(source("softmax 8192x4096"))
    finally:
        gpu_rows.ROW_CACHE_BYTES = budget


if __name__ == "__main__":
    main(Path(sys.argv[1]))
