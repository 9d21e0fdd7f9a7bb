"""The torch model zoo end to end: import, build, first run and steady-state latency of
tensorkiln against torch eager at 1 and 2 threads; then the headline models (MLP
784-512-256-10, ResNet basic block, transformer encoder layer, zoo CNNs at batch 1, BERT-base,
ResNet-50, recurrent layers and a group-norm UNet) against torch eager, torch.compile and
ONNX Runtime at 1 and 2 threads, tensorkiln/ORT per row. Writes two tables to BENCHMARKS.md;
the peers table alone (section ``model-peers``) is one command::

    .venv/bin/python benchmarks/models.py --no-zoo

    .venv/bin/python benchmarks/models.py [--repeat 30] [--models resnet18,mlp] [--no-full]
                                          [--no-compile] [--no-zoo] [--no-peers]

For each model of ``tensorkiln.examples.torch_zoo`` (and a full-size ResNet-50 at 64x64,
to check that the frontend's import time is a small fraction of build time):

- export: ``torch.export.export`` (torch's own cost, for scale);
- import: ``from_exported_program`` (Core ATen decomposition + conversion), median;
- build: one ``tk.build``;
- first run: the compiled model's first call;
- steady state: tensorkiln and torch eager called alternately in one loop on the same
  input, the median of each and their ratio (> 1: tensorkiln is slower).

Thread counts: tensorkiln's ``set_num_threads`` and ``torch.set_num_threads`` together,
alternating 1 and 2 in blocks (``peers.interleaved_at_threads``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import (  # noqa: E402  (first: sets the thread-pool environment before torch loads)
    THREADS,
    compiled_fn,
    eager_fn,
    interleaved_at_threads,
    load_average,
    ms,
    onnxruntime_fns,
    ratio,
)
from report import machine, median_time, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.driver import compile_cache  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, ZooEntry, random_inputs, resnet50_full  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.importer import _decompose  # noqa: E402


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _relative_error(got, expected) -> float:
    got = got if isinstance(got, tuple) else (got,)
    expected = [e.numpy() for e in (expected if isinstance(expected, tuple | list) else (expected,)) if e is not None]
    worst = 0.0
    for g, e in zip(got, expected):
        g, e = np.asarray(g, np.float64), e.astype(np.float64)
        worst = max(worst, float(np.linalg.norm(g - e) / max(np.linalg.norm(e), 1e-30)))
    return worst


def bench(entry: ZooEntry, repeat: int) -> dict:
    """The numbers for one model; ``error`` set (and the rest missing) if it does not compile."""
    model = entry.build()
    args = random_inputs(entry, seed=0)
    ep, export_s = _timed(lambda: torch.export.export(model, args))
    row: dict = {"name": entry.name, "description": entry.description, "export": export_s}
    row["params"] = sum(p.numel() for p in model.parameters())
    try:
        module = from_exported_program(ep)
    except (UnsupportedOperatorError, TorchImportError) as e:
        row["error"] = f"{type(e).__name__}: {str(e)[:240]}"
        return row
    import_repeat = 3 if row["params"] > 1e6 else 5
    row["import"] = median_time(lambda: from_exported_program(ep), repeat=import_repeat)
    decomposed = _decompose(ep)
    row["convert"] = median_time(lambda: from_exported_program(decomposed, decompose=False), repeat=import_repeat)
    row["graph_ops"] = sum(1 for _ in module.walk()) - 2
    lib, row["build"] = _timed(lambda: tk.build(module))

    run_args = random_inputs(entry, seed=1)
    arrays = [a.numpy() for a in run_args]
    got, row["first_run"] = _timed(lambda: lib(*arrays))
    with torch.no_grad():
        row["error_l2"] = _relative_error(got, model(*run_args))

        def run_torch():
            return model(*run_args)

        def run_tk():
            return lib(*arrays)

        times = interleaved_at_threads({n: [run_tk, run_torch] for n in THREADS}, repeat)
        row["tk"], row["torch"] = times[1]
        row["tk2"], row["torch2"] = times[2]
    return row


def _ms(s: float) -> str:
    return f"{s * 1e3:.2f}" if s < 0.1 else f"{s * 1e3:.0f}"


def render(rows: list[dict], repeat: int) -> str:
    load = os.getloadavg()[0]
    header = [
        "model", "export (s)", "import (s)", "of it convert (s)", "build (s)", "import/build", "first run (ms)",
        "tk 1 thread (ms)", "torch 1 thread (ms)", "tk/torch 1t", "tk 2 threads (ms)", "torch 2 threads (ms)",
        "tk/torch 2t", "rel. L2 err",
    ]  # fmt: skip
    body, failed = [], []
    for r in rows:
        if "error" in r:
            failed.append(r)
            continue
        body.append([
            f"{r['name']}", f"{r['export']:.2f}", f"{r['import']:.2f}", f"{r['convert']:.2f}",
            f"{r['build']:.1f}",
            f"{r['import'] / r['build']:.1%}", _ms(r["first_run"]), _ms(r["tk"]), _ms(r["torch"]),
            f"{r['tk'] / r['torch']:.2f}", _ms(r["tk2"]), _ms(r["torch2"]), f"{r['tk2'] / r['torch2']:.2f}",
            f"{r['error_l2']:.1e}",
        ])  # fmt: skip
    text = [
        "## Torch model zoo: tensorkiln vs torch eager (1 and 2 threads)",
        "",
        f"`benchmarks/models.py` on {machine()} (load average {load:.1f} at the end of the run: "
        f"the machine is shared, so read the ratios, not the absolute times); torch {torch.__version__} eager; "
        "threads set together for both (tensorkiln's `set_num_threads`, `torch.set_num_threads`), idle "
        "OpenMP threads sleeping (torch: `OMP_WAIT_POLICY=passive`; tensorkiln: after a spin of microseconds). Models: "
        "`tensorkiln/examples/torch_zoo.py` (small widths, 32x32 images, batch 2), and "
        "`resnet50_full`: ResNet-50 at full width and depth (25.6M parameters), batch 1, 64x64.",
        "",
        "Import = `from_exported_program` (median): torch's `run_decompositions` to Core ATen, then our "
        "conversion to graph IR, timed alone in the next column; build = one "
        "`tk.build`, first run = the compiled model's first call; steady state = medians of "
        f"{repeat} calls of each per thread count, tensorkiln and torch alternating on the same input, "
        "1 and 2 threads alternating in blocks. "
        "tk/torch > 1 means tensorkiln is slower. rel. L2 err: compiled vs torch on fresh inputs "
        "(worst output).",
        "",
        table(header, body),
    ]
    if failed:
        text += ["", "Not compiled yet (the import fails):", ""]
        text += [f"- `{r['name']}`: {r['error']}" for r in failed]
    full = next((r for r in rows if r["name"] == "resnet50_full" and "error" not in r), None)
    if full is not None:
        text += [
            "",
            f"Import vs build, full-size ResNet-50 ({full['graph_ops']} graph ops): import "
            f"{full['import']:.2f} s = {full['import'] / full['build']:.0%} of the {full['build']:.1f} s build; "
            f"our conversion alone {full['convert']:.2f} s = {full['convert'] / full['build']:.0%} of it "
            "(the rest is torch's `run_decompositions`).",
        ]
    return "\n".join(text)


def headline_models() -> list[tuple[str, torch.nn.Module, tuple[torch.Tensor, ...]]]:
    """The models the issue names, at batch 1: fusion.py's MLP / ResNet basic block /
    encoder layer, the zoo's CNNs, a BERT-base-size encoder, a full ResNet-50 at 224x224,
    then families.py's recurrent layers (LSTM, GRU) and group-norm UNet (issue #36)."""
    from families import FAMILIES
    from fusion import MODELS

    found = []
    for name, make in MODELS.items():
        model, x = make()
        found.append((name, model.eval(), (x,)))
    for zoo_name in ("resnet18", "mobilenet_v2", "squeezenet", "shufflenet_v2", "efficientnet"):
        entry = ZOO[zoo_name]
        inputs = tuple(a[:1] for a in random_inputs(entry, seed=0))
        found.append((f"zoo {zoo_name} batch 1", entry.build(), inputs))
    found.append(("BERT-base-size encoder (12 layers, d=768, 12 heads, seq 128)", *bert_base_encoder()))
    full = resnet50_full()
    found.append(("ResNet-50 (full size, random weights) 1x3x224x224", full.build(), (torch.randn(1, 3, 224, 224),)))
    found += [make() for make in FAMILIES]
    return found


