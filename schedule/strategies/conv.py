"""Convolutions (conv2d, any groups) and their elementwise epilogues.

``conv2d_register_tile``: the GEMM register tile over the last two output loops. In
NHWC (what ``convert-layout`` gives CPU targets) those are output columns x output
channels and the reduction runs over (ky, kx, input channels): an implicit GEMM whose
rows are pixels, columns are channels (contiguous in the HWIO weight and the output),
k is the window -- so each input pixel is loaded once and broadcast across a vector
of channels, with no im2col buffer. A 1x1 conv is exactly a GEMM, and a depthwise one
the same tile with vector loads of the input. Measured at 1 thread (64->64 3x3 on
56x56): 2.1 ms vs torch's 2.2 ms; the same schedule on NCHW (rows x columns of one
image) is 31 ms, the plain nest 117 ms.

Output rows are unrolled more when there are few column vectors (narrow layers), to
keep 8-16 accumulators in flight; image rows and columns are fused into one pixel
loop where the row tile does not divide the width (7x7: 12.5 vs 16.4 ms at 512
channels, measured under load).
"""

from __future__ import annotations

import dataclasses

from ..schedule import Schedule
from .analysis import KernelInfo
from .gemm import column_vectors, gemm, is_gemm
from .registry import register_strategy

#: accumulators (rows x column vectors) the tile aims at: enough to hide FMA latency
TARGET_ACCUMULATORS = 16
MAX_ROWS = 8


def conv_rows(vectors: int) -> int:
    """Rows of the register tile for ``vectors`` SIMD vectors of output channels."""
    return max(1, min(MAX_ROWS, TARGET_ACCUMULATORS // vectors))


def _pixel_loops_fused(s: Schedule, info: KernelInfo, rows: int, fuse_pixels: bool | None) -> KernelInfo:
    """Fuse output rows and columns into one pixel loop when the row tile does not
    divide the image width (7x7, 14x14 layers: shifted tiles would recompute up to
    rows-1 pixels per image row), unless told otherwise."""
    if len(info.output_loops) < 3:
        return info
    *batch, height, width, channels = info.output_loops
    if fuse_pixels is None:
        extent = s.extent(width)
        fuse_pixels = extent is not None and s.extent(height) is not None and extent % rows != 0
    if not fuse_pixels:
        return info
    return dataclasses.replace(info, output_loops=[*batch, s.fuse(height, width), channels])


@register_strategy(
    "conv2d_register_tile",
    ops=("conv2d",),
    plevel=10,
    applies=is_gemm,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3, 4), "fuse_pixels": (False, True)},
)
def conv2d_register_tile(
    s: Schedule,
    info: KernelInfo,
    rows: int | None = None,
    vectors: int | None = None,
    fuse_pixels: bool | None = None,
) -> None:
    """Register-tile (output pixels x output channels) of a conv2d kernel."""
    columns = s.extent(info.output_loops[-1])
    vectors = vectors or column_vectors(columns, info.lanes)
    rows = rows or conv_rows(vectors)
    gemm(s, _pixel_loops_fused(s, info, rows, fuse_pixels), rows=rows, vectors=vectors)
