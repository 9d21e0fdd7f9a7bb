"""``merge-composites``: join adjacent composites of one backend into one ``byoc.region``.

A composite joins the region of a same-backend composite that produces one of its
inputs, unless that would make a cycle: when another input of the composite depends
(through ops outside the region) on a member of the region, the region would both feed
and wait for that op. Composites that join nothing stay alone (``annotate-codegen``
gives each its own region). By default only chains merge (a region's values feed
nothing but the next member), so each region has one result; with
``single_output=false`` a region yields every member value used outside it.

Example (``-p 'partition{backend=example_npu},merge-composites'``)::

    %r = byoc.region (%x) : (tensor<4x64xf32>) -> (tensor<4x10xf32>) {
    ^bb0(%a: tensor<4x64xf32>):
      %0 = byoc.composite "example_npu.dense_bias_relu" (%a) ...
      %1 = byoc.composite "example_npu.dense_bias" (%0) ...
      byoc.yield %1 : tensor<4x10xf32>
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ..dialects.byoc import CompositeOp, RegionOp
from .outline import escaping_values, external_inputs, outline


@dataclass
class _Group:
    backend: str
    members: list[CompositeOp] = field(default_factory=list)
    mask: int = 0  # bit k set: op k of the block is a member


def _only_feeds(group: _Group, consumer: Operation) -> bool:
    """Is every use of the group's values inside the group or by ``consumer``?"""
    members = set(group.members)
    return all(
        use.operation in members or use.operation is consumer for m in group.members for r in m.results for use in r.uses
    )


def merge_block(block: Block, single_output: bool = True) -> list[RegionOp]:
    """Group the composites of ``block`` (see module docstring); returns the new regions.

    ``single_output``: a composite joins a region only when the region's values are used
    by nothing else (a chain), so each region has one result."""
    ops = list(block.ops)
    index = {op: k for k, op in enumerate(ops)}
    # ancestors[k]: bit j set when op j is (transitively) an operand producer of op k
    ancestors: list[int] = []
    for op in ops:
        bits = 0
        for v in op.operands:
            if v.owner in index:
                j = index[v.owner]
                bits |= ancestors[j] | (1 << j)
        ancestors.append(bits)
    group_of: dict[Operation, _Group] = {}
    groups: list[_Group] = []
    for op in ops:
        if not isinstance(op, CompositeOp):
            continue
        producers = [v.owner for v in op.inputs if v.owner in index]
        joined = None
        for p in producers:
            group = group_of.get(p)
            if group is None or group.backend != op.backend or group is joined:
                continue
            if single_output and not _only_feeds(group, op):
                continue
            # a path region -> (outside) -> this composite would become a cycle
            outside = [q for q in producers if q not in group.members]
            if any(ancestors[index[q]] & group.mask for q in outside):
                continue
            joined = group
            break
        if joined is None:
            joined = _Group(op.backend)
            groups.append(joined)
        joined.members.append(op)
        joined.mask |= 1 << index[op]
        group_of[op] = joined
    regions = []
    for group in groups:
        if len(group.members) < 2:
            continue
        members = sorted(group.members, key=index.__getitem__)
        regions.append(
            outline(
                members,
                external_inputs(members),
                escaping_values(members),
                lambda params, types, body: RegionOp(params, types, body),
            )
        )
    return regions


@dataclass(frozen=True)
class MergeCompositesPass(ModulePass):
    """Join adjacent same-backend composites into byoc.region ops, never making a cycle."""

    name = "merge-composites"

    #: join only chains (each region one result); false: regions may yield several values
    #: (the interpreter runs those; the compiled graph program's memory plan assumes one
    #: written buffer per call, so tk.build needs single-output regions for now)
    single_output: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.is_declaration:
                merge_block(function.body.block, self.single_output)


__all__ = ["MergeCompositesPass", "merge_block"]
