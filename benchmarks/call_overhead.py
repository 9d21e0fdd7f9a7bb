"""Per-call overhead (issue #36): single small ops, tensorkiln vs torch eager (and ONNX
Runtime), and the host time of one call of a model that does nothing (an add of one
element). Writes its section of BENCHMARKS.md.

    .venv/bin/python benchmarks/call_overhead.py                      # process CPU time
    .venv/bin/python benchmarks/call_overhead.py --clock wall         # (a quiet machine)
    .venv/bin/python benchmarks/call_overhead.py --instructions       # + valgrind counts

Every runtime on one thread. Each op's runtimes are measured interleaved: ``--rounds``
rounds of ``--calls`` calls each, the median of the rounds per call. Process CPU time
(``time.process_time``) is this process's own, so other processes on a shared machine
disturb it less than wall time. torch eager is the ``nn.Module`` called under
``torch.no_grad()`` (what a user's code does); tensorkiln is ``tk.build`` of its
``torch.export``; ONNX Runtime a session of its ``torch.onnx.export``.

``--instructions`` counts the instructions of a call with valgrind (deterministic,
unlike time on a shared machine): two runs of a loaded artifact, ``N`` and ``N + 10000``
calls, the difference per call.
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TK_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import torch  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.runtime import load_module  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:  # optional
    ort = None

nn = torch.nn


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


def _rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def ops() -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    """The small-op set: one op (or a tiny model) at batch 1, weights random."""
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return {
        "add 1x16": (Fn(torch.add), (_rand(1, 16), _rand(1, 16))),
        "mul + add 4x8": (Fn(lambda x, y: x * y + x), (_rand(4, 8), _rand(4, 8))),
        "relu 1x64": (Fn(torch.relu), (_rand(1, 64),)),
        "gelu 1x64": (nn.GELU(), (_rand(1, 64),)),
        "sigmoid 2x33": (Fn(torch.sigmoid), (_rand(2, 33),)),
        "matmul 8x8": (Fn(torch.matmul), (_rand(8, 8), _rand(8, 8))),
        "linear 1x64->32": (nn.Linear(64, 32), (_rand(1, 64),)),
        "softmax 1x16": (Fn(lambda x: torch.softmax(x, -1)), (_rand(1, 16),)),
        "layer norm 1x32": (nn.LayerNorm(32), (_rand(1, 32),)),
        "sum 3x17": (Fn(lambda x: x.sum(-1)), (_rand(3, 17),)),
        "transpose + add 5x7": (Fn(lambda x, y: x.t() + y), (_rand(5, 7), _rand(7, 5))),
        "concat 2x(1x16)": (Fn(lambda x, y: torch.cat([x, y], -1)), (_rand(1, 16), _rand(1, 16))),
        "conv 3x3 1x4x8x8": (nn.Conv2d(4, 4, 3, padding=1), (_rand(1, 4, 8, 8),)),
        "MLP 32-64-64-10, batch 1": (mlp, (_rand(1, 32),)),
    }


def onnx_session(model: nn.Module, args: tuple[torch.Tensor, ...]) -> Callable[..., object] | None:
    if ort is None:
        return None
    names = [f"x{k}" for k in range(len(args))]
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            torch.onnx.export(model, args, buffer, dynamo=False, input_names=names, opset_version=17)
        finally:
            logging.disable(logging.NOTSET)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    return lambda *arrays: session.run(None, dict(zip(names, arrays)))


def measure(runs: dict[str, Callable[[], object]], calls: int, rounds: int, clock: Callable[[], float]) -> dict[str, float]:
    """Seconds per call of each of ``runs`` (no arguments): interleaved rounds, medians."""
    for run in runs.values():
        for _ in range(3):
            run()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = clock()
            for _ in range(calls):
                run()
            samples[name].append((clock() - start) / calls)
    return {name: statistics.median(s) for name, s in samples.items()}


def _bound(fn: Callable[..., object], *args: object) -> Callable[[], object]:
    return lambda: fn(*args)


def small_ops(calls: int, rounds: int, clock: Callable[[], float]) -> tuple[list[list[str]], float, float | None]:
    rows, vs_eager, vs_ort = [], [], []
    for name, (model, args) in ops().items():
        model.eval()
        arrays = [a.numpy() for a in args]
        lib = tk.build(from_exported_program(torch.export.export(model, args)))
        with torch.no_grad():
            expected = model(*args).numpy()
        np.testing.assert_allclose(lib(*arrays), expected, rtol=1e-4, atol=1e-5)
        runs = {"tk": _bound(lib, *arrays), "eager": _bound(model, *args)}
        session = onnx_session(model, args)
        if session is not None:
            runs["ort"] = _bound(session, *arrays)
        with torch.no_grad():
            t = measure(runs, calls, rounds, clock)
        vs_eager.append(t["eager"] / t["tk"])
        row = [name, f"{t['tk'] * 1e6:.2f}", f"{t['eager'] * 1e6:.2f}", f"{t['eager'] / t['tk']:.2f}x"]
        if "ort" in t:
            vs_ort.append(t["ort"] / t["tk"])
            row += [f"{t['ort'] * 1e6:.2f}", f"{t['ort'] / t['tk']:.2f}x"]
        rows.append(row)
        print(" | ".join(row), flush=True)
    geo = math.exp(statistics.fmean(math.log(r) for r in vs_eager))
    geo_ort = math.exp(statistics.fmean(math.log(r) for r in vs_ort)) if vs_ort else None
    return rows, geo, geo_ort


def noop_model() -> tuple[object, list[np.ndarray]]:
    b = tk.GraphBuilder()
    x, y = b.input("x", (1,), np.float32), b.input("y", (1,), np.float32)
    return b.finish(b.add(x, y)), [np.ones(1, np.float32), np.full(1, 2, np.float32)]


def host_time(calls: int, rounds: int, clock: Callable[[], float]) -> list[list[str]]:
    """A call of a model of one element: the host's work is all there is."""
    module, arrays = noop_model()
    lib = tk.build(module)
    lib(*arrays)
    lib(*arrays)  # (the second call makes the native entry)
    x, y = (torch.from_numpy(a) for a in arrays)
    add = Fn(torch.add)
    tmp = tempfile.TemporaryDirectory()
    lib.export_library(Path(tmp.name) / "noop.tk")
    deployed = load_module(Path(tmp.name) / "noop.tk")
    deployed(*arrays)
    runs = {
        "tensorkiln `lib(x, y)` (native entry)": _bound(lib, *arrays),
        "tensorkiln deployed: `load_module(...)(x, y)` (its model.so's entry)": _bound(deployed, *arrays),
        "tensorkiln general path (`TK_NATIVE_CALL=0`, or a call the entry does not take)": _bound(lib._run_general, arrays),
        "torch eager `torch.add(x, y)`": _bound(torch.add, x, y),
        "torch eager `nn.Module` calling `torch.add`": _bound(add, x, y),
    }
    session = onnx_session(add, (x, y))
    if session is not None:
        runs["ONNX Runtime `session.run`"] = _bound(session, *arrays)
    with torch.no_grad():
        t = measure(runs, calls, rounds, clock)
    tmp.cleanup()
    return [[name, f"{s * 1e6:.2f}"] for name, s in t.items()]


