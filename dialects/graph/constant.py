"""Constant tensors: weights by reference to numpy data, or small literal ``dense<...>`` values.

Examples::

    %w = graph.constant #graph.weight<"fc1.weight"> : tensor<512x784xf32>
    %s = graph.constant dense<2.0> : tensor<f32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import ConstantLike, Pure
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind
from .types import WeightAttr, element_type_of, numpy_dtype, shape_of, tensor_type


@irdl_op_definition
class ConstantOp(GraphOp):
    """A constant tensor. Large data stays in numpy, referenced by ``#graph.weight``."""

    name = "graph.constant"
    value = prop_def(WeightAttr | DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, value: WeightAttr | DenseIntOrFPElementsAttr):
        self._build([], {"value": value})

    @staticmethod
    def from_array(array: np.ndarray, name: str = "const") -> ConstantOp:
        """A constant holding ``array`` by reference (no copy into the IR)."""
        return ConstantOp(WeightAttr.from_array(name, np.asarray(array)))

    def infer_result_type(self) -> TensorType:
        if isinstance(self.value, WeightAttr):
            array = self.value.array
            return tensor_type(array.shape, element_type_of(array.dtype))
        t = self.value.type
        if not isinstance(t, TensorType):
            raise VerifyException(f"dense value must have a tensor type, got {t}")
        shape_of(t)
        return t

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)  # a dense<...> value prints its own type
        if isinstance(self.value, WeightAttr):
            printer.print_string(" : ")
            printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parser.parse_optional_attr_dict()
        value = parser.parse_attribute()
        if not isinstance(value, WeightAttr | DenseIntOrFPElementsAttr):
            parser.raise_error(f"graph.constant: expected #graph.weight<...> or dense<...>, got {value}")
        op = cls(value)
        if isinstance(value, WeightAttr):
            parser.parse_punctuation(":")
            declared = parser.parse_type()
            if declared != op.result.type:
                parser.raise_error(
                    f"graph.constant: weight '{value.data.name}' is {op.result.type}, declared {declared}"
                )
        op.attributes |= attributes
        return op

    def array(self) -> np.ndarray:
        """The constant's value as a numpy array (a view for weights, no copy)."""
        if isinstance(self.value, WeightAttr):
            return self.value.array
        t = self.value.type
        dtype = numpy_dtype(t.element_type)
        if dtype == np.bool_:
            values = np.array(self.value.get_values(), dtype=np.bool_)
        else:
            values = np.frombuffer(self.value.data.data, dtype=dtype)
        shape = t.get_shape()
        if values.size == 1 and int(np.prod(shape)) != 1:  # a splat
            return np.full(shape, values.reshape(())[()], dtype=dtype)
        return values.reshape(shape)

    def reference(self) -> np.ndarray:
        return self.array()
