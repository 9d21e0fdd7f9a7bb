"""Quantized tensors: quantize / dequantize and quantized products (int8 with int32
accumulation and a fused requantize epilogue), the QNN level of TVM or ONNX's QLinear ops.

A quantized tensor holds integers ``q`` standing for reals ``(q - zero_point) * scale``.
``scale`` (float32) and ``zero_point`` are operands: a scalar (per-tensor) or a 1-d tensor
of one value per slice along ``axis`` (per-channel). Semantics are ONNX's:

* ``quantize``: ``q = saturate(round_half_even(x / scale) + zero_point)`` (NaN -> ``zero_point``);
* ``dequantize``: ``x = float(q - zero_point) * scale``;
* ``qdense`` / ``qmatmul`` / ``qconv2d``: the integer product accumulated exactly
  (``acc = sum (x - x_zp) * (w - w_zp[o]) + bias[o]``, int32), then requantized:
  ``y = saturate(round_half_even(float32(acc) * m[o]) + y_zp)`` with the float32 multiplier
  ``m[o] = (x_scale * w_scale[o]) / y_scale`` (ONNX Runtime's QLinearConv computes the same);
  ``relu`` clamps below at ``y_zp`` (the real 0). ``bias`` is int32 at scale ``x_scale * w_scale``.

Quantized tensors are int8 or uint8 (``dequantize`` also reads int32, a bias). Which one
an operand is, is stated by the op's ``*dtype`` properties, because ``legalize-unsigned``
stores uint8 as int8 bytes before lowering (the types then say i8). The constructors set
them from the types.

Examples::

    %q = graph.quantize %x, %s, %z {dtype = "ui8"} : tensor<1x64xf32>, tensor<f32>, tensor<ui8> -> tensor<1x64xui8>
    %x = graph.dequantize %w, %ws, %wz {axis = 0 : i64} : tensor<32x64xi8>, tensor<32xf32>, tensor<32xi8> -> tensor<32x64xf32>
    %y = graph.qdense %q, %w, %b quant(%s, %z, %ws, %wz, %ys, %yz) {x_dtype = "ui8", y_dtype = "ui8"} : tensor<1x64xui8>, tensor<32x64xi8>, tensor<32xi32> quant(tensor<f32>, tensor<ui8>, tensor<32xf32>, tensor<32xi8>, tensor<f32>, tensor<ui8>) -> tensor<1x32xui8>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, StringAttr, TensorType, f32, i8, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, expect_rank, int_attr, ints, ints_attr, operand_element, operand_shape
from .layout import check_layout, to_layout, to_nchw, weight_to_oihw
from .nn import window_output_size
from .types import UI8, Shape, format_shape, normalize_axis, numpy_dtype, tensor_type

# ---------------------------------------------------------------------------
# quantized element types

#: dtype property value -> (numpy dtype of the values, lowest, highest)
QTYPES: dict[str, tuple[type, int, int]] = {
    "i8": (np.int8, -128, 127),
    "ui8": (np.uint8, 0, 255),
    "i32": (np.int32, -(2**31), 2**31 - 1),
}
#: what each dtype's values may be stored as (uint8 also as the int8 bytes legalize-unsigned makes)
_STORAGE: dict[str, tuple[Attribute, ...]] = {"i8": (i8,), "ui8": (UI8, i8), "i32": (i32,)}

#: the longest contraction whose int32 sum of uint8 x int8 products cannot overflow
MAX_CONTRACTION = (2**31 - 1) // (255 * 128)


def dtype_of(element: Attribute) -> str:
    """The dtype property value of a quantized element type (``ui8`` -> "ui8")."""
    names = {i8: "i8", UI8: "ui8", i32: "i32"}
    if element not in names:
        raise VerifyException(f"quantized tensors are int8 or uint8 (int32 for a bias), got {element}")
    return names[element]


def qrange(dtype: str) -> tuple[int, int]:
    """(lowest, highest) value of a quantized dtype."""
    return QTYPES[dtype][1], QTYPES[dtype][2]


def _check_dtype(what: str, dtype: str, element: Attribute, allowed: Sequence[str] = ("i8", "ui8")) -> None:
    if dtype not in allowed:
        raise VerifyException(f"{what}: dtype must be one of {', '.join(allowed)}, got {dtype!r}")
    if element not in _STORAGE[dtype]:
        raise VerifyException(
            f"{what} has element type {element} but dtype {dtype!r} (stored as "
            + " or ".join(str(t) for t in _STORAGE[dtype])
            + "); write the matching dtype property"
        )


def as_values(array: np.ndarray, dtype: str) -> np.ndarray:
    """A quantized array's values as int64 (uint8 bytes read unsigned, even if stored as int8)."""
    array = np.asarray(array)
    values = QTYPES[dtype][0]
    if array.dtype.kind in "iu" and array.dtype.itemsize == np.dtype(values).itemsize:
        array = array.view(values)
    return array.astype(np.int64)


