"""bfloat16 products accumulated in float32: what AVX512_BF16's ``vdpbf16ps`` computes, and
what ``torch.autocast("cpu", torch.bfloat16)`` runs a linear layer in.

``graph.bf16_dense`` is a linear layer whose operands are rounded to bfloat16 (round to
nearest even; a bfloat16 operand is taken as it is), multiplied exactly and summed in
float32; the bias (float32) is added to the float32 result. Operands may be float32 or
bfloat16 tensors: a bfloat16 model keeps its activations in 16 bits (the op reads them
as they are stored), an autocast float32 model gets a cast before it (``passes/bf16_products.py``).

Example::

    %y = graph.bf16_dense %x, %w, %b : tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<32xf32> -> tensor<8x32xf32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, bf16, f32
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, irdl_op_definition, operand_def, opt_operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, expect_rank, operand_element, operand_shape
from .types import bfloat16_dtype, format_shape, tensor_type


def bf16_values(array: np.ndarray) -> np.ndarray:
    """``array`` rounded to bfloat16 (nearest even) and widened back to float64."""
    return np.asarray(array).astype(bfloat16_dtype()).astype(np.float64)


@irdl_op_definition
class BF16DenseOp(GraphOp):
    """``input (..., K) x weight (N, K)^T [+ bias (N,)] -> (..., N)`` float32, with the
    products of the bfloat16-rounded operands summed in float32 (see the module doc).

    Example::

        %y = graph.bf16_dense %x, %w : tensor<3x5xf32>, tensor<4x5xf32> -> tensor<3x4xf32>
    """

    name = "graph.bf16_dense"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE
    #: reads bfloat16 as stored (legalize-16bit-floats would widen its operands to float32)
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, weight: SSAValue | Operation, bias: SSAValue | Operation | None = None):
        self._build([input, weight, [bias] if bias is not None else []])

    def infer_result_type(self) -> TensorType:
        x, w = operand_shape(self.input), operand_shape(self.weight)
        if len(x) < 1:
            raise VerifyException(f"input must have rank >= 1, got shape {format_shape(x)}")
        expect_rank("weight", w, 2)
        if x[-1] != w[1]:
            raise VerifyException(f"contraction dims differ (input {x[-1]} vs weight {w[1]})")
        for what, value in (("input", self.input), ("weight", self.weight)):
            if operand_element(value) not in (f32, bf16):
                raise VerifyException(f"{what} must be float32 or bfloat16, got {value.type}")
        if self.bias is not None:
            if operand_element(self.bias) != f32 or operand_shape(self.bias) != (w[0],):
                raise VerifyException(f"bias must be float32 of shape ({w[0]},), got {self.bias.type}")
        return tensor_type((*x[:-1], w[0]), f32)

    def reference(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        y = np.matmul(bf16_values(x), bf16_values(w).T)
        if bias is not None:
            y = y + bias.astype(np.float64)
        return y.astype(np.float32)


__all__ = ["BF16DenseOp", "bf16_values"]
