"""Indexing and index-producing ops: take, gather, scans (cumsum/cumprod/logcumsumexp, and
cumargmax/cumargmin: the positions of the running extreme), argmax/argmin, argsort, flip,
pad, and the constant producers full and arange.

Index operands are integer tensors (``i8``, ``i32`` or ``i64``). Negative indices wrap
once, as in torch (``-1`` is the last element); indices still outside ``[0, dim)``
after that are **clamped** to the nearest end, so the generated code never reads
outside a buffer, whatever the index data. Where torch raises an error instead, the
torch frontend adds a ``graph.check`` of the indices (``frontends/torch/ops/index_checks.py``).

Ops that produce indices (argmax, argmin, argsort) give ``i64`` tensors, as torch does.
Axes are stored normalised (non-negative); the constructors also take negative axes.

Examples::

    %e = graph.take %w, %ids {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
    %g = graph.gather %x, %i {axis = 1 : i64} : tensor<4x5xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
    %c = graph.cumsum %x {axis = 1 : i64} : tensor<4x5xf32>
    %q = graph.cumprod %x {axis = 0 : i64} : tensor<4x5xf32>
    %m = graph.cumargmax %x {axis = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xi64>
    %a = graph.argmax %x {axis = 1 : i64, keepdims = true} : tensor<4x5xf32> -> tensor<4x1xi64>
    %s = graph.argsort %x {axis = 1 : i64, descending = true, k = 3 : i64} : tensor<4x5xf32> -> tensor<4x3xi64>
    %f = graph.flip %x {axes = array<i64: 0, 1>} : tensor<4x5xf32>
    %p = graph.pad %x {low = array<i64: 0, 1>, high = array<i64: 2, -1>, value = 0.000000e+00 : f32} : tensor<4x5xf32> -> tensor<6x5xf32>
    %z = graph.full %x {value = 1.000000e+00 : f32, shape = array<i64: -1, 3>, dims = #graph.dims<n, _>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>>
    %r = graph.arange %x {start = 0 : i64, step = 1 : i64, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xi64, #graph.dims<n>>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    bf16,
    f16,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ...runtime import dim_arith
from ...runtime.dim_expr import evaluate, free_symbols
from .base import (
    GraphOp,
    OpPatternKind,
    int_attr,
    ints,
    ints_attr,
    operand_element,
    operand_shape,
    shape_props,
    target_shape,
)
from .types import (
    DimNamesAttr,
    Shape,
    format_shape,
    is_bool,
    is_float,
    is_float_dtype,
    is_int,
    numpy_dtype,
    tensor_type,
)

# ---------------------------------------------------------------------------
# helpers


def _axis_value(input: SSAValue | Operation, axis: int) -> int:
    """``axis`` made non-negative when it is a valid negative axis (else left for the verifier)."""
    rank = len(operand_shape(SSAValue.get(input)))
    return axis + rank if -rank <= axis < 0 else axis


def _check_axis(axis: int, shape: Shape) -> int:
    if not 0 <= axis < len(shape):
        raise VerifyException(
            f"axis {axis} is out of range [0, {len(shape)}) for shape {format_shape(shape)} "
            "(stored normalised, non-negative)"
        )
    return axis


def _has_elements(shape: Shape) -> bool:
    """False only when a static dim is 0."""
    return all(d != 0 for d in shape)


def _check_indices(what: str, value: SSAValue) -> None:
    if not is_int(operand_element(value)):
        raise VerifyException(f"{what} must be an integer tensor (i8, i32 or i64), got {value.type}")


def check_within(indices: Shape, bound: Shape, axis: int | None, what: str) -> None:
    """Every dim of ``indices`` (but ``axis``) is at most ``bound``'s: statically smaller,
    or the same size or symbol."""
    for d, (a, b) in enumerate(zip(bound, indices)):
        if d == axis or a == b:
            continue
        if isinstance(a, str) or isinstance(b, str) or b > a:
            raise VerifyException(
                f"indices dim {d} is {b}, expected at most {what} dim {d} = {a} "
                f"({what} {format_shape(bound)}, indices {format_shape(indices)})"
            )


def wrap_and_clamp(indices: np.ndarray, size: int) -> np.ndarray:
    """Torch-style negative indices (``-1`` is the last), then clamped into ``[0, size)``."""
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + size, idx)
    return np.clip(idx, 0, max(size - 1, 0))


def scalar_attr(value: float | int | bool, element: Attribute) -> FloatAttr | IntegerAttr:
    """A typed scalar attribute (``1.5 : f32``, ``3 : i64``, ``true``) for an element type."""
    if is_float(element):
        return FloatAttr(float(value), element)
    if is_bool(element):
        return IntegerAttr(1 if value else 0, i1)
    return IntegerAttr(int(value), element)


def scalar_value(attr: FloatAttr | IntegerAttr) -> float | int | bool:
    """The Python value of a typed scalar attribute (booleans as bool)."""
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if attr.type == i1:
        return attr.value.data != 0
    return int(attr.value.data)


def _check_scalar(what: str, attr: FloatAttr | IntegerAttr, element: Attribute) -> None:
    if attr.type != element:
        raise VerifyException(f"{what} {attr} must have the element type {element}")


def _symbol_sizes(sources: Sequence[SSAValue], arrays: Sequence[np.ndarray]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for value, array in zip(sources, arrays):
        for d, n in zip(operand_shape(value), array.shape):
            if isinstance(d, str):
                sizes[d] = n
    return sizes


# ---------------------------------------------------------------------------
# take and gather


class _IndexedOp(GraphOp):
    """Operands, property and syntax shared by take and gather: data, an integer index
    tensor, and the axis the indices select along."""

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True


@irdl_op_definition
class TakeOp(_IndexedOp):
    """Pick slices of ``input`` along ``axis`` by an integer index tensor of any rank.

    ``result.shape = input.shape[:axis] + indices.shape + input.shape[axis+1:]`` and
    ``result[..., j..., ...] = input[..., indices[j...], ...]`` (numpy's ``take``;
    torch's ``index_select`` and ``embedding``). Negative indices wrap once; indices
    still out of range are clamped to the nearest end (never read out of bounds).

    Example::

        %e = graph.take %w, %ids {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
    """

    name = "graph.take"

    def __init__(self, input: SSAValue | Operation, indices: SSAValue | Operation, axis: int = 0):
        self._build([input, indices], {"axis": int_attr(_axis_value(input, axis))})

    def infer_result_type(self) -> TensorType:
        x, idx = operand_shape(self.input), operand_shape(self.indices)
        _check_indices("indices", self.indices)
        axis = _check_axis(self.axis.value.data, x)
        if x[axis] == 0 and _has_elements(idx):
            raise VerifyException(
                f"cannot take from axis {axis} of size 0 (input {format_shape(x)}, indices {format_shape(idx)})"
            )
        return tensor_type((*x[:axis], *idx, *x[axis + 1 :]), operand_element(self.input))

    def reference(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        axis = self.axis.value.data
        if indices.size == 0:
            shape = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :])
            return np.zeros(shape, x.dtype)
        return np.take(x, wrap_and_clamp(indices, x.shape[axis]), axis=axis)


@irdl_op_definition
class GatherOp(_IndexedOp):
    """torch.gather: ``result[i][j][k] = input[i][indices[i][j][k]][k]`` for ``axis = 1``.

    ``indices`` has the rank of ``input``, and on every other axis a size no larger than
    the input's (the same symbol where symbolic); the result has the shape of
    ``indices``. Negative indices wrap once; indices still out of range are clamped.

    Example::

        %g = graph.gather %x, %i {axis = 1 : i64} : tensor<4x5xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
    """

    name = "graph.gather"

    def __init__(self, input: SSAValue | Operation, indices: SSAValue | Operation, axis: int):
        self._build([input, indices], {"axis": int_attr(_axis_value(input, axis))})

    def infer_result_type(self) -> TensorType:
        x, idx = operand_shape(self.input), operand_shape(self.indices)
        _check_indices("indices", self.indices)
        if len(idx) != len(x):
            raise VerifyException(
                f"indices {format_shape(idx)} must have the rank of the input {format_shape(x)}"
            )
        axis = _check_axis(self.axis.value.data, x)
        check_within(idx, x, axis, "input")
        if x[axis] == 0 and _has_elements(idx):
            raise VerifyException(f"cannot gather from axis {axis} of size 0 (input {format_shape(x)})")
        return tensor_type(idx, operand_element(self.input))

    def reference(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        axis = self.axis.value.data
        if indices.size == 0:
            return np.zeros(indices.shape, x.dtype)
        window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
        return np.take_along_axis(x[window], wrap_and_clamp(indices, x.shape[axis]), axis=axis)


#: how ``graph.scatter`` combines the updates landing on one element
SCATTER_MODES = ("update", "add", "mul", "max", "min")


@irdl_op_definition
class ScatterOp(GraphOp):
    """The inverse of gather: a copy of ``input`` where, for ``axis = 1``,
    ``result[i][indices[i][j][k]][k]`` receives ``updates[i][j][k]`` (ONNX's
    ScatterElements; torch's ``scatter``, ``scatter_add``, ``scatter_reduce``, and
    ``index_put`` once its indexed axes are merged into one).

    ``indices`` has the rank of ``input``; on every axis it is no larger than
    ``updates``, and on every axis but ``axis`` no larger than ``input`` (elements
    outside its extent keep the input's value). ``mode`` says how the updates that land
    on one element combine: ``update`` (the last one along ``axis`` wins), ``add``,
    ``mul``, ``max``, ``min``; with ``include_self = false`` an element that receives updates
    starts from them alone, not from its input value. Negative indices wrap once;
    indices still out of range are clamped (never written out of bounds).

    Lowered to ``te.scatter``: the input copied, then each line (every axis but
    ``axis``) applies its updates in order, ``O(size(input) + size(indices))``, the
    lines in parallel without atomics (``lowering/scatter_kernel.py``).

    Example::

        %s = graph.scatter %x, %i, %u {axis = 1 : i64, mode = "add"} : tensor<4x6xf32>, tensor<4x3xi64>, tensor<4x3xf32> -> tensor<4x6xf32>
    """

    name = "graph.scatter"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    mode = prop_def(StringAttr, default_value=StringAttr("update"))
    include_self = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $indices `,` $updates attr-dict `:` type($input) `,` type($indices) `,` type($updates) "
        "`->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(
        self,
        input: SSAValue | Operation,
        indices: SSAValue | Operation,
        updates: SSAValue | Operation,
        axis: int,
        mode: str = "update",
        include_self: bool = True,
    ):
        self._build(
            [input, indices, updates],
            {
                "axis": int_attr(_axis_value(input, axis)),
                "mode": StringAttr(mode),
                "include_self": BoolAttr.from_bool(include_self),
            },
        )

    def infer_result_type(self) -> TensorType:
        x, idx, upd = operand_shape(self.input), operand_shape(self.indices), operand_shape(self.updates)
        _check_indices("indices", self.indices)
        mode = self.mode.data
        if mode not in SCATTER_MODES:
            raise VerifyException(f"unknown mode {mode!r} (expected one of {', '.join(SCATTER_MODES)})")
        element = operand_element(self.input)
        if operand_element(self.updates) != element:
            raise VerifyException(f"updates {self.updates.type} must have the element type of the input {element}")
        if mode != "update" and is_bool(element):
            raise VerifyException(f"mode {mode!r} needs a numeric input, got {self.input.type}")
        if not len(idx) == len(x) == len(upd):
            raise VerifyException(
                f"input {format_shape(x)}, indices {format_shape(idx)} and updates {format_shape(upd)} "
                "must have the same rank"
            )
        axis = _check_axis(self.axis.value.data, x)
        check_within(idx, x, axis, "input")
        check_within(idx, upd, None, "updates")
        if x[axis] == 0 and _has_elements(idx):
            raise VerifyException(f"cannot scatter into axis {axis} of size 0 (input {format_shape(x)})")
        return self.input.type

    def reference(self, x: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
        axis, mode = self.axis.value.data, self.mode.data
        out = x.copy()
        if indices.size == 0:
            return out
        coords = list(np.indices(indices.shape))
        coords[axis] = wrap_and_clamp(indices, x.shape[axis])
        target = tuple(c.ravel() for c in coords)
        values = updates[tuple(slice(0, n) for n in indices.shape)].ravel()
        if mode == "update":
            # last along the axis wins: row-major order visits each target's updates in axis order
            linear = np.ravel_multi_index(target, x.shape)
            _, last = np.unique(linear[::-1], return_index=True)
            keep = len(linear) - 1 - last
            out[tuple(t[keep] for t in target)] = values[keep]
            return out
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[mode]
        if not self.include_self.value.data:
            out[target] = {"add": 0, "mul": 1, "max": _lowest(x.dtype), "min": _highest(x.dtype)}[mode]
        ufunc.at(out, target, values)
        return out


def _lowest(dtype: np.dtype):
    return -np.inf if is_float_dtype(dtype) else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.inf if is_float_dtype(dtype) else np.iinfo(dtype).max


# ---------------------------------------------------------------------------
# scans and arg-reductions


class ScanOp(GraphOp):
    """An inclusive scan along ``axis`` (stored non-negative); numeric element types
    (integers wrap); same type in and out."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    #: the combining ufunc (its ``accumulate`` is the reference)
    UFUNC: ClassVar[np.ufunc]
    #: whether only float inputs are accepted (a transcendental combiner)
    FLOATS_ONLY: ClassVar[bool] = False

    def __init__(self, input: SSAValue | Operation, axis: int):
        self._build([input], {"axis": int_attr(_axis_value(input, axis))})

    def infer_result_type(self) -> TensorType:
        _check_axis(self.axis.value.data, operand_shape(self.input))
        element = operand_element(self.input)
        if is_bool(element):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        if self.FLOATS_ONLY and not is_float(element):
            raise VerifyException(f"input must be a float tensor, got {self.input.type}")
        return self.input.type

    def reference(self, x: np.ndarray) -> np.ndarray:
        return self.UFUNC.accumulate(x, axis=self.axis.value.data, dtype=x.dtype)


@irdl_op_definition
class CumsumOp(ScanOp):
    """Inclusive prefix sum along ``axis``; numeric element types (integers wrap).

    Example: ``%c = graph.cumsum %x {axis = 1 : i64} : tensor<4x5xf32>``
    """

    name = "graph.cumsum"
    UFUNC: ClassVar[np.ufunc] = np.add


@irdl_op_definition
class CumprodOp(ScanOp):
    """Inclusive prefix product along ``axis``; numeric element types (integers wrap, as
    torch's int64 ``cumprod``).

    Example: ``%c = graph.cumprod %x {axis = 0 : i64} : tensor<4x5xi64>``
    """

    name = "graph.cumprod"
    UFUNC: ClassVar[np.ufunc] = np.multiply


@irdl_op_definition
class LogcumsumexpOp(ScanOp):
    """``log(cumsum(exp(x)))`` along ``axis``, computed stably (each step adds
    ``log1p(exp(lo - hi))`` to the larger of the running value and the element, as
    torch's ``logcumsumexp``); float element types.

    Example: ``%l = graph.logcumsumexp %x {axis = 1 : i64} : tensor<4x5xf32>``
    """

    name = "graph.logcumsumexp"
    UFUNC: ClassVar[np.ufunc] = np.logaddexp
    FLOATS_ONLY: ClassVar[bool] = True


def running_extreme_positions(x: np.ndarray, axis: int, kind: str) -> np.ndarray:
    """For each element, the position along ``axis`` of the largest (``max``) or
    smallest (``min``) element up to it: the last one on ties, and the last NaN once
    there is one (torch's ``cummax``/``cummin`` indices)."""
    lines = np.moveaxis(x, axis, -1)
    positions = np.zeros(lines.shape, np.int64)
    if lines.shape[-1] == 0:
        return np.moveaxis(positions, -1, axis)
    extreme, where = lines[..., 0].copy(), np.zeros(lines.shape[:-1], np.int64)
    beats = np.greater_equal if kind == "max" else np.less_equal
    with np.errstate(invalid="ignore"):
        for k in range(lines.shape[-1]):
            v = lines[..., k]
            take = beats(v, extreme) | (v != v)  # a NaN is taken (and nothing beats it)
            extreme, where = np.where(take, v, extreme), np.where(take, k, where)
            positions[..., k] = where
    return np.moveaxis(positions, -1, axis)


class ScanIndexOp(GraphOp):
    """The position (``i64``) along ``axis`` of the running maximum or minimum: element
    ``k`` holds where the extreme of elements ``0..k`` was last taken (the last one on
    ties; a NaN is taken and sticks, as torch's ``cummax``/``cummin`` indices); numeric
    element types."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    #: "max" or "min"
    KIND: ClassVar[str]

    def __init__(self, input: SSAValue | Operation, axis: int):
        self._build([input], {"axis": int_attr(_axis_value(input, axis))})

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        _check_axis(self.axis.value.data, x)
        if is_bool(operand_element(self.input)):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        return tensor_type(x, i64)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return running_extreme_positions(x, self.axis.value.data, self.KIND)


@irdl_op_definition
class CumargmaxOp(ScanIndexOp):
    """Position of the running maximum along ``axis`` (torch's ``cummax`` indices).

    Example: ``%i = graph.cumargmax %x {axis = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xi64>``
    """

    name = "graph.cumargmax"
    KIND: ClassVar[str] = "max"


@irdl_op_definition
class CumargminOp(ScanIndexOp):
    """Position of the running minimum along ``axis`` (torch's ``cummin`` indices).

    Example: ``%i = graph.cumargmin %x {axis = 0 : i64} : tensor<4x5xi32> -> tensor<4x5xi64>``
    """

    name = "graph.cumargmin"
    KIND: ClassVar[str] = "min"


class ArgReduceOp(GraphOp):
    """The index (``i64``) of the extreme element along ``axis``; the first one on ties,
    and the first NaN if there is one (as torch)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    keepdims = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.COMM_REDUCE

    #: "max" or "min"
    KIND: ClassVar[str]

    def __init__(self, input: SSAValue | Operation, axis: int, keepdims: bool = False):
        self._build(
            [input], {"axis": int_attr(_axis_value(input, axis)), "keepdims": BoolAttr.from_bool(keepdims)}
        )

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        axis = _check_axis(self.axis.value.data, x)
        if is_bool(operand_element(self.input)):
            raise VerifyException(f"input must be numeric, got {self.input.type}")
        if x[axis] == 0:
            raise VerifyException(f"cannot reduce over axis {axis} of size 0 (shape {format_shape(x)})")
        if self.keepdims.value.data:
            shape = tuple(1 if d == axis else n for d, n in enumerate(x))
        else:
            shape = tuple(n for d, n in enumerate(x) if d != axis)
        return tensor_type(shape, i64)

    def reference(self, x: np.ndarray) -> np.ndarray:
        fn = np.argmax if self.KIND == "max" else np.argmin
        return fn(x, axis=self.axis.value.data, keepdims=bool(self.keepdims.value.data)).astype(np.int64)


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """Index of the maximum along ``axis`` (first on ties; a NaN counts as the maximum).

    Example: ``%a = graph.argmax %x {axis = 1 : i64, keepdims = true} : tensor<4x5xf32> -> tensor<4x1xi64>``
    """

    name = "graph.argmax"
    KIND: ClassVar[str] = "max"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """Index of the minimum along ``axis`` (first on ties; a NaN counts as the minimum).

    Example: ``%a = graph.argmin %x {axis = 0 : i64} : tensor<4x5xi32> -> tensor<5xi64>``
    """

    name = "graph.argmin"
    KIND: ClassVar[str] = "min"


def stable_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort (ties in index order) with NaN as the largest value."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(flipped, axis)


@irdl_op_definition
class ArgsortOp(GraphOp):
    """Indices (``i64``) that sort ``input`` along ``axis``: stable (ties keep their
    index order), NaN sorts as the largest value. With ``k``, only the first ``k`` of
    them (torch's ``topk`` indices with ``descending``; ``k`` needs a static axis).

    Example::

        %s = graph.argsort %x {axis = 1 : i64, descending = true, k = 3 : i64} : tensor<4x5xf32> -> tensor<4x3xi64>
    """

    name = "graph.argsort"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    descending = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    k = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(
        self, input: SSAValue | Operation, axis: int = -1, descending: bool = False, k: int | None = None
    ):
        self._build(
            [input],
            {
                "axis": int_attr(_axis_value(input, axis)),
                "descending": BoolAttr.from_bool(descending),
                "k": None if k is None else int_attr(k),
            },
        )

    def count(self) -> int | str:
        """How many indices the result holds along the axis."""
        return self.k.value.data if self.k is not None else operand_shape(self.input)[self.axis.value.data]

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        axis = _check_axis(self.axis.value.data, x)
        if self.k is not None:
            k, n = self.k.value.data, x[axis]
            if isinstance(n, str):
                raise VerifyException(f"k needs a static axis, axis {axis} is symbolic ({n})")
            if not 0 <= k <= n:
                raise VerifyException(f"k = {k} is out of range [0, {n}] for axis {axis} of {format_shape(x)}")
        shape = tuple(self.count() if d == axis else n for d, n in enumerate(x))
        return tensor_type(shape, i64)

    def reference(self, x: np.ndarray) -> np.ndarray:
        axis = self.axis.value.data
        order = stable_argsort(x, axis, bool(self.descending.value.data)).astype(np.int64)
        if self.k is None:
            return order
        return np.asarray(np.take(order, np.arange(self.k.value.data), axis=axis), order="C")


# ---------------------------------------------------------------------------
# flip and pad


@irdl_op_definition
class FlipOp(GraphOp):
    """Reverse the order of elements along ``axes`` (stored sorted, non-negative).

    Example: ``%f = graph.flip %x {axes = array<i64: 0, 1>} : tensor<4x5xf32>``
    """

    name = "graph.flip"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation, axes: int | Sequence[int]):
        axes = [axes] if isinstance(axes, int) else list(axes)
        normalised = [_axis_value(input, a) for a in axes]
        if len(set(normalised)) != len(normalised):
            raise VerifyException(f"graph.flip: axes {axes} name an axis twice")
        self._build([input], {"axes": ints_attr(sorted(normalised))})

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        axes = ints(self.axes)
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(x) for a in axes):
            raise VerifyException(
                f"axes {list(axes)} must be strictly increasing and in [0, {len(x)}) for shape {format_shape(x)}"
            )
        return self.input.type

    def reference(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.flip(x, ints(self.axes)), order="C")


@irdl_op_definition
class PadOp(GraphOp):
    """Pad every axis with ``low[i]`` elements before and ``high[i]`` after, all equal to
    ``value`` (a scalar of the element type). A negative pad crops that many elements.
    A padded symbolic axis has an expression for its size (``s0 + 3``).

    Example::

        %p = graph.pad %x {low = array<i64: 0, 1>, high = array<i64: 2, -1>, value = 0.000000e+00 : f32} : tensor<4x5xf32> -> tensor<6x5xf32>
    """

    name = "graph.pad"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    low = prop_def(DenseArrayBase)
    high = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr | IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE
    MOVES_DATA: ClassVar[bool] = True

    def __init__(
        self,
        input: SSAValue | Operation,
        low: Sequence[int],
        high: Sequence[int],
        value: float | int | bool = 0,
    ):
        element = operand_element(SSAValue.get(input))
        self._build(
            [input], {"low": ints_attr(low), "high": ints_attr(high), "value": scalar_attr(value, element)}
        )

    def infer_result_type(self) -> TensorType:
        x = operand_shape(self.input)
        low, high = ints(self.low), ints(self.high)
        if not len(low) == len(high) == len(x):
            raise VerifyException(
                f"low ({len(low)}) and high ({len(high)}) must give one pad per axis of {format_shape(x)}"
            )
        _check_scalar("value", self.value, operand_element(self.input))
        shape: list[int | str] = []
        for axis, (d, lo, hi) in enumerate(zip(x, low, high)):
            if isinstance(d, str):  # torch.export guards that a crop leaves elements
                shape.append(dim_arith.add(d, lo + hi))
            elif max(-lo, 0) + max(-hi, 0) > d:
                raise VerifyException(
                    f"axis {axis}: pads {lo} and {hi} crop more than its {d} elements ({format_shape(x)})"
                )
            else:
                shape.append(d + lo + hi)
        return tensor_type(shape, operand_element(self.input))

    def reference(self, x: np.ndarray) -> np.ndarray:
        low, high = ints(self.low), ints(self.high)
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high))
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)]
        return np.pad(x[crop], widths, constant_values=np.asarray(scalar_value(self.value), x.dtype))


