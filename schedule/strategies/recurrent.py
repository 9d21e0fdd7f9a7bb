"""Recurrent layers (``graph.rnn``: ``lowering/rnn_kernel.py``): the kernel comes with its
inner loops vectorized and its products in register tiles; the strategy decides

* the weights' layout: a constant recurrent weight (and projection) ``W[k, j]`` is packed
  at compile time into column panels ``Wp[j / PANEL, k, j % PANEL]``, each the
  contiguous ``k x PANEL`` block one register tile reads as ``k`` advances (read in
  place, a tile would take :data:`PANEL` floats from each row: one new page per ``k``
  when a row is 4 KiB, which the prefetchers do not follow);
* whether the blocks of batch rows (independent recurrences, each running every time
  step) run in parallel: when there are several and the kernel's whole product has at
  least ``PARALLEL_MIN_PRODUCT_WORK`` multiply-adds (unknown sizes: assumed so).
"""

from __future__ import annotations

from ..schedule import Schedule
from .analysis import KernelInfo
from .parallel import PARALLEL_MIN_PRODUCT_WORK
from .registry import register_strategy

#: the column panels of a packed weight: the kernel's register tile width
#: (``lowering/rnn_kernel.py``'s ``COLUMNS``; a test checks they agree)
PANEL = 64
#: the kernel's arguments that are weights ``(rows, columns)``: the recurrent weight, the projection
WEIGHT_ARGUMENTS = (1, 4)
#: batch rows per block of the kernel (``lowering/rnn_kernel.py``'s ``ROWS``)
ROWS = 8


def product_work(info: KernelInfo) -> int | None:
    """Multiply-adds of the kernel's recurrent products over all rows and steps, None
    when a size is not known at compile time: steps x batch x the weight's elements."""
    gates, weight = (info.kernel.args[k].type.get_shape() for k in (0, 1))
    sizes = [gates[0], gates[1], weight[0], weight[1]]
    if any(d < 0 for d in sizes):
        return None
    steps, batch, rows, columns = sizes
    return steps * batch * rows * columns


@register_strategy("rnn_row_blocks", ops=("rnn",), plevel=20)
def rnn_row_blocks(s: Schedule, info: KernelInfo) -> None:
    """Pack the constant weights into column panels; run the blocks of batch rows in
    parallel when there are several and enough work."""
    has_projection = len(info.kernel.args) == 5 + 1 + 4  # (inputs, out, workspaces h, acc, c, m)
    for arg in WEIGHT_ARGUMENTS[: 1 + has_projection]:
        columns = info.kernel.args[arg].type.get_shape()[1]
        if arg in info.constant_args and columns % PANEL == 0:
            s.transform_layout(arg, [1, 0, 2], block=[1, PANEL])
    batch = info.kernel.args[0].type.get_shape()[1]
    work = product_work(info)
    if 0 <= batch <= ROWS or (work is not None and work < PARALLEL_MIN_PRODUCT_WORK):
        return
    (blocks,) = info.output_loops
    s.parallel(blocks)


__all__ = ["PANEL", "product_work", "rnn_row_blocks"]