COUNTER = """
import sys, numpy as np
from tensorkiln.runtime import load_module
lib = load_module(sys.argv[3])
x, y = np.ones(1, np.float32), np.ones(1, np.float32)
call = lib if sys.argv[2] == "native" else (lambda *a: lib._run_general(a))
for _ in range(3):
    lib(x, y)
for _ in range(int(sys.argv[1])):
    call(x, y)
"""


def instructions(extra: int = 10000, base: int = 1000) -> list[list[str]]:
    """Instructions per call of a deployed model (``load_module``: no compiler to run
    under valgrind), counted by valgrind (see the module doc)."""
    module, _ = noop_model()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "noop.tk"
        tk.build(module).export_library(path)
        script = Path(tmp) / "count.py"
        script.write_text(COUNTER)
        env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        for mode, label in (("native", "deployed `lib(x, y)` (native entry)"), ("general", "general path")):
            counts = []
            for n in (base, base + extra):
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(script), str(n), mode, str(path)],
                    capture_output=True, text=True, env=env, check=True,
                )  # fmt: skip
                counts.append(int(done.stderr.split("Collected :")[1].split()[0]))
            rows.append([label, f"{(counts[1] - counts[0]) / extra:,.0f}"])
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="also count instructions with valgrind")
    parser.add_argument("--no-report", action="store_true", help="print, do not write BENCHMARKS.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    what = "process CPU time" if args.clock == "cpu" else "wall time"
    host = host_time(args.calls * 5, args.rounds, clock)
    print(table(["call", "us per call"], host), flush=True)
    counted = instructions() if args.instructions and shutil.which("valgrind") else []
    rows, geo, geo_ort = small_ops(args.calls, args.rounds, clock)
    header = ["op", "tensorkiln us", "torch eager us", "eager / tk"]
    if geo_ort is not None:
        header += ["ONNX Runtime us", "ORT / tk"]
    summary = f"geomean eager / tk: **{geo:.2f}x**" + (f"; ORT / tk: **{geo_ort:.2f}x**" if geo_ort is not None else "")
    parts = [
        "## Per-call overhead (small ops)",
        "",
        f"{machine()}; {what} per call ({what == 'process CPU time' and 'the machine was shared with other jobs; ' or ''}"
        f"medians of {args.rounds} interleaved rounds), every runtime on 1 thread. "
        "`.venv/bin/python benchmarks/call_overhead.py [--clock wall] [--instructions]`.",
        "",
        "Host time of one call of a model of one element (an add):",
        "",
        table(["call", "us per call"], host),
    ]
    if counted:
        parts += ["", "Instructions per call (valgrind, a loaded artifact; the difference of two runs):", "",
                  table(["path", "instructions per call"], counted)]  # fmt: skip
    parts += ["", "Single small ops at batch 1 (torch eager: the `nn.Module` called under `torch.no_grad()`; ONNX Runtime: "
              "`session.run` of its `torch.onnx.export`; ratios above 1: tensorkiln faster):", "", table(header, rows), "", summary]  # fmt: skip
    markdown = "\n".join(parts)
    print(markdown)
    if not args.no_report:
        write_section("call-overhead", markdown)


if __name__ == "__main__":
    main()
