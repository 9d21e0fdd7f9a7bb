"""Reductions (sum, mean, max, min, product over axes) and softmax / log_softmax.

The reductions are named ``reduce_*`` (``graph.max`` and ``graph.min`` are the
elementwise binary ops). ``axes`` is stored normalised: non-negative and strictly
increasing; the constructor takes negative axes, and no axes means all axes (stored
explicitly). Parsed IR may also give ``axes = array<i64>``, meaning all axes;
:meth:`ReduceOp.reduced_axes` gives the explicit list either way.

Examples::

    %s = graph.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    %m = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x64x7x7xf32> -> tensor<1x64x1x1xf32>
    %q = graph.reduce_prod %x {axes = array<i64: 0>} : tensor<5x3xi64> -> tensor<3xi64>
    %p = graph.softmax %x {axis = 1 : i64} : tensor<4x10xf32>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, int_attr, ints, ints_attr, operand_element, operand_shape
from .types import format_shape, is_bool, is_float, normalize_axis, tensor_type

# ---------------------------------------------------------------------------
# reductions


class ReduceOp(GraphOp):
    """Reduce over ``axes`` (all axes when empty); ``keepdims`` keeps them as size 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.COMM_REDUCE

    #: numpy implementation: ``fn(x, axis=tuple, keepdims=bool)``
    NUMPY_FN: ClassVar[Callable[..., np.ndarray]]
    FLOAT_ONLY: ClassVar[bool] = False
    #: no identity value: reducing a size-0 axis is an error
    NEEDS_ELEMENTS: ClassVar[bool] = False

    def __init__(
        self, input: SSAValue | Operation, axes: int | Sequence[int] = (), keepdims: bool = False
    ):
        rank = len(operand_shape(SSAValue.get(input)))
        axes = [axes] if isinstance(axes, int) else list(axes)
        normalised = [normalize_axis(a, rank, "reduction axis") for a in axes]
        if len(set(normalised)) != len(normalised):
            raise VerifyException(f"{self.name}: axes {axes} name an axis twice (rank {rank})")
        if not normalised:
            normalised = list(range(rank))
        self._build(
            [input], {"axes": ints_attr(sorted(normalised)), "keepdims": BoolAttr.from_bool(keepdims)}
        )

    def reduced_axes(self) -> tuple[int, ...]:
        """The reduced axes, explicit (an empty ``axes`` property means all)."""
        axes = ints(self.axes)
        return axes if axes else tuple(range(len(operand_shape(self.input))))

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        element = operand_element(self.input)
        if self.FLOAT_ONLY and not is_float(element):
            raise VerifyException(f"input must be a float tensor, got {self.input.type}")
        if is_bool(element):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        axes = ints(self.axes)
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(x) for a in axes):
            raise VerifyException(
                f"axes {list(axes)} must be strictly increasing and in [0, {len(x)}) for shape "
                f"{format_shape(x)} (normalised; empty means all axes)"
            )
        reduced = self.reduced_axes()
        if self.NEEDS_ELEMENTS:
            for a in reduced:
                if x[a] == 0:
                    raise VerifyException(f"cannot reduce over axis {a} of size 0 (shape {format_shape(x)})")
        if self.keepdims.value.data:
            shape = tuple(1 if i in reduced else d for i, d in enumerate(x))
        else:
            shape = tuple(d for i, d in enumerate(x) if i not in reduced)
        return tensor_type(shape, element)

    def reference(self, x: np.ndarray) -> np.ndarray:
        fn = type(self).NUMPY_FN
        y = fn(x, axis=self.reduced_axes(), keepdims=bool(self.keepdims.value.data))
        return np.asarray(y).astype(x.dtype, copy=False)


def _sum(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _prod(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _mean(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float64)


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over axes (integers wrap in their own type).

    Example: ``%s = graph.reduce_sum %x {axes = array<i64: 0, 2>} : tensor<3x4x5xi32> -> tensor<4xi32>``
    """

    name = "graph.reduce_sum"
    NUMPY_FN = staticmethod(_sum)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Arithmetic mean over axes, float only.

    Example: ``%m = graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x64x7x7xf32> -> tensor<1x64x1x1xf32>``
    """

    name = "graph.reduce_mean"
    NUMPY_FN = staticmethod(_mean)
    FLOAT_ONLY: ClassVar[bool] = True


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over axes (NaN propagates); reduced axes must not be empty.

    Example: ``%m = graph.reduce_max %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>``
    """

    name = "graph.reduce_max"
    NUMPY_FN = staticmethod(np.max)
    NEEDS_ELEMENTS: ClassVar[bool] = True


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over axes (NaN propagates); reduced axes must not be empty.

    Example: ``%m = graph.reduce_min %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>``
    """

    name = "graph.reduce_min"
    NUMPY_FN = staticmethod(np.min)
    NEEDS_ELEMENTS: ClassVar[bool] = True


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over axes (integers wrap in their own type, as torch's int64 ``prod``; the
    product over nothing is 1).

    Example: ``%p = graph.reduce_prod %x {axes = array<i64: 1>, keepdims = true} : tensor<3x4xi64> -> tensor<3x1xi64>``
    """

    name = "graph.reduce_prod"
    NUMPY_FN = staticmethod(_prod)


REDUCE_OPS: tuple[type[ReduceOp], ...] = (ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp)


# ---------------------------------------------------------------------------
# softmax


class _SoftmaxBase(GraphOp):
    """Normalise along ``axis`` (stored non-negative); float only; same type in and out."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, input: SSAValue | Operation, axis: int = -1):
        rank = len(operand_shape(SSAValue.get(input)))
        if -rank <= axis < 0:
            axis += rank
        self._build([input], {"axis": int_attr(axis)})

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        if not is_float(operand_element(self.input)):
            raise VerifyException(f"input must be a float tensor, got {self.input.type}")
        axis = self.axis.value.data
        if not 0 <= axis < len(x):
            raise VerifyException(
                f"axis {axis} is out of range [0, {len(x)}) for shape {format_shape(x)} "
                "(stored normalised, non-negative)"
            )
        return self.input.type

    def _shifted(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``x - max`` and ``log(sum(exp(x - max)))`` along the axis, in float64."""
        axis = self.axis.value.data
        x64 = x.astype(np.float64)
        shifted = x64 - np.max(x64, axis=axis, keepdims=True)
        return shifted, np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``axis`` (the constructor's default: the last axis).

    Example: ``%p = graph.softmax %x {axis = 1 : i64} : tensor<4x10xf32>``
    """

    name = "graph.softmax"

    def reference(self, x: np.ndarray) -> np.ndarray:
        shifted, log_total = self._shifted(x)
        return np.exp(shifted - log_total).astype(x.dtype)


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """``x - log(sum(exp(x)))`` along ``axis`` (the constructor's default: the last axis).

    Example: ``%p = graph.log_softmax %x {axis = 1 : i64} : tensor<4x10xf32>``
    """

    name = "graph.log_softmax"

    def reference(self, x: np.ndarray) -> np.ndarray:
        shifted, log_total = self._shifted(x)
        return (shifted - log_total).astype(x.dtype)
