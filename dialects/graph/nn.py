"""Neural-network window ops on NCHW tensors (conv2d and pooling also NHWC: ``layout.py``): conv2d,
max/avg pooling, adaptive average and max pooling,
conv2d_transpose, resize2d.

Window properties are ``array<i64: ...>`` lists: ``strides`` and ``dilation`` are
``(h, w)``, ``kernel`` is ``(kh, kw)``, and ``padding`` is four values
``(top, left, bottom, right)`` so that asymmetric padding from other frontends (ONNX,
TF "SAME") is expressible. Properties equal to their default are not printed.

Examples::

    %y = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32> -> tensor<1x64x112x112xf32>
    %p = graph.max_pool2d %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x64x112x112xf32> -> tensor<1x64x56x56xf32>
    %a = graph.avg_pool2d %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x64x56x56xf32> -> tensor<1x64x28x28xf32>
    %g = graph.adaptive_avg_pool2d %a {output_size = array<i64: 1, 1>} : tensor<1x64x28x28xf32> -> tensor<1x64x1x1xf32>
    %m = graph.adaptive_max_pool2d %a {output_size = array<i64: 3, 3>} : tensor<1x64x28x28xf32> -> tensor<1x64x3x3xf32>

The batch dim (and a channel dim the op does not mix) may be symbolic. A symbolic
spatial dim passes through only where the output size equals the input size for every
value of it: stride 1 and total padding = effective kernel - 1 ("same" padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, IntegerAttr, StringAttr, TensorType, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ...runtime import dim_arith
from .base import (
    GraphOp,
    OpPatternKind,
    expect_rank,
    expect_same_element,
    int_attr,
    ints,
    ints_attr,
    operand_element,
    operand_shape,
)
from .layout import check_layout, spatial_axes, to_layout, to_nchw, weight_to_oihw
from .types import Dim, Shape, format_shape, is_bool, is_float, is_float_dtype, tensor_type

# ---------------------------------------------------------------------------
# helpers

_AXIS_NAMES = ("height", "width")


def _pair(value: int | Sequence[int]) -> tuple[int, ...]:
    """``3`` -> ``(3, 3)``; a sequence is kept as given (its length is verified later)."""
    if isinstance(value, int | np.integer):
        return (value, value)
    return tuple(int(v) for v in value)


def _padding4(value: int | Sequence[int]) -> tuple[int, ...]:
    """Padding as (top, left, bottom, right) from an int, (pad_h, pad_w) or four values."""
    if isinstance(value, int | np.integer):
        return (value,) * 4
    values = tuple(int(v) for v in value)
    if len(values) == 2:
        return values * 2
    return values


def _expect_len(what: str, values: tuple[int, ...], n: int, meaning: str) -> None:
    if len(values) != n:
        raise VerifyException(f"{what} must have {n} values ({meaning}), got {list(values)}")


def _expect_at_least(what: str, values: tuple[int, ...], low: int) -> None:
    for v in values:
        if v < low:
            raise VerifyException(f"{what} must be >= {low}, got {list(values)}")


def _window_params(
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> None:
    """Check the lengths and ranges of 2-D window properties."""
    _expect_len("kernel", kernel, 2, "kh, kw")
    _expect_len("strides", strides, 2, "h, w")
    _expect_len("padding", padding, 4, "top, left, bottom, right")
    _expect_len("dilation", dilation, 2, "h, w")
    _expect_at_least("kernel", kernel, 1)
    _expect_at_least("strides", strides, 1)
    _expect_at_least("padding", padding, 0)
    _expect_at_least("dilation", dilation, 1)


def window_output_size(
    axis: int,
    size: Dim,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> Dim:
    """Output size of a sliding window along one spatial axis (torch's rule, incl. ceil_mode).

    ``floor_or_ceil((size + pads - dilation*(kernel-1) - 1) / stride) + 1``; with
    ``ceil_mode`` a last window that would start in the end padding is dropped.
    """
    what = _AXIS_NAMES[axis]
    effective = dilation * (kernel - 1) + 1
    if isinstance(size, str):
        span = dim_arith.add(size, pad_begin + pad_end - effective)
        if not ceil_mode:
            return dim_arith.add(dim_arith.floordiv(span, stride), 1)
        if stride == 1:
            return dim_arith.add(span, 1)
        raise VerifyException(
            f"input {what} is symbolic ({size}): with ceil_mode and stride {stride} whether the "
            f"last window is kept depends on its value; only floor mode or stride 1 are supported"
        )
    padded = size + pad_begin + pad_end
    if effective > padded:
        raise VerifyException(
            f"{what}: the kernel spans {effective} (kernel {kernel}, dilation {dilation}), more "
            f"than the padded input {padded} = {size} + {pad_begin} + {pad_end}"
        )
    span = padded - effective
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad_begin:
            out -= 1
    else:
        out = span // stride + 1
    return out


def _windows(
    x: np.ndarray,
    out_hw: tuple[int, int],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    fill: float | int,
) -> np.ndarray:
    """A (N, C, OH, OW, KH, KW) view of the padded input's windows."""
    top, left, bottom, right = padding
    h, w = x.shape[2:]
    eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    need = [(o - 1) * s + e for o, s, e in zip(out_hw, strides, eff)]
    # the end padding may be larger than asked for (ceil_mode) or partly unused
    extra_h = max(need[0] - h - top, 0)
    extra_w = max(need[1] - w - left, 0)
    xp = np.pad(
        x,
        ((0, 0), (0, 0), (top, max(bottom, extra_h)), (left, max(right, extra_w))),
        constant_values=fill,
    )
    win = sliding_window_view(xp, tuple(eff), axis=(2, 3))
    win = win[:, :, :: strides[0], :: strides[1], :: dilation[0], :: dilation[1]]
    return win[:, :, : out_hw[0], : out_hw[1]]


def _layout_prop() -> StringAttr:
    return StringAttr("NCHW")


class _LayoutMixin:
    """Window ops whose data is NCHW or NHWC (``layout`` property, see ``layout.py``). Shape
    rules and numpy references are written once, for NCHW: these convert around them."""

    def data_layout(self) -> str:
        layout = self.layout.data
        check_layout(layout)
        return layout

    def input_nchw(self) -> Shape:
        return to_nchw(operand_shape(self.input), self.data_layout())

    def result_type_from_nchw(self, nchw: Sequence[Dim], element: Attribute) -> TensorType:
        return tensor_type(to_layout(nchw, self.data_layout()), element)

    def result_hw(self) -> tuple[int, int]:
        """The result's static (OH, OW); negative where symbolic."""
        shape = self.result.type.get_shape()
        h, w = spatial_axes(self.data_layout())
        return shape[h], shape[w]

    def nchw_reference(self, x: np.ndarray, compute) -> np.ndarray:
        """``compute(x in NCHW)`` -> NCHW result, in this op's layout."""
        layout = self.data_layout()
        y = compute(x.transpose(to_nchw(range(4), layout)))
        return np.asarray(y.transpose(to_layout(range(4), layout)), order="C")


def _static_spatial(what: str, shape: Shape) -> tuple[int, int]:
    h, w = shape[2], shape[3]
    if not isinstance(h, int) or not isinstance(w, int):
        raise VerifyException(f"{what} needs static height and width, got shape {format_shape(shape)}")
    return h, w


# ---------------------------------------------------------------------------
# conv2d


class _ConvBase(GraphOp):
    """Operands and properties shared by conv2d and conv2d_transpose."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase, default_value=ints_attr((1, 1)))
    padding = prop_def(DenseArrayBase, default_value=ints_attr((0, 0, 0, 0)))
    dilation = prop_def(DenseArrayBase, default_value=ints_attr((1, 1)))
    groups = prop_def(IntegerAttr, default_value=int_attr(1))
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE


@irdl_op_definition
class Conv2dOp(_LayoutMixin, _ConvBase):
    """2-D convolution (cross-correlation, as in torch), NCHW input and OIHW weight.

    ``input (N, C, H, W) * weight (O, C/groups, KH, KW) [+ bias (O,)] -> (N, O, OH, OW)``
    with ``OH = floor((H + top + bottom - dilation_h*(KH-1) - 1) / stride_h) + 1`` (OW alike).
    Properties: ``strides`` (h, w), ``padding`` (top, left, bottom, right), ``dilation``
    (h, w), ``groups``, ``layout`` (``"NCHW"``, or ``"NHWC"`` with an HWIO weight: the
    channels-last form ``convert-layout`` makes); defaults 1, 0, 1, 1, NCHW are not printed.

    Example::

        %y = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x8x9x7xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x5x4xf32>
    """

    name = "graph.conv2d"
    layout = prop_def(StringAttr, default_value=_layout_prop())

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0, 0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        layout: str = "NCHW",
    ):
        """``padding``: an int, ``(pad_h, pad_w)`` (symmetric) or ``(top, left, bottom, right)``;
        ``layout``: of the data, ``"NCHW"`` (weight OIHW) or ``"NHWC"`` (weight HWIO)."""
        self._build(
            [input, weight, [bias] if bias is not None else []],
            {
                "strides": ints_attr(_pair(strides)),
                "padding": ints_attr(_padding4(padding)),
                "dilation": ints_attr(_pair(dilation)),
                "groups": int_attr(groups),
                "layout": StringAttr(layout),
            },
        )

    def infer_result_type(self) -> TensorType:
        expect_rank("input", operand_shape(self.input), 4)
        expect_rank("weight", operand_shape(self.weight), 4)
        x, w = self.input_nchw(), weight_to_oihw(operand_shape(self.weight), self.data_layout())
        strides, padding, dilation = ints(self.strides), ints(self.padding), ints(self.dilation)
        groups = self.groups.value.data
        if groups < 1:
            raise VerifyException(f"groups must be >= 1, got {groups}")
        if not all(isinstance(d, int) for d in w):
            raise VerifyException(f"weight must have a static shape, got {format_shape(w)}")
        out_channels, in_per_group, kh, kw = w
        _window_params((kh, kw), strides, padding, dilation)
        channels = x[1]
        if not isinstance(channels, int):
            raise VerifyException(f"input channels must be static, got shape {format_shape(x)}")
        if channels % groups:
            raise VerifyException(f"input channels {channels} are not divisible by groups {groups}")
        if out_channels % groups:
            raise VerifyException(
                f"weight has {out_channels} output channels, not divisible by groups {groups}"
            )
        if in_per_group != channels // groups:
            raise VerifyException(
                f"weight has {in_per_group} input channels, expected {channels // groups} = "
                f"input channels {channels} / groups {groups}"
            )
        types = [self.input.type, self.weight.type]
        if self.bias is not None:
            b = operand_shape(self.bias)
            if b != (out_channels,):
                raise VerifyException(
                    f"bias must have shape ({out_channels},) = weight output channels, got {format_shape(b)}"
                )
            types.append(self.bias.type)
        element = expect_same_element("input, weight and bias", *types)
        if is_bool(element):
            raise VerifyException("operands must be numeric, got i1")
        top, left, bottom, right = padding
        oh = window_output_size(0, x[2], kh, strides[0], top, bottom, dilation[0])
        ow = window_output_size(1, x[3], kw, strides[1], left, right, dilation[1])
        return self.result_type_from_nchw((x[0], out_channels, oh, ow), element)

    def reference(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        w = w.transpose(weight_to_oihw(range(4), self.data_layout()))
        return self.nchw_reference(x, lambda x: self._nchw_reference(x, w, bias))

    def _nchw_reference(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        oh, ow = self.result_hw()
        if oh < 0 or ow < 0:  # symbolic spatial dims ("same" padding): take them from x
            oh, ow = x.shape[2], x.shape[3]
        groups = self.groups.value.data
        win = _windows(
            x, (oh, ow), w.shape[2:], ints(self.strides), ints(self.padding), ints(self.dilation), 0
        )  # (N, C, OH, OW, KH, KW)
        cg, og = x.shape[1] // groups, w.shape[0] // groups
        outs = []
        for g in range(groups):
            patches = win[:, g * cg : (g + 1) * cg]
            kernel = w[g * og : (g + 1) * og]
            # (N, OH, OW, Og)
            outs.append(np.tensordot(patches, kernel, axes=([1, 4, 5], [1, 2, 3])))
        y = np.concatenate(outs, axis=3) if groups > 1 else outs[0]
        y = y.transpose(0, 3, 1, 2)
        if bias is not None:
            y = y + bias.reshape(1, -1, 1, 1)
        return np.asarray(y.astype(x.dtype, copy=False), order="C")


# ---------------------------------------------------------------------------
# pooling


class _Pool2dOp(_LayoutMixin, GraphOp):
    """A 2-D pooling window over NCHW ``(N, C, H, W) -> (N, C, OH, OW)`` or NHWC (``layout``)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    layout = prop_def(StringAttr, default_value=_layout_prop())
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase, default_value=ints_attr((0, 0, 0, 0)))
    ceil_mode = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE

    FLOAT_ONLY: ClassVar[bool] = True

    def _dilation(self) -> tuple[int, ...]:
        return (1, 1)

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(kernel, strides, padding, dilation)`` as Python tuples."""
        return ints(self.kernel), ints(self.strides), ints(self.padding), self._dilation()

    def infer_result_type(self) -> TensorType:
        expect_rank("input", operand_shape(self.input), 4)
        x = self.input_nchw()
        element = operand_element(self.input)
        if self.FLOAT_ONLY and not is_float(element):
            raise VerifyException(f"input must be a float tensor, got {self.input.type}")
        if is_bool(element):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        kernel, strides, padding, dilation = self.window()
        _window_params(kernel, strides, padding, dilation)
        for axis, (k, d) in enumerate(zip(kernel, dilation)):
            effective = d * (k - 1) + 1
            for pad, side in ((padding[axis], "begin"), (padding[axis + 2], "end")):
                if pad > effective // 2:
                    raise VerifyException(
                        f"{_AXIS_NAMES[axis]} padding ({side}) {pad} is more than half the "
                        f"effective kernel {effective} (padding {list(padding)})"
                    )
        ceil_mode = bool(self.ceil_mode.value.data)
        top, left, bottom, right = padding
        oh = window_output_size(0, x[2], kernel[0], strides[0], top, bottom, dilation[0], ceil_mode)
        ow = window_output_size(1, x[3], kernel[1], strides[1], left, right, dilation[1], ceil_mode)
        return self.result_type_from_nchw((x[0], x[1], oh, ow), element)

    def _out_hw(self, x: np.ndarray) -> tuple[int, int]:
        """(OH, OW) of an NCHW input ``x``."""
        oh, ow = self.result_hw()
        return (x.shape[2] if oh < 0 else oh, x.shape[3] if ow < 0 else ow)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return self.nchw_reference(x, self._nchw_reference)


def _pool_props(
    kernel: int | Sequence[int],
    strides: int | Sequence[int] | None,
    padding: int | Sequence[int],
    ceil_mode: bool,
    layout: str,
) -> dict[str, Attribute]:
    kernel = _pair(kernel)
    return {
        "layout": StringAttr(layout),
        "kernel": ints_attr(kernel),
        "strides": ints_attr(kernel if strides is None else _pair(strides)),
        "padding": ints_attr(_padding4(padding)),
        "ceil_mode": BoolAttr.from_bool(ceil_mode),
    }


@irdl_op_definition
class MaxPool2dOp(_Pool2dOp):
    """2-D max pooling (torch semantics; padding is -inf, or the type's minimum for integers).

    Properties: ``kernel`` (kh, kw), ``strides`` (default: the kernel), ``padding``
    (top, left, bottom, right; each at most half the effective kernel), ``dilation``,
    ``ceil_mode``.

    Example::

        %y = graph.max_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 1>, ceil_mode = true} : tensor<2x3x9x8xf32> -> tensor<2x3x5x8xf32>
    """

    name = "graph.max_pool2d"
    dilation = prop_def(DenseArrayBase, default_value=ints_attr((1, 1)))
    FLOAT_ONLY: ClassVar[bool] = False

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: int | Sequence[int],
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = (0, 0, 0, 0),
        dilation: int | Sequence[int] = (1, 1),
        ceil_mode: bool = False,
        layout: str = "NCHW",
    ):
        props = _pool_props(kernel, strides, padding, ceil_mode, layout)
        props["dilation"] = ints_attr(_pair(dilation))
        self._build([input], props)

    def _dilation(self) -> tuple[int, ...]:
        return ints(self.dilation)

    def _nchw_reference(self, x: np.ndarray) -> np.ndarray:
        kernel, strides, padding, dilation = self.window()
        if is_float_dtype(x.dtype):
            fill = -np.inf
        else:
            fill = np.iinfo(x.dtype).min
        win = _windows(x, self._out_hw(x), kernel, strides, padding, dilation, fill)
        return np.asarray(win.max(axis=(4, 5)), order="C")


@irdl_op_definition
class AvgPool2dOp(_Pool2dOp):
    """2-D average pooling (torch semantics), float only.

    Properties: ``kernel``, ``strides`` (default: the kernel), ``padding`` (top, left,
    bottom, right), ``ceil_mode``, ``count_include_pad`` (default true: the divisor
    counts padding, but not the part of a ceil_mode window past the end padding),
    ``divisor_override`` (optional: every window's sum is divided by it instead).

    Example::

        %y = graph.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xf32>
    """

    name = "graph.avg_pool2d"
    count_include_pad = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    divisor_override = opt_prop_def(IntegerAttr)

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: int | Sequence[int],
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = (0, 0, 0, 0),
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        layout: str = "NCHW",
        divisor_override: int | None = None,
    ):
        props = _pool_props(kernel, strides, padding, ceil_mode, layout)
        props["count_include_pad"] = BoolAttr.from_bool(count_include_pad)
        if divisor_override is not None:
            props["divisor_override"] = int_attr(divisor_override)
        self._build([input], props)

    def divisor(self) -> int | None:
        """The ``divisor_override``, or None (the divisor is the window's size)."""
        return None if self.divisor_override is None else self.divisor_override.value.data

    def infer_result_type(self) -> TensorType:
        divisor = self.divisor()
        if divisor == 0:  # (torch's rule: a negative divisor negates the averages)
            raise VerifyException("divisor_override must be non-zero")
        return super().infer_result_type()

    def _nchw_reference(self, x: np.ndarray) -> np.ndarray:
        kernel, strides, padding, dilation = self.window()
        out_hw = self._out_hw(x)
        win = _windows(x, out_hw, kernel, strides, padding, dilation, 0)
        total = win.sum(axis=(4, 5), dtype=np.float64)
        if self.divisor() is not None:
            return (total / self.divisor()).astype(x.dtype)
        include_pad = bool(self.count_include_pad.value.data)
        divisors = []
        for axis in range(2):
            size, k, s = x.shape[2 + axis], kernel[axis], strides[axis]
            pad_begin, pad_end = padding[axis], padding[axis + 2]
            start = np.arange(out_hw[axis]) * s - pad_begin
            end = np.minimum(start + k, size + pad_end)
            if include_pad:
                divisors.append(end - start)
            else:
                divisors.append(np.minimum(end, size) - np.maximum(start, 0))
        divisor = np.outer(divisors[0], divisors[1]).astype(np.float64)
        return (total / divisor).astype(x.dtype)


def adaptive_bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Torch's adaptive-pooling bins along one axis: output ``i`` covers the input range
    ``[floor(i*size/out), ceil((i+1)*size/out))`` (starts, ends); bins may overlap."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


class _AdaptivePool2dOp(_LayoutMixin, GraphOp):
    """Pooling to a fixed ``output_size`` (OH, OW) over the bins of :func:`adaptive_bins`
    (torch semantics); height and width must be static."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    output_size = prop_def(DenseArrayBase)
    layout = prop_def(StringAttr, default_value=_layout_prop())
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OUT_ELEMWISE_FUSABLE
    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, output_size: int | Sequence[int], layout: str = "NCHW"):
        self._build([input], {"output_size": ints_attr(_pair(output_size)), "layout": StringAttr(layout)})

    def infer_result_type(self) -> TensorType:
        expect_rank("input", operand_shape(self.input), 4)
        x = self.input_nchw()
        element = operand_element(self.input)
        if self.FLOAT_ONLY and not is_float(element):
            raise VerifyException(f"input must be a float tensor, got {self.input.type}")
        if is_bool(element):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        size = ints(self.output_size)
        _expect_len("output_size", size, 2, "oh, ow")
        _expect_at_least("output_size", size, 1)
        _static_spatial(self.name.removeprefix("graph."), x)
        return self.result_type_from_nchw((x[0], x[1], *size), element)

    def bins(self, h: int, w: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The (starts, ends) of the row bins and of the column bins for an ``h x w`` input."""
        oh, ow = ints(self.output_size)
        return adaptive_bins(h, oh), adaptive_bins(w, ow)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return self.nchw_reference(x, self._nchw_reference)


@irdl_op_definition
class AdaptiveAvgPool2dOp(_AdaptivePool2dOp):
    """Average pooling to a fixed ``output_size`` (OH, OW), float only (torch semantics).

    Output row ``i`` averages input rows ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH)``
    (exclusive), columns alike; bins may overlap. Height and width must be static.

    Example::

        %y = graph.adaptive_avg_pool2d %x {output_size = array<i64: 3, 2>} : tensor<2x5x9x7xf32> -> tensor<2x5x3x2xf32>
    """

    name = "graph.adaptive_avg_pool2d"

    def _nchw_reference(self, x: np.ndarray) -> np.ndarray:
        h, w = x.shape[2:]
        (hs, he), (ws, we) = self.bins(h, w)
        # integral image: s[..., i, j] = sum of x[..., :i, :j]
        s = np.zeros((*x.shape[:2], h + 1, w + 1), dtype=np.float64)
        s[:, :, 1:, 1:] = x.astype(np.float64).cumsum(axis=2).cumsum(axis=3)
        total = (
            s[:, :, he[:, None], we[None, :]]
            - s[:, :, hs[:, None], we[None, :]]
            - s[:, :, he[:, None], ws[None, :]]
            + s[:, :, hs[:, None], ws[None, :]]
        )
        area = np.outer(he - hs, we - ws)
        return (total / area).astype(x.dtype)


@irdl_op_definition
class AdaptiveMaxPool2dOp(_AdaptivePool2dOp):
    """Max pooling to a fixed ``output_size`` (OH, OW) over the same bins as
    ``graph.adaptive_avg_pool2d`` (NaN propagates); floats and integers.

    Example::

        %y = graph.adaptive_max_pool2d %x {output_size = array<i64: 3, 2>} : tensor<2x5x9x7xf32> -> tensor<2x5x3x2xf32>
    """

    name = "graph.adaptive_max_pool2d"
    FLOAT_ONLY: ClassVar[bool] = False

    def _nchw_reference(self, x: np.ndarray) -> np.ndarray:
        (hs, he), (ws, we) = self.bins(*x.shape[2:])
        y = np.empty((*x.shape[:2], len(hs), len(ws)), dtype=x.dtype)
        for i, (h0, h1) in enumerate(zip(hs, he)):
            for j, (w0, w1) in enumerate(zip(ws, we)):
                y[:, :, i, j] = x[:, :, h0:h1, w0:w1].max(axis=(2, 3))
        return y


# ---------------------------------------------------------------------------
# conv2d_transpose


def transposed_output_size(
    axis: int,
    size: Dim,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int,
    output_padding: int,
) -> Dim:
    """Output size of a transposed convolution along one spatial axis (torch's rule):
    ``(size - 1)*stride - pad_begin - pad_end + dilation*(kernel - 1) + output_padding + 1``."""
    what = _AXIS_NAMES[axis]
    grow = dilation * (kernel - 1) + output_padding
    if isinstance(size, str):
        return dim_arith.add(dim_arith.mul(dim_arith.sub(size, 1), stride), grow + 1 - pad_begin - pad_end)
    out = (size - 1) * stride - pad_begin - pad_end + grow + 1
    if out < 1:
        raise VerifyException(
            f"{what}: output size {out} = ({size} - 1)*{stride} - {pad_begin} - {pad_end} + "
            f"{dilation}*({kernel} - 1) + {output_padding} + 1 is not positive"
        )
    return out


@irdl_op_definition
class Conv2dTransposeOp(_ConvBase):
    """2-D transposed convolution (torch's ConvTranspose2d), NCHW input and IOHW weight.

    ``input (N, C, H, W) * weight (C, O/groups, KH, KW) [+ bias (O,)] -> (N, O, OH, OW)``
    with ``OH = (H - 1)*stride_h - top - bottom + dilation_h*(KH - 1) + output_padding_h + 1``
    (OW alike): input pixel ``(iy, ix)`` scatters ``weight[c, o, ky, kx]`` times its value
    to output pixel ``(iy*stride_h - top + ky*dilation_h, ix*stride_w - left + kx*dilation_w)``.
    Properties: ``strides`` (h, w), ``padding`` (top, left, bottom, right), ``output_padding``
    (h, w; each less than its stride or its dilation), ``dilation`` (h, w), ``groups``;
    defaults 1, 0, 0, 1, 1 are not printed.

    Example::

        %y = graph.conv2d_transpose %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>} : tensor<1x4x5x6xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<1x3x10x11xf32>
    """

    name = "graph.conv2d_transpose"
    output_padding = prop_def(DenseArrayBase, default_value=ints_attr((0, 0)))

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0, 0, 0),
        output_padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
    ):
        """``padding``: an int, ``(pad_h, pad_w)`` (symmetric) or ``(top, left, bottom, right)``."""
        self._build(
            [input, weight, [bias] if bias is not None else []],
            {
                "strides": ints_attr(_pair(strides)),
                "padding": ints_attr(_padding4(padding)),
                "output_padding": ints_attr(_pair(output_padding)),
                "dilation": ints_attr(_pair(dilation)),
                "groups": int_attr(groups),
            },
        )

    def infer_result_type(self) -> TensorType:
        x, w = operand_shape(self.input), operand_shape(self.weight)
        expect_rank("input", x, 4)
        expect_rank("weight", w, 4)
        strides, padding, dilation = ints(self.strides), ints(self.padding), ints(self.dilation)
        output_padding = ints(self.output_padding)
        groups = self.groups.value.data
        if groups < 1:
            raise VerifyException(f"groups must be >= 1, got {groups}")
        if not all(isinstance(d, int) for d in w):
            raise VerifyException(f"weight must have a static shape, got {format_shape(w)}")
        in_channels, out_per_group, kh, kw = w
        _window_params((kh, kw), strides, padding, dilation)
        _expect_len("output_padding", output_padding, 2, "h, w")
        _expect_at_least("output_padding", output_padding, 0)
        for axis in range(2):
            if output_padding[axis] >= max(strides[axis], dilation[axis]):
                raise VerifyException(
                    f"output_padding {list(output_padding)} must be smaller than the stride "
                    f"{list(strides)} or the dilation {list(dilation)} along {_AXIS_NAMES[axis]}"
                )
        channels = x[1]
        if not isinstance(channels, int):
            raise VerifyException(f"input channels must be static, got shape {format_shape(x)}")
        if channels != in_channels:
            raise VerifyException(
                f"weight has {in_channels} input channels (weight layout: in, out/groups, kh, kw), "
                f"the input has {channels}"
            )
        if channels % groups:
            raise VerifyException(f"input channels {channels} are not divisible by groups {groups}")
        out_channels = out_per_group * groups
        types = [self.input.type, self.weight.type]
        if self.bias is not None:
            b = operand_shape(self.bias)
            if b != (out_channels,):
                raise VerifyException(
                    f"bias must have shape ({out_channels},) = weight dim 1 {out_per_group} x groups "
                    f"{groups}, got {format_shape(b)}"
                )
            types.append(self.bias.type)
        element = expect_same_element("input, weight and bias", *types)
        if is_bool(element):
            raise VerifyException("operands must be numeric, got i1")
        top, left, bottom, right = padding
        oh = transposed_output_size(0, x[2], kh, strides[0], top, bottom, dilation[0], output_padding[0])
        ow = transposed_output_size(1, x[3], kw, strides[1], left, right, dilation[1], output_padding[1])
        return tensor_type((x[0], out_channels, oh, ow), element)

    def reference(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        (sh, sw), (top, left, _, _), (dh, dw) = ints(self.strides), ints(self.padding), ints(self.dilation)
        groups = self.groups.value.data
        n, channels, h, width = x.shape
        _, og, kh, kw = w.shape
        oh, ow = self.result.type.get_shape()[2:]
        if oh < 0 or ow < 0:  # symbolic spatial dims ("same" size): take them from x
            oh, ow = h, width
        acc = np.float64 if is_float_dtype(x.dtype) else np.int64
        # the whole scattered image, then the [top, top + oh) x [left, left + ow) crop
        full_h = max((h - 1) * sh + dh * (kh - 1) + 1, top + oh)
        full_w = max((width - 1) * sw + dw * (kw - 1) + 1, left + ow)
        full = np.zeros((n, og * groups, full_h, full_w), dtype=acc)
        cg = channels // groups
        for g in range(groups):
            xs = x[:, g * cg : (g + 1) * cg].astype(acc)
            for ky in range(kh):
                for kx in range(kw):
                    taps = w[g * cg : (g + 1) * cg, :, ky, kx].astype(acc)  # (Cg, Og)
                    contribution = np.einsum("nchw,co->nohw", xs, taps)
                    y0, x0 = ky * dh, kx * dw
                    full[
                        :, g * og : (g + 1) * og, y0 : y0 + (h - 1) * sh + 1 : sh, x0 : x0 + (width - 1) * sw + 1 : sw
                    ] += contribution
        y = full[:, :, top : top + oh, left : left + ow]
        if bias is not None:
            y = y + bias.astype(acc).reshape(1, -1, 1, 1)
        return np.asarray(y.astype(x.dtype), order="C")


# ---------------------------------------------------------------------------
# resize2d

RESIZE_MODES = ("nearest", "nearest_exact", "bilinear")


def resize_scale(in_size: int, out_size: int, mode: str, align_corners: bool, scale_factor: float | None) -> float:
    """The source-per-destination step torch uses along one axis, rounded to float32 as torch's
    CPU kernels compute it: ``1/scale_factor`` when one was given, else ``in/out``; with
    ``align_corners`` (bilinear) ``(in-1)/(out-1)``, or 0 for a single output pixel."""
    f32 = np.float32
    if mode == "bilinear" and align_corners:
        return float(f32(in_size - 1) / f32(out_size - 1)) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return float(f32(1.0 / scale_factor))
    return float(f32(in_size) / f32(out_size))


def resize_nearest_indices(in_size: int, out_size: int, mode: str, scale: float) -> np.ndarray:
    """Source index of each destination index for ``nearest`` / ``nearest_exact`` (torch's CPU rule,
    including the legacy special cases of ``nearest``: same size copies, double size halves)."""
    i = np.arange(out_size)
    if mode == "nearest":
        if out_size == in_size:
            return i
        if out_size == 2 * in_size:
            return i >> 1
        src = np.floor(i.astype(np.float32) * np.float32(scale))
    else:  # nearest_exact: floorf((i + 0.5) * scale), the product in double
        src = np.floor(((i + 0.5) * np.float64(np.float32(scale))).astype(np.float32))
    return np.minimum(src.astype(np.int64), in_size - 1)


def resize_linear_weights(
    in_size: int, out_size: int, align_corners: bool, scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i0, i1, lambda1)`` of linear interpolation along one axis (torch's CPU rule, in float32):
    destination ``i`` is ``(1 - lambda1) * src[i0] + lambda1 * src[i1]``."""
    i = np.arange(out_size)
    if out_size == in_size:
        return i, i, np.zeros(out_size, np.float32)
    f32 = np.float32
    s = f32(scale)
    if align_corners:
        real = s * i.astype(f32)
    else:
        real = np.maximum(s * (i.astype(f32) + f32(0.5)) - f32(0.5), f32(0))
    i0 = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    lam = np.clip(real - i0.astype(f32), f32(0), f32(1)).astype(f32)
    i1 = np.minimum(i0 + 1, in_size - 1)
    return i0, i1, lam


@irdl_op_definition
class Resize2dOp(_LayoutMixin, GraphOp):
    """Resize the height and width of an NCHW (or NHWC: ``layout``) tensor to ``size`` (torch's interpolate).

    ``mode``: ``"nearest"`` (torch's ``nearest``: source ``floor(dst * scale)``), ``"nearest_exact"``
    (``floor((dst + 0.5) * scale)``) or ``"bilinear"`` (half-pixel centres, or corner-aligned with
    ``align_corners``). ``scale = in/out``, or ``1/scale_factors`` when given (torch uses the
    user's scale factor, not the ratio of the sizes); source indices are clamped to the input.
    Height and width must be static; nearest modes take any element type, bilinear floats.

    Example::

        %y = graph.resize2d %x {size = array<i64: 10, 13>, mode = "bilinear", align_corners = true} : tensor<2x3x5x7xf32> -> tensor<2x3x10x13xf32>
        %z = graph.resize2d %x {size = array<i64: 12, 17>, mode = "nearest", scale_factors = array<f64: 2.5, 2.5>} : tensor<2x3x5x7xf32> -> tensor<2x3x12x17xf32>
    """

    name = "graph.resize2d"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    size = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr)
    align_corners = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    scale_factors = opt_prop_def(DenseArrayBase)
    layout = prop_def(StringAttr, default_value=_layout_prop())
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    def __init__(
        self,
        input: SSAValue | Operation,
        size: int | Sequence[int],
        mode: str = "nearest",
        align_corners: bool = False,
        scale_factors: float | Sequence[float] | None = None,
        layout: str = "NCHW",
    ):
        props: dict[str, Attribute] = {
            "size": ints_attr(_pair(size)),
            "mode": StringAttr(mode),
            "align_corners": BoolAttr.from_bool(align_corners),
            "layout": StringAttr(layout),
        }
        if scale_factors is not None:
            if isinstance(scale_factors, int | float):
                scale_factors = (scale_factors, scale_factors)
            props["scale_factors"] = DenseArrayBase.from_list(f64, [float(s) for s in scale_factors])
        self._build([input], props)

    def _scale_factors(self) -> tuple[float, ...] | None:
        if self.scale_factors is None:
            return None
        return tuple(float(v) for v in self.scale_factors.get_values())

    def infer_result_type(self) -> TensorType:
        expect_rank("input", operand_shape(self.input), 4)
        x = self.input_nchw()
        element = operand_element(self.input)
        mode = self.mode.data
        if mode not in RESIZE_MODES:
            raise VerifyException(f"mode must be one of {', '.join(RESIZE_MODES)}, got '{mode}'")
        if mode == "bilinear" and not is_float(element):
            raise VerifyException(f"bilinear mode needs a float input, got {self.input.type}")
        if bool(self.align_corners.value.data) and mode != "bilinear":
            raise VerifyException(f"align_corners is only meaningful for bilinear mode, got mode '{mode}'")
        size = ints(self.size)
        _expect_len("size", size, 2, "oh, ow")
        _expect_at_least("size", size, 1)
        if self.scale_factors is not None:
            if self.scale_factors.elt_type != f64:
                raise VerifyException(f"scale_factors must be an array<f64: ...>, got {self.scale_factors}")
            factors = self._scale_factors()
            if len(factors) != 2:
                raise VerifyException(f"scale_factors must have 2 values (h, w), got {list(factors)}")
            if any(not f > 0 for f in factors):
                raise VerifyException(f"scale_factors must be positive, got {list(factors)}")
        _static_spatial("resize2d", x)
        return self.result_type_from_nchw((x[0], x[1], *size), element)

    def axis_scale(self, axis: int) -> float:
        """torch's float32 step along ``axis`` (0: height, 1: width); see :func:`resize_scale`."""
        in_size = self.input_nchw()[2 + axis]
        out_size = ints(self.size)[axis]
        factors = self._scale_factors()
        return resize_scale(
            in_size, out_size, self.mode.data, bool(self.align_corners.value.data),
            None if factors is None else factors[axis],
        )

    def reference(self, x: np.ndarray) -> np.ndarray:
        return self.nchw_reference(x, self._nchw_reference)

    def _nchw_reference(self, x: np.ndarray) -> np.ndarray:
        mode = self.mode.data
        (oh, ow), (h, w) = ints(self.size), x.shape[2:]
        if mode != "bilinear":
            rows = resize_nearest_indices(h, oh, mode, self.axis_scale(0))
            cols = resize_nearest_indices(w, ow, mode, self.axis_scale(1))
            return np.asarray(x[:, :, rows[:, None], cols[None, :]], order="C")
        align = bool(self.align_corners.value.data)
        r0, r1, ry = resize_linear_weights(h, oh, align, self.axis_scale(0))
        c0, c1, cx = resize_linear_weights(w, ow, align, self.axis_scale(1))
        xd = x.astype(np.float64)
        ry, cx = ry.astype(np.float64)[:, None], cx.astype(np.float64)[None, :]
        top = xd[:, :, r0[:, None], c0[None, :]] * (1 - cx) + xd[:, :, r0[:, None], c1[None, :]] * cx
        bottom = xd[:, :, r1[:, None], c0[None, :]] * (1 - cx) + xd[:, :, r1[:, None], c1[None, :]] * cx
        return (top * (1 - ry) + bottom * ry).astype(x.dtype)
