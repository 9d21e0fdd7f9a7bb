"""Loop-IR features of a scheduled kernel, for the cost model (Ansor's idea, small):
what each store costs (arithmetic and loads per stored element, weighted by how often
the store runs), how much is vectorized / unrolled / parallel, local buffer (register
tile and packed panel) sizes, and loop structure. All counts are log-scaled."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation

from ..dialects import loop
from ..dialects.scalar import SCALAR_DIALECTS
from ..schedule.nest import static_trip_bound

FEATURE_NAMES = (
    "float_ops",
    "loads",
    "stores",
    "vector_iters",
    "vector_loops",
    "vector_extent",
    "unrolled_iters",
    "parallel_extent",
    "local_bytes",
    "local_buffers",
    "max_depth",
    "loops",
    "innermost_loads",
    "innermost_float_ops",
    "innermost_extent",
)


def kernel_features(kernel: func.FuncOp) -> np.ndarray:
    """One feature vector (``FEATURE_NAMES``) of a scheduled kernel."""
    f = dict.fromkeys(FEATURE_NAMES, 0.0)

    def visit(op: Operation, times: float, depth: int, inner_vector: int) -> None:
        if isinstance(op, loop.ForOp):
            trips = static_trip_bound(op) or 1
            kind = op.kind.data
            f["loops"] += 1
            f["max_depth"] = max(f["max_depth"], depth + 1)
            if kind == "vectorized":
                f["vector_loops"] += 1
                f["vector_iters"] += times * trips
                f["vector_extent"] = max(f["vector_extent"], trips)
            elif kind == "unrolled":
                f["unrolled_iters"] += trips
            elif kind == "parallel":
                f["parallel_extent"] = max(f["parallel_extent"], trips)
            body = [o for o in op.body.block.ops]
            if not any(isinstance(o, loop.ForOp) for o in body):
                f["innermost_extent"] = max(f["innermost_extent"], trips)
                f["innermost_loads"] += sum(isinstance(o, loop.LoadOp) for o in body)
                f["innermost_float_ops"] += sum(o.dialect_name() in ("arith",) and o.results and
                                                "f" in str(o.results[0].type)[:1] for o in body)
            for inner in body:
                visit(inner, times * trips, depth + 1, inner_vector)
            return
        if isinstance(op, loop.LoadOp):
            f["loads"] += times
        elif isinstance(op, loop.StoreOp):
            f["stores"] += times
        elif isinstance(op, loop.AllocOp) and op.scope.data == "local":
            t = op.results[0].type
            f["local_buffers"] += 1
            f["local_bytes"] += 4 * math.prod(max(1, d) for d in t.get_shape())
        elif op.dialect_name() in SCALAR_DIALECTS and op.results and str(op.results[0].type).startswith(("f", "vector")):
            f["float_ops"] += times
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner, times, depth, inner_vector)

    for op in kernel.body.block.ops:
        visit(op, 1.0, 0, 0)
    return np.log1p(np.array([f[n] for n in FEATURE_NAMES], dtype=np.float64))