def to_storage(values: np.ndarray, dtype: str, element: Attribute) -> np.ndarray:
    """Saturated int values as an array of ``element``'s numpy dtype (uint8 bits as int8 when erased)."""
    low, high = qrange(dtype)
    stored = np.clip(values, low, high).astype(QTYPES[dtype][0])
    return stored.view(numpy_dtype(element))


def check_quant_params(what: str, scale: SSAValue, zero_point: SSAValue, shape: Shape, axis: int | None) -> int | None:
    """Check a (scale, zero_point) pair for a tensor of ``shape``: float32 scale, a scalar
    (or one value) per tensor, or a 1-d tensor of one value per index of ``axis``.
    Returns the normalized axis when per-channel, else None."""
    s, z = operand_shape(scale), operand_shape(zero_point)
    if operand_element(scale) != f32:
        raise VerifyException(f"{what} scale must be float32, got {scale.type}")
    if s != z:
        raise VerifyException(f"{what} scale {format_shape(s)} and zero point {format_shape(z)} must have one shape")
    if len(s) > 1:
        raise VerifyException(f"{what} scale must be a scalar or 1-d (per channel), got shape {format_shape(s)}")
    if len(s) == 0 or s[0] == 1:
        return None
    if axis is None:
        raise VerifyException(f"{what} is quantized per tensor only, but its scale has shape {format_shape(s)}")
    axis = normalize_axis(axis, len(shape), f"{what} axis")
    if s[0] != shape[axis]:
        raise VerifyException(
            f"{what} has {s[0]} scales, but its axis {axis} has size {shape[axis]} (shape {format_shape(shape)})"
        )
    return axis


def along(values: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
    """Per-tensor or per-channel values shaped to broadcast against a rank-``rank`` tensor."""
    values = np.asarray(values)
    if axis is None or values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[axis] = values.size
    return values.reshape(shape)


def round_half_even_f32(x: np.ndarray) -> np.ndarray:
    """float32 round half to even (what vrndscaleps / cvtps2dq do under the default MXCSR)."""
    return np.rint(np.asarray(x, np.float32))


def requantize(acc: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray, dtype: str, relu: bool) -> np.ndarray:
    """int32 accumulators to quantized values: ``saturate(rint(float32(acc) * m) + zp)``,
    clamped below at ``zp`` with relu. int64 values (not yet stored)."""
    scaled = acc.astype(np.float32) * np.asarray(multiplier, np.float32)
    low, high = qrange(dtype)
    if relu:
        low = np.maximum(low, zero_point)
    return np.clip(round_half_even_f32(scaled).astype(np.float64) + zero_point, low, high).astype(np.int64)


def requant_multiplier(x_scale: np.ndarray, w_scale: np.ndarray, y_scale: np.ndarray) -> np.ndarray:
    """``(x_scale * w_scale) / y_scale`` in float32 arithmetic (one value per output channel or one)."""
    x_scale, w_scale, y_scale = (np.asarray(v, np.float32).reshape(-1) for v in (x_scale, w_scale, y_scale))
    return ((x_scale * w_scale) / y_scale).astype(np.float32)


# ---------------------------------------------------------------------------
# quantize / dequantize


def _dtype_prop(value: str) -> StringAttr:
    return StringAttr(value)


class _QuantizeBase(GraphOp):
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=int_attr(1))
    dtype = prop_def(StringAttr, default_value=_dtype_prop("i8"))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $scale `,` $zero_point attr-dict `:` type($input) `,` type($scale) `,` type($zero_point) "
        "`->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.BROADCAST
    #: computes its own integer types (legalize-unsigned would widen uint8 operands to i32)
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, scale: SSAValue | Operation, zero_point: SSAValue | Operation, axis: int = 1):
        zp = zero_point.results[0] if isinstance(zero_point, Operation) else zero_point
        self._build(
            [input, scale, zero_point], {"axis": int_attr(axis), "dtype": _dtype_prop(dtype_of(operand_element(zp)))}
        )

    def channel_axis(self, shape: Shape) -> int | None:
        """The per-channel axis (normalized), or None per tensor."""
        return check_quant_params(self.name, self.scale, self.zero_point, shape, self.axis.value.data)


