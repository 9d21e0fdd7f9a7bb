"""What checking indices costs: models whose indices come in as inputs (embeddings,
gather, scatter, ``x[rows] = v``, a small GPT) built with the checks (the default: an
out-of-range index raises IndexError, as in torch) and without
(``from_exported_program(..., check_indices=False)``: such an index is clamped), vs torch
eager, 1 and 2 threads, interleaved. Writes its table to BENCHMARKS.md (section
``index-checks``).

    .venv/bin/python benchmarks/index_checks.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from kernels import Fn  # noqa: E402
from peers import THREADS, eager_fn, interleaved_at_threads, load_average, ms, ratio  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.driver import compile_cache  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

F = torch.nn.functional


def embedding():
    torch.manual_seed(0)
    table_ = torch.randn(30522, 768)
    return "embedding 30522x768, 8x128 ids", Fn(lambda w, i: F.embedding(i, w)), (table_, torch.randint(0, 30522, (8, 128)))


def gather():
    torch.manual_seed(0)
    x, index = torch.randn(1024, 256), torch.randint(0, 256, (1024, 256))
    return "gather 1024x256 along dim 1 (index as large as the output)", Fn(lambda x, i: torch.gather(x, 1, i)), (x, index)


def scatter_add():
    torch.manual_seed(0)
    index = torch.randint(0, 512, (4096, 1)).expand(4096, 64).contiguous()
    fn = Fn(lambda z, i, v: z.scatter_add(0, i, v))
    return "scatter_add 4096x64 updates into 512x64", fn, (torch.zeros(512, 64), index, torch.randn(4096, 64))


def put_rows():
    torch.manual_seed(0)

    def assign(x, rows, v):
        y = x.clone()
        y[rows] = v
        return y

    return "x[rows] = v: 64 rows of 1024x256", Fn(assign), (torch.randn(1024, 256), torch.randperm(1024)[:64], torch.randn(64, 256))


def gpt():
    entry = ZOO["gpt"]
    return "zoo gpt (token ids in)", entry.build().eval(), random_inputs(entry, seed=0)


CASES = [embedding, gather, scatter_add, put_rows, gpt]


def _build(model, inputs, checked: bool):
    start = time.perf_counter()
    lib = tk.build(from_exported_program(torch.export.export(model, inputs), check_indices=checked))
    return lib, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)  # cold builds
    _build(*put_rows()[1:], False)  # the first build of a process also loads the compiler: not timed
    rows = []
    for make in CASES:
        name, model, inputs = make()
        arrays = [t.numpy() for t in inputs]
        checked, build_checked = _build(model, inputs, True)
        unchecked, build_unchecked = _build(model, inputs, False)
        assert checked.signature.checks and not unchecked.signature.checks
        start = time.perf_counter()
        got = checked(*arrays)
        first = time.perf_counter() - start
        with torch.no_grad():
            expected = model(*inputs).numpy()
        assert np.allclose(got, expected, rtol=1e-4, atol=1e-5), name
        fns = {n: [lambda: checked(*arrays), lambda: unchecked(*arrays), eager_fn(model, inputs)] for n in THREADS}
        times = interleaved_at_threads(fns, args.repeat)
        for n in THREADS:
            t = times[n]
            rows.append([name, str(n), f"{build_checked:.1f}", f"{build_unchecked:.1f}", ms(first), *map(ms, t),
                         ratio(t[0], t[1]), ratio(t[0], t[2])])  # fmt: skip
            print(" | ".join(rows[-1]), flush=True)
    header = ["workload", "threads", "build checked (s)", "build unchecked (s)", "first run (ms)", "checked (ms)",
              "unchecked (ms)", "torch eager (ms)", "checked/unchecked", "checked/torch"]  # fmt: skip
    body = [
        "## Index checks: what raising IndexError for an index out of range costs",
        "",
        f"`benchmarks/index_checks.py` on {machine()}; each model built twice, cold: with the checks (the default:",
        "one reduction `all(low <= idx < size)` per index tensor the model is given, its predicate one more result",
        "of the compiled function, checked after the call) and with `check_indices=False` (an index out of range is",
        f"clamped). Steady state = medians of {args.repeat} calls per thread count, the three called in turn, thread",
        f"counts alternating in 3 blocks. Load average at the end: {load_average()}.",
        "",
        table(header, rows),
    ]
    write_section("index-checks", "\n".join(body))


if __name__ == "__main__":
    main()
