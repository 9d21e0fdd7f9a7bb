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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph.host import CheckOp
from ..dialects.graph.shape import ReshapeOp
from ..dialects.graph.types import shape_of
from ..runtime.signature import RuntimeCheck
from ..signature import function_checks, set_function_checks


def checks_as_outputs(function: func.FuncOp) -> None:
    """Move the top-level ``graph.check`` ops of ``function`` into its results (module
    docstring); a function without checks is left as it is."""
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


__all__ = ["ChecksToOutputsPass", "checks_as_outputs"]
