"""Multi-core: the thread pool's fork/join cost, models at 1 and 2 threads against ONNX
Runtime, GEMM 1024^3 scaling, and the BLAS offload with a busy neighbour core (#41,
#40). Writes the ``threads`` section of BENCHMARKS.md in one command::

    python benchmarks/threads.py                       # everything (~15 min)
    python benchmarks/threads.py --parts forkjoin,gemm --no-write
    python benchmarks/threads.py --models mlp_b8,mobilenet_v2 --repeat 40

Run it on a quiet machine: multi-thread timings need every core. The torchvision
models need torchvision and onnxruntime (an environment with both, e.g. the one
``benchmarks/torchvision_models.py`` describes); models that cannot be made are
reported as such. Parts:

* ``forkjoin``: one parallel loop's launch + join on the pool (a loop of trivial
  pieces, launched 2000 times in a native loop, minus the same loop serial), then the
  speed-up at 2 threads of loops of growing work: where parallel pays (the cost model's
  ``launch_ns``/``per_thread_ns``, ``schedule/strategies/parallel.py``); the same with a
  busy-looping process on another core.
* ``models``: #41's table: tensorkiln and ONNX Runtime (one session per thread count,
  idle threads sleeping) at 1 and 2 threads, interleaved medians.
* ``gemm``: 1024^3 at 1 and 2 threads (tensorkiln, torch).
* ``blas``: a BLAS-offloaded MLP (``byoc`` ``blas``) at the default thread count,
  quiet and with a busy-looping process on another core (the default backs off, and
  the BLAS follows tensorkiln's count).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import interleaved_at_threads, load_average, onnxruntime_fns, ratio  # noqa: E402  (thread env first)
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.api import parse_module  # noqa: E402
from tensorkiln.backends.llvm.jit import CPUTarget, jit_compile  # noqa: E402
from tensorkiln.build import lower_to_llvm_dialect  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.runtime import threads  # noqa: E402

PARTS = ("forkjoin", "models", "gemm", "blas")
MODELS = (
    "mlp_b8", "mobilenet_v2", "squeezenet1_1", "shufflenet_v2_x0_5", "resnet18", "efficientnet_b0",
    "convnext_tiny", "vit_b_16",
)  # fmt: skip
#: what ORT reached at 2 threads in #41's measurement (ms): the goals
ISSUE_ORT_2T = {"mlp_b8": 0.095, "mobilenet_v2": 3.78, "squeezenet1_1": 3.50}


@contextlib.contextmanager
def busy_neighbour() -> Iterator[None]:
    """A process spinning on a core for the duration of the block (and a moment before
    it, so that the default thread count has seen it: ``runtime/threads.py``)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(3 * threads.WATCH_SECONDS)
        yield
    finally:
        spinner.kill()
        spinner.wait()
        time.sleep(3 * threads.WATCH_SECONDS)


# ---------------------------------------------------------------------------
# fork/join

_LAUNCHES = """
func.func @k(%A: memref<?xf32>, %R: memref<?xf32>, %W: memref<?xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?xf32>
  %r = loop.dim %R, 0 : memref<?xf32>
  %w = loop.dim %W, 0 : memref<?xf32>
  %one = arith.constant 1.0 : f32
  %decay = arith.constant 0.999 : f32
  loop.for %t = %c0 to %r step %c1 name("t") {{
    loop.for %i = %c0 to %n step %c1 {kind} name("i") {{
      loop.for %j = %c0 to %w step %c1 name("j") {{
        %x = loop.load %A[%i] : memref<?xf32>
        %y = arith.mulf %x, %decay : f32
        %z = arith.addf %y, %one : f32
        loop.store %z, %A[%i] : memref<?xf32>
      }}
    }}
  }}
  func.return
}}
"""
#: pieces of the measured parallel loop (4 per thread on 16 cores)
_TRIPS = 64


