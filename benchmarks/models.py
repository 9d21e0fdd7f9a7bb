"""The torch model zoo end to end: import, build, first run and steady-state latency of
tensorkiln against torch eager, on one thread. Writes its table to BENCHMARKS.md.

    .venv/bin/python benchmarks/models.py [--repeat 30] [--models resnet18,mlp] [--no-full]

For each model of ``tensorkiln.examples.torch_zoo`` (and a full-size ResNet-50 at 64x64,
to check that the frontend's import time is a small fraction of build time):

- export: ``torch.export.export`` (torch's own cost, for scale);
- import: ``from_exported_program`` (Core ATen decomposition + conversion), median;
- build: one ``tk.build``;
- first run: the compiled model's first call;
- steady state: tensorkiln and torch eager called alternately in one loop on the same
  input, the median of each and their ratio (> 1: tensorkiln is slower).

torch runs with ``torch.set_num_threads(1)``: tensorkiln's code is single-threaded for now.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import interleaved, machine, median_time, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
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

        row["tk"], row["torch"] = interleaved([run_tk, run_torch], repeat)
    return row


def _ms(s: float) -> str:
    return f"{s * 1e3:.2f}" if s < 0.1 else f"{s * 1e3:.0f}"


def render(rows: list[dict], repeat: int) -> str:
    load = os.getloadavg()[0]
    header = [
        "model", "export (s)", "import (s)", "of it convert (s)", "build (s)", "import/build", "first run (ms)",
        "tensorkiln (ms)", "torch eager (ms)", "tk/torch", "rel. L2 err",
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
            f"{r['tk'] / r['torch']:.2f}", f"{r['error_l2']:.1e}",
        ])  # fmt: skip
    text = [
        "## Torch model zoo: tensorkiln vs torch eager",
        "",
        f"`benchmarks/models.py` on {machine()} (load average {load:.1f} at the end of the run: "
        f"the machine is shared, so read the ratios, not the absolute times); torch {torch.__version__} eager with "
        f"`torch.set_num_threads(1)` (tensorkiln's code is single-threaded). Models: "
        "`tensorkiln/examples/torch_zoo.py` (small widths, 32x32 images, batch 2), and "
        "`resnet50_full`: ResNet-50 at full width and depth (25.6M parameters), batch 1, 64x64.",
        "",
        "Import = `from_exported_program` (median): torch's `run_decompositions` to Core ATen, then our "
        "conversion to graph IR, timed alone in the next column; build = one "
        "`tk.build`, first run = the compiled model's first call; steady state = medians of "
        f"{repeat} calls of each, tensorkiln and torch alternating in one loop on the same input. "
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="steady-state calls per model and side")
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
    parser.add_argument("--no-full", action="store_true", help="skip the full-size ResNet-50")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.set_num_threads(1)

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
                f"first {_ms(row['first_run'])}ms tk {_ms(row['tk'])}ms torch {_ms(row['torch'])}ms "
                f"ratio {row['tk'] / row['torch']:.2f} err {row['error_l2']:.1e}",
                flush=True,
            )
    markdown = render(rows, args.repeat)
    print(markdown)
    if not args.no_write:
        write_section("torch-models", markdown)


if __name__ == "__main__":
    main()