def bert_base_encoder() -> tuple[torch.nn.Module, tuple[torch.Tensor]]:
    """nn.TransformerEncoder at BERT-base's sizes (GELU, post-norm), random weights."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).eval()
    return model, (torch.randn(1, 128, 768),)


def bench_peers(repeat: int, compile_: bool, only: str = "") -> str:
    """The headline models vs torch eager, torch.compile and ONNX Runtime."""
    peers = ["tensorkiln", "torch eager", "torch.compile", "ONNX Runtime"]
    rows, slower = [], []
    for name, model, inputs in headline_models():
        if only and only not in name:
            continue
        try:
            module = from_exported_program(torch.export.export(model, inputs))
            lib, build = _timed(lambda: tk.build(module))
        except Exception as error:  # a model we do not compile is a result, not a crash
            print(f"{name}: tensorkiln: {type(error).__name__}: {error}")
            continue
        arrays = [a.numpy() for a in inputs]

        def ours(lib=lib, arrays=arrays):
            return lib(*arrays)

        compiled = compiled_fn(model, inputs) if compile_ else None
        ort = onnxruntime_fns(model, inputs, THREADS)
        for what in (compiled, ort):
            if isinstance(what, str):
                print(f"  {name}: {what}")
        fns = {
            n: [ours, eager_fn(model, inputs), compiled if callable(compiled) else None, ort[n] if isinstance(ort, dict) else None]
            for n in THREADS
        }
        times = interleaved_at_threads(fns, repeat)
        for n in THREADS:
            t = times[n]
            rows.append([name, str(n), f"{build:.1f}", *map(ms, t), ratio(t[0], t[1]), ratio(t[0], t[2]), ratio(t[0], t[3])])
            print(" | ".join(rows[-1]), flush=True)
            if t[0] is not None and t[3] is not None and t[0] > t[3]:
                slower.append(f"{name} at {n} thread{'s' * (n > 1)} ({ratio(t[0], t[3])})")
    return "\n".join(
        [
            "## Models at batch 1: tensorkiln vs torch eager, torch.compile, ONNX Runtime (1 and 2 threads)",
            "",
            f"`benchmarks/models.py` on {machine()}, torch {torch.__version__}; medians of {repeat} calls per thread",
            "count, the peers called in turn and the thread counts alternating in 3 blocks. Threads: tensorkiln's",
            "`set_num_threads` and `torch.set_num_threads` (torch.compile's code too); ONNX Runtime one session per",
            "count (`intra_op_num_threads`, exported with `torch.onnx.export(dynamo=True)`). Idle pool threads sleep",
            "(`OMP_WAIT_POLICY=passive`, ORT without spinning, tensorkiln's after a spin of microseconds). tk/x < 1: tensorkiln is faster.",
            f"Load average at the end of the run: {load_average()} (a shared machine: read the ratios). build: one cold",
            "`tk.build` (import excluded). Recurrent layers and the UNet: `benchmarks/families.py`.",
            "",
            table(["model", "threads", "build (s)", *[f"{p} (ms)" for p in peers], "tk/eager", "tk/compile", "tk/ORT"], rows),
            "",
            "Goal tk/ORT <= 1.0 on every row: "
            + (f"{len(slower)} rows above it: {'; '.join(slower)}." if slower else "met on every row."),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="steady-state calls per model and side")
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
    parser.add_argument("--no-full", action="store_true", help="skip the full-size ResNet-50")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile in the peers table")
    parser.add_argument("--no-zoo", action="store_true", help="only the peers table")
    parser.add_argument("--no-peers", action="store_true", help="only the zoo table")
    parser.add_argument("--only", default="", help="peers table: models whose name contains this")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    compile_cache.set_cache_dir(None)  # cold builds: no object code from an earlier run

    if not args.no_peers:
        markdown = bench_peers(args.repeat, not args.no_compile, args.only)
        print(markdown)
        if not args.no_write:
            write_section("model-peers", markdown)
    if args.no_zoo:
        return
    entries = [ZOO[n] for n in args.models.split(",")] if args.models else list(ZOO.values())
    if not args.no_full:
        entries.append(resnet50_full())
    rows = []
    for entry in entries:
        row = bench(entry, args.repeat)
        rows.append(row)
        if "error" in row:
            print(f"{entry.name:22s} not compiled: {row['error']}", flush=True)
        else:
            print(
                f"{entry.name:22s} import {row['import']:.2f}s build {row['build']:.1f}s "
                f"first {_ms(row['first_run'])}ms tk {_ms(row['tk'])}/{_ms(row['tk2'])}ms "
                f"torch {_ms(row['torch'])}/{_ms(row['torch2'])}ms (1/2 threads) err {row['error_l2']:.1e}",
                flush=True,
            )
    markdown = render(rows, args.repeat)
    print(markdown)
    if not args.no_write:
        write_section("torch-models", markdown)

if __name__ == "__main__":
    main()
