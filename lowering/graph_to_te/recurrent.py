"""TE rule of ``graph.rnn``: one ``te.rnn`` (its kernel: ``lowering/rnn_kernel.py``)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from ...dialects import te
from ...dialects.graph.recurrent import RNNOp
from ..te_builder import TEBuilder
from .registry import compute_rule


@compute_rule(RNNOp)
def rnn(t: TEBuilder, op: RNNOp) -> SSAValue:
    return t.builder.insert(te.RNNOp(list(op.operands), op.result.type, op.cell.data, op.reverse.value)).result


__all__: list[str] = []
