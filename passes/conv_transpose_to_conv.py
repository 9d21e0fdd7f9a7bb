"""``conv-transpose-to-conv``: a transposed convolution as plain convolutions, which then
get convert-layout and the conv strategy (an implicit GEMM) instead of conv2d_transpose's
gather loop nest, whose inner loop tests every tap.

At stride ``s`` (per axis; padding ``p``, kernel ``K``, no dilation) output row ``Y``
only meets the kernel taps ``k = (Y + p) % s + s*j``: the outputs split into ``s``
phases ``Y = s*Yp + r``, and phase ``r`` is a plain convolution of the input with the
sub-kernel of its taps (``w[..., k0::s]`` reversed, ``k0 = (r + p) % s``)::

    out[s*Yp + r] = sum_j x[Yp + c0 - j] * w[k0 + s*j]     (c0 = (r + p - k0) / s)

so the ``sh*sw`` phase convolutions do exactly the useful multiply-adds, and their
outputs interleave into the result (pad each phase to the same size, reshape to
``(N, O, H', 1, W', 1)``, concat along the 1-axes, reshape, slice). Each weight
transform (channels swapped within groups, sub-kernels sliced and flipped) is a
constant that ``fold-constants`` computes at compile time.

With dilation, or a kernel smaller than the stride (phases without taps), the input is
zero-stuffed instead (``s - 1`` zeros between pixels: reshape, pad, reshape) and
convolved with the whole flipped kernel: ``s*s`` times the work, still one GEMM.

Example (stride 2, 4x4 kernel, padding 1)::

    %y = graph.conv2d_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x5x5xf32>, tensor<8x4x4x4xf32> -> tensor<1x4x10x10xf32>

becomes four ``conv2d`` of ``%x`` (padded by 1) with 2x2 sub-kernels, interleaved.
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
from ..dialects.graph.shape import ConcatOp, ReshapeOp, SliceOp, TransposeOp
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


def _swapped_weight(w: SSAValue, groups: int, ops: list[Operation]) -> SSAValue:
    """(C, O/g, KH, KW) -> (O, C/g, KH, KW): a conv weight, not yet flipped."""
    channels, out_per_group, kh, kw = shape_of(w.type)
    in_per_group = channels // groups
    grouped = ReshapeOp(w, (groups, in_per_group, out_per_group, kh, kw))
    swapped = TransposeOp(grouped, (0, 2, 1, 3, 4))
    merged = ReshapeOp(swapped, (groups * out_per_group, in_per_group, kh, kw))
    ops += [grouped, swapped, merged]
    return merged.result


@dataclass(frozen=True)
class _Phase:
    """Output rows ``s*Yp + r`` of one axis: the taps they meet and the plain
    convolution computing them (see the module docstring)."""

    first_tap: int  # k0
    taps: int  # J
    pad_low: int  # of the input (negative: crop)
    pad_high: int

    @staticmethod
    def of(r: int, stride: int, pad: int, kernel: int, size: int, rows: int) -> _Phase:
        """Phase ``r``, its output padded to ``rows`` (every phase the same size)."""
        k0 = (r + pad) % stride
        taps = max(0, -(-(kernel - k0) // stride))
        c0 = (r + pad - k0) // stride
        low = taps - 1 - c0
        return _Phase(k0, taps, low, rows + taps - 1 - size - low)


def _phase_convs(op: Conv2dTransposeOp, phases: list[list[_Phase]], ops: list[Operation]) -> SSAValue:
    """The phase convolutions of ``op``, interleaved into its result."""
    n, out_channels, out_h, out_w = shape_of(op.result.type)
    (sh, sw), groups = ints(op.strides), op.groups.value.data
    rows_h, rows_w = -(-out_h // sh), -(-out_w // sw)
    weight = _swapped_weight(op.weight, groups, ops)
    kh, kw = shape_of(weight.type)[2:]
    rows = []
    for ph in phases[0]:
        cells = []
        for pw in phases[1]:
            taps = SliceOp(weight, [ph.first_tap, pw.first_tap], [kh, kw], axes=[2, 3], steps=[sh, sw])
            sub = FlipOp(taps, (2, 3))
            padded = PadOp(op.input, low=[0, 0, ph.pad_low, pw.pad_low], high=[0, 0, ph.pad_high, pw.pad_high])
            conv = Conv2dOp(padded, sub, op.bias, groups=groups)
            cell = ReshapeOp(conv, (n, out_channels, rows_h, 1, rows_w, 1))
            ops += [taps, sub, padded, conv, cell]
            cells.append(cell.result)
        row = ConcatOp(cells, axis=5)
        ops.append(row)
        rows.append(row.result)
    stacked = ConcatOp(rows, axis=3)
    merged = ReshapeOp(stacked, (n, out_channels, rows_h * sh, rows_w * sw))
    result = SliceOp(merged, [0, 0], [out_h, out_w], axes=[2, 3])
    ops += [stacked, merged, result]
    return result.result


def _stuffed_conv(op: Conv2dTransposeOp, ops: list[Operation]) -> SSAValue:
    """The zero-stuffed input convolved with the whole flipped kernel."""
    x_shape, out_shape = shape_of(op.input.type), shape_of(op.result.type)
    strides, padding, dilation = ints(op.strides), ints(op.padding), ints(op.dilation)
    kernel = shape_of(op.weight.type)[2:]
    low, high = [0, 0], [0, 0]
    for axis in range(2):
        s, d, k = strides[axis], dilation[axis], kernel[axis]
        size, out = x_shape[2 + axis], out_shape[2 + axis]
        low[axis] = d * (k - 1) - padding[axis]
        # stuffed length (size - 1)*s + 1; it is size*s long, so s - 1 more to crop
        high[axis] = out + d * (k - 1) - ((size - 1) * s + 1) - low[axis] - (s - 1)
    padded = PadOp(_stuffed(op.input, strides, ops), low=[0, 0, *low], high=[0, 0, *high])
    flipped = FlipOp(_swapped_weight(op.weight, op.groups.value.data, ops), (2, 3))
    conv = Conv2dOp(padded, flipped, op.bias, dilation=dilation, groups=op.groups.value.data)
    ops += [padded, flipped, conv]
    return conv.result


class ConvTransposeToConv(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dTransposeOp, rewriter: PatternRewriter) -> None:
        x_shape, out_shape = shape_of(op.input.type), shape_of(op.result.type)
        if not all(isinstance(d, int) for d in (*x_shape[2:], *out_shape[2:])):
            return  # symbolic spatial dims: the pads and phases are not static
        strides, padding, dilation = ints(op.strides), ints(op.padding), ints(op.dilation)
        kernel = shape_of(op.weight.type)[2:]
        phases = [
            [
                _Phase.of(r, strides[a], padding[a], kernel[a], x_shape[2 + a], -(-out_shape[2 + a] // strides[a]))
                for r in range(strides[a])
            ]
            for a in range(2)
        ]
        ops: list[Operation] = []
        if dilation == (1, 1) and strides != (1, 1) and all(p.taps for axis in phases for p in axis):
            result = _phase_convs(op, phases, ops)
        else:
            result = _stuffed_conv(op, ops)
        rewriter.replace(op, ops, [result])


@dataclass(frozen=True)
class ConvTransposeToConvPass(ModulePass):
    """Rewrite every static-size conv2d_transpose as plain conv2d ops (phases, or a
    zero-stuffed input; see the module docstring); follow it with ``fold-constants``
    for constant weights."""

    name = "conv-transpose-to-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ConvTransposeToConv(), apply_recursively=False).rewrite_module(op)


__all__ = ["ConvTransposeToConvPass"]
