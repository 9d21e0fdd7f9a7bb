"""Matrix products: matmul, batch_matmul and dense (a linear layer with optional bias).

Examples::

    %c = graph.matmul %a, %b : tensor<16x8xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
    %c = graph.batch_matmul %a, %b : tensor<4x16x8xf32>, tensor<1x8x32xf32> -> tensor<4x16x32xf32>
    %y = graph.dense %x, %w, %bias : tensor<1x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<1x512xf32>
    %y = graph.grouped_matmul %x, %w, %groups : tensor<12x64xf32>, tensor<8x64x32xf32>, tensor<12xi32> -> tensor<12x32xf32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import (
    GraphOp,
    OpPatternKind,
    expect_rank,
    expect_same_element,
    operand_element,
    operand_shape,
)
from .types import broadcast_shapes, is_bool, is_int, tensor_type


def _check_contraction(k_lhs, k_rhs) -> None:
    if k_lhs != k_rhs:
        raise VerifyException(f"contraction dims differ ({k_lhs} vs {k_rhs})")


class _ProductOp(GraphOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        self._build([lhs, rhs])

    def _element(self):
        element = expect_same_element("operands", self.lhs.type, self.rhs.type)
        if is_bool(element):
            raise VerifyException("operands must be numeric, got i1")
        return element


@irdl_op_definition
class MatMulOp(_ProductOp):
    """``(M, K) x (K, N) -> (M, N)``."""

    name = "graph.matmul"

    def infer_result_type(self) -> TensorType:
        a, b = operand_shape(self.lhs), operand_shape(self.rhs)
        expect_rank("lhs", a, 2)
        expect_rank("rhs", b, 2)
        _check_contraction(a[1], b[0])
        return tensor_type((a[0], b[1]), self._element())

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(a, b)


@irdl_op_definition
class BatchMatMulOp(_ProductOp):
    """``(..., M, K) x (..., K, N) -> (..., M, N)``; leading (batch) dims broadcast."""

    name = "graph.batch_matmul"

    def infer_result_type(self) -> TensorType:
        a, b = operand_shape(self.lhs), operand_shape(self.rhs)
        if len(a) < 3 or len(a) != len(b):
            raise VerifyException(
                f"operands must have the same rank >= 3, got shapes {a} and {b}"
            )
        _check_contraction(a[-1], b[-2])
        batch = broadcast_shapes(a[:-2], b[:-2])
        return tensor_type((*batch, a[-2], b[-1]), self._element())

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(a, b)


@irdl_op_definition
class DenseOp(GraphOp):
    """A linear layer: ``input (..., K) x weight (N, K)^T [+ bias (N)] -> (..., N)``."""

    name = "graph.dense"
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

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
    ):
        self._build([input, weight, [bias] if bias is not None else []])

    def infer_result_type(self) -> TensorType:
        x, w = operand_shape(self.input), operand_shape(self.weight)
        types = [self.input.type, self.weight.type]
        if len(x) < 1:
            raise VerifyException(f"input must have rank >= 1, got shape {x}")
        expect_rank("weight", w, 2)
        _check_contraction(x[-1], w[1])
        if self.bias is not None:
            bias = operand_shape(self.bias)
            if bias != (w[0],):
                raise VerifyException(f"bias must have shape ({w[0]},), got {bias}")
            types.append(self.bias.type)
        element = expect_same_element("operands", *types)
        return tensor_type((*x[:-1], w[0]), element)

    def reference(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        y = np.matmul(x, w.T)
        return y + bias if bias is not None else y


@irdl_op_definition
class GroupedMatMulOp(GraphOp):
    """Each row times the matrix its group selects (mixture-of-experts layers):
    ``lhs (S, K) x rhs (G, K, N), groups (S,) -> (S, N)`` with
    ``result[s] = lhs[s] @ rhs[groups[s]]``, and a zero row where ``groups[s]`` is outside
    ``[0, G)`` (torch's ``_grouped_mm`` leaves rows past its last offset unset). Rows need
    not be sorted by group; the weights are read in place, never gathered per row.
    A 3-d ``lhs (S, M, K)`` is S blocks of M rows, a group per block:
    ``result[s] = lhs[s] @ rhs[groups[s]]`` of shape (S, M, N) (the rows of a block
    share their matrix: a GEMM tile over them reads it once).

    Example::

        %y = graph.grouped_matmul %x, %w, %g : tensor<12x64xf32>, tensor<8x64x32xf32>, tensor<12xi32> -> tensor<12x32xf32>
    """

    name = "graph.grouped_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    groups = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs `,` $groups attr-dict `:` type($lhs) `,` type($rhs) `,` type($groups) `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, groups: SSAValue | Operation):
        self._build([lhs, rhs, groups])

    def infer_result_type(self) -> TensorType:
        a, b, g = operand_shape(self.lhs), operand_shape(self.rhs), operand_shape(self.groups)
        expect_rank("lhs", a, 2, 3)
        expect_rank("rhs", b, 3)
        expect_rank("groups", g, 1)
        _check_contraction(a[-1], b[1])
        if g[0] != a[0]:
            what = "row" if len(a) == 2 else "block"
            raise VerifyException(f"groups must have one entry per {what} of lhs ({a[0]}), got {g[0]}")
        if not is_int(operand_element(self.groups)):
            raise VerifyException(f"groups must be an integer tensor, got {self.groups.type}")
        element = expect_same_element("lhs and rhs", self.lhs.type, self.rhs.type)
        if is_bool(element):
            raise VerifyException("operands must be numeric, got i1")
        return tensor_type((*a[:-1], b[2]), element)

    def reference(self, a: np.ndarray, b: np.ndarray, groups: np.ndarray) -> np.ndarray:
        valid = (groups >= 0) & (groups < b.shape[0])
        blocks = a.reshape(a.shape[0], -1, a.shape[-1])
        rows = np.einsum("smk,skn->smn", blocks, b[np.where(valid, groups, 0)])
        return np.where(valid[:, None, None], rows, 0).reshape(*a.shape[:-1], b.shape[2]).astype(a.dtype)
