"""tensorkiln's CUDA kernels against torch CUDA eager (cuBLAS/cuDNN), timed with CUDA
events (medians of interleaved runs), on a machine with an NVIDIA GPU, cupy and torch:
GEMM 4096^3 fp32 (TF32 off on both sides), a ResNet conv layer, softmax rows, a fused
elementwise chain, and the torch model zoo; plus the bandwidth ceiling measured by a
device-to-device copy; and BYOC: models partitioned for ``cublas`` and built for
``target="cuda"`` against the same cupy calls made directly (``cupy.matmul``), to show
what the offload's host program costs over the library call. Writes the BENCHMARKS.md
section ``gpu`` (and ``OUT/gpu_section.md``).

    python benchmarks/gpu_bench.py [--out DIR] [--repeat 20] [--budget 180]
    python benchmarks/gpu_bench.py --import-section gpu_section.md   # merge a device run here

Run through ``benchmarks/gpu_check.sh`` on the GPU machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import table, write_section  # noqa: E402

SECTION = "gpu"


#: calls per timed group when the host runs ahead of the GPU (``cuda_median(queued=True)``)
QUEUED_CALLS = 5


def cuda_median(cp, fns, repeat: int, queued: bool = True) -> list[float]:
    """Median seconds per call of each fn (a GPU launch sequence), interleaved, CUDA events.

    ``queued``: each timed group of ``QUEUED_CALLS`` calls follows an untimed one with no
    wait between them, so the host prepares the next launches while the GPU runs (how
    ``triton.testing.do_bench`` times): the GPU's time when the host keeps up, the host's
    when it does not. Else one call and a wait for it: the latency a caller sees, the
    host's work included (the GPU idles through it)."""
    for fn in fns:  # warm-up (compilation, memory pools)
        fn()
        fn()
    cp.cuda.Device().synchronize()
    calls = QUEUED_CALLS if queued else 1
    times = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            if queued:
                fn()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(calls):
                fn()
            stop.record()
            stop.synchronize()
            times[k].append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / calls)
    return [statistics.median(t) for t in times]


def latency_ms(cp, fns, repeat: int) -> list[str]:
    """One call then a wait, per fn (``cuda_median(queued=False)``), in ms as table cells."""
    return [f"{t * 1e3:.3f}" for t in cuda_median(cp, fns, repeat, queued=False)]


def copy_bandwidth(cp, repeat: int) -> float:
    """Bytes moved per second (read + write) by a 1 GiB device-to-device copy."""
    n = 1 << 28
    src, dst = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    (t,) = cuda_median(cp, [lambda: dst.__setitem__(Ellipsis, src)], repeat)
    return 2 * n * 4 / t


#: the GEMM both tables time (fp32, no TF32)
GEMM_N = 4096
#: the one workload built for ``cuda -tf32`` (and timed against torch with TF32 on)
TF32_WORKLOAD = "GEMM 4096^3 TF32 tensor cores"


def _random_normal(np, seed: int):
    """A float32 standard-normal array maker, ``randn(*shape)``, seeded."""
    rng = np.random.default_rng(seed)
    return lambda *shape: rng.standard_normal(shape).astype(np.float32)


def _gemm_module(tk, randn):
    """GEMM_N^3 as a graph module and its two random inputs."""
    n = GEMM_N
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("a", (n, n)), b.input("b", (n, n)))), (randn(n, n), randn(n, n))


