"""The loop nests te-to-loop's kernels are made of (``compute_kernel.py``,
``scan_kernel.py``, ``scatter_kernel.py``, ``sort_kernel.py``, ``dense_linalg/``...):
the buffer of a tensor, loop bounds covering a buffer, a nest of serial loops with a
role each (``dialects/loop.py``'s ``LOOP_ROLES``: what the schedules read), and the
arithmetic combining a reduction's accumulator with a term::

    b = Builder(InsertPoint.at_end(entry))
    ivs, inner = emit_loop_nest(b, buffer_bounds(b, out), "i", role="spatial")   # i0, i1, ... over out
    inner.insert(loop.StoreOp(value, out, ivs))
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from ..dialects.graph.types import is_float
from .te_builder import REASSOC


def buffer_type(t: TensorType) -> MemRefType:
    """The memref holding a tensor (symbolic dims become ``?``)."""
    return MemRefType(t.element_type, t.get_shape())


def buffer_bounds(b: Builder, buffer: SSAValue) -> list[SSAValue]:
    """Loop upper bounds covering ``buffer``: constants, or ``loop.dim`` for ``?`` dims."""
    bounds = []
    for axis, size in enumerate(buffer.type.get_shape()):
        op = loop.DimOp(buffer, axis) if size < 0 else arith.ConstantOp(IntegerAttr(size, IndexType()))
        bounds.append(b.insert(op).results[0])
    return bounds


def emit_loop_nest(
    b: Builder, upper_bounds: Sequence[SSAValue], prefix: str, first: int = 0, *, role: str
) -> tuple[list[SSAValue], Builder]:
    """Serial loops ``0 <= iv < ub`` of ``role`` named ``{prefix}{first}``,
    ``{prefix}{first + 1}``... (the names are for people; schedules read the role);
    returns the induction variables and a builder inside."""
    ivs: list[SSAValue] = []
    if not upper_bounds:
        return ivs, b
    zero = b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
    one = b.insert(arith.ConstantOp(IntegerAttr(1, IndexType()))).result
    for k, ub in enumerate(upper_bounds, first):
        body = Block(arg_types=[IndexType()])
        b.insert(loop.ForOp(zero, ub, one, body, kind="serial", name=f"{prefix}{k}", role=role))
        body.add_op(loop.YieldOp())
        ivs.append(body.args[0])
        b = Builder(InsertPoint.before(body.last_op))
    return ivs, b


#: (combiner, float element?) -> the op combining an accumulator with a term; float
#: sums and products may be reassociated (vector accumulators)
_COMBINE = {
    ("add", True): lambda a, b: arith.AddfOp(a, b, REASSOC),
    ("mul", True): lambda a, b: arith.MulfOp(a, b, REASSOC),
    ("max", True): arith.MaximumfOp,
    ("min", True): arith.MinimumfOp,
    ("add", False): arith.AddiOp,
    ("mul", False): arith.MuliOp,
    ("max", False): arith.MaxSIOp,
    ("min", False): arith.MinSIOp,
}


def combine_op(combiner: str, element: Attribute, acc: SSAValue, term: SSAValue) -> Operation:
    """The op (not inserted) combining ``acc`` and ``term`` of type ``element`` by a
    reduction ``combiner``: ``"add"``, ``"mul"``, ``"max"`` or ``"min"``."""
    return _COMBINE[combiner, is_float(element)](acc, term)


__all__ = ["buffer_bounds", "buffer_type", "combine_op", "emit_loop_nest"]
