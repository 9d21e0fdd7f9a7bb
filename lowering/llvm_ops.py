"""Quick constructors of the llvm-dialect ops the lowering emits by the ten thousand.

xDSL's op constructors rebuild and check their attributes at every call (on this machine
an ``llvm.mul`` takes 28 us, a ``getelementptr`` 93 us, an ``i64`` constant 22 us). These
make the same ops with ``Operation.create`` from attributes made once (9-14 us each),
for the address arithmetic, constants, loads and stores that are most of loop-to-llvm's
output: DenseNet-121's kernels are ~50,000 of them. Each makes exactly the op its xDSL
constructor makes, property for property (``tests/test_llvm_ops.py`` compares them).
:func:`make` does the same for any other op whose constructor's output depends only on
its operands' types and its other arguments (compares, float arithmetic, selects, vector
shuffles): the first op of each kind is made by xDSL, the rest copy its properties;
:func:`br` and :func:`cond_br` for the branches. :class:`VectorFCmpOp` and
:class:`VectorSelectOp` are ``llvm.fcmp`` and ``llvm.select`` with vector operands
(which xDSL 0.74's definitions refuse).

Example::

    offset = b.insert(mul(row, constant(8)))
    pointer = b.insert(gep(base, offset, f32))
    total = b.insert(make(llvm.FAddOp, x, y, fastmath))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, TypeVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import I1, AnyFloatConstr, DenseArrayBase, IntegerAttr, IntegerType, UnitAttr, VectorType, i1, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

OpT = TypeVar("OpT", bound=Operation)

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


@lru_cache(maxsize=16)
def icmp_predicate(name: str) -> IntegerAttr:
    """An ``llvm.icmp`` predicate (``"slt"``, ``"eq"``, ...) as its attribute, made once."""
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


def constant(value: int, t: Attribute = i64) -> llvm.ConstantOp:
    """``llvm.mlir.constant(value) : t`` for an integer type ``t``."""
    return llvm.ConstantOp.create(properties={"value": integer(value, t)}, result_types=[t])


def add(lhs: SSAValue, rhs: SSAValue, flags: IntegerAttr = _NO_FLAGS) -> llvm.AddOp:
    """``llvm.add`` (``flags``: ``NO_SIGNED_WRAP`` for ``nsw``)."""
    return llvm.AddOp.create(operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": flags})


def mul(lhs: SSAValue, rhs: SSAValue) -> llvm.MulOp:
    return llvm.MulOp.create(operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": _NO_FLAGS})


#: the opaque pointer type (made once: an attribute is verified as it is made)
_POINTER = llvm.LLVMPointerType()


def gep(pointer: SSAValue, offset: SSAValue, element: Attribute) -> llvm.GEPOp:
    """``getelementptr inbounds element, pointer, offset``."""
    properties = {"rawConstantIndices": _ONE_DYNAMIC_INDEX, "elem_type": element, "noWrapFlags": _NO_FLAGS,
                  "inbounds": UnitAttr()}  # fmt: skip
    return llvm.GEPOp.create(operands=[pointer, offset], result_types=[_POINTER], properties=properties)


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


@dataclass(frozen=True)
class _Template:
    """What xDSL's constructor made of some arguments: the properties (``passed``: those
    that were arguments, by property name and argument position), attributes and result types."""

    properties: dict[str, Attribute]
    passed: tuple[tuple[str, int], ...]
    attributes: dict[str, Attribute]
    result_types: list[Attribute]


#: class -> whether it is an SSA value's (``isinstance(a, SSAValue)`` goes through ABCMeta's
#: Python-level check: a tenth of loop-to-llvm's time was such checks)
_IS_VALUE: dict[type, bool] = {}

#: (op class, its arguments with values replaced by their types) -> its template
_TEMPLATES: dict[tuple, _Template] = {}


def make(cls: type[OpT], *args: object) -> OpT:
    """``cls(*args)`` (SSA values and hashable constructor arguments, positional; the SSA
    values are the operands, in order), made by ``Operation.create`` from what the first
    ``cls(...)`` with the same operand types and equal other arguments made. A property
    that was an argument is this call's argument (an equal attribute may differ inside:
    a fastmath flag as a string or as its enum)."""
    values = []
    for a in args:
        is_value = _IS_VALUE.get(type(a))
        if is_value is None:
            is_value = _IS_VALUE[type(a)] = isinstance(a, SSAValue)
        values.append(is_value)
    key = (cls, *(a.type if is_value else a for a, is_value in zip(args, values)))
    template = _TEMPLATES.get(key)
    if template is None:
        op = cls(*args)
        passed = tuple((name, k) for name, value in op.properties.items() for k, a in enumerate(args) if value is a)
        _TEMPLATES[key] = _Template(dict(op.properties), passed, dict(op.attributes), list(op.result_types))
        return op
    properties = dict(template.properties)
    for name, k in template.passed:
        properties[name] = args[k]
    operands = [a for a, is_value in zip(args, values) if is_value]
    return cls.create(operands=operands, result_types=template.result_types, properties=properties, attributes=dict(template.attributes))


def br(dest: Block, *args: SSAValue) -> llvm.BrOp:
    """``llvm.br ^dest(args)``."""
    return llvm.BrOp.create(operands=list(args), successors=[dest])


#: a conditional branch's operand groups: the condition, no arguments for either block
_CONDITION_ONLY = DenseArrayBase.from_list(i32, [1, 0, 0])


def cond_br(condition: SSAValue, then: Block, otherwise: Block) -> llvm.CondBrOp:
    """``llvm.cond_br condition, ^then, ^otherwise`` (neither block takes arguments)."""
    return llvm.CondBrOp.create(
        operands=[condition], successors=[then, otherwise], properties={"operandSegmentSizes": _CONDITION_ONLY}
    )


# ---------------------------------------------------------------------------
# llvm.fcmp / llvm.select on vectors
#
# Vector operands of ``llvm.fcmp`` and ``llvm.select`` with a vector condition are
# valid LLVM, and xDSL's LLVM IR printer emits them, but xDSL 0.74's op definitions only
# accept scalars: these are the same ops (same names, same printers) with the vector
# forms allowed (``vectorize.py`` emits them).


@irdl_op_definition
class VectorFCmpOp(llvm.FCmpOp):
    """``llvm.fcmp`` whose operands may be vectors (then the result is a vector of i1)."""

    name = "llvm.fcmp"
    VT: ClassVar = VarConstraint("VT", AnyFloatConstr | VectorType.constr(AnyFloatConstr))
    lhs = operand_def(VT)
    rhs = operand_def(VT)
    res = result_def(I1 | VectorType.constr(I1))
    predicate = prop_def(IntegerAttr[IntegerType])
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: IntegerAttr):
        t = lhs.type
        result = VectorType(i1, t.get_shape()) if isinstance(t, VectorType) else i1
        IRDLOperation.__init__(self, operands=[lhs, rhs], result_types=[result], properties={"predicate": predicate})

    def verify_(self) -> None:  # the base class's verifier would reject vectors
        pass


@irdl_op_definition
class VectorSelectOp(llvm.SelectOp):
    """``llvm.select`` whose condition may be a vector of i1 (one choice per lane)."""

    name = "llvm.select"
    VT: ClassVar = VarConstraint("VT", AnyAttr())
    cond = operand_def(I1 | VectorType.constr(I1))
    lhs = operand_def(VT)
    rhs = operand_def(VT)
    res = result_def(VT)
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    # the printer and parser generated from the inherited assembly format
    print = Operation.print
    parse = classmethod(Operation.parse.__func__)

    def verify_(self) -> None:
        pass


__all__ = ["NO_SIGNED_WRAP", "VectorFCmpOp", "VectorSelectOp", "add", "br", "cond_br", "constant", "gep", "icmp_predicate", "integer", "load", "make", "mul", "store"]
