"""Dense layers compiled once for a symbolic batch vs for each static batch, against
torch eager, at batch 1, 8 and 64 (one thread and two, interleaved): what a model
exported with ``Dim("batch")`` or a dynamic sequence length pays for not knowing its
row count. Writes its table to BENCHMARKS.md.

    .venv/bin/python benchmarks/dense_batches.py [--repeat 40]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import THREADS, eager_fn, interleaved_at_threads, load_average, ms, ratio, tensorkiln_fn  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.executors import compile_cache  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

LAYERS = [(768, 3072), (3072, 768), (784, 512)]
BATCHES = [1, 8, 64]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)
    rows = []
    for k, n in LAYERS:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(k, n), torch.nn.ReLU()).eval()
        batch = torch.export.Dim("batch", min=1, max=4096)
        ep = torch.export.export(model, (torch.randn(2, k),), dynamic_shapes=({0: batch},))
        symbolic = tk.build(from_exported_program(ep))
        for m in BATCHES:
            x = torch.randn(m, k)
            array = x.numpy()
            fns = {t: [lambda: symbolic(array), tensorkiln_fn(model, (x,)), eager_fn(model, (x,))] for t in THREADS}
            times = interleaved_at_threads(fns, args.repeat)
            for t in THREADS:
                sym, stat, eager = times[t]
                gf = 2 * m * k * n / sym / 1e9
                rows.append([f"{m}x{k}->{n}", str(t), ms(sym), ms(stat), ms(eager), f"{gf:.1f}", ratio(sym, stat), ratio(sym, eager)])
                print(" | ".join(rows[-1]), flush=True)
    body = [
        "## Dense layers at a symbolic batch vs a static one",
        "",
        f"`benchmarks/dense_batches.py` on {machine()}: `Linear + ReLU` compiled once with `Dim(\"batch\")` (symbolic",
        "rows) and once per static batch, vs torch eager; medians of "
        f"{args.repeat} calls, interleaved, 1 and 2 threads. Load average at the end: {load_average()}.",
        "",
        table(["layer", "threads", "tk symbolic (ms)", "tk static (ms)", "torch eager (ms)", "tk symbolic GFLOP/s",
               "symbolic/static", "symbolic/torch"], rows),
    ]
    write_section("dense-batches", "\n".join(body))


if __name__ == "__main__":
    main()