def workloads(tk, torch, np, device: str = "cuda"):
    """(name, module builder, inputs (numpy), torch fn on ``device`` tensors, flops, bytes)."""
    F = torch.nn.functional
    randn = _random_normal(np, 0)

    def gemm():
        module, inputs = _gemm_module(tk, randn)
        return module, inputs, lambda a, bb: torch.mm(a, bb), 2 * GEMM_N**3, None

    def conv():
        x, w = randn(16, 64, 56, 56), randn(64, 64, 3, 3)
        b = tk.GraphBuilder()
        module = b.finish(b.relu(b.conv2d(b.input("x", x.shape), w, padding=1)))
        tw = torch.from_numpy(w).to(device)
        return module, (x,), lambda tx: F.relu(F.conv2d(tx, tw, padding=1)), 2 * 16 * 64 * 56 * 56 * 64 * 9, None

    def gemm_tf32():  # the tensor cores (opt-in), against torch's TF32 matmul
        module, inputs = _gemm_module(tk, randn)

        def torch_tf32(a, bb):
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return torch.mm(a, bb)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False

        return module, inputs, torch_tf32, 2 * GEMM_N**3, None

    def dense_few_rows():  # a linear layer at batch 8 (decode-style inference): memory bound
        rows, k, n = 8, 4096, 4096
        w, bias = randn(n, k) / np.float32(np.sqrt(k)), randn(n)
        b = tk.GraphBuilder()
        module = b.finish(b.relu(b.dense(b.input("x", (rows, k)), w, bias)))
        tw, tb = torch.from_numpy(w).to(device), torch.from_numpy(bias).to(device)
        return module, (randn(rows, k),), lambda tx: F.relu(F.linear(tx, tw, tb)), None, (n * k + rows * (k + n)) * 4

    def softmax():
        rows, cols = 8192, 4096
        b = tk.GraphBuilder()
        module = b.finish(b.softmax(b.input("x", (rows, cols)), -1))
        return module, (randn(rows, cols),), lambda tx: torch.softmax(tx, -1), None, 2 * rows * cols * 4

    def layer_norm():  # the row statistics and the normalisation: one row kernel
        rows, cols = 8192, 4096
        gamma, beta = randn(cols), randn(cols)
        b = tk.GraphBuilder()
        x = b.input("x", (rows, cols))
        centred = b.sub(x, b.reduce_mean(x, (1,), keepdims=True))
        var = b.reduce_mean(b.mul(centred, centred), (1,), keepdims=True)
        y = b.mul(centred, b.rsqrt(b.add(var, np.array(1e-5, np.float32))))
        module = b.finish(b.add(b.mul(y, gamma), beta))
        tg, tb = torch.from_numpy(gamma).to(device), torch.from_numpy(beta).to(device)
        return module, (randn(rows, cols),), lambda tx: F.layer_norm(tx, (cols,), tg, tb), None, 2 * rows * cols * 4

    def argmax():  # greedy decoding's last step over a GPT-2-size vocabulary, 64 sequences
        rows, vocab = 64, 50257
        b = tk.GraphBuilder()
        module = b.finish(b.argmax(b.input("logits", (rows, vocab)), -1))
        return module, (randn(rows, vocab),), lambda tx: torch.argmax(tx, -1), None, rows * vocab * 4

    def elementwise():
        n = 1 << 26
        w, bias = randn(n), randn(n)
        b = tk.GraphBuilder()
        x = b.input("x", (n,))
        module = b.finish(b.tanh(b.add(b.mul(x, w), bias)))
        tw, tb = torch.from_numpy(w).to(device), torch.from_numpy(bias).to(device)
        return module, (randn(n),), lambda tx: torch.tanh(tx * tw + tb), None, 4 * n * 4

    def full_sum():  # one output over 64M floats: split-reductions spreads it over blocks
        n = 1 << 26
        b = tk.GraphBuilder()
        module = b.finish(b.reduce_sum(b.abs(b.input("x", (n,))), (0,)))
        return module, (randn(n),), lambda tx: tx.abs().sum(), None, n * 4

    return {"GEMM 4096^3 fp32": gemm, "conv 3x3 64->64 16x56x56 +relu": conv, "softmax 8192x4096": softmax, "layer norm 8192x4096": layer_norm, "argmax 64x50257": argmax,
            "tanh(x*w+b) 64M": elementwise, "dense 8x4096->4096 +bias+relu": dense_few_rows,
            "sum(|x|) of 64M": full_sum, TF32_WORKLOAD: gemm_tf32}  # fmt: skip


