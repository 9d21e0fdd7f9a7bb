"""Quick constructors of the llvm-dialect ops the lowering emits by the ten thousand.

xDSL's op constructors rebuild and check their attributes at every call (on this machine
an ``llvm.mul`` takes 28 us, a ``getelementptr`` 93 us, an ``i64`` constant 22 us). These
make the same ops with ``Operation.create`` from attributes made once (9-14 us each),
for the address arithmetic, constants, loads and stores that are most of loop-to-llvm's
output: DenseNet-121's kernels are ~50,000 of them. Each makes exactly the op its xDSL
constructor makes, property for property (``tests/test_llvm_ops.py`` compares them).

Example::

    offset = b.insert(mul(row, constant(8)))
    pointer = b.insert(gep(base, offset, f32))
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, UnitAttr, i32, i64
from xdsl.ir import Attribute, SSAValue

#: the flags of an add or mul without ``nsw``/``nuw`` (xDSL's default)
_NO_FLAGS = IntegerAttr(0, 32)
#: ``nsw``
NO_SIGNED_WRAP = IntegerAttr(llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,)).to_int(), 32)
#: a GEP's constant indices when its one index is a value
_ONE_DYNAMIC_INDEX = DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL])
_ORDERING = IntegerAttr(0, 64)  # not atomic


@lru_cache(maxsize=4096)
def integer(value: int, t: Attribute = i64) -> IntegerAttr:
    """``IntegerAttr(value, t)``, made once per value and type."""
    return IntegerAttr(value, t)


def constant(value: int, t: Attribute = i64) -> llvm.ConstantOp:
    """``llvm.mlir.constant(value) : t`` for an integer type ``t``."""
    return llvm.ConstantOp.create(properties={"value": integer(value, t)}, result_types=[t])


def add(lhs: SSAValue, rhs: SSAValue, flags: IntegerAttr = _NO_FLAGS) -> llvm.AddOp:
    """``llvm.add`` (``flags``: ``NO_SIGNED_WRAP`` for ``nsw``)."""
    return llvm.AddOp.create(operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": flags})


def mul(lhs: SSAValue, rhs: SSAValue) -> llvm.MulOp:
    return llvm.MulOp.create(operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": _NO_FLAGS})


def gep(pointer: SSAValue, offset: SSAValue, element: Attribute) -> llvm.GEPOp:
    """``getelementptr inbounds element, pointer, offset``."""
    properties = {"rawConstantIndices": _ONE_DYNAMIC_INDEX, "elem_type": element, "noWrapFlags": _NO_FLAGS,
                  "inbounds": UnitAttr()}  # fmt: skip
    return llvm.GEPOp.create(operands=[pointer, offset], result_types=[llvm.LLVMPointerType()], properties=properties)


def load(address: SSAValue, t: Attribute, alignment: int | None = None) -> llvm.LoadOp:
    properties: dict[str, Attribute] = {"ordering": _ORDERING}
    if alignment is not None:
        properties["alignment"] = integer(alignment)
    return llvm.LoadOp.create(operands=[address], result_types=[t], properties=properties)


def store(value: SSAValue, address: SSAValue, alignment: int | None = None) -> llvm.StoreOp:
    properties: dict[str, Attribute] = {"ordering": _ORDERING}
    if alignment is not None:
        properties["alignment"] = integer(alignment)
    return llvm.StoreOp.create(operands=[value, address], properties=properties)


__all__ = ["NO_SIGNED_WRAP", "add", "constant", "gep", "integer", "load", "mul", "store"]
