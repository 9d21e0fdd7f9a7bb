"""``overcompute``: run a split's guarded inner loop for its full tile.

Splitting a loop of a symbolic trip count by ``c`` (``tail="guard"``) leaves an inner
loop of ``min(c, n - outer)`` iterations. Unrolled (a GEMM's rows in registers), every
copy of its body is guarded, inside the hot k loop. When that body only writes a local
tile (after ``cache_write``) and only reads kernel buffers, it may as well run all
``c`` iterations: reads at an index that depends on the loop's variable are clamped
into their buffer (the extra rows recompute the last row), and the values of the
extra iterations are dropped by the write-back loop, which keeps its guard (the
padding of MLIR's tiling with ``pad``, TVM's ``pad`` of a tensorized tile). Dense
64x768->3072 at a symbolic row count, one thread on a znver2: 8.0 -> 3.9 ms.
"""

from __future__ import annotations

from xdsl.builder import InsertPoint
from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from ..dialects.loop import AllocOp, DimOp, LoadOp, StoreOp
from .nest import IndexBuilder, ScheduleError, find_loop, index_constant, static_trip_bound, static_value, transformation


def _depends_on(value: SSAValue, iv: SSAValue, memo: dict[SSAValue, bool]) -> bool:
    if value is iv:
        return True
    if value in memo:
        return memo[value]
    owner = value.owner
    memo[value] = not isinstance(owner, Block) and any(_depends_on(v, iv, memo) for v in owner.operands)
    return memo[value]


def _is_local(buffer: SSAValue) -> bool:
    owner = buffer.owner
    return isinstance(owner, AllocOp) and owner.scope.data == "local"


@transformation("overcompute")
def overcompute(kernel: func.FuncOp, loop: str) -> None:
    """Run loop ``loop`` (``min(c, rest)`` iterations) for all ``c``; see the
    module docstring for when that is legal (else :class:`ScheduleError`)."""
    P = "overcompute"
    for_op = find_loop(kernel, loop, P)
    if static_value(for_op.ub) is not None:
        return  # already runs a constant number of iterations
    trips = static_trip_bound(for_op)
    if trips is None:
        raise ScheduleError(P, f"loop '{loop}' has no constant bound to run to (not the inner loop of a split)")
    body: list[Operation] = [op for op in for_op.walk() if op is not for_op]
    for op in body:
        if isinstance(op, StoreOp) and not _is_local(op.buffer):
            raise ScheduleError(P, f"loop '{loop}' writes a kernel buffer; only a local tile (cache_write) may be overcomputed")
        if isinstance(op, func.CallOp):
            raise ScheduleError(P, f"loop '{loop}' calls @{op.callee.string_value()}")
    iv, memo = for_op.induction_var, {}
    for op in body:
        if not isinstance(op, LoadOp) or _is_local(op.buffer):
            continue
        b = IndexBuilder(kernel, InsertPoint.before(op))
        shape = op.buffer.type.get_shape()
        for axis, index in enumerate(list(op.indices)):
            if _depends_on(index, iv, memo):
                size = b.const(shape[axis]) if shape[axis] >= 0 else b.insert(DimOp(op.buffer, axis))
                op.operands[1 + axis] = b.min(index, b.sub(size, b.const(1)))
    lb, step = static_value(for_op.lb), static_value(for_op.step)
    for_op.operands[1] = index_constant(kernel, lb + trips * step)


__all__ = ["overcompute"]
