"""Recurrent layers (``graph.rnn``: ``lowering/rnn_kernel.py``): the kernel comes with its
inner loops vectorized and its products in register tiles; the strategy decides

* the weights' layout: a constant recurrent weight (and projection) ``W[k, j]`` is packed
  at compile time into column panels ``Wp[j / PANEL, k, j % PANEL]``, each the contiguous
  ``k x PANEL`` block a register tile reads as ``k`` advances (read in place, a tile would
  take a few floats from each row: one new page per ``k`` when a row is 4 KiB, which the
  prefetchers do not follow);
* which loop runs on several threads (the cost model of ``parallel.py``): the blocks of
  batch rows (independent recurrences, each running every step) when there are several;
  else, for a small batch, each step's tiles of hidden units (a parallel loop per step:
  worth it when a step's product outweighs a launch, e.g. LSTM(.., 256) at batch 1).
"""

from __future__ import annotations

from ...dialects import loop
from ..schedule import Schedule
from .analysis import KernelInfo
from .parallel import PRODUCT_NS, best_thread_count
from .registry import register_strategy

#: the column panels of a packed weight: the kernel's tile alignment
#: (``lowering/rnn_kernel.py``'s ``PANEL``; a test checks they agree)
PANEL = 16
#: batch rows per block of the kernel (``lowering/rnn_kernel.py``'s ``ROWS``)
ROWS = 8


class _Shapes:
    """Sizes read off the kernel's arguments: gates ``(T, B, G*H)``, weight ``(P, G*H)``,
    then the output, the workspaces ``h (2, B, P)``, ``acc (B, G, H)``..."""

    def __init__(self, info: KernelInfo):
        args = info.kernel.args
        self.steps, self.batch, self.width = args[0].type.get_shape()
        self.output = args[1].type.get_shape()[0]
        # (gates, weight, bias, initial, projection), out, h, acc, c, m: only an LSTM projects
        self.projected = len(args) == 10
        acc = args[(5 if self.projected else 4) + 2].type.get_shape()
        self.gates, self.hidden = acc[1], acc[2]

    def step_work(self, rows: int) -> int:
        """Multiply-adds of one step's products for ``rows`` batch rows."""
        return rows * self.output * self.width + (rows * self.hidden * self.output if self.projected else 0)


def _pack(s: Schedule, info: KernelInfo, shapes: _Shapes) -> None:
    weights = [(1, shapes.width, shapes.hidden)] + [(4, shapes.output, shapes.output)] * shapes.projected
    for arg, columns, block in weights:
        if arg in info.constant_args and columns % PANEL == 0 and block % PANEL == 0:
            s.transform_layout(arg, [1, 0, 2], block=[1, PANEL])


@register_strategy("rnn_row_blocks", ops=("rnn",), plevel=20)
def rnn_row_blocks(s: Schedule, info: KernelInfo) -> None:
    """Pack the constant weights into column panels; run the blocks of batch rows in
    parallel, or else each step's tiles of hidden units, where the cost model says so."""
    shapes = _Shapes(info)
    _pack(s, info, shapes)
    (blocks,) = info.output_loops
    block_count = None if shapes.batch < 0 else -(-shapes.batch // ROWS)
    if block_count != 1:
        steps = None if shapes.steps < 0 or shapes.batch < 0 else shapes.steps * shapes.batch
        work = None if steps is None else steps * shapes.step_work(1) * PRODUCT_NS
        threads = best_thread_count(work, block_count)
        if threads > 1:
            s.parallel(blocks, max_threads=threads)
        return
    (scan,) = loop.loops_with_role(info.kernel, "scan")
    for tiles in [op for op in scan.body.block.ops if isinstance(op, loop.ForOp)]:
        extent = s.extent(tiles.loop_name.data)
        threads = best_thread_count(shapes.step_work(shapes.batch) * PRODUCT_NS, extent)
        if threads > 1:
            s.parallel(tiles.loop_name.data, max_threads=threads)


__all__ = ["PANEL", "ROWS", "rnn_row_blocks"]
