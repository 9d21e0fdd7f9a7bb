"""Row stages: the producers of a fused kernel that are computed once per row.

A kernel's output has shape ``S = (R..., C...)``. A producer computed inside it whose
result has shape ``(R..., 1...)`` -- the same leading (row) dims, size 1 on the rest --
holds one value per row: softmax's row maximum and sum, layer norm's mean and variance,
``rsqrt(var + eps)``. When such a producer reduces (its body holds a ``te.reduce``),
inlining it where it is read would redo the whole reduction for every element of the
row; te-to-loop instead computes it once per row, before the row's elements (TVM's
``compute_at`` of the reduction into the consumer's row loop, the one-kernel-per-row
form of torch's and ONNX Runtime's softmax and layer norm)::

    for row (i0 .. i{r-1}) {
      stage 1 (a reduction nest)  -> local scalar
      stage 2 (may read stage 1)  -> local scalar
      for element (i{r} ..) { the output, reading the stages' scalars }
    }

This module decides which computes are stages and at which depth ``r`` (the row
dims); te-to-loop emits the nest and the graph passes group the ops (``fuse-ops``,
``graph-to-te`` for ops whose rule emits several computes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..dialects import te
from ..dialects.graph.types import row_depths, shape_of


def reduces(compute: te.ComputeOp) -> bool:
    """Whether ``compute``'s body combines over axes (holds a ``te.reduce``)."""
    return any(isinstance(op, te.ReduceOp) for op in compute.body.walk())


@dataclass(frozen=True)
class RowStages:
    """The stages of a kernel (in the order they are computed) and its row depth."""

    depth: int
    stages: tuple[te.ComputeOp, ...]


def row_stages(root: te.ComputeOp, producers: Sequence[te.ComputeOp]) -> RowStages | None:
    """The producers (in order) to compute once per row of ``root``'s result, or None
    when no producer that reduces is row-shaped (then every producer is inlined where
    it is read). The depth is the smallest one every reducing row-shaped producer
    allows; row-shaped producers that do not reduce (``rsqrt(var + eps)``) become
    stages too when they allow it."""
    root_shape = shape_of(root.result.type)
    depths = {id(p): row_depths(shape_of(p.result.type), root_shape) for p in producers}
    reducing = [p for p in producers if depths[id(p)] and reduces(p)]
    if not reducing:
        return None
    common = set.intersection(*(depths[id(p)] for p in reducing))
    if not common:
        return None
    depth = min(common)
    return RowStages(depth, tuple(p for p in producers if depth in depths[id(p)]))


__all__ = ["RowStages", "reduces", "row_depths", "row_stages"]
