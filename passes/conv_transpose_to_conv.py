"""``conv-transpose-to-conv``: a transposed convolution as a zero-stuffed input and a
plain convolution, which then gets convert-layout and the conv strategy (an implicit
GEMM) instead of conv2d_transpose's gather loop nest.

Along each spatial axis, with stride ``s``, padding ``p``/``q`` (begin/end), dilation
``d``, kernel ``K`` and input size ``H``::

    conv2d_transpose(x, w)  ==  conv2d(pad(stuff(x, s), lo, hi), w', dilation=d)

where ``stuff`` puts ``s - 1`` zeros between the elements of ``x`` (length
``(H - 1)*s + 1``), ``lo = d*(K - 1) - p`` and ``hi`` makes the output length right
(negative pads crop), and ``w'`` is ``w`` with input and output channels swapped
within each group and flipped in space (a constant transform ``fold-constants`` does
at compile time). The zero stuffing is reshape -> pad -> reshape, injective ops that
fuse into one kernel. The convolution multiplies the stuffed zeros too (``s*s`` times
the useful work at stride ``s``): still far faster than the gather form, whose inner
loop tests every tap.

Example (stride 2)::

    %y = graph.conv2d_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x5x5xf32>, tensor<8x4x4x4xf32> -> tensor<1x4x10x10xf32>

becomes ``reshape`` to 1x8x5x1x5x1, ``pad`` to 1x8x5x2x5x2, ``reshape`` to 1x8x10x10,
``pad`` to 1x8x13x13 and ``conv2d`` with a 4x8x4x4 weight.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ..dialects.graph.base import ints
from ..dialects.graph.indexing import FlipOp, PadOp
from ..dialects.graph.nn import Conv2dOp, Conv2dTransposeOp
from ..dialects.graph.shape import ReshapeOp, TransposeOp
from ..dialects.graph.types import shape_of


def _stuffed(x: SSAValue, strides: tuple[int, int], ops: list[Operation]) -> SSAValue:
    """``x`` (N, C, H, W) with ``s - 1`` zeros after each element along H and W:
    (N, C, H*sh, W*sw), the trailing zeros included."""
    if strides == (1, 1):
        return x
    n, c, h, w = shape_of(x.type)
    sh, sw = strides
    split = ReshapeOp(x, (n, c, h, 1, w, 1))
    zeros = PadOp(split, low=[0] * 6, high=[0, 0, 0, sh - 1, 0, sw - 1])
    merged = ReshapeOp(zeros, (n, c, h * sh, w * sw))
    ops += [split, zeros, merged]
    return merged.result


def _conv_weight(w: SSAValue, groups: int, ops: list[Operation]) -> SSAValue:
    """(C, O/g, KH, KW) -> (O, C/g, KH, KW), flipped in space."""
    channels, out_per_group, kh, kw = shape_of(w.type)
    in_per_group = channels // groups
    grouped = ReshapeOp(w, (groups, in_per_group, out_per_group, kh, kw))
    swapped = TransposeOp(grouped, (0, 2, 1, 3, 4))
    merged = ReshapeOp(swapped, (groups * out_per_group, in_per_group, kh, kw))
    flipped = FlipOp(merged, (2, 3))
    ops += [grouped, swapped, merged, flipped]
    return flipped.result


class ConvTransposeToConv(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dTransposeOp, rewriter: PatternRewriter) -> None:
        x_shape, out_shape = shape_of(op.input.type), shape_of(op.result.type)
        if not all(isinstance(d, int) for d in (*x_shape[2:], *out_shape[2:])):
            return  # symbolic spatial dims: the stuffing's sizes are not static
        strides, padding, dilation = ints(op.strides), ints(op.padding), ints(op.dilation)
        kernel = shape_of(op.weight.type)[2:]
        ops: list[Operation] = []
        low, high = [0, 0], [0, 0]
        for axis in range(2):
            s, d, k = strides[axis], dilation[axis], kernel[axis]
            size, out = x_shape[2 + axis], out_shape[2 + axis]
            low[axis] = d * (k - 1) - padding[axis]
            # stuffed length (size - 1)*s + 1; it is size*s long, so s - 1 more to crop
            high[axis] = out + d * (k - 1) - ((size - 1) * s + 1) - low[axis] - (s - 1)
        padded = PadOp(_stuffed(op.input, strides, ops), low=[0, 0, *low], high=[0, 0, *high])
        ops.append(padded)
        weight = _conv_weight(op.weight, op.groups.value.data, ops)
        conv = Conv2dOp(padded, weight, op.bias, dilation=dilation, groups=op.groups.value.data)
        ops.append(conv)
        rewriter.replace(op, ops, [conv.result])


@dataclass(frozen=True)
class ConvTransposeToConvPass(ModulePass):
    """Rewrite every static-size conv2d_transpose as a zero-stuffed conv2d (see the module
    docstring); follow it with ``fold-constants`` for constant weights."""

    name = "conv-transpose-to-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ConvTransposeToConv(), apply_recursively=False).rewrite_module(op)


__all__ = ["ConvTransposeToConvPass"]
