"""Grouped convolutions whose groups are wider than a vector but not a multiple of one.

``conv2d_register_tile`` vectorizes the output channels of the whole layer: a vector
must lie inside one group (it reads one input channel per reduction step, broadcast),
so a group of ``w`` channels gets vectors of the largest power of two dividing ``w``
(``conv.group_lanes``): ShuffleNet's groups of 28, 68 and 136 channels got 4-, 4- and
8-lane vectors, and its groups of 34 channels (2 lanes, under ``MIN_GROUP_LANES``)
gathered every input lane by lane.

``grouped_conv2d_by_group`` splits the output channels into (group, channel in group)
first and puts the group loop outermost: each group is then a plain convolution whose
columns are its ``w`` channels, tiled with full-width vectors (the last tile of a
group shifted back, so a group of 34 computes 48 columns: 3 vectors of 16 lanes, not
17 of 2), reading input channel ``group * in_per_group + c`` as a broadcast.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith

from ..nest import static_value
from ..schedule import Schedule
from .analysis import KernelInfo
from .conv import _pixel_loops_fused, conv_rows, pad_input
from .gemm import gemm, index_sources, is_gemm
from .registry import register_strategy


def group_width(info: KernelInfo) -> int | None:
    """Output channels per group of a grouped convolution kernel: the divisor of the
    output channel in its input channel ``(o / width) * in_per_group + c``; None when the
    reduction reads no such channel (a plain or depthwise conv)."""
    if not info.reduction_loops or not info.output_loops:
        return None
    column = info.loop(info.output_loops[-1]).induction_var
    for op in info.loop(info.reduction_loops[-1]).walk():
        if isinstance(op, arith.FloorDivSIOp | arith.DivUIOp) and column in index_sources([op.lhs]):
            divisor = static_value(op.rhs)
            if divisor is not None and divisor > 1:
                return divisor
    return None


def _wide_odd_groups(info: KernelInfo) -> bool:
    """A conv kernel (elementwise epilogue only) whose groups are at least a vector wide
    and not a whole number of vectors, with a static channel count of several groups."""
    if not is_gemm(info):
        return False
    width = group_width(info)
    channels = info.extents.get(info.output_loops[-1])
    return (
        width is not None
        and width >= info.lanes
        and width % info.lanes != 0
        and channels is not None
        and channels % width == 0
        and channels > width
    )


def group_vectors(width: int, lanes: int) -> int:
    """Vectors per column tile for a group of ``width`` channels: the fewest columns
    computed with shifted tiles no wider than the group (ties: the wider tile)."""
    fitting = [v for v in (4, 3, 2, 1) if v * lanes <= width]
    return min(fitting, key=lambda v: math.ceil(width / (v * lanes)) * v * lanes)


@register_strategy(
    "grouped_conv2d_by_group",
    ops=("conv2d",),
    plevel=12,
    applies=_wide_odd_groups,
    decisions={"rows": (1, 2, 4, 6, 8), "vectors": (1, 2, 3), "fuse_pixels": (False, True), "pad": (True, False)},
)
def grouped_conv2d_by_group(
    s: Schedule,
    info: KernelInfo,
    rows: int | None = None,
    vectors: int | None = None,
    fuse_pixels: bool | None = None,
    pad: bool = True,
) -> None:
    """A loop over the groups outside a register-tiled conv of each group's channels."""
    width = group_width(info)
    *outer, channels = info.output_loops
    group, within = s.split(channels, width)
    s.reorder(group, *outer, within)
    s.simplify_indices()  # ((g * width + j) / width) = g: the input channel is uniform in a vector
    info = info.with_output_loops([group, *outer, within], s.extent)
    vectors = vectors or group_vectors(width, info.lanes)
    image_width = s.extent(outer[-1]) if len(outer) >= 3 else None
    rows = rows or conv_rows(info, vectors, image_width)
    info = _pixel_loops_fused(s, info, rows, fuse_pixels)
    gemm(s, info, rows=rows, vectors=vectors, pack_panel=False, fuse_rows=False)
    if pad:
        pad_input(s, info, vectors)


__all__ = ["group_vectors", "group_width", "grouped_conv2d_by_group"]
