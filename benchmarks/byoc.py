"""BYOC: products offloaded to BLAS sgemm (``tk.byoc.partition_for(module, "blas")``) vs
tensorkiln's own GEMM kernels vs numpy, at 1 and 2 threads; end-to-end models with and
without offload. Writes its section of BENCHMARKS.md.

    .venv/bin/python benchmarks/byoc.py [--repeat 15]

Threads: each thread count runs in its own process, with ``OPENBLAS_NUM_THREADS`` (read
by numpy's and scipy's OpenBLAS when they load), ``TK_NUM_THREADS`` (tensorkiln's OpenMP
loops) and ``torch.set_num_threads`` set to it. In a process the peers are timed in turn
(interleaved), medians reported. Peers: ``tk+blas`` (the offloaded module compiled: the
host code calls generated glue that calls scipy's ``sgemm``), ``tk`` (our own GEMM
schedule), ``numpy`` (``a @ b``: numpy's bundled OpenBLAS, a different copy of the same
library), ``scipy sgemm`` (``scipy.linalg.blas.sgemm`` from Python: the very function
the offload calls), torch eager for the models.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THREADS = (1, 2)


def _timed(fns: dict, repeat: int) -> dict[str, float]:
    """Median seconds of each function, called in turn ``repeat`` times after a warm-up."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in samples.items()}


def _gemm_cases():
    return [("matmul", 256, 256, 256), ("matmul", 512, 512, 512), ("matmul", 1024, 1024, 1024),
            ("matmul", 100, 300, 200), ("dense+bias+relu", 64, 1024, 1024), ("batch_matmul", 8 * 128, 64, 128)]


def worker(threads: int, repeat: int) -> dict:
    import numpy as np
    import scipy.linalg.blas as sblas
    import torch

    import tensorkiln as tk
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    out: dict = {"gemm": [], "models": []}
    for kind, m, k, n in _gemm_cases():
        b = tk.GraphBuilder()
        if kind == "matmul":
            x, y = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
            module = b.finish(b.matmul(b.input("a", (m, k)), b.input("b", (k, n))))
            args = (x, y)
            fns = {"numpy": lambda: x @ y, "scipy sgemm": lambda: sblas.sgemm(1.0, y.T, x.T).T}
        elif kind == "batch_matmul":
            batch, mm = 8, m // 8
            x, y = rng.standard_normal((batch, mm, k), np.float32), rng.standard_normal((batch, k, n), np.float32)
            module = b.finish(b.batch_matmul(b.input("a", (batch, mm, k)), b.input("b", (batch, k, n))))
            args = (x, y)
            fns = {"numpy": lambda: x @ y, "scipy sgemm": lambda: [sblas.sgemm(1.0, y[i].T, x[i].T).T for i in range(batch)]}
        else:
            x = rng.standard_normal((m, k), np.float32)
            w, bias = rng.standard_normal((n, k), np.float32), rng.standard_normal(n, np.float32)
            module = b.finish(b.relu(b.dense(b.input("x", (m, k)), w, bias)))
            args = (x,)
            fns = {"numpy": lambda: np.maximum(x @ w.T + bias, 0),
                   "scipy sgemm": lambda: np.maximum(sblas.sgemm(1.0, w, x.T, trans_a=True).T + bias, 0)}
        own = tk.build(module)
        offload = tk.build(tk.byoc.partition_for(module, "blas"))
        np.testing.assert_allclose(offload(*args), own(*args), rtol=2e-3, atol=2e-3)
        times = _timed({"tk+blas": lambda: offload(*args), "tk": lambda: own(*args), **fns}, repeat)
        out["gemm"].append({"case": f"{kind} {m}x{k}x{n}", "flops": 2 * m * k * n, **times})
    models = [(name, ZOO[name]) for name in ("mlp", "transformer_encoder", "gpt")]
    for name, entry in models:
        model = entry.build()
        targs = random_inputs(entry, seed=1)
        module = from_exported_program(torch.export.export(model, targs))
        arrays = [a.numpy() for a in targs]
        own = tk.build(module)
        offload = tk.build(tk.byoc.partition_for(module, "blas"))

        def eager(model=model, targs=targs):
            with torch.no_grad():
                return model(*targs)

        times = _timed({"tk+blas": lambda: offload(*arrays), "tk": lambda: own(*arrays), "torch": eager}, repeat)
        out["models"].append({"case": f"{name} {tuple(targs[0].shape)}", **times})
    # a bigger MLP, where the products dominate: batch 64, 1024-2048-2048-1000
    b = tk.GraphBuilder()
    h = b.input("x", (64, 1024))
    for k, n in ((1024, 2048), (2048, 2048), (2048, 1000)):
        h = b.relu(b.dense(h, rng.standard_normal((n, k), np.float32) * 0.02, rng.standard_normal(n, np.float32)))
    module = b.finish(h)
    x = rng.standard_normal((64, 1024), np.float32)
    own, offload = tk.build(module), tk.build(tk.byoc.partition_for(module, "blas"))
    times = _timed({"tk+blas": lambda: offload(x), "tk": lambda: own(x)}, repeat)
    out["models"].append({"case": "mlp 1024-2048-2048-1000 (64, 1024)", **times, "torch": None})
    return out