def cublas_workloads(tk, np):
    """(name, graph module, inputs (numpy), the same work in plain cupy, flops): what the
    cuBLAS offload is compared with. Built once each, partitioned for ``cublas``."""
    randn = _random_normal(np, 1)

    def gemm():
        module, inputs = _gemm_module(tk, randn)
        return module, inputs, lambda cp, a, bb: cp.matmul(a, bb), 2 * GEMM_N**3

    def dense(batch: int, k: int, n: int):
        def make():
            w, bias = randn(n, k) / np.float32(np.sqrt(k)), randn(n)
            b = tk.GraphBuilder()
            module = b.finish(b.relu(b.dense(b.input("x", (batch, k)), w, bias)))
            device: dict = {}

            def plain(cp, x):  # the layer written in cupy, weights already on the device
                if not device:
                    device.update(w=cp.asarray(w), b=cp.asarray(bias))
                y = cp.matmul(x, device["w"].T)
                y += device["b"]
                return cp.maximum(y, 0, out=y)

            return module, (randn(batch, k),), plain, 2 * batch * k * n

        return make

    return {"GEMM 4096^3 fp32": gemm, "dense 1024x4096->4096 +bias+relu": dense(1024, 4096, 4096),
            "dense 8x1024->1024 +bias+relu": dense(8, 1024, 1024)}  # fmt: skip


def run_cublas(tk, np, cp, repeat, failures) -> list[list[str]]:
    """Rows of the cuBLAS-offload table: each workload partitioned for ``cublas`` and
    built for CUDA, timed against its plain-cupy version (CUDA events, interleaved)."""
    rows = []
    for name, make in cublas_workloads(tk, np).items():
        try:
            module, inputs, plain, flops = make()
            start = time.perf_counter()
            lib = tk.build(tk.byoc.partition_for(module, "cublas"), target="cuda")
            compile_s = time.perf_counter() - start
            dev = [cp.asarray(x) for x in inputs]
            calls = [lambda: lib(*dev), lambda: plain(cp, *dev)]
            ours, theirs = cuda_median(cp, calls, repeat)
            latency = latency_ms(cp, calls, repeat)
            got, want = cp.asnumpy(lib(*dev)), cp.asnumpy(plain(cp, *dev))
            error = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
            rows.append([name, f"{ours * 1e3:.3f}", f"{theirs * 1e3:.3f}", f"{theirs / ours:.2f}x",
                         f"{flops / ours / 1e12:.1f}", *latency, f"{error:.1e}", f"{compile_s:.1f}"])  # fmt: skip
            print(rows[-1], flush=True)
        except Exception as error:  # one workload failing must not lose the others
            failures.append(f"cublas {name}: {type(error).__name__}: {error}")
            traceback.print_exc()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--budget", type=float, default=180.0, help="seconds; the zoo stops when it runs out")
    parser.add_argument("--import-section", type=Path, default=None)
    args = parser.parse_args()
    if args.import_section:
        write_section(SECTION, args.import_section.read_text())
        return 0

    deadline = time.monotonic() + args.budget
    import cupy as cp
    import numpy as np
    import torch

    import tensorkiln as tk

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.cuda.get_device_name()
    ceiling = copy_bandwidth(cp, args.repeat)
    print(f"device-to-device copy: {ceiling / 1e9:.0f} GB/s", flush=True)
    rows, failures = [], []
    for name, make in workloads(tk, torch, np).items():
        try:
            module, inputs, torch_fn, flops, nbytes = make()
            start = time.perf_counter()
            lib = tk.build(module, target="cuda -tf32" if name == TF32_WORKLOAD else "cuda")
            compile_s = time.perf_counter() - start
            dev = [cp.asarray(x) for x in inputs]
            tin = [torch.from_numpy(x).cuda() for x in inputs]
            calls = [lambda: lib(*dev), lambda: torch_fn(*tin)]
            ours, theirs = cuda_median(cp, calls, args.repeat)
            latency = latency_ms(cp, calls, args.repeat)
            got = cp.asnumpy(lib(*dev))
            want = torch_fn(*tin).cpu().numpy()
            error = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
            if flops:
                rate = f"{flops / ours / 1e12:.1f} TFLOP/s (torch {flops / theirs / 1e12:.1f})"
            else:
                rate = f"{nbytes / ours / 1e9:.0f} GB/s = {nbytes / ours / ceiling:.0%} of copy"
            rows.append([name, f"{ours * 1e3:.3f}", f"{theirs * 1e3:.3f}", f"{theirs / ours:.2f}x", rate, *latency, f"{error:.1e}", f"{compile_s:.1f}"])
            print(rows[-1], flush=True)
        except Exception as error:  # one workload failing must not lose the others
            failures.append(f"{name}: {type(error).__name__}: {error}")
            traceback.print_exc()
    cublas_rows = run_cublas(tk, np, cp, args.repeat, failures)
    zoo_rows = run_zoo(tk, torch, np, cp, args.repeat, deadline, failures)
    markdown = "\n".join([
        "## GPU: CUDA kernels vs torch CUDA eager",
        "",
        f"`benchmarks/gpu_bench.py` on {device}: medians of {args.repeat} interleaved runs timed with CUDA "
        f"events; TF32 off on both sides. Device-to-device copy ceiling: {ceiling / 1e9:.0f} GB/s "
        "(bytes read + written). `ours ms` / `torch ms`: per call with the host running ahead "
        f"(groups of {QUEUED_CALLS} calls after an untimed one, as triton's do_bench: the GPU's time "
        "when the host keeps up); `speed` = torch / ours on those (above 1: we are faster); "
        "`call ms`: one call and a wait for it (the latency a caller sees, the host's work included).",
        "",
        table(["workload", "ours ms", "torch ms", "speed", "rate", "ours call ms", "torch call ms", "rel. error", "compile s"], rows),
        "",
        table(["zoo model", "ours ms", "torch ms", "speed", "ours call ms", "torch call ms", "rel. error"], zoo_rows) if zoo_rows else "",
        "",
        "BYOC: the model partitioned for `cublas` (`tk.byoc.partition_for`) and built for `target=\"cuda\"` "
        "(cuBLAS on the device buffers, called by the generated host program) vs the same cupy calls made "
        "directly; fp32 cuBLAS (cupy's TF32 is off unless CUPY_TF32=1), same CUDA-event medians. "
        "`speed` = cupy time / offload time (1.00x: the offload adds nothing); `rel. error` vs the cupy result.",
        "",
        table(["cuBLAS offload", "offload ms", "cupy ms", "speed", "TFLOP/s", "offload call ms", "cupy call ms", "rel. error", "compile s"], cublas_rows)
        if cublas_rows else "",
        "",
        ("Failed: " + "; ".join(failures)) if failures else "",
    ])  # fmt: skip
    write_section(SECTION, markdown)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_section.md").write_text(markdown)
    print(markdown)
    return 0


