"""``graph.fused``: a group of ops that is compiled into ONE kernel (made by ``fuse-ops``).

The region is isolated from above: its block arguments are the group's inputs and it
ends with ``graph.yield`` of the group's result::

    %y = graph.fused "dense_relu" (%x, %w, %b) : (tensor<1x784xf32>, tensor<512x784xf32>, tensor<512xf32>) -> tensor<1x512xf32> {
    ^bb0(%a: tensor<1x784xf32>, %c: tensor<512x784xf32>, %d: tensor<512xf32>):
      %0 = graph.dense %a, %c, %d : tensor<1x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<1x512xf32>
      %1 = graph.relu %0 : tensor<1x512xf32>
      graph.yield %1 : tensor<1x512xf32>
    }
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from ..syntax import parse_isolated_region_op, print_isolated_region_op


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A fused group of graph ops with one result (see module docstring)."""

    name = "graph.fused"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    group_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())

    def __init__(self, group_name: str, inputs: Sequence[SSAValue], result_type: Attribute, body: Region):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"group_name": StringAttr(group_name)},
            regions=[body],
        )

    def verify_(self) -> None:
        args = self.body.block.args
        if [a.type for a in args] != list(self.inputs.types):
            raise VerifyException("graph.fused: block arguments must match the inputs' types")
        last = self.body.block.last_op
        if not isinstance(last, YieldOp) or last.value.type != self.result.type:
            raise VerifyException(f"graph.fused: the body must end with graph.yield of {self.result.type}")

    def reference(self, *inputs: np.ndarray) -> np.ndarray:
        """Evaluate the group op by op with each op's numpy reference."""
        values: dict[SSAValue, np.ndarray] = dict(zip(self.body.block.args, inputs))
        for op in self.body.block.ops:
            if isinstance(op, YieldOp):
                return values[op.value]
            values[op.results[0]] = np.asarray(op.reference(*(values[v] for v in op.operands)))
        raise VerifyException("graph.fused without graph.yield")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.group_name.data)
        printer.print_string(" ")
        print_isolated_region_op(printer, self, self.inputs, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        group_name = parser.parse_str_literal()
        inputs, result_type, attributes, body = parse_isolated_region_op(parser)
        op = cls(group_name, inputs, result_type, body)
        op.attributes |= attributes
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The result of a ``graph.fused`` group: ``graph.yield %v : tensor<...>``"""

    name = "graph.yield"
    value = operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(FusedOp))
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


def fused_body(input_types: Sequence[Attribute]) -> Block:
    return Block(arg_types=list(input_types))
