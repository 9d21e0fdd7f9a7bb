"""TE rule of ``graph.bitcast``: ``arith.bitcast`` of each element."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from ...dialects.graph.bitcast import BitcastOp
from ..te_builder import TEBuilder
from .registry import compute_rule


@compute_rule(BitcastOp)
def bitcast(t: TEBuilder, op: BitcastOp) -> SSAValue:
    to = op.result.type.element_type
    if to == op.input.type.element_type:
        return t.compute("bitcast", op.result.type, [op.input], lambda s, idx, ins: s.read(ins[0], idx))
    return t.compute("bitcast", op.result.type, [op.input], lambda s, idx, ins: s._insert(arith.BitcastOp(s.read(ins[0], idx), to)))  # noqa: SLF001
