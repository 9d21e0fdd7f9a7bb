"""lowering/llvm_ops.py: each quick constructor makes the op xDSL's constructor makes."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, VectorType, f32, i8, i32, i64
from xdsl.ir import Block

from tensorkiln.lowering import llvm_ops


def _same(quick, reference, verify: bool = True) -> None:
    assert type(quick) is type(reference)
    assert dict(quick.properties) == dict(reference.properties)
    assert dict(quick.attributes) == dict(reference.attributes)
    assert list(quick.operands) == list(reference.operands)
    assert list(quick.result_types) == list(reference.result_types)
    if verify:  # (a branch verifies only inside a region)
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


def test_made_from_a_template_equal_their_constructors():
    """``make`` copies what xDSL's constructor made for the same operand types and other
    arguments: the second op of each kind (made from the template) equals a fresh one."""
    from xdsl.dialects.builtin import DenseArrayBase, f64

    from tensorkiln.lowering.vectorize import VectorSelectOp

    block = Block(arg_types=[i64, i64, f32, f32, VectorType(f32, [8]), llvm.LLVMPointerType()])
    x, y, p, q, v, _ = block.args
    fast = llvm.FastMathAttr(("contract",))
    flag = llvm.ICmpOp(x, y, llvm_ops.icmp_predicate("slt")).res
    lanes = VectorType(f32, [8])
    flags = llvm.FCmpOp(v, v, llvm_ops.integer(1)).res
    cases = [
        (llvm.FAddOp, p, q, fast), (llvm.FMulOp, p, q, llvm.FastMathAttr(None)), (llvm.SubOp, x, y), (llvm.XOrOp, x, y),
        (llvm.ICmpOp, x, y, llvm_ops.icmp_predicate("sle")), (llvm.FCmpOp, p, q, llvm_ops.integer(4)),
        (llvm.SelectOp, flag, x, y), (llvm.SelectOp, flag, p, q), (llvm.UndefOp, lanes), (llvm.UndefOp, f64),
        (llvm.InsertElementOp, v, p, llvm.ConstantOp(IntegerAttr(3, i32), i32).result),
        (llvm.ShuffleVectorOp, v, v, DenseArrayBase.from_list(i32, [0] * 8), lanes),
        (VectorSelectOp, flags, v, v),
    ]  # fmt: skip
    for cls, *args in cases:
        llvm_ops.make(cls, *args)  # (the first may make the template)
        _same(llvm_ops.make(cls, *args), cls(*args))
    # an attribute equal to the template's but spelled otherwise is the one passed
    from xdsl.dialects.utils.fast_math import FastMathFlag

    enum_flags = llvm.FastMathAttr((FastMathFlag.ALLOW_CONTRACT,))
    assert enum_flags == fast and llvm_ops.make(llvm.FAddOp, p, q, enum_flags).fastmathFlags is enum_flags
    assert llvm_ops.make(llvm.ICmpOp, x, y, llvm_ops.icmp_predicate("eq")).properties != llvm_ops.make(
        llvm.ICmpOp, x, y, llvm_ops.icmp_predicate("ne")
    ).properties


def test_branches():
    header, body, done = Block(arg_types=[i64, i64]), Block(), Block()
    x = llvm.ConstantOp(IntegerAttr(5, i64), i64).result
    for quick, reference in [(llvm_ops.br(header, x, x), llvm.BrOp(header, x, x)), (llvm_ops.br(done), llvm.BrOp(done))]:
        _same(quick, reference, verify=False)
        assert list(quick.successors) == list(reference.successors)
    flag = llvm.ICmpOp(x, x, llvm_ops.icmp_predicate("eq")).res
    quick, reference = llvm_ops.cond_br(flag, body, done), llvm.CondBrOp(flag, body, [], done, [])
    _same(quick, reference, verify=False)
    assert list(quick.successors) == list(reference.successors) == [body, done]