def run_zoo(tk, torch, np, cp, repeat, deadline, failures) -> list[list[str]]:
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    rows = []
    for name, entry in ZOO.items():
        if time.monotonic() > deadline:
            failures.append(f"zoo: stopped at {name} (time budget)")
            break
        try:
            model = entry.build()
            inputs = random_inputs(entry, seed=0)
            lib = tk.build(from_exported_program(torch.export.export(model, inputs)), target="cuda")
            dev = [cp.asarray(x.numpy()) for x in inputs]
            cuda_model = model.cuda()
            tin = [x.cuda() for x in inputs]
            with torch.no_grad():
                calls = [lambda: lib(*dev), lambda: cuda_model(*tin)]
                ours, theirs = cuda_median(cp, calls, repeat)
                latency = latency_ms(cp, calls, repeat)
                want = cuda_model(*tin)
            want = (want[0] if isinstance(want, tuple | list) else want).float().cpu().numpy()
            got = lib(*dev)
            got = cp.asnumpy(got[0] if isinstance(got, tuple) else got).astype(np.float32)
            error = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
            rows.append([name, f"{ours * 1e3:.3f}", f"{theirs * 1e3:.3f}", f"{theirs / ours:.2f}x", *latency, f"{error:.1e}"])
            print(rows[-1], flush=True)
        except Exception as error:
            failures.append(f"zoo {name}: {type(error).__name__}: {str(error)[:200]}")
            traceback.print_exc()
    return rows


if __name__ == "__main__":
    sys.exit(main())
