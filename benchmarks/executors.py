"""Executors, compile cache and deployment, measured: per-call overhead of every executor
on a tiny model (vs torch eager), build time with a cold and a warm disk cache, and the
load time of an exported artifact. Writes its section of BENCHMARKS.md.

    .venv/bin/python benchmarks/executors.py [--calls 2000] [--builds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import tensorkiln as tk  # noqa: E402
from report import machine, table, write_section  # noqa: E402
from tensorkiln.examples.models import elementwise_chain, mlp, small_cnn  # noqa: E402
from tensorkiln.driver import compile_cache  # noqa: E402
from tensorkiln.runtime import load_module  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def tiny_model():
    """dense 16->8, relu, dense 8->4, softmax at batch 1 (4 kernels after fusion): the
    work is negligible, the calls are the cost."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 16)).astype("f4")
    w2 = rng.standard_normal((4, 8)).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", (1, 16))
    module = b.finish(b.softmax(b.dense(b.relu(b.dense(x, w1)), w2), -1))
    return module, (w1, w2), rng.standard_normal((1, 16)).astype("f4")


def overhead(calls: int) -> list[list[str]]:
    module, w, x = tiny_model()
    runs = {kind: tk.create_executor(kind, module).evaluate() for kind in ("interpreter", "graph", "vm", "aot")}
    with tempfile.TemporaryDirectory() as tmp:
        tk.build(module).export_library(Path(tmp) / "tiny.tk")
        runs["aot (deployed)"] = load_module(Path(tmp) / "tiny.tk")
        runs["graph (deployed)"] = load_module(Path(tmp) / "tiny.tk", executor="graph")
        if torch is not None:
            torch.set_num_threads(1)
            w1, w2 = (torch.from_numpy(a) for a in w)
            tx = torch.from_numpy(x)

            def eager():
                with torch.no_grad():
                    return torch.softmax(torch.relu(tx @ w1.T) @ w2.T, -1)

            runs["torch eager"] = eager
        for run in runs.values():  # warm up
            run(x) if run is not runs.get("torch eager") else run()
        samples: dict[str, list[float]] = {k: [] for k in runs}
        rounds, per = 20, max(1, calls // 20)
        for _ in range(rounds):  # interleaved
            for name, run in runs.items():
                args = () if name == "torch eager" else (x,)
                start = time.perf_counter()
                for _ in range(per):
                    run(*args)
                samples[name].append((time.perf_counter() - start) / per)
    aot = statistics.median(samples["aot"])
    rows = []
    for name, s in samples.items():
        m = statistics.median(s)
        rows.append([name, f"{m * 1e6:.2f}", f"{m / aot:.2f}"])
    return rows


def build_times(builds: int) -> list[list[str]]:
    models = {
        "MLP 784-512-256-10": lambda: mlp()[0],
        "CNN (2 conv, pool, dense)": lambda: small_cnn()[0],
        "chain of 200 elementwise ops": lambda: elementwise_chain(200)[0],
    }
    if torch is not None:
        from tensorkiln.examples.torch_zoo import ZOO, random_inputs
        from tensorkiln.frontends.torch import from_exported_program

        def zoo(name):
            entry = ZOO[name]
            return from_exported_program(torch.export.export(entry.build(), random_inputs(entry, seed=0)))

        models["resnet18 (zoo)"] = lambda: zoo("resnet18")
        models["transformer_encoder (zoo)"] = lambda: zoo("transformer_encoder")
    rows = []
    for name, make in models.items():
        module = make()
        cold, warm = [], []
        for _ in range(builds):  # interleaved: a fresh cache directory for each cold build
            with tempfile.TemporaryDirectory() as tmp:
                compile_cache.set_cache_dir(tmp)
                start = time.perf_counter()
                tk.build(module)
                cold.append(time.perf_counter() - start)
                start = time.perf_counter()
                lib = tk.build(module)
                warm.append(time.perf_counter() - start)
                assert lib.cache_hit
        compile_cache.reset_cache_dir()
        c, w = statistics.median(cold), statistics.median(warm)
        rows.append([name, f"{c:.3f}", f"{w:.3f}", f"{c / w:.1f}x"])
    return rows


LOADER = (
    "import time; t = time.perf_counter(); from tensorkiln.runtime import load_module; "
    "i = time.perf_counter(); lib = load_module({path!r}); "
    "print(i - t, lib.load_seconds, lib.load_seconds + (i - t))"
)


def load_times(repeat: int = 5) -> list[list[str]]:
    models = {"MLP 784-512-256-10": mlp()[0], "CNN (2 conv, pool, dense)": small_cnn()[0]}
    rows = []
    for name, module in models.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.tk"
            tk.build(module).export_library(path)
            size = sum(p.stat().st_size for p in path.iterdir())
            fresh = []
            for _ in range(repeat):
                out = subprocess.run(
                    [sys.executable, "-c", LOADER.format(path=str(path))], capture_output=True, text=True, check=True
                ).stdout.split()
                fresh.append([float(v) for v in out])
            imports = statistics.median(f[0] for f in fresh)
            loads = statistics.median(f[1] for f in fresh)
            rows.append([name, f"{size / 1024:.0f}", f"{imports * 1e3:.1f}", f"{loads * 1e3:.2f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--builds", type=int, default=3)
    args = parser.parse_args()
    over = overhead(args.calls)
    builds = build_times(args.builds)
    loads = load_times()
    load = os.getloadavg()[0]
    text = "\n\n".join(
        [
            "## Executors, compile cache, deployment",
            f"`benchmarks/executors.py` on {machine()} (load average {load:.1f} at the end: the machine is shared, "
            "read the ratios).",
            "**Per-call overhead** on a tiny model (dense 16->8, relu, dense 8->4, softmax at batch 1; 4 kernels: "
            "the work is negligible, so this is the cost of a call): medians of 20 rounds of "
            f"{max(1, args.calls // 20)} calls, all executors interleaved in one process; torch eager with one thread. "
            "*deployed*: loaded with `tensorkiln.runtime.load_module` from an exported artifact.",
            table(["executor", "us per call", "vs aot"], over),
            "**Build time, cold vs warm disk cache** (`tk.build`, seconds, median of "
            f"{args.builds}; each cold build in a fresh cache directory, then the warm one): a warm build still runs the "
            "graph passes and the lowering to loops (the cache key is the loop-level IR), then loads the cached "
            "object code instead of running loop-to-llvm and LLVM.",
            table(["model", "cold (s)", "warm (s)", "cold/warm"], builds),
            "**Load time of an exported artifact** in a fresh process (median of 5): `import tensorkiln.runtime` "
            "(numpy + ctypes, no compiler) and `load_module` (read and check meta/graph JSON, weights .npz, "
            "SHA-256 and ELF check of the library, dlopen).",
            table(["model", "artifact (KiB)", "import runtime (ms)", "load_module (ms)"], loads),
        ]
    )
    write_section("executors", text)
    print(text)


if __name__ == "__main__":
    main()
