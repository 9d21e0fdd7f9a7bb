"""Kernels of row stages (softmax, log_softmax, layer norm, RMS norm: ``lowering/row_stages.py``):
rows in parallel, and inside a row each stage's reduction and the element loop on SIMD
vectors -- the form of torch's and ONNX Runtime's row kernels::

    for row (parallel) {
      for k0 (vectorized) { max }          // a vector accumulator, folded once
      for k1_0 (vectorized) { sum exp }
      for i1 (vectorized) { out = ... }
    }

A stage's innermost loop is vectorized when it reads a kernel argument contiguously
(the reduction runs along the last axis; float add/mul carry ``reassoc`` from
te-to-loop, as in ``reduce_rows``); the element loop always (stores are contiguous or
per lane).
"""

from __future__ import annotations

from ...dialects import loop
from ..nest import all_loops
from ..schedule import Schedule
from .analysis import KernelInfo, reads_contiguously, row_nest
from .elementwise import stores_are_affine
from .parallel import parallelize_outer
from .registry import register_strategy


def _innermost(for_op: loop.ForOp) -> str:
    """The name of the innermost loop of the perfect nest from ``for_op`` down."""
    while True:
        inner = [op for op in for_op.body.block.ops if isinstance(op, loop.ForOp)]
        if len(inner) != 1:
            return for_op.loop_name.data
        for_op = inner[0]


def row_work(info: KernelInfo) -> int | None:
    """Innermost iterations of the kernel: rows x (each stage's iterations + the row's
    elements); None when a trip count is not known at compile time."""
    nest = row_nest(info.kernel, info.output_loops)
    extents = {f.loop_name.data: f for f in all_loops(info.kernel)}
    per_row = 0
    for top in [*nest.stages, nest.elements[0]]:
        trips = 1
        for f in extents[top].walk():
            if isinstance(f, loop.ForOp):
                extent = info.extents.get(f.loop_name.data)
                if extent is None:
                    return None
                trips *= extent
        per_row += trips
    rows = 1
    for name in nest.rows:
        extent = info.extents.get(name)
        if extent is None:
            return None
        rows *= extent
    return rows * per_row


@register_strategy("row_stages", ops=("rows",), plevel=10, applies=stores_are_affine)
def row_stages(s: Schedule, info: KernelInfo) -> None:
    """Vectorize each stage's innermost loop (if contiguous) and the innermost element
    loop; rows in parallel when the cost model says so (``parallel.py``)."""
    s.simplify_indices()
    nest = row_nest(info.kernel, info.output_loops)
    loops = {f.loop_name.data: f for f in all_loops(info.kernel)}
    for stage in nest.stages:
        innermost = _innermost(loops[stage])
        if reads_contiguously(info, innermost):
            s.vectorize(innermost)
    s.vectorize(nest.elements[-1])
    parallelize_outer(s, nest.rows, info, work=row_work(info))


__all__ = ["row_stages", "row_work"]
