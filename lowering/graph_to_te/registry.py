"""The compute-rule registry: for each graph op, how its result is computed in TE.

A rule receives a :class:`~tensorkiln.lowering.te_builder.TEBuilder` positioned where
the op stands and the op itself, and returns the value that replaces the op's result
(usually one ``te.compute``; softmax-like ops emit a few). Register with::

    @compute_rule(graph.ExpOp, graph.LogOp)
    def unary(t: TEBuilder, op) -> SSAValue: ...
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from ...dialects.graph import GraphOp
from ..te_builder import TEBuilder

ComputeRule = Callable[[TEBuilder, GraphOp], SSAValue]

COMPUTE_RULES: dict[type[GraphOp], ComputeRule] = {}


def compute_rule(*op_classes: type[GraphOp]) -> Callable[[ComputeRule], ComputeRule]:
    """Register the decorated function as the TE lowering of these graph ops."""

    def register(rule: ComputeRule) -> ComputeRule:
        for op_class in op_classes:
            if op_class in COMPUTE_RULES:
                raise ValueError(f"{op_class.name} already has a compute rule")
            COMPUTE_RULES[op_class] = rule
        return rule

    return register


def tag_of(op: GraphOp) -> str:
    """A kernel name stem for an op: ``graph.dense`` -> ``dense``."""
    return op.name.removeprefix("graph.")
