"""The peers tensorkiln is compared with, on the same torch module and inputs, at a
given thread count: torch eager, torch.compile, ONNX Runtime (the ``bench`` extra),
numpy; and the timing loop that interleaves them.

Every peer is optional except torch eager: a peer that is not installed or cannot run
a model is reported as ``-`` with the reason printed, never an error.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence

# Set before numpy and torch load their thread pools: idle workers sleep instead of
# spinning (with two cores, one peer's spinning workers would take a core from the peer
# timed next), and numpy's OpenBLAS runs on one thread. tensorkiln's own OpenMP runtime,
# loaded later, keeps its default (a spin of microseconds, then sleep: runtime/threads.py)
# unless the user set a policy.
_PASSIVE_FOR_PEERS = "OMP_WAIT_POLICY" not in os.environ
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

if _PASSIVE_FOR_PEERS:
    del os.environ["OMP_WAIT_POLICY"]

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.runtime.threads import set_num_threads  # noqa: E402

THREADS = (1, 2)

Fn = Callable[[], object]


def set_threads(n: int) -> None:
    """Thread count of tensorkiln's parallel loops and of torch's pool."""
    set_num_threads(n)
    torch.set_num_threads(n)


def tensorkiln_fn(model: torch.nn.Module, args: Sequence[torch.Tensor]) -> Fn:
    module = from_exported_program(torch.export.export(model, tuple(args)))
    lib = tk.build(module)
    arrays = [a.numpy() for a in args]
    return lambda: lib(*arrays)


def eager_fn(model: torch.nn.Module, args: Sequence[torch.Tensor]) -> Fn:
    def run():
        with torch.no_grad():
            return model(*args)

    return run


def compiled_fn(model: torch.nn.Module, args: Sequence[torch.Tensor]) -> Fn | str:
    """torch.compile (inductor); the reason as a string when it does not work here."""
    try:
        compiled = torch.compile(model)
        with torch.no_grad():
            compiled(*args)
    except Exception as error:  # a peer failing is a result, not a crash
        return f"torch.compile: {type(error).__name__}: {str(error)[:120]}"

    def run():
        with torch.no_grad():
            return compiled(*args)

    return run


def onnxruntime_fns(model: torch.nn.Module, args: Sequence[torch.Tensor], threads: Sequence[int]) -> dict[int, Fn] | str:
    """One ONNX Runtime session per thread count (its pool size is fixed per session)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime not installed (pip install -e '.[bench]')"
    try:
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            program = torch.onnx.export(model, tuple(args), dynamo=True, verbose=False)
            program.save(buffer)
        data = buffer.getvalue()
    except Exception as error:
        return f"ONNX export: {type(error).__name__}: {str(error)[:120]}"
    fns = {}
    for n in threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = n
        options.inter_op_num_threads = 1
        # idle pool threads sleep instead of spinning: with two cores, a spinning
        # ORT pool would take a core from the peers timed after it
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
        fns[n] = lambda s=session, f=feed: s.run(None, f)
    return fns


def interleaved_at_threads(fns: dict[int, list[Fn | None]], repeat: int, rounds: int = 3) -> dict[int, list[float | None]]:
    """Median seconds of each function at each thread count. Thread counts alternate in
    ``rounds`` blocks (1, 2, 1, 2, ...) and within a block the functions are called in
    turn, so the machine's noise hits every peer and thread count alike."""
    samples: dict[int, list[list[float]]] = {n: [[] for _ in row] for n, row in fns.items()}
    per_round = max(1, repeat // rounds)
    for _ in range(rounds):
        for n, row in fns.items():
            set_threads(n)
            for fn in row:
                if fn is not None:
                    fn()  # warm-up after the switch (thread pools wake up)
            for _ in range(per_round):
                for k, fn in enumerate(row):
                    if fn is None:
                        continue
                    start = time.perf_counter()
                    fn()
                    samples[n][k].append(time.perf_counter() - start)
    return {n: [statistics.median(s) if s else None for s in row] for n, row in samples.items()}


def machine_peak(threads: Sequence[int], size: int = 2048, repeat: int = 5) -> dict[int, float]:
    """torch.mm GFLOP/s on ``size``^3 at each thread count: the machine's measured peak."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    out = {}
    for n in threads:
        set_threads(n)
        torch.mm(a, b)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - start)
        out[n] = 2 * size**3 / statistics.median(times) / 1e9
    return out


def ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.3f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


def load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


__all__ = [
    "THREADS",
    "compiled_fn",
    "eager_fn",
    "interleaved_at_threads",
    "load_average",
    "machine_peak",
    "ms",
    "onnxruntime_fns",
    "ratio",
    "set_threads",
    "tensorkiln_fn",
]



Workload = Callable[[], tuple[str, torch.nn.Module, tuple[torch.Tensor, ...]]]


#: the columns of a :func:`time_workloads` table, before the summary's
WORKLOAD_COLUMNS = ["workload", "threads", "build (s)", "first run (ms)", "tensorkiln (ms)", "torch eager (ms)",
                    "torch.compile (ms)", "tk/torch", "tk/compile"]  # fmt: skip


def relative_error(got, expected) -> list[str]:
    """The summary column "rel. L2 err" of :func:`time_workloads`: ours vs torch eager."""
    error = float(np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-30))
    return [f"{error:.1e}"]


def time_workloads(
    cases: Sequence[Workload], repeat: int, use_compile: bool, summarize: Callable[[object, object], list[str]]
) -> list[list[str]]:
    """For each ``(name, model, inputs)`` of ``cases``: one cold ``tk.build`` and its first
    call, then tensorkiln, torch eager and torch.compile interleaved at each thread count.
    One row per thread count: name, threads, build (s), first run, the three medians (ms),
    the two ratios, then ``summarize(ours, torch's)`` (the outputs of the first calls)."""
    rows = []
    for make in cases:
        name, model, inputs = make()
        start = time.perf_counter()
        lib = tk.build(from_exported_program(torch.export.export(model, inputs)))
        build = time.perf_counter() - start
        arrays = [t.numpy() for t in inputs]
        start = time.perf_counter()
        got = lib(*arrays)
        first = time.perf_counter() - start
        with torch.no_grad():
            expected = model(*inputs).numpy()
        torch._dynamo.reset()  # workloads sharing one forward (Fn) each compile afresh
        compiled = compiled_fn(model, inputs) if use_compile else None
        if isinstance(compiled, str):
            print(f"  {name}: {compiled}")
        fns = {n: [lambda: lib(*arrays), eager_fn(model, inputs), compiled if callable(compiled) else None] for n in THREADS}
        times = interleaved_at_threads(fns, repeat)
        for n in THREADS:
            t = times[n]
            rows.append([name, str(n), f"{build:.1f}", ms(first), *map(ms, t), ratio(t[0], t[1]), ratio(t[0], t[2]), *summarize(got, expected)])
            print(" | ".join(rows[-1]), flush=True)
    return rows


def run_workloads(cases: Sequence[Workload], summarize: Callable[[object, object], list[str]]) -> tuple[list[list[str]], int]:
    """A workload benchmark's command line (``--repeat N``, ``--no-compile``), run with
    cold builds (the compile cache off): its :func:`time_workloads` rows and the repeat count."""
    from tensorkiln.driver import compile_cache

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to build)")
    args = parser.parse_args()
    compile_cache.set_cache_dir(None)  # cold builds: no object code from an earlier run
    return time_workloads(cases, args.repeat, not args.no_compile, summarize), args.repeat
