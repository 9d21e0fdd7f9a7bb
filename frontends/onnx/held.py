"""ONNX element types the graph dialect has no type for, held in one it has.

- ``uint16`` / ``uint32`` are held as ``int32`` / ``int64`` values (exact); a result of
  arithmetic that could leave the range is wrapped back to 16 / 32 bits, as the unsigned
  type wraps. ``uint64`` is held as ``int64`` bits: the same bits for +, -, *, bitwise
  ops, shifts; values from 2**63 on are refused where the call converts its inputs
  (order and division would differ).
- ``int4``, ``uint4``, ``int2``, ``uint2`` are held as ``int8`` / ``uint8`` values.
- ``float8e4m3fn``, ``float8e4m3fnuz``, ``float8e5m2``, ``float8e5m2fnuz``, ``float8e8m0``
  and ``float4e2m1`` are held as ``float32`` values, each one a value of the type (a
  cast to the type rounds to them: :func:`round_to`).

A model's inputs and outputs of these types are the holding types in the compiled
module: :func:`to_held` and :func:`from_held` convert arrays at the call (the ONNX backend
and the conformance harness do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto
from xdsl.ir import SSAValue

from .context import OnnxContext, OnnxNode, refuse


@dataclass(frozen=True)
class HeldType:
    """An ONNX element type held in a graph dtype."""

    name: str
    numpy: np.dtype  # the type's own numpy dtype (ml_dtypes for the narrow ones)
    held: np.dtype  # the graph dtype holding it
    wrap_bits: int | None = None  # unsigned integers held wider: results wrapped to these bits
    float_format: bool = False  # held as float32 values of the format

    @property
    def is_integer(self) -> bool:
        return not self.float_format


def _held(name: str, numpy: object, held: object, **kwargs: object) -> HeldType:
    return HeldType(name, np.dtype(numpy), np.dtype(held), **kwargs)


HELD: dict[int, HeldType] = {
    TensorProto.UINT16: _held("uint16", np.uint16, np.int32, wrap_bits=16),
    TensorProto.UINT32: _held("uint32", np.uint32, np.int64, wrap_bits=32),
    TensorProto.UINT64: _held("uint64", np.uint64, np.int64),
    TensorProto.INT4: _held("int4", ml_dtypes.int4, np.int8),
    TensorProto.UINT4: _held("uint4", ml_dtypes.uint4, np.uint8),
    TensorProto.INT2: _held("int2", ml_dtypes.int2, np.int8),
    TensorProto.UINT2: _held("uint2", ml_dtypes.uint2, np.uint8),
    TensorProto.FLOAT8E4M3FN: _held("float8e4m3fn", ml_dtypes.float8_e4m3fn, np.float32, float_format=True),
    TensorProto.FLOAT8E4M3FNUZ: _held("float8e4m3fnuz", ml_dtypes.float8_e4m3fnuz, np.float32, float_format=True),
    TensorProto.FLOAT8E5M2: _held("float8e5m2", ml_dtypes.float8_e5m2, np.float32, float_format=True),
    TensorProto.FLOAT8E5M2FNUZ: _held("float8e5m2fnuz", ml_dtypes.float8_e5m2fnuz, np.float32, float_format=True),
    TensorProto.FLOAT8E8M0: _held("float8e8m0", ml_dtypes.float8_e8m0fnu, np.float32, float_format=True),
    TensorProto.FLOAT4E2M1: _held("float4e2m1", ml_dtypes.float4_e2m1fn, np.float32, float_format=True),
}

#: ops after which a held unsigned result is wrapped back to its bits (they can leave the range)
WRAPPED_OPS = frozenset({"Add", "Sub", "Mul", "Neg", "Pow", "BitShift", "BitwiseNot", "Sum", "CumSum", "CumProd",
                         "ReduceSum", "ReduceProd", "ReduceSumSquare", "MatMul", "Gemm", "Einsum"})  # fmt: skip
#: ops whose results are not of their inputs' type
TYPE_CHANGING_OPS = frozenset({"Cast", "CastLike", "BitCast", "Shape", "Size", "ArgMax", "ArgMin", "NonZero", "QuantizeLinear",
                               "DequantizeLinear", "TopK"})  # fmt: skip


#: converters that read their inputs' element types to decide what to compute (a zero point's
#: type is the quantized type): held inputs would be taken for their holding type
UNAWARE_OPS = frozenset({"DynamicQuantizeLinear", "QLinearMatMul", "QLinearConv",
                         "MatMulInteger", "ConvInteger"})  # fmt: skip


def check_inputs(ctx: OnnxContext, op_type: str, inputs: Sequence[SSAValue | None]) -> None:
    """Refuse by name a held input to a converter that would read it as its holding type."""
    if op_type not in UNAWARE_OPS:
        return
    held = sorted({ctx.held[v].name for v in inputs if v is not None and v in ctx.held})
    if held:
        raise refuse(f"inputs of type {', '.join(held)} (held in wider graph types) are not supported by this op's converter")


def held_type(elem_type: int) -> HeldType | None:
    return HELD.get(elem_type)


# ---------------------------------------------------------------------------
# at the call


def to_held(array: np.ndarray, held: HeldType, name: str) -> np.ndarray:
    """An input of a held type as the array the compiled module takes."""
    array = np.asarray(array)
    if held.name == "uint64" and array.size and int(array.max()) >= 2**63:
        raise ValueError(f"input '{name}': uint64 values from 2**63 on are not supported (held as int64)")
    return array.astype(held.held)


def from_held(array: np.ndarray, held: HeldType) -> np.ndarray:
    """A result of a held type back in the type (exact: the held values are the type's)."""
    array = np.asarray(array)
    if held.wrap_bits is not None or held.name == "uint64":
        return array.astype(held.numpy)  # (wraps: int64 bits -> uint64)
    with np.errstate(all="ignore"):
        return array.astype(held.numpy)


def boundary(model: onnx.ModelProto) -> tuple[dict[str, HeldType], list[HeldType | None]]:
    """The model's graph inputs and outputs of held types: inputs by name, outputs in order."""
    initializers = {t.name for t in model.graph.initializer}

    def of(value: onnx.ValueInfoProto) -> HeldType | None:
        kind = value.type.WhichOneof("value")
        return held_type(value.type.tensor_type.elem_type) if kind == "tensor_type" else None

    inputs = {v.name: h for v in model.graph.input if v.name not in initializers and (h := of(v)) is not None}
    return inputs, [of(v) for v in model.graph.output]


# ---------------------------------------------------------------------------
# in the graph


def mark(ctx: OnnxContext, value: SSAValue, held: HeldType) -> SSAValue:
    ctx.held[value] = held
    return value


def after_node(ctx: OnnxContext, node: OnnxNode, results: Sequence[SSAValue | None]) -> list[SSAValue | None]:
    """A node's results of held unsigned types wrapped to their bits; results of the type of
    a held input (a ``uint32`` Add) marked held too."""
    inputs = [ctx.held[v] for v in node.inputs() if v is not None and v in ctx.held]
    if not inputs or node.op_type in TYPE_CHANGING_OPS:
        return list(results)
    held = inputs[0]
    out = []
    for value in results:
        if value is None or ctx.dtype(value) != held.held or value in ctx.held:
            out.append(value)
            continue
        if held.wrap_bits is not None and node.op_type in WRAPPED_OPS:
            value = ctx.b.bitwise_and(value, ctx.scalar((1 << held.wrap_bits) - 1, value))
        out.append(mark(ctx, value, held))
    return out


@cache
def _format_values(held: HeldType) -> tuple[np.ndarray, np.ndarray]:
    """The format's finite non-negative values, ascending, and whether each has an even
    bit pattern (round to nearest even picks those on ties)."""
    count = 16 if held.name == "float4e2m1" else 256  # (ml_dtypes' float4: one byte each, its low 4 bits)
    patterns = np.arange(count, dtype=np.uint8)
    with np.errstate(all="ignore"):
        values = patterns.view(held.numpy).astype(np.float64)
    keep = np.isfinite(values) & (values >= 0) & ~((values == 0) & np.signbit(values))
    order = np.argsort(values[keep], kind="stable")
    return values[keep][order], (patterns[keep][order] % 2 == 0)


def round_to(ctx: OnnxContext, node: OnnxNode, x: SSAValue, held: HeldType) -> SSAValue:
    """``x`` (a float tensor) cast to a float format, as float32 values of it: round to
    nearest even (``float8e8m0``: its ``round_mode``), saturating or not (``saturate``)."""
    g = ctx.b
    x = ctx.cast(x, np.float64 if ctx.dtype(x) == np.float64 else np.float32)
    values, even = _format_values(held)
    top = values[-1]
    a = g.abs(x)
    if held.name == "float8e8m0":
        mode = node.attr("round_mode", "up")
        if mode == "up":
            index = _count(ctx, a, values[:-1], "gt")
        elif mode == "down":
            index = g.max(g.sub(_count(ctx, a, values, "ge"), ctx.scalar(1, a)), ctx.scalar(0, a))
        elif mode == "nearest":
            index = _count(ctx, a, (values[:-1] + values[1:]) / 2, "ge")
        else:
            raise refuse(f"round_mode '{mode}'")
        over = g.compare(a, ctx.scalar(top, a), "gt")
    else:
        midpoints = (values[:-1] + values[1:]) / 2
        index = _count(ctx, a, midpoints, "ge", even[1:])
        step = values[-1] - values[-2]
        limit = top + step / 2  # [x] > FLT_MAX: past the midpoint to the next (unrepresentable) value
        over = g.compare(a, ctx.scalar(limit, a), "ge" if not even[-1] else "gt")
    rounded = g.take(ctx.constant(values.astype(ctx.dtype(x))), ctx.cast(index, np.int64), 0)
    signed = g.where(g.compare(x, ctx.scalar(0, x), "lt"), g.neg(rounded), rounded)
    saturate = bool(node.attr("saturate", 1))
    infinite = g.compare(a, ctx.scalar(np.inf, a), "eq")
    has_inf = held.name == "float8e5m2"
    if held.name == "float4e2m1":  # (no infinity nor NaN: out of range saturates, as ml_dtypes does)
        saturate = True
    if saturate:
        overflow = g.where(g.compare(x, ctx.scalar(0, x), "lt"), ctx.scalar(-top, x), ctx.scalar(top, x))
    elif has_inf:
        overflow = g.where(g.compare(x, ctx.scalar(0, x), "lt"), ctx.scalar(-np.inf, x), ctx.scalar(np.inf, x))
    else:
        overflow = ctx.scalar(np.nan, x)
    result = g.where(g.bitwise_or(over, infinite), overflow, signed)
    nan = ctx.scalar(0.0 if held.name == "float4e2m1" else np.nan, x)
    result = g.where(g.compare(x, x, "ne"), nan, result)
    return ctx.cast(result, np.float32)


def _count(ctx: OnnxContext, a: SSAValue, bounds: np.ndarray, predicate: str, strict_where: np.ndarray | None = None) -> SSAValue:
    """How many of ``bounds`` ``a`` passes (``a >= b``; with ``strict_where``, ``a > b`` where
    it is False: a tie there rounds down)."""
    g = ctx.b
    total = None
    for k, bound in enumerate(bounds):
        kind = predicate if strict_where is None or strict_where[k] else "gt"
        passed = ctx.cast(g.compare(a, ctx.scalar(float(bound), a), kind), np.int32)
        total = passed if total is None else g.add(total, passed)
    return total


def cast_to_held(ctx: OnnxContext, node: OnnxNode, x: SSAValue, held: HeldType) -> SSAValue:
    """ONNX's Cast of ``x`` to a held type, as its holding values."""
    g = ctx.b
    if held.float_format:
        value = x if ctx.is_float(x) else ctx.cast(x, np.float32)
        return mark(ctx, round_to(ctx, node, value, held), held)
    info = ml_dtypes.iinfo(held.numpy)
    if ctx.is_float(x):
        # floats: truncated; out of the type's range undefined (ml_dtypes gives 0 for the narrow types)
        truncated = ctx.cast(x, np.int64)
        if held.name in ("int4", "uint4", "int2", "uint2"):
            wide = ctx.cast(g.trunc(x), np.float64)
            inside = g.bitwise_and(g.compare(wide, ctx.scalar(float(info.min), wide), "ge"), g.compare(wide, ctx.scalar(float(info.max), wide), "le"))
            truncated = g.where(inside, truncated, ctx.scalar(0, truncated))
        value = truncated
    else:
        value = ctx.cast(x, np.int64)
    if held.name != "uint64":  # fixed point: the low bits, two's complement (uint64: int64's own)
        bits = held.wrap_bits or {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2}[held.name]
        value = g.bitwise_and(value, ctx.scalar((1 << bits) - 1, value))
        if held.numpy.kind == "i":  # sign-extend
            half = 1 << (bits - 1)
            value = g.sub(g.bitwise_xor(value, ctx.scalar(half, value)), ctx.scalar(half, value))
    return mark(ctx, ctx.cast(value, held.held), held)
