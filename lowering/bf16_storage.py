"""``bf16-storage``: bfloat16 buffers and values of loop IR as 16-bit integers.

After ``legalize-16bit-floats`` a kernel only loads, stores, selects and converts bfloat16
(``arith.extf`` to float32, ``arith.truncf`` from it); nothing computes in it. This
pass makes those integer operations, so that neither LLVM (whose bfloat16 conversions
call runtime functions the JIT cannot resolve) nor the CUDA printer needs the type:

- ``memref<...xbf16>`` becomes ``memref<...xi16>`` and a ``bf16`` value an ``i16``
  holding its bits;
- ``extf`` is exact: the 16 bits become the high half of a float32;
- ``truncf`` rounds to nearest, ties to even: add ``0x7FFF`` plus the lowest kept bit,
  keep the high half (a carry into the exponent rounds up to the next binade or to
  infinity, as it should); NaN becomes the quiet NaN ``0x7FC0``, as torch's;
- a ``bf16`` constant becomes its bits (rounded to nearest even).

Any other op on bfloat16 is an error naming it (``legalize-16bit-floats`` did not run).

Example::

    %v = loop.load %x[%i] : memref<8xbf16>
    %w = arith.extf %v : bf16 to f32

becomes::

    %v = loop.load %x[%i] : memref<8xi16>
    %0 = arith.extui %v : i16 to i32
    %1 = arith.shli %0, %c16 : i32
    %w = arith.bitcast %1 : i32 to f32
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, IntegerAttr, MemRefType, ModuleOp, bf16, f32, i16, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.graph.types import bfloat16_dtype
from ..dialects.walk import walk_ops

#: what torch writes for a NaN
_QUIET_NAN = 0x7FC0


def _storage(t: Attribute) -> Attribute:
    """``t`` with bfloat16 replaced by its 16-bit storage."""
    if t == bf16:
        return i16
    if isinstance(t, MemRefType) and t.element_type == bf16:
        return MemRefType(i16, t.get_shape(), t.layout, t.memory_space)
    return t


def _retype(value: SSAValue) -> None:
    new = _storage(value.type)
    if new is not value.type:
        # In place: every user of a bfloat16 value is rewritten by this pass or only
        # moves the bits (load, store, select, call), which the integer type keeps.
        value._type = new  # pyright: ignore[reportPrivateUsage]


class _Emitter:
    """Inserts ops before one op: ``e(op)`` inserts ``op`` and returns its result."""

    def __init__(self, before: Operation):
        self.point = InsertPoint.before(before)

    def __call__(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.point)
        return op.results[0]

    def int(self, value: int, t: Attribute) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(value, t)))


def _widen(op: arith.ExtFOp) -> SSAValue:
    e = _Emitter(op)
    high = e(arith.ShLIOp(e(arith.ExtUIOp(op.input, i32)), e.int(16, i32)))
    x = e(arith.BitcastOp(high, f32))
    return x if op.result.type == f32 else e(arith.ExtFOp(x, op.result.type))


def _round(op: arith.TruncFOp) -> SSAValue:
    e = _Emitter(op)
    x = op.input
    if x.type != f32:  # float64: to float32 first, as torch converts
        x = e(arith.TruncFOp(x, f32))
    bits = e(arith.BitcastOp(x, i32))
    sixteen = e.int(16, i32)
    lowest_kept = e(arith.AndIOp(e(arith.ShRUIOp(bits, sixteen)), e.int(1, i32)))
    rounded = e(arith.AddiOp(bits, e(arith.AddiOp(lowest_kept, e.int(0x7FFF, i32)))))
    high = e(arith.TruncIOp(e(arith.ShRUIOp(rounded, sixteen)), i16))
    is_nan = e(arith.CmpfOp(x, x, "uno"))
    return e(arith.SelectOp(is_nan, e.int(_QUIET_NAN, i16), high))


def _bits_constant(op: arith.ConstantOp) -> SSAValue:
    value = np.array(op.value.value.data, np.float32).astype(bfloat16_dtype()).view(np.int16)
    return _Emitter(op).int(int(value), i16)


_REWRITES = {arith.ExtFOp: _widen, arith.TruncFOp: _round, arith.ConstantOp: _bits_constant}

#: ops that only move a bfloat16 value's bits
_MOVES_BITS = (loop.LoadOp, loop.StoreOp, arith.SelectOp)


def _rewrites(op: Operation) -> bool:
    if isinstance(op, arith.ExtFOp):
        return op.input.type == bf16
    if isinstance(op, arith.TruncFOp | arith.ConstantOp):
        return op.result.type == bf16
    return False


def bf16_storage(module: ModuleOp) -> None:
    """Rewrite ``module`` (loop IR) in place: bfloat16 as 16-bit integers."""
    # which ops convert is decided on the types as they were: a rewrite makes i16 values
    conversions = [op for op in walk_ops(module) if _rewrites(op)]
    for op in walk_ops(module):
        if not isinstance(op, _MOVES_BITS) and not _rewrites(op):
            if any(v.type == bf16 for v in (*op.operands, *op.results)):
                raise PassFailedException(
                    f"bf16-storage: '{op.name}' computes on bfloat16 (run legalize-16bit-floats on the graph first)"
                )
    for op in conversions:
        op.result.replace_all_uses_with(_REWRITES[type(op)](op))
        Rewriter.erase_op(op)
    # then the types, once no rewrite needs to see which values were bfloat16
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    _retype(arg)
        for result in op.results:
            _retype(result)
        if isinstance(op, func.FuncOp):
            inputs, outputs = op.function_type.inputs.data, op.function_type.outputs.data
            op.function_type = FunctionType.from_lists([_storage(t) for t in inputs], [_storage(t) for t in outputs])


@dataclass(frozen=True)
class Bf16StoragePass(ModulePass):
    """bfloat16 in loop IR as 16-bit integers (see the module doc)."""

    name = "bf16-storage"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bf16_storage(op)