@irdl_op_definition
class QuantizeOp(_QuantizeBase):
    """float32 -> int8/uint8: ``saturate(round_half_even(x / scale) + zero_point)``;
    NaN gives ``zero_point``. The result's element type is the zero point's.

    Example::

        %q = graph.quantize %x, %s, %z {axis = 1 : i64} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xi8>
    """

    name = "graph.quantize"

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        if operand_element(self.input) != f32:
            raise VerifyException(f"input must be float32, got {self.input.type}")
        self.channel_axis(shape)
        element = operand_element(self.zero_point)
        _check_dtype("zero point", self.dtype.data, element)
        return tensor_type(shape, element)

    def reference(self, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
        axis = self.channel_axis(x.shape)
        dtype = self.dtype.data
        s = along(scale, axis, x.ndim).astype(np.float32)
        zp = along(as_values(zero_point, dtype), axis, x.ndim)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = round_half_even_f32(x.astype(np.float32) / s).astype(np.float64)
        low, high = qrange(dtype)
        values = np.where(np.isnan(r), np.broadcast_to(zp, r.shape), np.clip(r + zp, low, high))
        return to_storage(values.astype(np.int64), dtype, self.result.type.element_type)


@irdl_op_definition
class DequantizeOp(_QuantizeBase):
    """int8/uint8/int32 -> float32: ``float(q - zero_point) * scale``.

    Example::

        %x = graph.dequantize %q, %s, %z {dtype = "ui8"} : tensor<2x3xui8>, tensor<f32>, tensor<ui8> -> tensor<2x3xf32>
    """

    name = "graph.dequantize"

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.input)
        _check_dtype("input", self.dtype.data, operand_element(self.input), ("i8", "ui8", "i32"))
        _check_dtype("zero point", self.dtype.data, operand_element(self.zero_point), ("i8", "ui8", "i32"))
        self.channel_axis(shape)
        return tensor_type(shape, f32)

    def reference(self, q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
        axis = self.channel_axis(q.shape)
        dtype = self.dtype.data
        zp = along(as_values(zero_point, dtype), axis, q.ndim)
        centered = (as_values(q, dtype) - zp).astype(np.int32)
        return (centered.astype(np.float32) * along(scale, axis, q.ndim).astype(np.float32)).astype(np.float32)


# ---------------------------------------------------------------------------
# quantized products


class QuantizedProductOp(GraphOp):
    """Operands and properties shared by qdense, qmatmul and qconv2d: the data ``input``,
    the ``weight``, an optional int32 ``bias``, and the quantization parameters of input
    (per tensor), weight (per tensor or per output channel) and result (per tensor)."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    x_scale = operand_def(TensorType)
    x_zero_point = operand_def(TensorType)
    w_scale = operand_def(TensorType)
    w_zero_point = operand_def(TensorType)
    y_scale = operand_def(TensorType)
    y_zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    x_dtype = prop_def(StringAttr, default_value=_dtype_prop("i8"))
    w_dtype = prop_def(StringAttr, default_value=_dtype_prop("i8"))
    y_dtype = prop_def(StringAttr, default_value=_dtype_prop("i8"))
    relu = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `quant` `(` $x_scale `,` $x_zero_point `,` $w_scale `,` $w_zero_point `,` "
        "$y_scale `,` $y_zero_point `)` attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? "
        "`quant` `(` type($x_scale) `,` type($x_zero_point) `,` type($w_scale) `,` type($w_zero_point) `,` "
        "type($y_scale) `,` type($y_zero_point) `)` `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE
    MOVES_DATA: ClassVar[bool] = True  # (see _QuantizeBase)

    #: the weight axis of the output channels (per-channel weight scales run along it)
    WEIGHT_CHANNEL_AXIS: ClassVar[int] = 0

    def _build_product(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None,
        params: Sequence[SSAValue | Operation],
        relu: bool,
        properties: dict[str, Attribute] | None = None,
    ) -> None:
        if len(params) != 6:
            raise ValueError(
                f"{self.name}: params are (x_scale, x_zero_point, w_scale, w_zero_point, y_scale, y_zero_point), got {len(params)}"
            )
        values = [p.results[0] if isinstance(p, Operation) else p for p in params]
        props: dict[str, Attribute] = {
            "x_dtype": _dtype_prop(dtype_of(operand_element(values[1]))),
            "w_dtype": _dtype_prop(dtype_of(operand_element(values[3]))),
            "y_dtype": _dtype_prop(dtype_of(operand_element(values[5]))),
            "relu": BoolAttr.from_bool(relu),
            **(properties or {}),
        }
        self._build([input, weight, [bias] if bias is not None else [], *values], props)

    def params(self) -> tuple[SSAValue, ...]:
        """(x_scale, x_zero_point, w_scale, w_zero_point, y_scale, y_zero_point)."""
        return (self.x_scale, self.x_zero_point, self.w_scale, self.w_zero_point, self.y_scale, self.y_zero_point)

    def out_channels(self) -> int:
        return int(operand_shape(self.weight)[self.WEIGHT_CHANNEL_AXIS])

    def check_quantization(self, contraction: int | str) -> None:
        """dtypes match the types, scales per tensor except the weight's, bias int32 (O,)."""
        _check_dtype("input", self.x_dtype.data, operand_element(self.input))
        _check_dtype("input zero point", self.x_dtype.data, operand_element(self.x_zero_point))
        _check_dtype("weight", self.w_dtype.data, operand_element(self.weight))
        _check_dtype("weight zero point", self.w_dtype.data, operand_element(self.w_zero_point))
        _check_dtype("result zero point", self.y_dtype.data, operand_element(self.y_zero_point))
        check_quant_params("input", self.x_scale, self.x_zero_point, operand_shape(self.input), None)
        check_quant_params("result", self.y_scale, self.y_zero_point, (), None)
        check_quant_params("weight", self.w_scale, self.w_zero_point, operand_shape(self.weight), self.WEIGHT_CHANNEL_AXIS)
        channels = self.out_channels()
        if self.bias is not None:
            if operand_element(self.bias) != i32:
                raise VerifyException(f"bias must be int32 (at scale x_scale * w_scale), got {self.bias.type}")
            if operand_shape(self.bias) != (channels,):
                raise VerifyException(f"bias must have shape ({channels},), got {format_shape(operand_shape(self.bias))}")
        if isinstance(contraction, int) and contraction > MAX_CONTRACTION:
            raise VerifyException(
                f"the contraction has {contraction} terms; at most {MAX_CONTRACTION} fit an int32 accumulator"
            )

    def weight_values(self, w: np.ndarray, w_zero_point: np.ndarray) -> np.ndarray:
        """The weight minus its zero point, int64 (per-channel zero points along the channel axis)."""
        axis = None if np.asarray(w_zero_point).size == 1 else self.WEIGHT_CHANNEL_AXIS
        return as_values(w, self.w_dtype.data) - along(as_values(w_zero_point, self.w_dtype.data), axis, w.ndim)

    def finish_reference(self, acc: np.ndarray, bias: np.ndarray | None, params: Sequence[np.ndarray], channel_axis: int) -> np.ndarray:
        """Add the bias and requantize int64 accumulators whose output channels run along ``channel_axis``."""
        x_scale, _, w_scale, _, y_scale, y_zero_point = params
        rank = acc.ndim
        if bias is not None:
            acc = acc + along(bias.astype(np.int64), channel_axis, rank)
        acc = acc.astype(np.int32).astype(np.int64)  # the int32 accumulator
        multiplier = requant_multiplier(x_scale, w_scale, y_scale)
        m = along(multiplier, channel_axis if multiplier.size > 1 else None, rank)
        zy = int(as_values(y_zero_point, self.y_dtype.data).reshape(-1)[0])
        values = requantize(acc, m, zy, self.y_dtype.data, bool(self.relu.value.data))
        return to_storage(values, self.y_dtype.data, self.result.type.element_type)

    def x_values(self, x: np.ndarray, x_zero_point: np.ndarray) -> np.ndarray:
        return as_values(x, self.x_dtype.data) - int(as_values(x_zero_point, self.x_dtype.data).reshape(-1)[0])


def _result_element(op: QuantizedProductOp) -> Attribute:
    return operand_element(op.y_zero_point)


class _QuantizedMatrixProduct(QuantizedProductOp):
    """qdense and qmatmul: a 2-d weight, contracted along ``CONTRACTION_AXIS``."""

    #: the weight's contraction axis (qdense's (N, K): 1; qmatmul's (K, N): 0)
    CONTRACTION_AXIS: ClassVar[int]
    MIN_INPUT_RANK: ClassVar[int]

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None,
        params: Sequence[SSAValue | Operation],
        relu: bool = False,
    ):
        """``params``: (x_scale, x_zero_point, w_scale, w_zero_point, y_scale, y_zero_point)."""
        self._build_product(input, weight, bias, params, relu)

    def infer_result_type(self) -> TensorType:
        x, w = operand_shape(self.input), operand_shape(self.weight)
        if len(x) < self.MIN_INPUT_RANK:
            raise VerifyException(f"input must have rank >= {self.MIN_INPUT_RANK}, got shape {format_shape(x)}")
        expect_rank("weight", w, 2)
        k, n = w[self.CONTRACTION_AXIS], w[1 - self.CONTRACTION_AXIS]
        if x[-1] != k:
            raise VerifyException(f"contraction dims differ (input {x[-1]} vs weight {k})")
        self.check_quantization(k)
        return tensor_type((*x[:-1], n), _result_element(self))

    def reference(self, x: np.ndarray, w: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        bias, params = (rest[0], rest[1:]) if self.bias is not None else (None, rest)
        weight = self.weight_values(w, params[3])
        acc = np.matmul(self.x_values(x, params[1]), weight.T if self.CONTRACTION_AXIS == 1 else weight)
        return self.finish_reference(acc, bias, params, acc.ndim - 1)


@irdl_op_definition
class QDenseOp(_QuantizedMatrixProduct):
    """A quantized linear layer: ``input (..., K) x weight (N, K)^T [+ bias (N,)] -> (..., N)``,
    per-channel weight scales along N (see the module docstring for the arithmetic).

    Example::

        %y = graph.qdense %x, %w quant(%xs, %xz, %ws, %wz, %ys, %yz) {relu = true} : tensor<3x5xi8>, tensor<4x5xi8> quant(tensor<f32>, tensor<i8>, tensor<4xf32>, tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<3x4xi8>
    """

    name = "graph.qdense"
    CONTRACTION_AXIS: ClassVar[int] = 1
    MIN_INPUT_RANK: ClassVar[int] = 1


@irdl_op_definition
class QMatMulOp(_QuantizedMatrixProduct):
    """A quantized matrix product ``input (..., M, K) x weight (K, N) -> (..., M, N)`` (ONNX's
    QLinearMatMul with a 2-d right operand, constant or not); per-channel weight scales along N.

    Example::

        %y = graph.qmatmul %a, %b quant(%as, %az, %bs, %bz, %ys, %yz) : tensor<3x5xi8>, tensor<5x4xi8> quant(tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<3x4xi8>
    """

    name = "graph.qmatmul"
    CONTRACTION_AXIS: ClassVar[int] = 0
    MIN_INPUT_RANK: ClassVar[int] = 2
    WEIGHT_CHANNEL_AXIS: ClassVar[int] = 1


def _pair(value: int | Sequence[int]) -> tuple[int, ...]:
    return (int(value),) * 2 if isinstance(value, int | np.integer) else tuple(int(v) for v in value)


def _padding4(value: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(value, int | np.integer):
        return (int(value),) * 4
    values = tuple(int(v) for v in value)
    return values * 2 if len(values) == 2 else values


@irdl_op_definition
class QConv2dOp(QuantizedProductOp):
    """A quantized 2-D convolution, ``graph.conv2d``'s shapes and properties (NCHW data with
    OIHW weight, or NHWC with HWIO), per-channel weight scales along the output channels.
    Padding reads the input zero point (the real 0).

    Example::

        %y = graph.qconv2d %x, %w quant(%xs, %xz, %ws, %wz, %ys, %yz) {padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x5x5xi8>, tensor<4x3x3x3xi8> quant(tensor<f32>, tensor<i8>, tensor<4xf32>, tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x4x5x5xi8>
    """

    name = "graph.qconv2d"
    strides = prop_def(DenseArrayBase, default_value=ints_attr((1, 1)))
    padding = prop_def(DenseArrayBase, default_value=ints_attr((0, 0, 0, 0)))
    dilation = prop_def(DenseArrayBase, default_value=ints_attr((1, 1)))
    groups = prop_def(IntegerAttr, default_value=int_attr(1))
    layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None,
        params: Sequence[SSAValue | Operation],
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0, 0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        layout: str = "NCHW",
        relu: bool = False,
    ):
        window = {
            "strides": ints_attr(_pair(strides)),
            "padding": ints_attr(_padding4(padding)),
            "dilation": ints_attr(_pair(dilation)),
            "groups": int_attr(groups),
            "layout": StringAttr(layout),
        }
        self._build_product(input, weight, bias, params, relu, window)

    @property
    def WEIGHT_CHANNEL_AXIS(self) -> int:  # type: ignore[override]  # O of OIHW, or of HWIO
        return 0 if self.layout.data == "NCHW" else 3

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
        """(strides, padding (top, left, bottom, right), dilation, groups)."""
        return ints(self.strides), ints(self.padding), ints(self.dilation), self.groups.value.data

    def infer_result_type(self) -> TensorType:
        layout = self.layout.data
        check_layout(layout)
        expect_rank("input", operand_shape(self.input), 4)
        expect_rank("weight", operand_shape(self.weight), 4)
        n, c, h, w = to_nchw(operand_shape(self.input), layout)
        o, cg, kh, kw = weight_to_oihw(operand_shape(self.weight), layout)
        strides, padding, dilation, groups = self.window()
        for what, values, count, low in (("strides", strides, 2, 1), ("padding", padding, 4, 0), ("dilation", dilation, 2, 1)):
            if len(values) != count or min(values) < low:
                raise VerifyException(f"{what} must be {count} values >= {low}, got {list(values)}")
        if not isinstance(c, int) or groups < 1 or c % groups or o % groups or cg != c // groups:
            raise VerifyException(
                f"input channels {c}, weight {format_shape((o, cg, kh, kw))} (OIHW) and groups {groups} do not match"
            )
        self.check_quantization(cg * kh * kw)
        top, left, bottom, right = padding
        oh = window_output_size(0, h, kh, strides[0], top, bottom, dilation[0])
        ow = window_output_size(1, w, kw, strides[1], left, right, dilation[1])
        return tensor_type(to_layout((n, o, oh, ow), layout), _result_element(self))

    def reference(self, x: np.ndarray, w: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        bias, params = (rest[0], rest[1:]) if self.bias is not None else (None, rest)
        layout = self.layout.data
        xv = self.x_values(x, params[1]).transpose(to_nchw(range(4), layout))  # centered: padding is 0
        wv = self.weight_values(w, params[3]).transpose(weight_to_oihw(range(4), layout))
        strides, (top, left, bottom, right), dilation, groups = self.window()
        out_h, out_w = to_nchw(self.result.type.get_shape(), layout)[2:]
        xp = np.pad(xv, ((0, 0), (0, 0), (top, bottom), (left, right)))
        eff = [d * (k - 1) + 1 for k, d in zip(wv.shape[2:], dilation)]
        win = sliding_window_view(xp, tuple(eff), axis=(2, 3))
        win = win[:, :, :: strides[0], :: strides[1], :: dilation[0], :: dilation[1]][:, :, :out_h, :out_w]
        cg, og = xv.shape[1] // groups, wv.shape[0] // groups
        parts = [
            np.tensordot(win[:, g * cg : (g + 1) * cg], wv[g * og : (g + 1) * og], axes=([1, 4, 5], [1, 2, 3]))
            for g in range(groups)
        ]
        acc = np.concatenate(parts, axis=3)  # (N, OH, OW, O)
        y = self.finish_reference(acc, bias, params, 3)
        return np.ascontiguousarray(y.transpose(to_layout((0, 3, 1, 2), layout)))


__all__ = [
    "MAX_CONTRACTION",
    "QTYPES",
    "DequantizeOp",
    "QConv2dOp",
    "QDenseOp",
    "QMatMulOp",
    "QuantizeOp",
    "QuantizedProductOp",
    "along",
    "as_values",
    "check_quant_params",
    "dtype_of",
    "qrange",
    "requant_multiplier",
    "requantize",
    "to_storage",
]
