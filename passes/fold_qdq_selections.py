"""fold-qdq's second part: ``quantize(op(dequantize(q)))`` at one scale and zero point,
where ``op`` only picks or moves elements (a max pool, a reshape, a transpose), is
``op(q)`` on the quantized values. ONNX Runtime's quantizer writes ResNet's max pool so;
in float32 it cost a dequantize pass (writing 4 bytes per byte), the pool and a quantize.

Exact: a positive scale keeps the order a max compares, and the round trip
``quantize(dequantize(q))`` of an 8-bit ``q`` is ``q``. A uint8 pool would compute in
i32 (``legalize-unsigned`` widens uint8 arithmetic, in separate kernels), so a uint8
value is moved to int8 first -- ``q - 128`` with zero point ``z - 128``, the same real
numbers and saturation -- from its producer (a quantized product or a quantize) to its
readers (quantized products' inputs, dequantizes, more such ops); where some reader or
the producer cannot change, the island stays float32.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, i8
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph import ConstantOp
from ..dialects.graph.nn import MaxPool2dOp
from ..dialects.graph.quant import DequantizeOp, QuantizedProductOp, QuantizeOp, as_values
from ..dialects.graph.shape import ReshapeOp, TransposeOp
from ..dialects.graph.types import UI8

#: ops that only pick or move their input's elements (operand 0)
SELECTIONS = (MaxPool2dOp, ReshapeOp, TransposeOp)


def scalar_constant(value: SSAValue) -> int | float | None:
    """The value of a one-element ``graph.constant``, else None."""
    owner = value.owner
    if not isinstance(owner, ConstantOp) or owner.array().size != 1:
        return None
    return owner.array().reshape(-1)[0].item()


#: where an op keeps a uint8 value's zero point: (operand index, its dtype property)
ZeroPoint = tuple[int, str]


def _product_zero_point(op: QuantizedProductOp, which: str) -> ZeroPoint:
    # operands: input, weight, [bias], x scale, x zero point, w scale, w zero point, y scale, y zero point
    base = 2 + (op.bias is not None)
    return (base + 1, "x_dtype") if which == "x" else (base + 5, "y_dtype")


def _readers_take_int8(value: SSAValue, found: list[tuple[Operation, ZeroPoint | None]]) -> bool:
    """Whether every reader of ``value`` can read int8 as well (collecting into ``found``
    each reader and its zero point, None for a selection, whose readers follow it)."""
    for use in value.uses:
        reader = use.operation
        if use.index != 0:
            return False
        if isinstance(reader, QuantizedProductOp):
            found.append((reader, _product_zero_point(reader, "x")))
        elif isinstance(reader, DequantizeOp) and reader.channel_axis(value.type.get_shape()) is None:
            found.append((reader, (2, "dtype")))
        elif isinstance(reader, SELECTIONS):
            found.append((reader, None))
            if not _readers_take_int8(reader.results[0], found):
                return False
        else:
            return False
    return True


def _producer_zero_point(value: SSAValue) -> ZeroPoint | None:
    """Where the producer of the uint8 ``value`` keeps its zero point, or None where the
    producer cannot make int8."""
    owner = value.owner
    if isinstance(owner, QuantizedProductOp):
        return _product_zero_point(owner, "y")
    if isinstance(owner, QuantizeOp) and owner.channel_axis(value.type.get_shape()) is None:
        return 2, "dtype"
    return None


def _plan(values: list[SSAValue]) -> list[tuple[Operation, ZeroPoint | None]] | None:
    """The ops to rebuild to move the uint8 ``values`` (one producer's) to int8: the
    producer, then the readers; None where one cannot change."""
    producer = _producer_zero_point(values[0])
    if producer is None:
        return None
    ops: list[tuple[Operation, ZeroPoint | None]] = [(values[0].owner, producer)]
    for value in values:
        if not _readers_take_int8(value, ops):
            return None
    if any(zp is not None and scalar_constant(op.operands[zp[0]]) is None for op, zp in ops):
        return None
    return ops


def _rebuilt(op: Operation, zero_point: ZeroPoint | None) -> None:
    """``op`` again with int8 in place of uint8: its zero point (a constant) minus 128;
    the result int8 too where it is the moved value (the producer's, a selection's)."""
    operands, properties = list(op.operands), dict(op.properties)
    if zero_point is not None:
        index, dtype = zero_point
        old = operands[index].owner.array()
        shifted = (as_values(old, "ui8") - 128).astype(np.int8).reshape(old.shape)
        constant = ConstantOp.from_array(shifted, "zero_point.i8")
        Rewriter.insert_op(constant, InsertPoint.before(op))
        operands[index] = constant.result
        properties[dtype] = StringAttr("i8")
    result = op.results[0].type
    if (zero_point is None or zero_point[1] != "x_dtype") and not isinstance(op, DequantizeOp):
        result = TensorType(i8, result.get_shape())  # the producer's and a selection's
    new = type(op).create(operands=operands, result_types=[result], properties=properties, attributes=dict(op.attributes))
    Rewriter.insert_op(new, InsertPoint.before(op))
    op.results[0].replace_all_uses_with(new.results[0])
    Rewriter.erase_op(op)


def fold_selection(quantize: QuantizeOp) -> bool:
    """``quantize(op(dequantize(q)))`` -> ``op(q)`` (module doc); whether it folded."""
    op = quantize.input.owner
    if not isinstance(op, SELECTIONS) or len(list(op.results[0].uses)) != 1:
        return False
    dq = op.operands[0].owner
    if not isinstance(dq, DequantizeOp) or dq.input.type.element_type != quantize.result.type.element_type:
        return False
    scale = scalar_constant(dq.scale)
    if scale is None or not scale > 0 or scale != scalar_constant(quantize.scale):
        return False
    zero_point = scalar_constant(dq.zero_point)
    if zero_point is None or zero_point != scalar_constant(quantize.zero_point):
        return False
    signed = dq.input.type.element_type == UI8 and isinstance(op, MaxPool2dOp)
    if signed and _plan([dq.input, quantize.result]) is None:
        return False  # the pool would compare uint8 in i32 (module doc): leave the island
    properties, attributes = dict(op.properties), dict(op.attributes)
    new = type(op).create(
        operands=[dq.input, *op.operands[1:]], result_types=[quantize.result.type], properties=properties, attributes=attributes
    )
    Rewriter.insert_op(new, InsertPoint.before(quantize))
    quantize.result.replace_all_uses_with(new.results[0])
    Rewriter.erase_op(quantize)
    Rewriter.erase_op(op)
    if not list(dq.result.uses):
        Rewriter.erase_op(dq)
    if signed:  # the pool compares signed bytes (module doc)
        for rebuilt, zero_point in _plan([new.operands[0]]) or ():
            _rebuilt(rebuilt, zero_point)
    return True


__all__ = ["SELECTIONS", "fold_selection", "scalar_constant"]
