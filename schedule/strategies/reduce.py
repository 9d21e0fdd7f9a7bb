"""Reductions (reduce_*, the max/sum parts of softmax and layer norm, pooling, and
dot-product kernels without a GEMM strategy):

* ``reduce_rows`` when the innermost reduction loop reads contiguous elements (a
  reduction along the last axis): that loop vectorized, a vector accumulator folded
  once at the end (horizontal reduce); outer loops parallel.
* ``reduce_columns`` otherwise (a reduction over a non-contiguous axis, pooling
  windows): the innermost output loop split by a few SIMD vectors, the accumulators of
  that tile kept in a local vector tile (cache_write) with the reduction loops outside
  it, so each reduction step updates whole vectors of adjacent outputs.

Convolutions are left to their own strategies (plain parallel loops meanwhile).
"""

from __future__ import annotations

from ...dialects import loop
from ..schedule import Schedule
from .analysis import KernelInfo, reads_contiguously, tile_factor
from .elementwise import stores_are_affine
from .parallel import parallelize_outer
from .registry import register_strategy

#: anchors with their own strategies (the generic reductions are slower there)
CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv2d_transpose", "conv3d"})


def _generic(info: KernelInfo) -> bool:
    return info.anchor not in CONVOLUTIONS and stores_are_affine(info)


def _rows_apply(info: KernelInfo) -> bool:
    return _generic(info) and reads_contiguously(info, info.reduction_loops[-1])


@register_strategy("reduce_rows", ops=("reduce",), plevel=10, applies=_rows_apply)
def reduce_rows(s: Schedule, info: KernelInfo) -> None:
    """Vectorize the innermost reduction loop; parallel outer loops."""
    s.simplify_indices()
    s.vectorize(info.reduction_loops[-1])
    parallelize_outer(s, info.output_loops, info)


@register_strategy(
    "reduce_columns", ops=("reduce",), plevel=5, applies=_generic, decisions={"vectors": (1, 2, 4)}
)
def reduce_columns(s: Schedule, info: KernelInfo, vectors: int = 2) -> None:
    """Accumulate ``vectors`` SIMD vectors of adjacent outputs in a local tile."""
    s.simplify_indices()
    *outer, last = info.output_loops
    factor, tail = tile_factor(s.extent(last), vectors * info.lanes)
    blocks, inner = s.split(last, factor, tail=tail)
    s.cache_write(blocks)
    loops = set(s.loops())
    for name in (inner, f"{inner}.init", f"{inner}.write"):
        if name in loops:
            s.vectorize(name)
    parallelize_outer(s, [*outer, blocks], info)


__all__ = ["CONVOLUTIONS", "reduce_columns", "reduce_rows"]
