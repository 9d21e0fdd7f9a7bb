"""``explicit-conv-padding``: a padded channels-last convolution reads a padded copy.

A padded convolution checks, at every tap of its reduction, whether the tap lies in
the padding (``read_padded``: a compare and a select per input load, in the GEMM
tile's innermost loop). ``cache_read(pad=True)`` removes the checks where the window
copy is cheap, but not where the tile's parallel loop holds one image row and one
column panel (it would copy the window once per panel). Padding the input once, as its
own op (TVM's ``data_pad`` stage), leaves a convolution without padding, whose taps
are plain loads::

    %y = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, layout = "NHWC"} : ...

becomes::

    %p = graph.pad %x {low = array<i64: 0, 1, 1, 0>, high = array<i64: 0, 1, 1, 0>, value = 0.0 : f32} : ...
    %y = graph.conv2d %p, %w {layout = "NHWC"} : ...

Measured at one thread on a znver2 (3x3 convs, the copy included): 256->256 stride 2
on 28x28 4.2 -> 2.6 ms, 512->512 stride 2 on 14x14 6.3 -> 2.5 ms, stride 1 layers
0.91-0.99x; a depthwise conv (memory-bound: nine loads per multiply-add, no reuse of a
pixel across output channels) got slower (1.07x) and keeps its padding, as do grouped
ones and those of few input channels (:data:`MIN_CHANNELS`). Runs after
``convert-layout``; NCHW convolutions are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ..dialects.graph.base import ints
from ..dialects.graph.indexing import PadOp
from ..dialects.graph.nn import Conv2dOp
from ..dialects.graph.types import shape_of

#: input channels below which the conv keeps its padding: a stem conv (3 channels, 7x7
#: taps) copies its padded window inside the kernel instead (``pad_input``), 1.8x faster
#: than checked taps and as fast as a separate pad
MIN_CHANNELS = 16


class PadConvInput(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        top, left, bottom, right = ints(op.padding)
        if op.data_layout() != "NHWC" or op.groups.value.data != 1 or not any((top, left, bottom, right)):
            return
        if shape_of(op.weight.type)[2] < MIN_CHANNELS:
            return
        padded = PadOp(op.input, [0, top, left, 0], [0, bottom, right, 0], 0.0)
        conv = Conv2dOp(
            padded, op.weight, op.bias, strides=ints(op.strides), dilation=ints(op.dilation), layout="NHWC"
        )
        rewriter.replace(op, [padded, conv], conv.results)


@dataclass(frozen=True)
class ExplicitConvPaddingPass(ModulePass):
    """Padded channels-last convolutions (no groups) read a padded copy of their input."""

    name = "explicit-conv-padding"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PadConvInput(), apply_recursively=False).rewrite_module(op)
