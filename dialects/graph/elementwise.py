"""Elementwise graph ops: unary math, binary arithmetic with numpy broadcasting,
comparisons, select (``where``) and casts.

Examples::

    %y = graph.exp %x : tensor<4x8xf32>
    %s = graph.sin %x : tensor<4x8xf32>
    %e = graph.erfc %x : tensor<4x8xf32>
    %z = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %m = graph.compare %x, %b {predicate = "lt"} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
    %c = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xi32>
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute, Operation, SSAValue
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

from .base import GraphOp, OpPatternKind, expect_same_element, operand_element, operand_shape
from .types import broadcast_shapes, is_bool, is_float, is_float_dtype, numpy_dtype, tensor_type

# ---------------------------------------------------------------------------
# unary


class UnaryOp(GraphOp):
    """``result = f(input)`` elementwise; same type in and out."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.ELEMWISE

    #: numpy implementation of the scalar function
    NUMPY_FN: ClassVar[Callable[[np.ndarray], np.ndarray]]
    #: the op is defined on floating point tensors only
    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation):
        self._build([input])

    def infer_result_type(self) -> TensorType:
        element = operand_element(self.input)
        if self.FLOAT_ONLY and not is_float(element):
            raise VerifyException(f"operand must be a float tensor, got {self.input.type}")
        if is_bool(element):
            raise VerifyException(f"operand must be numeric, got {self.input.type}")
        return self.input.type

    def reference(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(type(self).NUMPY_FN(x)).astype(x.dtype, copy=False)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x.astype(np.float64))


@irdl_op_definition
class NegOp(UnaryOp):
    """``-x`` Example: ``%y = graph.neg %x : tensor<4xf32>``"""

    name = "graph.neg"
    NUMPY_FN = staticmethod(np.negative)
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(UnaryOp):
    """``|x|`` Example: ``%y = graph.abs %x : tensor<4xf32>``"""

    name = "graph.abs"
    NUMPY_FN = staticmethod(np.abs)
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ReluOp(UnaryOp):
    """``max(x, 0)`` Example: ``%y = graph.relu %x : tensor<4xf32>``"""

    name = "graph.relu"
    NUMPY_FN = staticmethod(_relu)
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(UnaryOp):
    """``e**x`` Example: ``%y = graph.exp %x : tensor<4xf32>``"""

    name = "graph.exp"
    NUMPY_FN = staticmethod(np.exp)


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm. Example: ``%y = graph.log %x : tensor<4xf32>``"""

    name = "graph.log"
    NUMPY_FN = staticmethod(np.log)


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root. Example: ``%y = graph.sqrt %x : tensor<4xf32>``"""

    name = "graph.sqrt"
    NUMPY_FN = staticmethod(np.sqrt)


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """``1/sqrt(x)`` Example: ``%y = graph.rsqrt %x : tensor<4xf32>``"""

    name = "graph.rsqrt"
    NUMPY_FN = staticmethod(_rsqrt)


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent. Example: ``%y = graph.tanh %x : tensor<4xf32>``"""

    name = "graph.tanh"
    NUMPY_FN = staticmethod(np.tanh)


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """``1/(1+exp(-x))`` Example: ``%y = graph.sigmoid %x : tensor<4xf32>``"""

    name = "graph.sigmoid"
    NUMPY_FN = staticmethod(_sigmoid)


@irdl_op_definition
class ErfOp(UnaryOp):
    """The error function. Example: ``%y = graph.erf %x : tensor<4xf32>``"""

    name = "graph.erf"
    NUMPY_FN = staticmethod(_erf)


@irdl_op_definition
class FloorOp(UnaryOp):
    """Round toward -inf. Example: ``%y = graph.floor %x : tensor<4xf32>``"""

    name = "graph.floor"
    NUMPY_FN = staticmethod(np.floor)


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round to the nearest integer, ties to even (like torch.round and numpy.rint).
    Example: ``%y = graph.round %x : tensor<4xf32>``"""

    name = "graph.round"
    NUMPY_FN = staticmethod(np.rint)


