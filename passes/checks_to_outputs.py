"""``checks-to-outputs``: a straight-line function's run-time checks become outputs.

A kernel cannot raise an error, so a ``graph.check`` (an index in range, a size the
model assumed) is computed like any value and checked by the caller. Each check at the
top level of a function becomes one more result, its predicate as a 0-d ``i1``, and
the function records the checks in order (``tk.checks``: message and error)::

    func.func @main(%ids: tensor<7xi64>) -> tensor<7x4xf32> {
      ...
      graph.check %ok {message = "embedding: index out of range", error = "IndexError"} : tensor<1xi1>
      func.return %rows : tensor<7x4xf32>
    }

becomes::

    func.func @main(%ids: tensor<7xi64>) -> (tensor<7x4xf32>, tensor<i1>) attributes {tk.checks = [["embedding: index out of range", "IndexError"]]} {
      ...
      %0 = graph.reshape %ok : tensor<1xi1> -> tensor<i1>
      func.return %rows, %0 : tensor<7x4xf32>, tensor<i1>
    }

The function's signature (``signature_of``) lists the checks; every executor of the
compiled function raises the first that fails after the call (``Signature.results``),
so a model with checks needs no VM. Kernels never depend on a check holding: indices
are clamped, so a failing check's call reads and writes inside its buffers.
Checks inside ``graph.if``/``graph.while`` regions are left to the VM.

A check whose predicate is computed from constants alone (reflect padding's indices,
``arange`` positions: at most ``SETTLED_CONE_OPS`` ops, evaluated through their numpy
reference) and is true everywhere is dropped instead: it would cost kernels, an output
and, on the GPU, a copy to the host at every call, to say what the compiler knows.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from ..dialects.graph import ConstantOp, GraphOp
from ..dialects.graph.host import CheckOp
from ..dialects.graph.random import RANDOM_OPS
from ..dialects.graph.shape import ReshapeOp
from ..dialects.graph.types import shape_of
from ..runtime.signature import RuntimeCheck
from ..dialects.functions import function_checks, set_function_checks


#: the most ops between constants and a check's predicate for the check to be decided here
SETTLED_CONE_OPS = 32
#: nor may a value on the way have more elements than this
SETTLED_MAX_ELEMENTS = 1 << 20


def settled_true(pred: SSAValue) -> bool:
    """Whether ``pred`` is computed from ``graph.constant`` values alone, by at most
    ``SETTLED_CONE_OPS`` ops with numpy reference semantics, and is true everywhere."""
    values: dict[SSAValue, np.ndarray | None] = {}
    budget = [SETTLED_CONE_OPS]

    def value(v: SSAValue) -> np.ndarray | None:
        if v not in values:
            values[v] = _evaluate(v.owner, value, budget)
        return values[v]

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = value(pred)
    return result is not None and bool(np.all(result))


def _evaluate(op: object, value: Callable[[SSAValue], np.ndarray | None], budget: list[int]) -> np.ndarray | None:
    """The array ``op`` makes from its operands' ``value``s, or None (not constant, a
    random op, no reference semantics, too many ops or elements)."""
    if isinstance(op, ConstantOp):
        array = op.array()
    elif (
        isinstance(op, GraphOp)
        and op.operands
        and not op.regions
        and len(op.results) == 1
        and not isinstance(op, RANDOM_OPS)
        and budget[0] > 0
    ):
        budget[0] -= 1
        arrays = [value(v) for v in op.operands]
        if any(a is None for a in arrays):
            return None
        try:
            array = np.asarray(op.reference(*arrays))
        except Exception:  # no reference semantics (or it fails here): the check stays
            return None
    else:
        return None
    return array if array is not None and array.size <= SETTLED_MAX_ELEMENTS else None


def _erase_unused(op: Operation | Block) -> None:
    """Erase ``op`` if it is dead (xDSL's test, as the ``dce`` pass), then the same for what it read."""
    if not isinstance(op, Operation) or op.parent is None or not is_trivially_dead(op):
        return
    operands = [v.owner for v in op.operands]
    Rewriter.erase_op(op)
    for owner in operands:
        _erase_unused(owner)


def checks_as_outputs(function: func.FuncOp) -> None:
    """Move the top-level ``graph.check`` ops of ``function`` into its results (module
    docstring; checks settled true at compile time are dropped); a function without
    checks is left as it is."""
    for check in [op for op in function.body.block.ops if isinstance(op, CheckOp) and settled_true(op.pred)]:
        source = check.pred.owner
        Rewriter.erase_op(check)
        _erase_unused(source)
    checks = [op for op in function.body.block.ops if isinstance(op, CheckOp)]
    if not checks:
        return
    ret = function.body.block.last_op
    assert isinstance(ret, func.ReturnOp), "a function ends with func.return"
    recorded = [*function_checks(function), *(RuntimeCheck(c.message.data, c.error.data) for c in checks)]
    predicates = []
    for check in checks:
        pred = check.pred
        if shape_of(pred.type) != ():
            scalar = ReshapeOp(pred, ())
            Rewriter.insert_op(scalar, InsertPoint.before(ret))
            pred = scalar.results[0]
        predicates.append(pred)
        Rewriter.erase_op(check)
    Rewriter.replace_op(ret, func.ReturnOp(*ret.operands, *predicates))
    function.update_function_type()
    set_function_checks(function, recorded)


@dataclass(frozen=True)
class ChecksToOutputsPass(ModulePass):
    """Every function's top-level run-time checks become results (module docstring)."""

    name = "checks-to-outputs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            checks_as_outputs(function)


__all__ = ["SETTLED_CONE_OPS", "ChecksToOutputsPass", "checks_as_outputs", "settled_true"]
