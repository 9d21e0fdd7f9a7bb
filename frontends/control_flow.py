"""Control flow in the builder API: ``if_`` and ``while_`` over tensors.

The branches and the loop's condition and body are Python functions that build graph
ops with the same :class:`~tensorkiln.frontends.builder.GraphBuilder`; they receive
the region's arguments and return the values the region yields::

    b = tk.GraphBuilder()
    x = b.input("x", ("n", 4))
    pred = b.reduce_sum(x, [0, 1], True)            # one element
    (y,) = if_(b, b.greater(pred, 0.0), [x],
               then_fn=lambda b, x: [b.relu(x)],
               else_fn=lambda b, x: [b.neg(x)])
    (z, k) = while_(b, [y, b.constant(np.zeros((), np.int64))],
                    cond_fn=lambda b, y, k: b.less(k, 5),
                    body_fn=lambda b, y, k: [b.mul(y, 2.0), b.add(k, 1)])
    module = b.finish(z)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

from xdsl.builder import Builder, InsertPoint
from xdsl.ir import Block, Region, SSAValue

from ..dialects.graph.control import IfOp, RegionYieldOp, WhileOp
from .builder import GraphBuilder

RegionFn = Callable[..., Any]


@contextmanager
def _inside(b: GraphBuilder, block: Block):
    """Make ``b`` insert into ``block`` for a while (the region being built)."""
    saved = b._builder  # noqa: SLF001 (the builder's own insertion point)
    b._builder = Builder(InsertPoint.at_end(block))  # noqa: SLF001
    try:
        yield
    finally:
        b._builder = saved  # noqa: SLF001


def _as_list(values: Any) -> list[SSAValue]:
    return [values] if isinstance(values, SSAValue) else list(values)


def _region(b: GraphBuilder, types: Sequence[Any], fn: RegionFn) -> tuple[Region, list[SSAValue]]:
    block = Block(arg_types=list(types))
    with _inside(b, block):
        yielded = _as_list(fn(b, *block.args))
        b._builder.insert(RegionYieldOp(yielded))  # noqa: SLF001
    return Region(block), yielded


def if_(b: GraphBuilder, pred: SSAValue, inputs: Sequence[SSAValue], then_fn: RegionFn, else_fn: RegionFn) -> list[SSAValue]:
    """``graph.if``: ``then_fn(b, *inputs)`` when ``pred`` (one element) is nonzero, else
    ``else_fn(b, *inputs)``; both return lists of values of the same types."""
    types = [v.type for v in inputs]
    then_region, then_values = _region(b, types, then_fn)
    else_region, _ = _region(b, types, else_fn)
    op = IfOp(pred, list(inputs), [v.type for v in then_values], then_region, else_region)
    b._builder.insert(op)  # noqa: SLF001
    return list(op.outputs)


def while_(b: GraphBuilder, inputs: Sequence[SSAValue], cond_fn: RegionFn, body_fn: RegionFn) -> list[SSAValue]:
    """``graph.while``: while ``cond_fn(b, *carried)`` (one predicate) is nonzero, the carried
    values become ``body_fn(b, *carried)``; returns their final values."""
    types = [v.type for v in inputs]
    cond_region, _ = _region(b, types, cond_fn)
    body_region, _ = _region(b, types, body_fn)
    op = WhileOp(list(inputs), cond_region, body_region)
    b._builder.insert(op)  # noqa: SLF001
    return list(op.outputs)


__all__ = ["if_", "while_"]
