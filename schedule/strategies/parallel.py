"""Running a kernel's outer loops on all cores, when it has enough work for it.

A parallel loop costs a launch (about 1 µs warm, 10-15 µs when libgomp's workers have
gone to sleep), so kernels with less than ``PARALLEL_MIN_WORK`` innermost iterations
(known at compile time) stay on one thread. The parallel loop should have several
iterations per thread for the dynamic scheduling to balance a loaded machine: leading
loops of the band are fused until at least ``PARALLEL_MIN_TRIPS`` iterations.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..schedule import Schedule
from .analysis import KernelInfo

#: innermost iterations below which a kernel runs on one thread
PARALLEL_MIN_WORK = 1 << 15
#: the same for register-tiled products (GEMM, convolution), whose innermost iteration
#: is one multiply-add of a tile (16 per vector FMA, several per cycle): 32K of them
#: take about a microsecond, less than waking the workers, and a small ResNet at batch
#: 1 (8-16 channels on 8x8 pixels) ran 2-3x slower at 2 threads than at 1 (Zen 5)
PARALLEL_MIN_PRODUCT_WORK = 1 << 18
#: the parallel loop gets at least this many iterations when fusing can give them
PARALLEL_MIN_TRIPS = 16


def worth_parallel(info: KernelInfo, min_work: int = PARALLEL_MIN_WORK) -> bool:
    """Enough work to pay for a parallel launch (unknown sizes: assumed so)."""
    work = info.work
    return work is None or work >= min_work


def parallelize_outer(
    s: Schedule, band: Sequence[str], info: KernelInfo, min_work: int = PARALLEL_MIN_WORK
) -> str | None:
    """Mark the outermost loops of ``band`` (perfectly nested, outermost first) parallel,
    fusing leading loops until the parallel loop has ``PARALLEL_MIN_TRIPS`` iterations;
    returns the parallel loop's name, or None when the kernel is too small."""
    if not band or not worth_parallel(info, min_work):
        return None
    loops = list(band)
    while len(loops) > 1 and s.extent(loops[0]) == 1:
        loops.pop(0)  # (a loop of one iteration gives no parallelism)
    fused = loops[0]
    for name in loops[1:]:
        trips = s.extent(fused)
        if trips is None or trips >= PARALLEL_MIN_TRIPS:
            break
        fused = s.fuse(fused, name)
    if s.extent(fused) == 1:
        return None
    s.parallel(fused)
    return fused


__all__ = ["PARALLEL_MIN_PRODUCT_WORK", "PARALLEL_MIN_TRIPS", "PARALLEL_MIN_WORK", "parallelize_outer", "worth_parallel"]