def _launcher(kind: str) -> Callable[[int, int], None]:
    """``run(reps, work)``: ``reps`` launches of a loop of ``_TRIPS`` iterations of
    ``work`` dependent multiply-adds each, in one native call."""
    module = parse_module(_LAUNCHES.format(kind=kind))
    lower_to_llvm_dialect(module)
    jit = jit_compile(module, CPUTarget.parse("llvm"))
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p, ctypes.c_int64] * 3)(jit.address("k"))
    data = np.zeros(_TRIPS, np.float32)

    def run(reps: int, work: int) -> None:
        fn(data.ctypes.data, _TRIPS, 0, reps, 0, work)

    run.jit = jit  # (the code lives as long as its engine)
    return run


def _per_launch_ns(run, work: int, reps: int, rounds: int = 7) -> float:
    """Median over ``rounds`` of (``reps`` launches - no launch) / ``reps``."""
    run(10, work)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        run(reps, work)
        middle = time.perf_counter()
        run(0, work)
        samples.append(((middle - start) - (time.perf_counter() - middle)) / reps)
    return statistics.median(samples) * 1e9


def forkjoin_part() -> str:
    serial, parallel = _launcher(""), _launcher("parallel")
    rows = []

    def measure(label: str) -> None:
        with threads.num_threads(1):
            empty1 = _per_launch_ns(parallel, 1, 20000)
            base = _per_launch_ns(serial, 1, 20000)
        with threads.num_threads(2):
            empty2 = _per_launch_ns(parallel, 1, 20000)
        rows.append([f"{label}: empty loop ({_TRIPS} trivial iterations)", f"{base:.0f}", f"{empty1:.0f}", f"{empty2:.0f}", "-"])
        for work in (8, 32, 128, 512, 2048, 8192):
            reps = max(20, 400000 // work)
            with threads.num_threads(1):
                s = _per_launch_ns(serial, work, reps)
                p1 = _per_launch_ns(parallel, work, reps)
            with threads.num_threads(2):
                p2 = _per_launch_ns(parallel, work, reps)
            rows.append([f"{label}: {s / 1e3:.1f} us of work", f"{s:.0f}", f"{p1:.0f}", f"{p2:.0f}", f"{s / p2:.2f}"])
            print(" | ".join(rows[-1]), flush=True)

    measure("quiet")
    with busy_neighbour():
        measure("busy neighbour")
    return table(["loop", "serial (ns)", "pool, 1 thread (ns)", "pool, 2 threads (ns)", "speed-up at 2"], rows)


# ---------------------------------------------------------------------------
# models


def _torchvision(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import torchvision

    from tensorkiln.tools.model_check import randomize_zeros

    return randomize_zeros(getattr(torchvision.models, name)(weights=None).eval()), (torch.randn(1, 3, 224, 224),)


def _mlp_b8() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    layers = [torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)]
    return torch.nn.Sequential(*layers).eval(), (torch.randn(8, 784),)


def models_part(names: list[str], repeat: int) -> str:
    rows = []
    for name in names:
        torch.manual_seed(0)
        try:
            model, args = _mlp_b8() if name == "mlp_b8" else _torchvision(name)
        except Exception as error:  # (torchvision missing: a result, not a crash)
            rows.append([name, f"cannot be made here: {type(error).__name__}: {str(error)[:80]}", *["-"] * 6])
            continue
        lib = tk.build(from_exported_program(torch.export.export(model, args)))
        arrays = [a.numpy() for a in args]
        ort = onnxruntime_fns(model, args, (1, 2))
        fns = {n: [lambda: lib(*arrays), ort[n] if isinstance(ort, dict) else None] for n in (1, 2)}
        times = interleaved_at_threads(fns, repeat)
        (tk1, ort1), (tk2, ort2) = times[1], times[2]
        goal = ISSUE_ORT_2T.get(name)
        rows.append([
            name, _ms(tk1), _ms(tk2), ratio(tk1, tk2), _ms(ort1), _ms(ort2), ratio(tk2, ort2),
            "-" if goal is None else f"{goal:g}",
        ])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    header = ["model", "tk 1 thr (ms)", "tk 2 thr (ms)", "tk 2-thread speed-up", "ORT 1 thr (ms)", "ORT 2 thr (ms)",
              "tk/ORT at 2", "#41 goal at 2 (ms)"]  # fmt: skip
    return table(header, rows)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


# ---------------------------------------------------------------------------
# GEMM scaling, BLAS offload


def gemm_part(repeat: int) -> str:
    b = tk.GraphBuilder()
    module = b.finish(b.matmul(b.input("a", (1024, 1024)), b.input("b", (1024, 1024))))
    lib = tk.build(module)
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((2, 1024, 1024), dtype=np.float32)
    ta, tw = torch.from_numpy(a), torch.from_numpy(w)
    times = interleaved_at_threads({n: [lambda: lib(a, w), lambda: torch.mm(ta, tw)] for n in (1, 2)}, repeat)
    flops = 2 * 1024**3
    rows = []
    for k, who in enumerate(("tensorkiln", "torch (MKL/OpenBLAS)")):
        t1, t2 = times[1][k], times[2][k]
        rows.append([who, f"{t1 * 1e3:.1f}", f"{t2 * 1e3:.1f}", f"{flops / t2 / 1e9:.0f}", f"{t1 / t2:.2f}"])
    return table(["GEMM 1024^3", "1 thread (ms)", "2 threads (ms)", "GFLOP/s at 2", "speed-up (goal >= 1.9)"], rows)


def blas_part(repeat: int) -> str:
    from tensorkiln.byoc.backends import blas

    if blas.unavailable():
        return f"(BLAS offload not measured: {blas.unavailable()})"
    rng = np.random.default_rng(0)
    b = tk.GraphBuilder()
    x = b.input("x", (8, 784))
    h = b.relu(b.dense(x, rng.standard_normal((512, 784), dtype=np.float32)))
    module = b.finish(b.dense(b.relu(b.dense(h, rng.standard_normal((256, 512), dtype=np.float32))),
                              rng.standard_normal((10, 256), dtype=np.float32)))  # fmt: skip
    lib = tk.build(tk.byoc.partition_for(module, "blas"))
    data = rng.standard_normal((8, 784), dtype=np.float32)
    threads.set_num_threads(None)  # the default (the parts before set counts)
    time.sleep(3 * threads.WATCH_SECONDS)

    def median_ms() -> float:
        lib(data)
        samples = []
        for _ in range(repeat * 10):
            start = time.perf_counter()
            lib(data)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples) * 1e3

    quiet = median_ms()
    quiet_threads = threads.get_num_threads()
    with busy_neighbour():
        busy = median_ms()
        busy_threads = threads.get_num_threads()
    rows = [["quiet", f"{quiet:.3f}", str(quiet_threads)], ["a busy process on another core", f"{busy:.3f}", str(busy_threads)]]
    return table(["BLAS-offloaded MLP 784-512-256-10, batch 8, default threads", "median (ms)", "threads used"], rows) + (
        f"\n\nBusy / quiet: {busy / quiet:.2f} (goal: within 2x)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md as it is")
    args = parser.parse_args()
    parts = args.parts.split(",")
    sections = [
        "## Multi-core: the thread pool, 1 vs 2 threads against ONNX Runtime (#41, #40)",
        "",
        f"`benchmarks/threads.py` on {machine()}, torch {torch.__version__}; load average {load_average()} at the start "
        "(multi-thread rows need a quiet machine: rerun them when nothing else runs). Thread counts set explicitly "
        "(`set_num_threads`, ORT's `intra_op_num_threads` with spinning off) except the BLAS rows (the default).",
    ]
    if "forkjoin" in parts:
        sections += ["", "### Fork/join of the thread pool (ns per launch)", "", forkjoin_part()]
    if "models" in parts:
        sections += ["", f"### Models at batch 1 (MLP: 8), medians of {args.repeat} interleaved calls", "",
                     models_part(args.models.split(","), args.repeat)]  # fmt: skip
    if "gemm" in parts:
        sections += ["", "### GEMM 1024^3 scaling", "", gemm_part(max(5, args.repeat // 3))]
    if "blas" in parts:
        sections += ["", "### BLAS offload with a busy neighbour core (#40 item 2)", "", blas_part(args.repeat)]
    text = "\n".join(sections)
    print(text)
    if not args.no_write:
        write_section("threads", text)


if __name__ == "__main__":
    main()
