"""``partition{backend=NAME}``: outline each match of a backend's patterns into a ``byoc.composite``.

Patterns are applied in decreasing priority over the whole function (as TVM's
MergeComposite applies its table in order): ``dense_bias_relu`` claims its ops before
``dense`` sees what is left. A match is taken when its root is not claimed yet, none of
its ops is, its ``check`` accepts it, and every matched op but the root is used only
inside the match (an intermediate value that escapes would have to be computed twice).

``bind_constants=true`` (the default) clones the constants a composite reads into its
body, so the backend receives the weights at compile time; ``bind_constants=false``
lifts them to parameters (the composite's inputs), passed at every call.

Example: ``tensorkiln-opt model.mlir -p 'partition{backend=blas}'``::

    %y = byoc.composite "blas.dense_bias_relu" (%x) : (tensor<4x64xf32>) -> tensor<4x32xf32> {
    ^bb0(%a: tensor<4x64xf32>):
      %w = graph.constant #graph.weight<"w"> : tensor<32x64xf32>
      ...
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ..dialects.graph import ConstantOp, GraphOp
from ..dialects.byoc import CompositeOp
from .outline import outline
from .pattern import Match
from .registry import PatternEntry, patterns_for


def _acceptable(match: Match, entry: PatternEntry) -> bool:
    inside = set(match.ops)
    for op in match.ops:
        if not isinstance(op, GraphOp) or isinstance(op, ConstantOp):
            return False
    for op in match.ops[1:]:
        if any(use.operation not in inside for r in op.results for use in r.uses):
            return False
    return entry.accepts(match)


def partition_block(block: Block, entries: list[PatternEntry], bind_constants: bool) -> int:
    """Outline the matches of ``entries`` (highest priority first) in ``block``; returns
    how many composites were made."""
    made = 0
    for entry in entries:
        for op in reversed(list(block.ops)):
            if op.parent is not block or not isinstance(op, GraphOp) or isinstance(op, ConstantOp):
                continue
            match = entry.pattern.match_op(op)
            if match is None or not _acceptable(match, entry):
                continue
            order = {o: k for k, o in enumerate(block.ops)}
            members = sorted(match.ops, key=order.__getitem__)
            inputs = list(match.inputs)
            for member in members:  # operands no sub-pattern named (is_op without operands)
                inputs += [v for v in member.operands if v.owner not in match.ops and v not in inputs]
            root = match.root.results[0]
            outline(
                members,
                inputs,
                [root],
                lambda params, types, body, name=entry.composite_name: CompositeOp(name, params, types[0], body),
                bind_constants=bind_constants,
            )
            made += 1
    return made


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Outline the matches of ``backend``'s patterns into byoc.composite ops."""

    name = "partition"

    backend: str = ""
    bind_constants: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.backend:
            raise PassFailedException("partition: name the backend, e.g. -p 'partition{backend=blas}'")
        try:
            entries = patterns_for(self.backend)
        except ValueError as e:
            raise PassFailedException(f"partition: {e}") from None
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.is_declaration:
                partition_block(function.body.block, entries, self.bind_constants)


__all__ = ["PartitionPass", "partition_block"]