def _ms(t):
    return "-" if t is None else f"{t * 1e3:.3f}"


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(worker(opts.worker, opts.repeat)))
        return
    sys.path.insert(0, str(HERE))
    from report import machine, table, write_section

    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    results = {}
    for n in THREADS:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(n), "TK_NUM_THREADS": str(n), "OMP_NUM_THREADS": str(n)}
        done = subprocess.run([sys.executable, __file__, "--worker", str(n), "--repeat", str(opts.repeat)],
                              env=env, capture_output=True, text=True, check=True)
        results[n] = json.loads(done.stdout.strip().splitlines()[-1])
    rows = []
    for k, case in enumerate(results[1]["gemm"]):
        row = [case["case"]]
        for n in THREADS:
            c = results[n]["gemm"][k]
            row += [_ms(c["tk+blas"]), _ms(c["tk"]), _ms(c["numpy"]), _ms(c["scipy sgemm"]),
                    _ratio(c["tk+blas"], c["scipy sgemm"]), f"{c['flops'] / c['tk+blas'] / 1e9:.0f}"]
        rows.append(row)
    header = ["product"]
    for n in THREADS:
        header += [f"tk+blas ms ({n}t)", f"tk ms ({n}t)", f"numpy ms ({n}t)", f"scipy sgemm ms ({n}t)",
                   f"tk+blas / sgemm ({n}t)", f"tk+blas GFLOP/s ({n}t)"]
    model_rows = []
    for k, case in enumerate(results[1]["models"]):
        row = [case["case"]]
        for n in THREADS:
            c = results[n]["models"][k]
            row += [_ms(c["tk+blas"]), _ms(c["tk"]), _ms(c["torch"]), _ratio(c["tk+blas"], c["tk"])]
        model_rows.append(row)
    model_header = ["model (input)"]
    for n in THREADS:
        model_header += [f"tk+blas ms ({n}t)", f"tk ms ({n}t)", f"torch ms ({n}t)", f"offload / own ({n}t)"]
    text = "\n\n".join([
        "## BYOC: BLAS offload vs our GEMM vs numpy",
        f"`benchmarks/byoc.py`, {machine()}; load average {load} when started (a shared, noisy machine: "
        "read the ratios). Medians of the peers timed in turn in one process per "
        "thread count; threads set by `OPENBLAS_NUM_THREADS` (numpy's and scipy's OpenBLAS, read when "
        "they load), `TK_NUM_THREADS` and `torch.set_num_threads`. `tk+blas`: the module after "
        "`tk.byoc.partition_for(module, \"blas\")`, compiled (glue code calling scipy's `sgemm`); "
        "`tk`: our own GEMM kernels; `numpy`: `a @ b` (numpy's own OpenBLAS copy); `scipy sgemm`: "
        "`scipy.linalg.blas.sgemm` from Python, the same function the offload calls. Every call allocates "
        "its output. OpenBLAS's workers spin while waiting for work: at 2 threads on a loaded 2-core "
        "machine they fight every other process, so the 2-thread BLAS columns measure contention as much "
        "as the library.",
        table(header, rows),
        "End to end, models from the torch zoo (small: their products are tiny, so per-call overhead "
        "dominates) and a larger MLP:",
        table(model_header, model_rows),
    ])
    write_section("byoc", text)
    print(text)


if __name__ == "__main__":
    main()
