"""Reinterpreting the bits of elements as another type of the same width (ONNX's ``BitCast``,
torch's ``Tensor.view(dtype)``).

``graph.bitcast`` takes 32- and 64-bit floats and integers: float32 <-> int32, float64 <->
int64 (and float <-> float, int <-> int of one width, where it is the identity on bits).

Example::

    %bits = graph.bitcast %x : tensor<4xf32> -> tensor<4xi32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, operand_element, operand_shape
from .types import numpy_dtype, tensor_type

#: the element widths graph.bitcast takes (16-bit floats are stored widened or as bits by
#: the lowering's own conventions, so their bits are not read here)
BITCAST_WIDTHS = (4, 8)


def bitcastable(dtype: np.dtype) -> bool:
    """Whether ``graph.bitcast`` takes elements of ``dtype`` (a 32/64-bit float or integer)."""
    return dtype.itemsize in BITCAST_WIDTHS and dtype.kind in "fiu"


@irdl_op_definition
class BitcastOp(GraphOp):
    """Reinterpret each element's bits as another type of the same width.

    Example: ``%y = graph.bitcast %x : tensor<4xf32> -> tensor<4xi32>``
    """

    name = "graph.bitcast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.ELEMWISE

    def __init__(self, input: SSAValue | Operation, to: Attribute):
        self._to = to
        self._build([input])

    def infer_result_type(self) -> TensorType:
        # When built, the target comes from the constructor; when parsed, from the result.
        to = getattr(self, "_to", None) or self.result.type.element_type
        source, target = numpy_dtype(operand_element(self.input)), numpy_dtype(to)
        if not (bitcastable(source) and bitcastable(target)) or source.itemsize != target.itemsize:
            raise VerifyException(f"graph.bitcast: {source} -> {target}: both must be 32- or 64-bit floats or integers of one width")
        return tensor_type(operand_shape(self.input), to)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x).view(numpy_dtype(self.result.type.element_type))
