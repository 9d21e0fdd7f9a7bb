"""What one core can do at all, measured in the same run as a tuning result: the
register-only FMA peak (no memory traffic) and numpy's sgemm (OpenBLAS) at 1024^3.

The issue's goal for tuned GEMM (>= 115 GFLOP/s, from "OpenBLAS ~190 GFLOP/s") was
written for another machine; these two numbers say what a GEMM can reach here.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import time

#: independent accumulator chains: enough to hide the FMA latency on any x86 core
CHAINS = 24


def _peak_ir(lanes: int) -> str:
    vec = f"<{lanes} x float>"
    phis = "".join(f"  %a{i} = phi {vec} [zeroinitializer, %entry], [%b{i}, %loop]\n" for i in range(CHAINS))
    fmas = "".join(
        f"  %b{i} = call {vec} @llvm.fma.v{lanes}f32({vec} %x, {vec} %y, {vec} %a{i})\n" for i in range(CHAINS)
    )
    sums = "".join(f"  %s{i} = fadd {vec} %s{i - 1}, %b{i}\n" for i in range(1, CHAINS))
    return f"""
declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})
define float @peak(i64 %n, float %seed) {{
entry:
  %xv = insertelement {vec} undef, float %seed, i32 0
  %x = shufflevector {vec} %xv, {vec} undef, <{lanes} x i32> zeroinitializer
  %y = fadd {vec} %x, %x
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
{phis}{fmas}  %next = add i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  %s0 = fadd {vec} %b0, zeroinitializer
{sums}  %r = extractelement {vec} %s{CHAINS - 1}, i32 0
  ret float %r
}}
"""


def fma_peak_gflops(seconds: float = 0.3, repeat: int = 5) -> float:
    """Median GFLOP/s of a loop of independent SIMD FMAs on registers, one thread."""
    import llvmlite.binding as llvm

    from tensorkiln.backends.llvm.jit import CPUTarget, new_target_machine

    target = CPUTarget.parse("llvm")
    lanes = max(1, target.vector_bits // 32)
    module = llvm.parse_assembly(_peak_ir(lanes))
    module.verify()
    engine = llvm.create_mcjit_compiler(module, new_target_machine(target))
    engine.finalize_object()
    peak = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float)(engine.get_function_address("peak"))
    flops_per_iteration = CHAINS * lanes * 2
    n = 1_000_000
    start = time.perf_counter()
    peak(n, 1e-9)
    n = max(n, int(n * seconds / max(time.perf_counter() - start, 1e-6)))
    rates = []
    for _ in range(repeat):
        start = time.perf_counter()
        peak(n, 1e-9)
        rates.append(n * flops_per_iteration / (time.perf_counter() - start) / 1e9)
    return statistics.median(rates)


def openblas_gflops(size: int = 1024, repeat: int = 9) -> float:
    """Median GFLOP/s of numpy's float32 matmul at ``size``^3 (its BLAS, threads as
    the environment sets them: run with OPENBLAS_NUM_THREADS=1 for one core)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size)).astype(np.float32) for _ in range(2))
    a @ b
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times) / 1e9


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"FMA peak {fma_peak_gflops():.1f} GFLOP/s, numpy sgemm 1024^3 {openblas_gflops():.1f} GFLOP/s")
