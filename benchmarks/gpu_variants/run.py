"""Kernel variants of softmax, layer norm and sum(|x|) on the GPU (cupy only, no xDSL):
the kernels tensorkiln generates (written into DIR by ``gen.py``) beside hand-written
reference points (``hand.cu``), timed with CUDA events (medians of interleaved runs),
checked against cupy, as % of the device-to-device copy bandwidth. A measuring aid
for the row/reduction strategies, not a test.

    python benchmarks/gpu_variants/gen.py DIR; python benchmarks/gpu_variants/run.py DIR   # on the GPU machine
"""

import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np

HERE = Path(__file__).resolve().parent
ROWS, COLS, N = 8192, 4096, 1 << 26
GENERATED = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE


def median_seconds(fns, repeat=30):
    for fn in fns:
        fn()
    cp.cuda.Device().synchronize()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            times[k].append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return [statistics.median(t) for t in times]


def kernel(file, name):
    path = HERE / file if file == "hand.cu" else GENERATED / file
    module = cp.RawModule(code=path.read_text(), options=("--std=c++17", "--gpu-architecture=sm_90"))
    return module.get_function(name)


def main():
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal((ROWS, COLS)).astype(np.float32) * 4)
    y = cp.empty_like(x)
    gamma, beta = cp.asarray(rng.standard_normal(COLS).astype(np.float32)), cp.asarray(rng.standard_normal(COLS).astype(np.float32))
    flat = cp.asarray(rng.standard_normal(N).astype(np.float32))
    partial = cp.empty(8192, cp.float32)
    src, dst = cp.ones(1 << 28, cp.float32), cp.empty(1 << 28, cp.float32)
    (t,) = median_seconds([lambda: dst.__setitem__(Ellipsis, src)])
    ceiling = 2 * (1 << 28) * 4 / t
    print(f"copy ceiling {ceiling / 1e9:.0f} GB/s", flush=True)
    e = cp.exp(x - x.max(1, keepdims=True))
    want_softmax = e / e.sum(1, keepdims=True)
    mean = x.mean(1, keepdims=True)
    want_ln = (x - mean) / cp.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5) * gamma + beta
    want_sum = cp.abs(flat).reshape(8192, 8192).sum(1)

    row = ((ROWS,), (256,))
    cases = []  # (name, launch, check, bytes)
    for file, name in [("softmax_plain.cu", "softmax_0"), ("softmax_cached.cu", "softmax_0"),
                       ("softmax_cached_fmaxf.cu", "softmax_0"), ("hand.cu", "softmax_shared_vec4"),
                       ("hand.cu", "softmax_regs_scalar"), ("hand.cu", "softmax_regs_vec4")]:
        f = kernel(file, name)
        cases.append((f"softmax {file}:{name}", lambda f=f: f(*row, (x, y)), lambda: (y, want_softmax), 2 * x.nbytes))
    f = kernel("layer_norm_cached.cu", "reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul_add_0")
    cases.append(("layer norm generated (cached)", lambda f=f: f(*row, (x, gamma, beta, y)), lambda: (y, want_ln), 2 * x.nbytes))
    for file, name in [("sum_abs.cu", "abs_reshape_reduce_sum_0"), ("hand.cu", "sum_abs_acc4"), ("hand.cu", "sum_abs_vec4")]:
        f = kernel(file, name)
        cases.append((f"sum|x| {file}:{name}", lambda f=f: f((8192,), (256,), (flat, partial)), lambda: (partial, want_sum), flat.nbytes))
    for name, launch, check, _ in cases:  # poisoned output, then checked
        y.fill(cp.nan)
        partial.fill(cp.nan)
        launch()
        got, want = check()
        err = float(cp.linalg.norm(got - want) / cp.linalg.norm(want))
        print(f"{name}: rel. error {err:.1e}", flush=True)
    times = median_seconds([c[1] for c in cases])
    print("| variant | us | GB/s | % of copy |\n|---|---|---|---|")
    for (name, _, _, nbytes), t in zip(cases, times):
        print(f"| {name} | {t * 1e6:.1f} | {nbytes / t / 1e9:.0f} | {nbytes / t / ceiling:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