# ---------------------------------------------------------------------------
# constant producers whose shape may be symbolic


class _ShapedSourceOp(GraphOp):
    """A tensor of a given (possibly symbolic) shape computed from indices alone.

    The operands only say the sizes of the symbolic dims: each symbol of ``shape`` must
    be a dim of some operand (their data is never read). With a static shape there are
    usually no operands (and the frontends emit a constant instead).
    """

    sources = var_operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    dims = opt_prop_def(DimNamesAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sources attr-dict `:` `(` type($sources) `)` `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.INJECTIVE

    def target_shape(self) -> Shape:
        return target_shape(self.shape, self.dims)

    def element(self) -> Attribute:
        raise NotImplementedError

    def infer_result_type(self) -> TensorType:
        shape = self.target_shape()
        known = {d for v in self.sources for d in operand_shape(v) if isinstance(d, str)}
        for d in shape:
            if isinstance(d, str) and d not in known and not free_symbols(d) <= known:
                raise VerifyException(
                    f"symbolic dim '{d}' of the result {format_shape(shape)} is a dim of no operand "
                    "(operands give the sizes of the symbolic dims, or of the symbols of an expression)"
                )
        return tensor_type(shape, self.element())

    def _sizes(self, sources: Sequence[np.ndarray]) -> tuple[int, ...]:
        known = _symbol_sizes(list(self.sources), sources)
        return tuple(
            (known[d] if d in known else evaluate(d, known)) if isinstance(d, str) else d for d in self.target_shape()
        )


@irdl_op_definition
class FullOp(_ShapedSourceOp):
    """A tensor filled with ``value`` (a typed scalar: its type is the element type).

    Example::

        %z = graph.full %x {value = 1.000000e+00 : f32, shape = array<i64: -1, 3>, dims = #graph.dims<n, _>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>>
    """

    name = "graph.full"
    value = prop_def(FloatAttr | IntegerAttr)
    MOVES_DATA: ClassVar[bool] = True

    def __init__(
        self,
        shape: Sequence[int | str],
        value: float | int | bool,
        element: Attribute,
        sources: Sequence[SSAValue | Operation] = (),
    ):
        self._build([list(sources)], {"value": scalar_attr(value, element), **shape_props(shape)})

    def element(self) -> Attribute:
        return self.value.type

    def reference(self, *sources: np.ndarray) -> np.ndarray:
        dtype = numpy_dtype(self.value.type)
        return np.full(self._sizes(sources), scalar_value(self.value), dtype=dtype)


@irdl_op_definition
class ArangeOp(_ShapedSourceOp):
    """The 1-d tensor ``start + i * step`` for ``i`` in ``[0, shape[0])`` (computed in
    float64 for float types, then rounded, as torch does).

    Example::

        %r = graph.arange %x {start = 0 : i64, step = 1 : i64, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xi64, #graph.dims<n>>
    """

    name = "graph.arange"
    start = prop_def(FloatAttr | IntegerAttr)
    step = prop_def(FloatAttr | IntegerAttr)

    def __init__(
        self,
        length: int | str,
        start: float | int,
        step: float | int,
        element: Attribute,
        sources: Sequence[SSAValue | Operation] = (),
    ):
        self._build(
            [list(sources)],
            {"start": scalar_attr(start, element), "step": scalar_attr(step, element), **shape_props([length])},
        )

    def element(self) -> Attribute:
        return self.start.type

    def in_float32(self, operands: Sequence[SSAValue]) -> ArangeOp:
        if self.element() not in (bf16, f16):  # only a source (giving sizes) was 16-bit
            return super().in_float32(operands)
        (length,) = self.target_shape()
        return ArangeOp(length, scalar_value(self.start), scalar_value(self.step), f32, operands)

    def infer_result_type(self) -> TensorType:
        element = self.start.type
        if is_bool(element):
            raise VerifyException("arange must have a numeric element type, got i1")
        _check_scalar("step", self.step, element)
        if len(self.target_shape()) != 1:
            raise VerifyException(f"arange is 1-d, got shape {format_shape(self.target_shape())}")
        return super().infer_result_type()

    def reference(self, *sources: np.ndarray) -> np.ndarray:
        (n,) = self._sizes(sources)
        dtype = numpy_dtype(self.start.type)
        start, step = scalar_value(self.start), scalar_value(self.step)
        if np.issubdtype(dtype, np.integer):
            return (start + np.arange(n, dtype=np.int64) * step).astype(dtype)
        return (start + np.arange(n, dtype=np.float64) * step).astype(dtype)


INDEXING_OPS: tuple[type[GraphOp], ...] = (
    TakeOp, GatherOp, ScatterOp, CumsumOp, CumprodOp, LogcumsumexpOp, CumargmaxOp, CumargminOp, ArgMaxOp, ArgMinOp,
    ArgsortOp, FlipOp, PadOp, FullOp, ArangeOp,
)  # fmt: skip
