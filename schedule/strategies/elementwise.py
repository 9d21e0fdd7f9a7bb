"""Injective kernels (elementwise ops, broadcasts, transposes, fused groups of them):
the innermost output loop vectorized (contiguous stores), the outer loops parallel.

A transpose reads its input along an outer output loop: the vectorized innermost loop
then gathers elements a whole row apart, one cache line per element, and by the time
the outer loop reaches the next element of a line it has left the cache (a
1024 x 1024 transpose ran at 1.1 GB/s). Such kernels are tiled: the two loops are
split into TRANSPOSE_TILE x TRANSPOSE_TILE blocks, so a block's source lines stay in
L1 while it is written row by row."""

from __future__ import annotations

from ...dialects import loop
from ..nest import Dependence, ScheduleError, band, written_buffers
from ..schedule import Schedule
from .analysis import KernelInfo, reads_contiguously, tile_factor
from .parallel import parallelize_outer
from .registry import register_strategy

#: the side of a transpose's blocks (16 floats: one cache line)
TRANSPOSE_TILE = 16


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
    read_along = transposed_loop(s, info)
    if read_along is not None:
        outer, inner = tile_transpose(s, outer, inner, read_along)
    s.vectorize(inner)
    parallelize_outer(s, outer, info)


def transposed_loop(s: Schedule, info: KernelInfo) -> str | None:
    """The outer output loop along which some kernel argument is read contiguously (its
    last index), when the innermost output loop reads nothing contiguously and both
    loops are longer than a tile: a transpose."""
    *outer, inner = info.output_loops
    if not outer or reads_contiguously(info, inner):
        return None
    long = [name for name in (*outer, inner) if (s.extent(name) or TRANSPOSE_TILE) >= TRANSPOSE_TILE]
    if inner not in long:
        return None
    return next((name for name in reversed(outer) if name in long and reads_contiguously(info, name)), None)


def tile_transpose(s: Schedule, outer: list[str], inner: str, read_along: str) -> tuple[list[str], str]:
    """Split ``read_along`` and ``inner`` into tiles and move the two tile loops
    innermost; returns the new outer loops and innermost loop."""
    a_outer, a_inner = s.split(read_along, *tile_factor(s.extent(read_along), TRANSPOSE_TILE))
    b_outer, b_inner = s.split(inner, *tile_factor(s.extent(inner), TRANSPOSE_TILE))
    blocks = [a_outer if name == read_along else name for name in outer] + [b_outer]
    s.reorder(*blocks, a_inner, b_inner)
    return blocks, b_inner


@register_strategy("parallel_outer", ops=("any",), plevel=0, applies=stores_are_affine)
def parallel_outer(s: Schedule, info: KernelInfo) -> None:
    """Only run the outermost output loops in parallel (kernels without a better strategy)."""
    tops = [op for op in info.kernel.body.block.ops if isinstance(op, loop.ForOp)]
    if len(tops) != 1:
        raise ScheduleError("parallel_outer", f"the kernel has {len(tops)} loop nests")
    chain, _ = band(tops[0], written_buffers(tops[0]))
    names = []
    for f in chain:
        if f.loop_role != "spatial":
            break
        names.append(f.loop_name.data)
    if parallelize_outer(s, names, info) is None:
        raise ScheduleError("parallel_outer", "nothing worth running in parallel")


__all__ = ["injective_vectorized", "parallel_outer", "stores_are_affine"]
