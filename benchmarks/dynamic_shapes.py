"""What a symbolic dim costs: models compiled once for a symbolic size vs compiled for
each static size, against torch eager (1 and 2 threads, interleaved). Dense layers at a
symbolic batch (``Dim("batch")``) at batch 1, 8 and 64, and a BERT-base-size encoder
at a symbolic sequence length (``Dim("seq")``) at 32 and 128 tokens. Writes its table
to BENCHMARKS.md.

    .venv/bin/python benchmarks/dynamic_shapes.py [--repeat 30] [--no-encoder]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import bert_base_encoder  # noqa: E402
from peers import THREADS, eager_fn, interleaved_at_threads, load_average, ms, ratio, tensorkiln_fn  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.driver import compile_cache  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

DENSE_LAYERS = [(768, 3072), (3072, 768), (784, 512)]
BATCHES = [1, 8, 64]
SEQUENCES = [32, 128]


def symbolic_build(model: torch.nn.Module, example: torch.Tensor, axis: int, name: str):
    """``model`` compiled once with dim ``axis`` of its input symbolic; and the build time."""
    dim = torch.export.Dim(name, min=1, max=4096)
    start = time.perf_counter()
    lib = tk.build(from_exported_program(torch.export.export(model, (example,), dynamic_shapes=({axis: dim},))))
    return lib, time.perf_counter() - start


def compare(label: str, lib, model: torch.nn.Module, x: torch.Tensor, flops: float | None, repeat: int, rows: list) -> None:
    array = x.numpy()
    fns = {t: [lambda: lib(array), tensorkiln_fn(model, (x,)), eager_fn(model, (x,))] for t in THREADS}
    times = interleaved_at_threads(fns, repeat)
    for t in THREADS:
        sym, stat, eager = times[t]
        gf = f"{flops / sym / 1e9:.1f}" if flops else "-"
        rows.append([label, str(t), ms(sym), ms(stat), ms(eager), gf, ratio(sym, stat), ratio(sym, eager)])
        print(" | ".join(rows[-1]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-encoder", action="store_true", help="only the dense layers")
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)
    rows: list[list[str]] = []
    builds = []
    for k, n in DENSE_LAYERS:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(k, n), torch.nn.ReLU()).eval()
        lib, _ = symbolic_build(model, torch.randn(2, k), 0, "batch")
        for m in BATCHES:
            compare(f"dense+relu {m}x{k}->{n} (batch symbolic)", lib, model, torch.randn(m, k), 2 * m * k * n, args.repeat, rows)
    if not args.no_encoder:
        model, (example,) = bert_base_encoder()
        lib, seconds = symbolic_build(model, example, 1, "seq")
        builds.append(f"BERT-base-size encoder with a symbolic sequence: built in {seconds:.1f} s.")
        for seq in SEQUENCES:
            compare(f"BERT-base-size encoder, seq {seq} (seq symbolic)", lib, model, torch.randn(1, seq, 768), None,
                    max(5, args.repeat // 3), rows)
    body = [
        "## Dynamic shapes: compiled once for a symbolic size vs for each static size",
        "",
        f"`benchmarks/dynamic_shapes.py` on {machine()}: each model compiled once with a symbolic dim",
        "(`Dim(\"batch\")` rows of a dense layer, `Dim(\"seq\")` tokens of the encoder) and once per static size,",
        f"vs torch eager; medians, interleaved, 1 and 2 threads. {' '.join(builds)}",
        f"Load average at the end: {load_average()} (a shared machine: read the ratios).",
        "",
        table(["model", "threads", "tk symbolic (ms)", "tk static (ms)", "torch eager (ms)", "tk symbolic GFLOP/s",
               "symbolic/static", "symbolic/torch"], rows),
    ]
    write_section("dynamic-shapes", "\n".join(body))


if __name__ == "__main__":
    main()
