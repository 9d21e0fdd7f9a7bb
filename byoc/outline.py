"""Moving a set of ops of one block into a region op (shared by the partitioning passes)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from xdsl.ir import Block, Operation, Region, SSAValue

from ..dialects.graph import ConstantOp
from ..dialects.byoc import YieldOp


def external_inputs(members: Sequence[Operation]) -> list[SSAValue]:
    """Values the members read that none of them computes, in first-use order."""
    inside = set(members)
    inputs: list[SSAValue] = []
    for op in members:
        for v in op.operands:
            if v.owner not in inside and v not in inputs:
                inputs.append(v)
    return inputs


def escaping_values(members: Sequence[Operation]) -> list[SSAValue]:
    """Results of the members used by an op that is not a member (in member order)."""
    inside = set(members)
    return [r for op in members for r in op.results if any(u.operation not in inside for u in r.uses)]


def outline(
    members: Sequence[Operation],
    inputs: Sequence[SSAValue],
    outputs: Sequence[SSAValue],
    make: Callable[[list[SSAValue], list, Region], Operation],
    bind_constants: bool = False,
) -> Operation:
    """Replace ``members`` (ops of one block, in block order) by ONE op made by
    ``make(inputs, output types, body)``, placed where the last member stood.

    ``inputs`` become the body's arguments (constants among them are cloned into the
    body instead when ``bind_constants``); ``outputs`` are yielded and their uses
    outside rewired to the new op's results. The block is re-sorted afterwards so
    every use still follows its definition."""
    block = members[-1].parent_block()
    assert block is not None
    bound = [v for v in inputs if bind_constants and isinstance(v.owner, ConstantOp)]
    params = [v for v in inputs if v not in bound]
    body = Block(arg_types=[v.type for v in params])
    mapping: dict[SSAValue, SSAValue] = dict(zip(params, body.args))
    for value in bound:
        body.add_op(constant := value.owner.clone())
        mapping[value] = constant.result
    for op in members:
        body.add_op(op.clone(value_mapper=mapping))
    body.add_op(YieldOp(*(mapping[v] for v in outputs)))
    new = make(params, [v.type for v in outputs], Region(body))
    block.insert_op_after(new, members[-1])
    for old, result in zip(outputs, new.results):
        old.replace_all_uses_with(result)
    for op in reversed(members):
        op.detach()
        op.erase()
    for value in bound:  # a constant only the members read now lives inside alone
        if not value.uses and value.owner.parent is not None:
            value.owner.detach()
            value.owner.erase()
    topological_sort(block)
    return new


def topological_sort(block: Block) -> None:
    """Reorder ``block``'s ops so each follows its operands' definitions, keeping the
    original order where it is free (the terminator stays last)."""
    ops = list(block.ops)
    position = {op: k for k, op in enumerate(ops)}
    waiting = {op: {v.owner for v in op.operands if v.owner in position and v.owner is not op} for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op, deps in waiting.items():
        for d in deps:
            users[d].append(op)
    ready = [position[op] for op, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for user in users[op]:
            waiting[user].discard(op)
            if not waiting[user]:
                heapq.heappush(ready, position[user])
    if len(order) != len(ops):  # a cycle: the caller's grouping was wrong
        raise ValueError("outlining made a cycle between ops")
    if order == ops:
        return
    for op in ops:
        op.detach()
    for op in order:
        block.add_op(op)
