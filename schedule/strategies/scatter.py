"""Scatter kernels (``lowering/scatter_kernel.py``): the lines of the result (loops
``i0, i1, ...`` over every axis but the scatter axis) around a serial ``update0`` loop
applying each line's updates in order.

When the scatter axis is not the last, the innermost line loop runs along the last axis:
one line reads its updates and indices a whole row apart, a cache line for each element
(a 4096 x 64 ``scatter_add`` along axis 0 streamed 3 MB of updates and indices 16 times
over). So that loop is split into blocks of neighbouring lines and the block's lines move
inside the update loop: each update then reads a contiguous piece of a row. Every line
still applies its updates in order (lines write disjoint elements, so interchanging them
with the updates changes no line's order).
"""

from __future__ import annotations

from ..schedule import Schedule
from .analysis import KernelInfo, reads_contiguously
from .parallel import parallelize_outer
from .registry import register_strategy

#: neighbouring lines applied together (16 floats: one cache line of updates)
LINE_BLOCK = 16


def _lines_along_rows(info: KernelInfo) -> bool:
    """One update loop inside the lines (no loop clearing the targets first: scatter
    reductions without ``include_self``), and the innermost line loop reads along rows."""
    scans = info.scan_loops
    if len(scans) != 1 or info.loop(scans[0]).loop_role != "update" or info.init_loops or not info.output_loops:
        return False
    last = info.output_loops[-1]
    return (info.extents.get(last) or LINE_BLOCK) > 1 and reads_contiguously(info, last)


@register_strategy(
    "scatter_line_blocks",
    ops=("scatter",),
    plevel=10,
    applies=_lines_along_rows,
    decisions={"block": (8, 16, 64)},
)
def scatter_line_blocks(s: Schedule, info: KernelInfo, block: int = LINE_BLOCK) -> None:
    """Blocks of ``block`` neighbouring lines apply each update together (module
    docstring); the other lines and the blocks in parallel."""
    *outer, last = info.output_loops
    # a guarded tail: a shifted one would apply the updates of some lines twice
    blocks, lines = s.split(last, min(block, s.extent(last) or block), "guard")
    s.reorder(info.scan_loops[0], lines)
    parallelize_outer(s, [*outer, blocks], info)


__all__ = ["scatter_line_blocks"]
