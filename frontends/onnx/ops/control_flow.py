"""Control flow: If, Loop, Scan.

- ``If`` on a condition known at import converts the branch taken inline; otherwise it
  is a ``graph.if`` (run by the VM), both branches yielding the same types.
- ``Loop`` with a trip count known at import (a constant ``M``, a condition that stays
  true) is unrolled, its scan outputs stacked; otherwise it is a ``graph.while`` over the
  iteration number, the condition and the loop-carried values (scan outputs, whose
  length would be read from data, are not supported there).
- ``Scan`` is unrolled over its static sequence length (Scan-8: once per element of its static batch).

Sequence-typed values (``SequenceEmpty``, a loop accumulating a sequence) are refused by
name when a node reads them: there are no sequences in the graph dialect.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.ir import SSAValue

from ....dialects.graph.control import IfOp, WhileOp
from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter

_INT64 = np.dtype(np.int64)
#: loops with a known trip count up to this are unrolled
UNROLL_LIMIT = 256


def _predicate(ctx: OnnxContext, value: SSAValue) -> SSAValue:
    """A one-element boolean (a 0-d one for the VM's predicate)."""
    return ctx.b.reshape(ctx.cast(value, np.bool_), ())


@converter("If")
def if_(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    then_graph, else_graph = node.attr("then_branch"), node.attr("else_branch")
    _refuse_sequences(then_graph, else_graph)
    known = ctx.const(node.input(0))
    subgraphs = ctx.subgraphs
    if known is not None:
        return tuple(subgraphs.convert_subgraph(then_graph if bool(known.reshape(-1)[0]) else else_graph, []))
    outer = subgraphs.outer_values([then_graph, else_graph])
    yielded: dict[str, list] = {}

    def keep(which: str):
        def tail(args: list[SSAValue], outputs: list[SSAValue]) -> list[SSAValue]:
            yielded[which] = [o.type for o in outputs]
            return outputs

        return tail

    then_region = subgraphs.region(then_graph, [], outer, keep("then"))
    else_region = subgraphs.region(else_graph, [], outer, keep("else"))
    if yielded["then"] != yielded["else"]:
        raise refuse(
            "the branches give values of different types or shapes "
            f"({', '.join(map(str, yielded['then']))} vs {', '.join(map(str, yielded['else']))})"
        )
    op = subgraphs.insert(IfOp(_predicate(ctx, node.input(0)), outer, yielded["then"], then_region, else_region))
    return tuple(op.outputs)


def _refuse_sequences(*graphs: onnx.GraphProto) -> None:
    for graph in graphs:
        for value in [*graph.input, *graph.output]:
            kind = value.type.WhichOneof("value")
            if kind not in (None, "tensor_type"):
                raise refuse(f"subgraph value '{value.name}' is of {kind.replace('_type', '')} type (only tensors are supported)")


def _always_true(ctx: OnnxContext, value: SSAValue | None) -> bool:
    known = ctx.const(value)
    return value is None or known is not None and bool(known.reshape(-1)[0])


def _stacked(ctx: OnnxContext, values: list[SSAValue], axis: int = 0) -> SSAValue:
    g = ctx.b
    rows = []
    for v in values:
        shape = list(ctx.shape(v))
        shape.insert(axis, 1)
        rows.append(g.reshape(v, shape))
    return rows[0] if len(rows) == 1 else g.concat(rows, axis)


@converter("Loop")
def loop(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    body = node.attr("body")
    _refuse_sequences(body)
    trip, condition = node.input(0), node.input(1)
    carried = [v for v in node.inputs()[2:]]
    n_scan = len(body.output) - 1 - len(carried)
    count = ctx.const(trip)
    if count is not None and _always_true(ctx, condition) and int(count.reshape(-1)[0]) <= UNROLL_LIMIT:
        unrolled = _unrolled_loop(ctx, body, int(count.reshape(-1)[0]), carried, n_scan)
        if unrolled is not None:
            return unrolled
    if n_scan:  # a static trip count is needed: ask for the inputs it comes from, by name
        if count is None and trip is not None:
            ctx.need_const(node, 0, "the trip count of a loop with scan outputs")
        if condition is not None and ctx.const(condition) is None:
            ctx.need_const(node, 1, "the condition of a loop with scan outputs")
        raise refuse("scan outputs of a loop that may end early or runs long (their length would be read from data)")
    return _while_loop(ctx, body, trip, condition, carried)


def _unrolled_loop(ctx: OnnxContext, body: onnx.GraphProto, count: int, carried: list[SSAValue], n_scan: int) -> tuple | None:
    """The loop unrolled ``count`` times, or None when its condition may turn false."""
    if count == 0:
        if n_scan:
            raise refuse("scan outputs of a loop that runs 0 times (their shape is unknown)")
        return tuple(carried)
    true = ctx.constant(np.asarray(True))
    scans: list[list[SSAValue]] = [[] for _ in range(n_scan)]
    state = list(carried)
    for i in range(count):
        outputs = ctx.subgraphs.convert_subgraph(body, [ctx.constant(np.asarray(i, _INT64)), true, *state])
        if not _always_true(ctx, outputs[0]):
            return None  # (the ops made so far are dead: dce removes them)
        state = outputs[1 : 1 + len(carried)]
        for k, value in enumerate(outputs[1 + len(carried) :]):
            scans[k].append(value)
    return (*state, *(_stacked(ctx, values) for values in scans))


def _while_loop(ctx: OnnxContext, body: onnx.GraphProto, trip: SSAValue | None, condition: SSAValue | None, carried: list[SSAValue]) -> tuple:
    """``graph.while`` carrying (iteration, condition, the loop-carried values, trip count,
    the enclosing values the body reads): the order of the body region's arguments."""
    g, subgraphs = ctx.b, ctx.subgraphs
    start = ctx.constant(np.asarray(0, _INT64))
    limit = ctx.cast(g.reshape(trip, ()), _INT64) if trip is not None else ctx.constant(np.asarray(np.iinfo(np.int64).max, _INT64))
    go = _predicate(ctx, condition) if condition is not None else ctx.constant(np.asarray(True))
    outer = subgraphs.outer_values([body])
    inputs = [start, go, *carried, limit, *outer]
    n = len(carried)

    def cond(i: SSAValue, going: SSAValue, *rest: SSAValue) -> list[SSAValue]:
        return [g.bitwise_and(g.compare(i, rest[n], "lt"), going)]

    def tail(args: list[SSAValue], outputs: list[SSAValue]) -> list[SSAValue]:
        following = outputs[1 : 1 + n]
        for before, after in zip(args[2 : 2 + n], following):
            if before.type != after.type:
                raise refuse(f"a loop-carried value changes its type or shape ({before.type} -> {after.type})")
        i = args[0]
        return [g.add(i, ctx.scalar(1, i)), _predicate(ctx, outputs[0]), *following, *args[2 + n :]]

    cond_region = subgraphs.plain_region([v.type for v in inputs], cond)
    body_region = subgraphs.region(body, inputs[: 2 + n], [limit, *outer], tail)
    op = subgraphs.insert(WhileOp(inputs, cond_region, body_region))
    return tuple(op.outputs[2 : 2 + n])


@converter("Scan", since=9)
def scan(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    body = node.attr("body")
    _refuse_sequences(body)
    n_scan_in = node.attr("num_scan_inputs")
    values = node.inputs()
    states, scanned = values[: len(values) - n_scan_in], values[len(values) - n_scan_in :]
    n_scan_out = len(body.output) - len(states)
    in_axes = node.attr("scan_input_axes", [0] * n_scan_in)
    in_axes = [ctx.axis(a, ctx.rank(v), node, "scan_input_axes") for a, v in zip(in_axes, scanned)]
    in_directions = node.attr("scan_input_directions", [0] * n_scan_in)
    out_axes = node.attr("scan_output_axes", [0] * n_scan_out)
    out_directions = node.attr("scan_output_directions", [0] * n_scan_out)
    return _unrolled_scan(ctx, node, body, states, scanned, in_axes, in_directions, out_axes, out_directions)


@converter("Scan", since=8)
def scan_8(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    """Scan-8: every input has a leading batch axis, scanned along axis 1; one Scan-9 per
    batch element (a static batch), stacked. ``sequence_lens`` must be the full length."""
    g = ctx.b
    body = node.attr("body")
    _refuse_sequences(body)
    n_scan_in = node.attr("num_scan_inputs")
    values = node.inputs()
    lens, values = values[0], values[1:]
    states, scanned = values[: len(values) - n_scan_in], values[len(values) - n_scan_in :]
    batch = ctx.shape(scanned[0])[0] if scanned else None
    if not isinstance(batch, int):
        raise refuse(f"a batch axis of size {batch} (Scan-8 is unrolled over a static batch)")
    length = ctx.shape(scanned[0])[1]
    if lens is not None:
        given = ctx.need_const(node, 0, "sequence_lens")
        if np.any(given != length):
            raise refuse(f"sequence_lens {given.tolist()} shorter than the scanned length {length}")
    n_scan_out = len(body.output) - len(states)
    directions = node.attr("directions", [0] * n_scan_in)

    def element(v: SSAValue, b: int) -> SSAValue:
        return g.reshape(g.slice(v, [b], [b + 1], [0]), ctx.shape(v)[1:])

    per_batch = [
        _unrolled_scan(ctx, node, body, [element(v, b) for v in states], [element(v, b) for v in scanned],
                       [0] * n_scan_in, directions, [0] * n_scan_out, [0] * n_scan_out)
        for b in range(batch)
    ]  # fmt: skip
    return tuple(_stacked(ctx, list(results), 0) for results in zip(*per_batch))


def _unrolled_scan(
    ctx: OnnxContext, node: OnnxNode, body: onnx.GraphProto, states: list[SSAValue], scanned: list[SSAValue],
    in_axes: list[int], in_directions: list[int], out_axes: list[int], out_directions: list[int],
) -> tuple[SSAValue, ...]:  # fmt: skip
    """Scan-9 unrolled over its static length: the final states, then the scan outputs."""
    g = ctx.b
    lengths = {ctx.shape(v)[a] for v, a in zip(scanned, in_axes)}
    if len(lengths) != 1 or not isinstance(next(iter(lengths)), int):
        raise refuse(f"scan inputs of lengths {sorted(map(str, lengths))} (one static length is supported)")
    length = lengths.pop()
    outputs: list[list[SSAValue]] = [[] for _ in out_axes]
    for t in range(length):
        slices = []
        for v, axis, direction in zip(scanned, in_axes, in_directions):
            k = length - 1 - t if direction else t
            part = g.slice(v, [k], [k + 1], [axis])
            shape = list(ctx.shape(part))
            shape.pop(axis)
            slices.append(g.reshape(part, shape))
        results = ctx.subgraphs.convert_subgraph(body, [*states, *slices])
        states = results[: len(states)]
        for k, value in enumerate(results[len(states) :]):
            outputs[k].append(value)
    stacked = []
    for values, axis, direction in zip(outputs, out_axes, out_directions):
        values = values[::-1] if direction else values
        axis = ctx.axis(axis, ctx.rank(values[0]) + 1, node, "scan_output_axes")
        stacked.append(_stacked(ctx, values, axis))
    return (*states, *stacked)
