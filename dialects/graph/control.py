"""Control flow at the graph level: ``graph.if`` and ``graph.while`` on tensors.

Both ops have isolated regions (like ``graph.fused``): a region's block arguments are
the values it receives, and it ends with ``graph.region_yield`` of what it returns.
A *predicate* is a tensor with one element (bool, int or float); nonzero is true.

- ``graph.if``: operands ``(pred, inputs...)``; the ``then`` or the ``else`` region
  (both take the inputs) gives the results::

      %r = "graph.if"(%p, %x) ({
      ^bb0(%a: tensor<?x4xf32>):
        %y = graph.relu %a : tensor<?x4xf32>
        "graph.region_yield"(%y) : (tensor<?x4xf32>) -> ()
      }, {
      ^bb0(%a: tensor<?x4xf32>):
        "graph.region_yield"(%a) : (tensor<?x4xf32>) -> ()
      }) : (tensor<i1>, tensor<?x4xf32>) -> tensor<?x4xf32>

- ``graph.while``: operands are the initial loop-carried values, results their final
  values (same types). Each iteration runs ``cond`` on the carried values (it yields
  one predicate); when true, ``body`` yields the next carried values. The trip count
  may depend on the data.

The numpy reference semantics (the interpreter's) are here, beside the ops; the VM
(``tensorkiln.driver.vm``) compiles the straight-line code between and
inside these ops and runs the control flow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException

from .types import shape_of


@irdl_op_definition
class RegionYieldOp(IRDLOperation):
    """What a region of ``graph.if``/``graph.while`` returns."""

    name = "graph.region_yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


def _yielded(region: Region, what: str) -> list[Attribute]:
    last = region.block.last_op
    if not isinstance(last, RegionYieldOp):
        raise VerifyException(f"{what} must end with graph.region_yield")
    return [v.type for v in last.values]


def _check_args(region: Region, types: Sequence[Attribute], what: str) -> None:
    if [a.type for a in region.block.args] != list(types):
        raise VerifyException(f"{what}: block arguments {[str(a.type) for a in region.block.args]} must be the inputs' types {[str(t) for t in types]}")


def _check_predicate_type(t: Attribute, what: str) -> None:
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what}: the predicate must be a tensor, got {t}")
    shape = shape_of(t)
    if any(isinstance(d, str) or d != 1 for d in shape):
        raise VerifyException(f"{what}: the predicate must have one element, got {t}")


def truth(array: np.ndarray) -> bool:
    """The value of a predicate tensor (one element; nonzero is true)."""
    if array.size != 1:
        raise ValueError(f"a predicate must have one element, got shape {list(array.shape)}")
    return bool(array.reshape(-1)[0])


@irdl_op_definition
class IfOp(IRDLOperation):
    """``graph.if``: run the ``then`` or the ``else`` region on the inputs (see module docstring)."""

    name = "graph.if"
    pred = operand_def(TensorType)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, pred: SSAValue, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], then_region: Region, else_region: Region):
        super().__init__(operands=[pred, inputs], result_types=[list(result_types)], regions=[then_region, else_region])

    def verify_(self) -> None:
        _check_predicate_type(self.pred.type, "graph.if")
        results = list(self.outputs.types)
        for region, what in ((self.then_region, "then"), (self.else_region, "else")):
            _check_args(region, list(self.inputs.types), f"graph.if {what} region")
            if _yielded(region, f"graph.if {what} region") != results:
                raise VerifyException(f"graph.if: the {what} region must yield the result types {[str(t) for t in results]}")

    def reference(self, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        pred, *inputs = args
        region = self.then_region if truth(pred) else self.else_region
        return tuple(evaluate_block(region.block, inputs))


@irdl_op_definition
class WhileOp(IRDLOperation):
    """``graph.while``: a loop over carried tensors with a data-dependent trip count."""

    name = "graph.while"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    cond_region = region_def("single_block")
    body_region = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    #: the reference semantics stop a loop that runs longer than this (a likely bug)
    MAX_REFERENCE_ITERATIONS: ClassVar[int] = 1_000_000

    def __init__(self, inputs: Sequence[SSAValue], cond_region: Region, body_region: Region):
        super().__init__(operands=[inputs], result_types=[[v.type for v in inputs]], regions=[cond_region, body_region])

    def verify_(self) -> None:
        carried = list(self.inputs.types)
        if list(self.outputs.types) != carried:
            raise VerifyException("graph.while: the results must have the types of the carried inputs")
        _check_args(self.cond_region, carried, "graph.while cond region")
        _check_args(self.body_region, carried, "graph.while body region")
        cond = _yielded(self.cond_region, "graph.while cond region")
        if len(cond) != 1:
            raise VerifyException(f"graph.while: the cond region must yield one predicate, got {len(cond)} values")
        _check_predicate_type(cond[0], "graph.while cond region")
        if _yielded(self.body_region, "graph.while body region") != carried:
            raise VerifyException("graph.while: the body region must yield the carried types")

    def reference(self, *carried: np.ndarray) -> tuple[np.ndarray, ...]:
        values = list(carried)
        for _ in range(self.MAX_REFERENCE_ITERATIONS):
            (pred,) = evaluate_block(self.cond_region.block, values)
            if not truth(pred):
                return tuple(values)
            values = evaluate_block(self.body_region.block, values)
        raise RuntimeError(f"graph.while: more than {self.MAX_REFERENCE_ITERATIONS} iterations")


CONTROL_FLOW_OPS = (IfOp, WhileOp)


def evaluate_block(block: Block, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Numpy reference evaluation of a region's block: its yielded values."""
    values: dict[SSAValue, np.ndarray] = dict(zip(block.args, inputs))
    for op in block.ops:
        if isinstance(op, RegionYieldOp):
            return [values[v] for v in op.values]
        reference: Callable[..., object] | None = getattr(op, "reference", None)
        if reference is None:
            raise NotImplementedError(f"cannot evaluate '{op.name}' in a control-flow region")
        result = reference(*(values[v] for v in op.operands))
        results = result if isinstance(result, tuple) else (result,)  # control flow: several; graph.check: none
        values.update((value, np.asarray(array)) for value, array in zip(op.results, results, strict=True))
    raise VerifyException("a control-flow region without graph.region_yield")


__all__ = ["CONTROL_FLOW_OPS", "IfOp", "RegionYieldOp", "WhileOp", "evaluate_block", "truth"]
