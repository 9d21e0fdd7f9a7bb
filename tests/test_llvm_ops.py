"""lowering/llvm_ops.py: each quick constructor makes the op xDSL's constructor makes."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, VectorType, f32, i8, i32, i64
from xdsl.ir import Block

from tensorkiln.lowering import llvm_ops


def _same(quick, reference) -> None:
    assert type(quick) is type(reference)
    assert dict(quick.properties) == dict(reference.properties)
    assert dict(quick.attributes) == dict(reference.attributes)
    assert list(quick.operands) == list(reference.operands)
    assert list(quick.result_types) == list(reference.result_types)
    quick.verify()


@pytest.mark.parametrize("value, t", [(0, i64), (-7, i64), (1 << 40, i64), (3, i32), (255, i8)])
def test_constants(value, t):
    _same(llvm_ops.constant(value, t), llvm.ConstantOp(IntegerAttr(value, t), t))
    assert llvm_ops.integer(value, t) is llvm_ops.integer(value, t)


def test_arithmetic_addresses_loads_and_stores():
    x = llvm.ConstantOp(IntegerAttr(5, i64), i64).result
    y = llvm.ConstantOp(IntegerAttr(9, i64), i64).result
    nsw = llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))
    _same(llvm_ops.add(x, y), llvm.AddOp(x, y))
    _same(llvm_ops.add(x, y, llvm_ops.NO_SIGNED_WRAP), llvm.AddOp(x, y, overflow=nsw))
    _same(llvm_ops.mul(x, y), llvm.MulOp(x, y))
    base = Block(arg_types=[llvm.LLVMPointerType()]).args[0]
    for element in (f32, i8, VectorType(f32, [8])):
        _same(llvm_ops.gep(base, y, element), llvm.GEPOp.from_mixed_indices(base, [y], pointee_type=element, inbounds=True))
    pointer = llvm_ops.gep(base, y, f32).result
    value = llvm.ConstantOp(IntegerAttr(1, i32), i32).result
    for alignment in (None, 1, 32):
        _same(llvm_ops.load(pointer, f32, alignment), llvm.LoadOp(pointer, f32, alignment=alignment))
        _same(llvm_ops.store(value, pointer, alignment), llvm.StoreOp(value, pointer, alignment=alignment))
