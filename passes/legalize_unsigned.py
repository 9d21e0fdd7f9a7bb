"""``legalize-unsigned``: uint8 tensors are stored in 8 bits, computed in i32, and
their type is erased to the signless i8 before graph-to-te.

xDSL's ``arith`` (like MLIR's) has signless integers only: the signedness is in the
ops (``extui``, ``divui``, ``cmpi ult``), and the compute rules of graph-to-te emit
the signed ones. As for 16-bit floats (``legalize-16bit-floats``), every op that
computes on uint8 values runs on their zero extension to i32 and its result is
truncated back to 8 bits, which is also how torch's uint8 arithmetic wraps::

    %y = graph.add %x, %c : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>

becomes (``zext``: the cast and a mask, below)::

    %y32 = graph.add zext(%x), zext(%c) : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
    %y = graph.cast %y32 : tensor<4xi32> -> tensor<4xi8>

Ops that only move or select elements (:attr:`GraphOp.MOVES_DATA`) keep their bytes.
A cast from uint8 goes through i32; a cast to it from a float clamps to [0, 255]
first (the graph's casts saturate). Then every ``ui8`` type becomes ``i8``: a cast
from such a byte to i32 sign-extends, so a zero extension is that cast and
``& 255``; constants and uint8 properties (``full``, ``pad`` values) keep their bits.

The compiled function still takes and returns uint8 arrays: the runtime signature is
read before this pass, and a byte is a byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerAttr, ModuleOp, TensorType, i8, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph.base import GraphOp
from ..dialects.graph.constant import ConstantOp
from ..dialects.graph.elementwise import BitwiseAndOp, CastOp, MaxOp, MinOp
from ..dialects.graph.types import UI8, WeightAttr, is_float
from .legalize_16bit_floats import replace_with_widened


def is_unsigned_byte(t: Attribute) -> bool:
    """Whether ``t`` is a uint8 tensor type."""
    return isinstance(t, TensorType) and t.element_type == UI8


def _insert(op: GraphOp, before: Operation) -> SSAValue:
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


def _i32_scalar(value: int, before: Operation) -> SSAValue:
    return _insert(ConstantOp.from_array(np.asarray(value, dtype=np.int32)), before)


def _to_i32(value: SSAValue, before: Operation) -> SSAValue:
    return _insert(CastOp(value, i32), before)


def _route_cast(op: CastOp) -> None:
    """A cast between uint8 and another type goes through i32, clamped to [0, 255]
    on the way from a float (saturating, as the graph's casts are)."""
    frm, to = op.input.type.element_type, op.result.type.element_type
    if frm == to or i32 in (frm, to) or UI8 not in (frm, to):
        return
    value = _to_i32(op.input, op)
    if to == UI8 and is_float(frm):
        value = _insert(MaxOp(value, _i32_scalar(0, op)), op)
        value = _insert(MinOp(value, _i32_scalar(255, op)), op)
    op.operands[0] = value


def _compute_in_i32(op: GraphOp) -> None:
    operands = [_to_i32(v, op) if is_unsigned_byte(v.type) else v for v in op.operands]
    # (the base method: a copy on these operands, its type inferred again; overrides make float32)
    replace_with_widened(op, GraphOp.in_float32(op, operands), is_unsigned_byte, "legalize-unsigned")


def _signless(t: Attribute) -> Attribute:
    if is_unsigned_byte(t):
        return TensorType(i8, t.get_shape())
    if isinstance(t, IntegerAttr) and t.type == UI8:
        value = t.value.data
        return IntegerAttr(value - 256 if value > 127 else value, i8)
    return t


def _erase(module: ModuleOp) -> None:
    """Every uint8 type becomes i8, keeping the bits; zero extensions made explicit."""
    for op in list(module.walk()):
        if isinstance(op, CastOp) and is_unsigned_byte(op.input.type) and op.result.type.element_type == i32:
            mask = BitwiseAndOp(op.result, _i32_scalar(255, op))
            Rewriter.insert_op(mask, InsertPoint.after(op))
            op.result.replace_all_uses_with(mask.result)
            mask.operands[0] = op.result
    for op in list(module.walk()):
        if isinstance(op, ConstantOp) and is_unsigned_byte(op.result.type):
            name = op.value.data.name if isinstance(op.value, WeightAttr) else "const"
            Rewriter.replace_op(op, ConstantOp.from_array(op.array().view(np.int8), name))
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    arg._type = _signless(arg.type)  # pyright: ignore[reportPrivateUsage]
        for result in op.results:
            result._type = _signless(result.type)  # pyright: ignore[reportPrivateUsage]
        if isinstance(op, CastOp):
            op._to = op.result.type.element_type  # (what a built cast infers its type from)
        for name, value in op.properties.items():
            op.properties[name] = _signless(value)
        if isinstance(op, func.FuncOp):
            inputs, outputs = op.function_type.inputs.data, op.function_type.outputs.data
            op.properties["function_type"] = FunctionType.from_lists(
                [_signless(t) for t in inputs], [_signless(t) for t in outputs]
            )


def uses_unsigned_bytes(op: Operation) -> bool:
    """Whether ``op`` or an op inside it has a uint8 tensor operand or result."""
    return any(is_unsigned_byte(v.type) for o in op.walk() for v in (*o.operands, *o.results))


def legalize_unsigned(module: ModuleOp) -> None:
    """Rewrite ``module`` in place so that uint8 is stored as i8 bytes, never computed."""
    if not uses_unsigned_bytes(module):
        return
    for op in list(module.walk()):
        if isinstance(op, CastOp):
            _route_cast(op)
        elif isinstance(op, GraphOp) and not op.MOVES_DATA:
            # (an op making uint8 from its properties alone, like arange, computes in the
            # erased i8: its +, * wrap the same way)
            if any(is_unsigned_byte(v.type) for v in op.operands):
                _compute_in_i32(op)
    _erase(module)


@dataclass(frozen=True)
class LegalizeUnsignedPass(ModulePass):
    """Compute uint8 ops in i32 and erase uint8 to i8 bytes (see the module doc)."""

    name = "legalize-unsigned"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        legalize_unsigned(op)
