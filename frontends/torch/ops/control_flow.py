"""torch.cond and torch while_loop (higher-order ops) -> graph.if / graph.while.

The branch, condition and body graphs are converted into the regions, their
placeholders bound to the region's arguments. ``while_loop``'s additional inputs are
carried unchanged (the body yields them back)."""

from __future__ import annotations

from typing import Any

from xdsl.ir import SSAValue

from ...control_flow import if_, while_
from ..context import ImportContext
from ..registry import converter


def _tensors(values: Any, what: str) -> list[SSAValue]:
    values = list(values)
    for v in values:
        if not isinstance(v, SSAValue):
            raise NotImplementedError(f"{what}: operand {v!r} is not a tensor (only tensor operands are supported)")
    return values


@converter("higher_order.cond")
def cond(ctx: ImportContext, node: Any, pred: Any, true_graph: Any, false_graph: Any, operands: Any) -> tuple:
    if not isinstance(pred, SSAValue):
        raise NotImplementedError(f"torch.cond: the predicate must be a tensor, got {pred!r}")
    inputs = _tensors(operands, "torch.cond")
    results = if_(
        ctx.b,
        pred,
        inputs,
        then_fn=lambda b, *args: ctx.convert_subgraph(true_graph, list(args)),
        else_fn=lambda b, *args: ctx.convert_subgraph(false_graph, list(args)),
    )
    return tuple(results)


@converter("higher_order.while_loop")
def while_loop(ctx: ImportContext, node: Any, cond_graph: Any, body_graph: Any, carried: Any, additional: Any = ()) -> tuple:
    loop_values = _tensors(carried, "while_loop")
    extra = _tensors(additional, "while_loop")
    n = len(loop_values)

    def cond_fn(b: Any, *args: SSAValue) -> list[SSAValue]:
        return ctx.convert_subgraph(cond_graph, list(args))[:1]

    def body_fn(b: Any, *args: SSAValue) -> list[SSAValue]:
        return ctx.convert_subgraph(body_graph, list(args)) + list(args[n:])

    results = while_(ctx.b, loop_values + extra, cond_fn=cond_fn, body_fn=body_fn)
    return tuple(results[:n])
