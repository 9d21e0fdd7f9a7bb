"""Injective kernels (elementwise ops, broadcasts, transposes, fused groups of them):
the innermost output loop vectorized (contiguous stores), the outer loops parallel."""

from __future__ import annotations

from ...dialects import loop
from ..nest import Dependence, ScheduleError, band, written_buffers
from ..schedule import Schedule
from .analysis import OUTPUT_LOOP, KernelInfo
from .parallel import parallelize_outer
from .registry import register_strategy


def stores_are_affine(info: KernelInfo) -> bool:
    """Every store has an index free of loaded values, so the loops it follows can be
    shown to write distinct elements (the parallel primitive checks which loops do: a
    scatter kernel's lines). A store at loaded positions only (``out[idx[i]]``) could
    write one element from several iterations."""
    loads = [op.result for op in info.kernel.walk() if isinstance(op, loop.LoadOp)]
    depends = Dependence(loads)
    return all(
        not op.indices or any(not depends(i) for i in op.indices)
        for op in info.kernel.walk()
        if isinstance(op, loop.StoreOp)
    )


@register_strategy(
    "injective_vectorized",
    ops=("injective",),
    plevel=10,
    applies=stores_are_affine,
    decisions={"block": (256, 1024, 4096)},
)
def injective_vectorized(s: Schedule, info: KernelInfo, block: int = 1024) -> None:
    """Vectorize the innermost output loop; parallel outer loops (a 1-D kernel is split
    into blocks of ``block`` elements first)."""
    s.simplify_indices()
    *outer, inner = info.output_loops
    if not outer:
        extent = s.extent(inner)
        if extent is None or extent > block:
            blocks, inner = s.split(inner, block)
            outer = [blocks]
    s.vectorize(inner)
    parallelize_outer(s, outer, info)


@register_strategy("parallel_outer", ops=("any",), plevel=0, applies=stores_are_affine)
def parallel_outer(s: Schedule, info: KernelInfo) -> None:
    """Only run the outermost output loops in parallel (kernels without a better strategy)."""
    tops = [op for op in info.kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(tops) != 1:
        raise ScheduleError("parallel_outer", f"the kernel has {len(tops)} loop nests")
    chain, _ = band(tops[0], written_buffers(tops[0]))
    names = []
    for f in chain:
        if not OUTPUT_LOOP.fullmatch(f.loop_name.data):
            break
        names.append(f.loop_name.data)
    if parallelize_outer(s, names, info) is None:
        raise ScheduleError("parallel_outer", "nothing worth running in parallel")


__all__ = ["injective_vectorized", "parallel_outer", "stores_are_affine"]
