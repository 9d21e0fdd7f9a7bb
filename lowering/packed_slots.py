"""Arrays of 8-byte slots, how generated code passes arguments through one pointer: a
packed entry's arguments (``loop_to_llvm.py``, ``runtime/packed_call.py``) and the
captures of a parallel loop's thread function (``parallel_to_llvm.py``). Slot ``j``
holds a pointer, or an ``i64`` holding a value's bits (zero-extended)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerType, i64
from xdsl.ir import Attribute, Operation, SSAValue


def slot_type(t: Attribute) -> Attribute:
    """How a value of LLVM type ``t`` is loaded from its slot: a pointer, else an ``i64``."""
    return llvm.LLVMPointerType() if isinstance(t, llvm.LLVMPointerType) else i64


def _bits(t: Attribute) -> int:
    return t.bitwidth if hasattr(t, "bitwidth") else t.width.data


def to_slot(ins: Callable[[Operation], SSAValue], v: SSAValue) -> SSAValue:
    """``v`` as the 8-byte slot value that stores it (a pointer, or an i64 holding its bits)."""
    t = v.type
    if isinstance(t, llvm.LLVMPointerType) or t == i64:
        return v
    if not isinstance(t, IntegerType):  # a float: its bits
        v = ins(llvm.BitcastOp(v, IntegerType(_bits(t))))
    if _bits(v.type) == 64:
        return v
    return ins(llvm.ZExtOp(v, i64))


def from_slot(ins: Callable[[Operation], SSAValue], raw: SSAValue, t: Attribute) -> SSAValue:
    """The inverse of :func:`to_slot`: the value of type ``t`` held in ``raw``."""
    if isinstance(t, llvm.LLVMPointerType) or t == i64:
        return raw
    bits = _bits(t)
    if bits < 64:
        raw = ins(llvm.TruncOp(raw, IntegerType(bits)))
    if not isinstance(t, IntegerType):
        raw = ins(llvm.BitcastOp(raw, t))
    return raw


__all__ = ["from_slot", "slot_type", "to_slot"]