def _in_f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` evaluated in float64 (numpy's float32 routines are a few ulp off; the
    reference rounds once, to the operand's type)."""
    return lambda x: fn(x.astype(np.float64))


@irdl_op_definition
class CeilOp(UnaryOp):
    """Round toward +inf. Example: ``%y = graph.ceil %x : tensor<4xf32>``"""

    name = "graph.ceil"
    NUMPY_FN = staticmethod(np.ceil)


@irdl_op_definition
class TruncOp(UnaryOp):
    """Round toward zero. Example: ``%y = graph.trunc %x : tensor<4xf32>``"""

    name = "graph.trunc"
    NUMPY_FN = staticmethod(np.trunc)


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine (radians). Example: ``%y = graph.sin %x : tensor<4xf32>``"""

    name = "graph.sin"
    NUMPY_FN = staticmethod(_in_f64(np.sin))


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine (radians). Example: ``%y = graph.cos %x : tensor<4xf32>``"""

    name = "graph.cos"
    NUMPY_FN = staticmethod(_in_f64(np.cos))


@irdl_op_definition
class TanOp(UnaryOp):
    """Tangent (radians). Example: ``%y = graph.tan %x : tensor<4xf32>``"""

    name = "graph.tan"
    NUMPY_FN = staticmethod(_in_f64(np.tan))


@irdl_op_definition
class AtanOp(UnaryOp):
    """Arc tangent, in (-pi/2, pi/2). Example: ``%y = graph.atan %x : tensor<4xf32>``"""

    name = "graph.atan"
    NUMPY_FN = staticmethod(_in_f64(np.arctan))


@irdl_op_definition
class Log1pOp(UnaryOp):
    """``log(1 + x)``, accurate for tiny ``x``. Example: ``%y = graph.log1p %x : tensor<4xf32>``"""

    name = "graph.log1p"
    NUMPY_FN = staticmethod(_in_f64(np.log1p))


@irdl_op_definition
class Expm1Op(UnaryOp):
    """``exp(x) - 1``, accurate for tiny ``x``. Example: ``%y = graph.expm1 %x : tensor<4xf32>``"""

    name = "graph.expm1"
    NUMPY_FN = staticmethod(_in_f64(np.expm1))


@irdl_op_definition
class Exp2Op(UnaryOp):
    """``2**x`` Example: ``%y = graph.exp2 %x : tensor<4xf32>``"""

    name = "graph.exp2"
    NUMPY_FN = staticmethod(_in_f64(np.exp2))


@irdl_op_definition
class Log2Op(UnaryOp):
    """Base-2 logarithm. Example: ``%y = graph.log2 %x : tensor<4xf32>``"""

    name = "graph.log2"
    NUMPY_FN = staticmethod(_in_f64(np.log2))


@irdl_op_definition
class Log10Op(UnaryOp):
    """Base-10 logarithm. Example: ``%y = graph.log10 %x : tensor<4xf32>``"""

    name = "graph.log10"
    NUMPY_FN = staticmethod(_in_f64(np.log10))


@irdl_op_definition
class AsinOp(UnaryOp):
    """Arc sine, in [-pi/2, pi/2]; NaN outside [-1, 1]. Example: ``%y = graph.asin %x : tensor<4xf32>``"""

    name = "graph.asin"
    NUMPY_FN = staticmethod(_in_f64(np.arcsin))


@irdl_op_definition
class AcosOp(UnaryOp):
    """Arc cosine, in [0, pi]; NaN outside [-1, 1]. Example: ``%y = graph.acos %x : tensor<4xf32>``"""

    name = "graph.acos"
    NUMPY_FN = staticmethod(_in_f64(np.arccos))


@irdl_op_definition
class SinhOp(UnaryOp):
    """Hyperbolic sine, accurate near 0 (where ``(exp(x) - exp(-x)) / 2`` cancels).
    Example: ``%y = graph.sinh %x : tensor<4xf32>``"""

    name = "graph.sinh"
    NUMPY_FN = staticmethod(_in_f64(np.sinh))


@irdl_op_definition
class CoshOp(UnaryOp):
    """Hyperbolic cosine. Example: ``%y = graph.cosh %x : tensor<4xf32>``"""

    name = "graph.cosh"
    NUMPY_FN = staticmethod(_in_f64(np.cosh))


@irdl_op_definition
class AsinhOp(UnaryOp):
    """Inverse hyperbolic sine, accurate near 0 and for huge ``|x|`` (where
    ``log(x + sqrt(x*x + 1))`` cancels or overflows). Example: ``%y = graph.asinh %x : tensor<4xf32>``"""

    name = "graph.asinh"
    NUMPY_FN = staticmethod(_in_f64(np.arcsinh))


@irdl_op_definition
class AcoshOp(UnaryOp):
    """Inverse hyperbolic cosine; NaN below 1. Example: ``%y = graph.acosh %x : tensor<4xf32>``"""

    name = "graph.acosh"
    NUMPY_FN = staticmethod(_in_f64(np.arccosh))


@irdl_op_definition
class AtanhOp(UnaryOp):
    """Inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1], accurate near 0.
    Example: ``%y = graph.atanh %x : tensor<4xf32>``"""

    name = "graph.atanh"
    NUMPY_FN = staticmethod(_in_f64(np.arctanh))


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erfc, 1, 1)(x.astype(np.float64)).astype(np.float64)


@irdl_op_definition
class ErfcOp(UnaryOp):
    """``1 - erf(x)``, with full relative accuracy where it is tiny (large ``x``, where
    ``1 - erf(x)`` is 0). Example: ``%y = graph.erfc %x : tensor<4xf32>``"""

    name = "graph.erfc"
    NUMPY_FN = staticmethod(_erfc)


def _lgamma_scalar(v: float) -> float:
    """C's lgamma: +inf at the poles (0 and the negative integers) and for huge ``v``."""
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf


def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(_lgamma_scalar, 1, 1)(x.astype(np.float64)).astype(np.float64)


@irdl_op_definition
class LgammaOp(UnaryOp):
    """``log(|gamma(x)|)``; +inf at 0 and the negative integers.
    Example: ``%y = graph.lgamma %x : tensor<4xf32>``"""

    name = "graph.lgamma"
    NUMPY_FN = staticmethod(_lgamma)


UNARY_OPS: tuple[type[UnaryOp], ...] = (
    NegOp, AbsOp, ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ErfOp, FloorOp, RoundOp,
    CeilOp, TruncOp, SinOp, CosOp, TanOp, AtanOp, Log1pOp, Expm1Op, Exp2Op, Log2Op, Log10Op,
    AsinOp, AcosOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, ErfcOp, LgammaOp,
)  # fmt: skip


# ---------------------------------------------------------------------------
# binary


class BinaryOp(GraphOp):
    """``result = f(lhs, rhs)`` elementwise with numpy broadcasting; one element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST

    NUMPY_FN: ClassVar[Callable[[np.ndarray, np.ndarray], np.ndarray]]
    FLOAT_ONLY: ClassVar[bool] = False
    #: the op is undefined on booleans (numpy raises for bool - bool)
    NUMERIC_ONLY: ClassVar[bool] = False
    #: the op is defined on integers and booleans only (bitwise ops)
    INTEGRAL_ONLY: ClassVar[bool] = False

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        self._build([lhs, rhs])

    def result_element(self, operand_element: Attribute) -> Attribute:
        return operand_element

    def infer_result_type(self) -> TensorType:
        element = expect_same_element("operands", self.lhs.type, self.rhs.type)
        if self.FLOAT_ONLY and not is_float(element):
            raise VerifyException(f"operands must be float tensors, got {element}")
        if self.NUMERIC_ONLY and is_bool(element):
            raise VerifyException(f"operands must be numeric, got {element}")
        if self.INTEGRAL_ONLY and is_float(element):
            raise VerifyException(f"operands must be integer or boolean tensors, got {element}")
        shape = broadcast_shapes(operand_shape(self.lhs), operand_shape(self.rhs))
        return tensor_type(shape, self.result_element(element))

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(type(self).NUMPY_FN(a, b)).astype(a.dtype, copy=False)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True division for floats; for integers, rounds toward zero and x/0 = 0."""
    if is_float_dtype(a.dtype):
        return a / b
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    return np.where(b == 0, 0, np.where((a < 0) != (safe < 0), -q, q))


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.power(a.astype(np.float64), b.astype(np.float64))



@irdl_op_definition
class AddOp(BinaryOp):
    """``lhs + rhs``

    Example: ``%z = graph.add %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.add"
    NUMPY_FN = staticmethod(np.add)


@irdl_op_definition
class SubOp(BinaryOp):
    """``lhs - rhs``

    Example: ``%z = graph.sub %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.sub"
    NUMPY_FN = staticmethod(np.subtract)
    NUMERIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class MulOp(BinaryOp):
    """``lhs * rhs``

    Example: ``%z = graph.mul %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.mul"
    NUMPY_FN = staticmethod(np.multiply)


@irdl_op_definition
class DivOp(BinaryOp):
    """``lhs / rhs`` (integers round toward zero and x/0 = 0).

    Example: ``%z = graph.div %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.div"
    NUMPY_FN = staticmethod(_divide)
    NUMERIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class MaxOp(BinaryOp):
    """Elementwise maximum (NaN propagates).

    Example: ``%z = graph.max %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.max"
    NUMPY_FN = staticmethod(np.maximum)


@irdl_op_definition
class MinOp(BinaryOp):
    """Elementwise minimum (NaN propagates).

    Example: ``%z = graph.min %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.min"
    NUMPY_FN = staticmethod(np.minimum)


@irdl_op_definition
class PowOp(BinaryOp):
    """``lhs ** rhs``

    Example: ``%z = graph.pow %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.pow"
    NUMPY_FN = staticmethod(_power)
    FLOAT_ONLY: ClassVar[bool] = True


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's fmod; for integers the truncated remainder, and x fmod 0 = 0 (as numpy)."""
    if is_float_dtype(a.dtype):
        return np.fmod(a, b)
    unsafe = (b == 0) | (b == -1)  # x % -1 is 0, and MIN % -1 overflows the division
    return np.where(unsafe, 0, np.fmod(a, np.where(unsafe, 1, b)))


@irdl_op_definition
class FmodOp(BinaryOp):
    """The remainder of ``lhs / rhs`` rounded toward zero, with the sign of ``lhs`` (C's
    ``fmod``, exact; integers: the truncated remainder, and x fmod 0 = 0).

    Example: ``%z = graph.fmod %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.fmod"
    NUMPY_FN = staticmethod(_fmod)
    NUMERIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class Atan2Op(BinaryOp):
    """The angle of the point ``(rhs, lhs)``: ``atan2(y=lhs, x=rhs)``, in [-pi, pi].

    Example: ``%z = graph.atan2 %y, %x : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.atan2"
    NUMPY_FN = staticmethod(lambda a, b: np.arctan2(a.astype(np.float64), b.astype(np.float64)))
    FLOAT_ONLY: ClassVar[bool] = True


@irdl_op_definition
class CopysignOp(BinaryOp):
    """The magnitude of ``lhs`` with the sign bit of ``rhs`` (C's ``copysign``, exact; the
    sign of ``-0.0`` and of a NaN counts).

    Example: ``%z = graph.copysign %x, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>``
    """

    name = "graph.copysign"
    NUMPY_FN = staticmethod(np.copysign)
    FLOAT_ONLY: ClassVar[bool] = True


BINARY_OPS: tuple[type[BinaryOp], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, FmodOp, Atan2Op, CopysignOp,
)  # fmt: skip


# ---------------------------------------------------------------------------
# compare, where, cast

COMPARE_PREDICATES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    """Bitwise and of integers (two's complement), logical and of booleans.

    Example: ``%z = graph.bitwise_and %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>``
    """

    name = "graph.bitwise_and"
    NUMPY_FN = staticmethod(np.bitwise_and)
    INTEGRAL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    """Bitwise or of integers, logical or of booleans.

    Example: ``%z = graph.bitwise_or %x, %y : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>``
    """

    name = "graph.bitwise_or"
    NUMPY_FN = staticmethod(np.bitwise_or)
    INTEGRAL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    """Bitwise exclusive or of integers, logical xor of booleans.

    Example: ``%z = graph.bitwise_xor %x, %y : tensor<4xi8>, tensor<4xi8> -> tensor<4xi8>``
    """

    name = "graph.bitwise_xor"
    NUMPY_FN = staticmethod(np.bitwise_xor)
    INTEGRAL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class CompareOp(BinaryOp):
    """Elementwise comparison giving a boolean (``i1``) tensor.

    ``predicate`` is one of eq, ne, lt, le, gt, ge (ordered for floats: NaN compares
    false except for ne).
    """

    name = "graph.compare"
    predicate = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, predicate: str):
        self._build([lhs, rhs], {"predicate": StringAttr(predicate)})

    def result_element(self, operand_element: Attribute) -> Attribute:
        return i1

    def infer_result_type(self) -> TensorType:
        if self.predicate.data not in COMPARE_PREDICATES:
            raise VerifyException(
                f"unknown predicate '{self.predicate.data}' (expected one of "
                + ", ".join(COMPARE_PREDICATES)
                + ")"
            )
        return super().infer_result_type()

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return COMPARE_PREDICATES[self.predicate.data](a, b)


@irdl_op_definition
class WhereOp(GraphOp):
    """``cond ? on_true : on_false`` elementwise, all three broadcast together.

    Example: ``%r = graph.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>``
    """

    name = "graph.where"
    condition = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,` "
        "type($on_true) `,` type($on_false) `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, condition: SSAValue | Operation, on_true: SSAValue | Operation, on_false: SSAValue | Operation):
        self._build([condition, on_true, on_false])

    def infer_result_type(self) -> TensorType:
        if not is_bool(operand_element(self.condition)):
            raise VerifyException(f"condition must be an i1 tensor, got {self.condition.type}")
        element = expect_same_element("on_true and on_false", self.on_true.type, self.on_false.type)
        shape = broadcast_shapes(
            operand_shape(self.condition), operand_shape(self.on_true), operand_shape(self.on_false)
        )
        return tensor_type(shape, element)

    def reference(self, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(c, a, b)


class RetypeOp(GraphOp):
    """An elementwise op giving each element as another element type, built with that type
    (``graph.cast``, ``graph.bitcast``); ``check_types`` says which pairs it takes."""

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
        self.check_types(numpy_dtype(operand_element(self.input)), numpy_dtype(to))
        return tensor_type(operand_shape(self.input), to)

    def check_types(self, source: np.dtype, target: np.dtype) -> None:
        """Raise a VerifyException when the op does not take ``source`` -> ``target``."""


@irdl_op_definition
class CastOp(RetypeOp):
    """Convert elements to another type (float to int rounds toward zero, saturating).

    Example: ``%y = graph.cast %x : tensor<4xf32> -> tensor<4xi32>``
    """

    name = "graph.cast"

    def reference(self, x: np.ndarray) -> np.ndarray:
        to = numpy_dtype(self.result.type.element_type)
        if np.issubdtype(to, np.integer) and is_float_dtype(x.dtype):
            return _saturating_float_to_int(x, to)
        return x.astype(to)


def _saturating_float_to_int(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """Round toward zero; NaN -> 0, out of range (and +-inf) -> the type's min/max.

    Compares against the bounds as powers of two, which every float type holds exactly
    (clipping to ``iinfo.max`` would round it up to 2**(bits-1) in the float type, and
    converting that overflows).
    """
    info = np.iinfo(to)
    bound = float(2 ** (info.bits - 1))
    t = np.trunc(x)
    high, low = t >= bound, t < -bound
    inside = np.where(np.isnan(t) | high | low, 0, t).astype(to)
    return np.where(high, info.max, np.where(low, info.min, inside)).astype(to)
