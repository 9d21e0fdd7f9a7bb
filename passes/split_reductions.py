"""``split-reductions`` (GPU builds): a reduction of few outputs over many elements in two
steps, so that it spreads over the GPU.

The GPU reduction template gives each output one block of threads; ``x.sum()`` (one
output) over millions of elements would run on one of the GPU's ~132 multiprocessors.
When the reduced axes are the trailing ones and their static element count ``L`` has a
divisor ``R`` near ``sqrt(L)`` (at least ``MIN_PARTS``), the input is viewed as
``(..., R, L/R)`` and reduced over the last axis (``R`` partial results per output, one
block each), then over the partials::

    %s = graph.reduce_sum %x : tensor<4096x4096xf32> -> tensor<f32>

becomes ``reshape`` to ``4096x4096``, ``reduce_sum`` over axis 1 (4096 blocks), then
``reduce_sum`` over axis 0. Sums and products are reassociated (as any parallel
reduction is), max/min are exact; a mean is a mean of equal-sized partial means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from ..dialects.graph.reduce import ReduceOp
from ..dialects.graph.shape import ReshapeOp
from ..dialects.graph.types import shape_of

#: reductions with at least this many elements per output, and at most MAX_OUTPUTS
#: outputs, are split (smaller ones fit a block, more outputs fill the GPU already)
MIN_ELEMENTS = 1 << 16
MAX_OUTPUTS = 64
#: the fewest partial results per output worth a first step
MIN_PARTS = 128


def parts_for(elements: int) -> int | None:
    """The divisor of ``elements`` nearest ``sqrt(elements)`` from below (at least
    ``MIN_PARTS``), or None."""
    for parts in range(math.isqrt(elements), MIN_PARTS - 1, -1):
        if elements % parts == 0:
            return parts
    return None


@dataclass(frozen=True)
class SplitLongReductions(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReduceOp):
            return
        shape = shape_of(op.input.type)
        axes = op.reduced_axes()
        rank = len(shape)
        if list(axes) != list(range(rank - len(axes), rank)) or any(not isinstance(d, int) for d in shape):
            return
        kept, reduced = shape[: rank - len(axes)], shape[rank - len(axes) :]
        elements, outputs = math.prod(reduced), math.prod(kept)
        if elements < MIN_ELEMENTS or outputs > MAX_OUTPUTS:
            return
        parts = parts_for(elements)
        if parts is None:
            return
        view = ReshapeOp(op.input, (*kept, parts, elements // parts))
        first = type(op)(view, [len(kept) + 1])
        second = type(op)(first, [len(kept)])
        new = [view, first, second]
        if op.keepdims.value.data:
            new.append(ReshapeOp(second, shape_of(op.result.type)))
        # neither step matches again: the first has outputs * parts > MAX_OUTPUTS
        # outputs, the second parts < MIN_ELEMENTS elements per output
        rewriter.replace(op, new, [new[-1].results[0]])


@dataclass(frozen=True)
class SplitReductionsPass(ModulePass):
    """Split long reductions of few outputs into two steps (see module docstring)."""

    name = "split-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitLongReductions()).rewrite_module(op)
