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
loop where an image row holds less than two row tiles (7x7: 12.5 vs 16.4 ms at 512
channels on AVX-512, 7.0 vs 9-12 ms on AVX2, measured under load).

A grouped convolution reads input channel ``(o / per_group) * in_per_group + c``: one
channel for a whole vector of output channels (a broadcast, as in a plain conv) when
the vector lies in one group. Groups narrower than a vector (RegNet's 8 channels,
ResNeXt's 4) get vectors of the group's width (:func:`group_lanes`); the vectorizer
proves the quotient uniform from the tile's alignment.
"""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects import arith, func

from ...dialects import loop
from ..nest import ScheduleError, find_loop, static_trip_bound, static_value
from ..padding import padded_arguments
from ..schedule import Schedule
from .analysis import KernelInfo
from .gemm import (
    MAX_ROWS,
    argument_read_as,
    column_vectors,
    gemm,
    gemm_on_packed_panels,
    index_sources,
    is_gemm,
    tile_accumulators,
)
from .registry import register_strategy

def conv_rows(info: KernelInfo, vectors: int, width: int | None = None) -> int:
    """Rows of the register tile for ``vectors`` SIMD vectors of output channels: as
    many accumulators as the target's registers hold (enough to hide FMA latency), or
    one row less where that recomputes fewer pixels of an image row of ``width``
    (shifted last tiles): 14 wide, 5 rows compute 15 pixels, 6 rows 18 (3x3 256->256
    on 14x14 at one thread on a znver2: 4.8 -> 3.8 ms)."""
    most = max(1, min(MAX_ROWS, tile_accumulators(info, vectors) // vectors))
    if width is None or most <= 2:
        return most
    return min((most, most - 1), key=lambda rows: -(-width // rows) * rows)


#: the narrowest vectors a grouped convolution's tile is given (else it gathers)
MIN_GROUP_LANES = 4


def group_lanes(info: KernelInfo) -> int:
    """SIMD lanes that keep a vector of output channels inside one group of a grouped
    convolution. Its reduction reads input channel ``(o / per_group) * in_per_group + c``
    for output channel ``o``: the same channel in every lane (a broadcast) when the
    vector lies in one group, else a gather per lane. The largest power of two dividing
    ``per_group``, at most the target's lanes (``info.lanes`` when there are no groups)."""
    if not info.reduction_loops:
        return info.lanes
    column = info.loop(info.output_loops[-1]).induction_var
    lanes = info.lanes
    for op in info.loop(info.reduction_loops[-1]).walk():
        if isinstance(op, arith.FloorDivSIOp | arith.DivUIOp) and column in index_sources([op.lhs]):
            divisor = static_value(op.rhs)
            if divisor is not None and divisor > 0:
                lanes = min(lanes, divisor & -divisor)
    return lanes


def constant_hwio_weight(info: KernelInfo) -> int | None:
    """The constant argument a conv kernel reads as ``W[ky, kx, i, o]`` (o the column
    loop: an HWIO weight), or None."""
    return argument_read_as(
        info, lambda arg, indices, j, k: arg in info.constant_args and len(indices) == 4 and indices[-1] == j
    )


def _pixel_loops_fused(s: Schedule, info: KernelInfo, rows: int, fuse_pixels: bool | None) -> KernelInfo:
    """Fuse output rows and columns into one pixel loop when an image row holds less
    than two row tiles (7x7 layers: 5-row tiles would compute 10 pixels per row of 7;
    fused, 50 for all 49), unless told otherwise. Wider images stay unfused: the fused
    loop's index arithmetic cost more than a shifted tile's few recomputed pixels
    (64->64 3x3 on 56x56 with 6-row tiles, one thread, znver2: 6.2 ms fused, 3.8 not)."""
    if len(info.output_loops) < 3:
        return info
    *batch, height, width, channels = info.output_loops
    if fuse_pixels is None:
        extent = s.extent(width)
        fuse_pixels = extent is not None and s.extent(height) is not None and extent < 2 * rows
    if not fuse_pixels:
        return info
    return info.with_output_loops([*batch, s.fuse(height, width), channels], s.extent)


@register_strategy(
    "conv2d_register_tile",
    ops=("conv2d",),
    plevel=10,
    applies=is_gemm,
    decisions={
        "rows": (1, 2, 4, 6, 8),
        "vectors": (1, 2, 3, 4),
        "fuse_pixels": (False, True),
        "pad": (True, False),
        "pack_panel": (True, False),
    },
)
def conv2d_register_tile(
    s: Schedule,
    info: KernelInfo,
    rows: int | None = None,
    vectors: int | None = None,
    fuse_pixels: bool | None = None,
    pad: bool = True,
    pack_panel: bool = True,
    aligned_columns: bool = False,
) -> None:
    """Register-tile (output pixels x output channels) of a conv2d kernel. A weight too
    big for the L2 cache runs channel panels outside the pixel tiles, each panel
    copied contiguous first (``gemm``'s ``pack_panel``): 3x3 512->512 on 7x7, one
    thread, znver2: 7.3 -> 3.6 ms (torch 4.3)."""
    columns = s.extent(info.output_loops[-1])
    narrow = group_lanes(info)
    if MIN_GROUP_LANES <= narrow < info.lanes:
        # one vector of a group's channels per row (wider tiles would mix vector widths
        # on the accumulators): RegNet's 8-channel groups, 3x3 104->104 on 28x28 at one
        # thread on a Zen 5 EPYC: 1.15 ms with 16-lane gathers, 0.22 ms (torch 0.18-0.20);
        # ResNeXt's 4-channel groups, 128->128 on 56x56: 5.2 -> 0.9 ms (torch 2.9)
        info = dataclasses.replace(info, lanes=narrow)
        vectors = 1
    vectors = vectors or column_vectors(columns, info)
    width = s.extent(info.output_loops[-2]) if len(info.output_loops) >= 3 else None
    rows = rows or conv_rows(info, vectors, width)
    info = _pixel_loops_fused(s, info, rows, fuse_pixels)
    weight = constant_hwio_weight(info)
    if pack_panel and weight is not None and columns is not None and columns % (vectors * info.lanes) == 0:
        # the panels packed once, at compile time: P[o / width, kh, kw, i, width]
        gemm_on_packed_panels(s, info, weight, [3, 0, 1, 2, 4], 3, rows, vectors, fuse_rows=False)
    else:
        gemm(s, info, rows=rows, vectors=vectors, pack_panel=pack_panel, fuse_rows=False, aligned_columns=aligned_columns)
    if pad:
        pad_input(s, info, vectors)


#: the largest padded copy of the input a conv makes per iteration of a loop
PAD_COPY_BYTES = 256 << 10
#: what copying one element costs, in bounds-checked taps (measured: a 3x3 conv of
#: 256 channels on 14x14 pads at 1 and loses 11%; 2 keeps every gain below)
PAD_COPY_COST = 2


def pad_input(s: Schedule, info: KernelInfo, vectors: int) -> None:
    """Copy the window of a padded input that an iteration of an outer loop reads,
    padding included (``cache_read(pad=True)``), so the taps in the reduction are plain
    loads: the bounds check runs once per copied element instead of once per tap (and
    a tap is shared by the tile's ``vectors`` column vectors). The copy goes at the
    outermost loop (inside the parallel one) whose window fits ``PAD_COPY_BYTES``, if
    the copy costs less than the checks it saves: stem conv 3->8 7x7/2 on 32x32 1.8x
    faster, 3->64 on a 112x112 input 1.4x, 3x3 64ch 56x56 1.1-1.4x; a depthwise conv (each
    element read 9 times, no reuse across vectors) keeps its checks."""
    reduction = find_loop(s.kernel, info.reduction_loops[0], "pad_input")
    chain = []
    parent = reduction.parent_op()
    while isinstance(parent, loop.ForOp):
        chain.insert(0, parent)
        parent = parent.parent_op()
    parallel = [k for k, f in enumerate(chain) if f.kind.data == "parallel"]
    chain = chain[parallel[0] if parallel else 0 :]
    for buffer in padded_arguments(s.kernel):
        for at in chain:
            name = at.loop_name.data
            copied = _padded_copy_elements(s.kernel, buffer, name)
            if copied is None or copied * 4 > PAD_COPY_BYTES:
                continue
            if copied * PAD_COPY_COST <= innermost_iterations(at, info.lanes) / vectors:
                s.cache_read(buffer, name, pad=True)
            break  # loops further in copy as much per less work


def _padded_copy_elements(kernel: func.FuncOp, buffer: int, at_loop: str) -> int | None:
    """Elements of the local buffer cache_read(pad=True) makes there (tried on a copy)."""
    trial = Schedule(kernel.clone())
    try:
        stage = trial.cache_read(buffer, at_loop, pad=True)
    except ScheduleError:
        return None
    (local,) = [
        op
        for op in trial.kernel.walk()
        if isinstance(op, loop.AllocOp) and loop.stage_of(op) == stage
    ]
    return math.prod(local.results[0].type.get_shape())


def innermost_iterations(at: loop.ForOp, lanes: int) -> int:
    """Iterations of the innermost loops inside ``at`` (a vectorized loop counts one
    per vector), with compile-time trip bounds."""
    total = 0
    for op in at.body.block.walk():
        if isinstance(op, loop.ForOp) and not any(isinstance(o, loop.ForOp) for o in op.body.block.walk()):
            count, f = 1, op
            while f is not at:
                trips = static_trip_bound(f) or 1
                count *= -(-trips // lanes) if f.kind.data == "vectorized" else trips
                f = f.parent_op()
            total += count
    return total
