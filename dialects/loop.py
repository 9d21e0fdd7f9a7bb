"""The ``loop`` dialect: how a kernel runs (TVM's TIR level).

Buffers are memrefs; ``loop.for`` loops carry a kind (serial, parallel, vectorized,
unrolled, or a GPU binding such as ``blockIdx.x``) and a name that schedules refer to::

    func.func @k(%A: memref<16x8xf32>, %C: memref<16x8xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      loop.for %i = %c0 to %c16 step %c1 parallel name("i") {
        %x = loop.load %A[%i, %c0] : memref<16x8xf32>
        loop.store %x, %C[%i, %c0] : memref<16x8xf32>
      }
      func.return
    }

Allocations have a scope: ``global`` (heap, freed by ``loop.free``) or ``local`` (a
small per-call scratch buffer, e.g. a reduction accumulator, that lives in registers
after optimisation).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, MemRefType, StringAttr, i64
from xdsl.ir import Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsTerminator,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from .syntax import parse_access, print_access

#: loop kinds that run on the CPU; GPU bindings are the ``GPU_BINDINGS``
CPU_LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled")
GPU_BINDINGS = tuple(f"{axis}.{d}" for axis in ("blockIdx", "threadIdx") for d in "xyz")
LOOP_KINDS = CPU_LOOP_KINDS + GPU_BINDINGS

BUFFER_SCOPES = ("global", "local", "shared")


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "loop.yield"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


@irdl_op_definition
class ForOp(IRDLOperation):
    """``for (iv = lb; iv < ub; iv += step)`` with a kind and a name (see module docstring)."""

    name = "loop.for"
    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    kind = prop_def(StringAttr)
    loop_name = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue | Operation,
        ub: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block,
        kind: str = "serial",
        name: str = "",
    ):
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            operands=[lb, ub, step],
            properties={"kind": StringAttr(kind), "loop_name": StringAttr(name)},
            regions=[body],
        )

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        if self.kind.data not in LOOP_KINDS:
            raise VerifyException(
                f"loop.for: unknown kind '{self.kind.data}' (expected one of {', '.join(LOOP_KINDS)})"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException("loop.for: body must take exactly one index induction variable")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.kind.data != "serial":
            printer.print_string(f" {self.kind.data}")
        if self.loop_name.data:
            printer.print_string(" name(")
            printer.print_string_literal(self.loop_name.data)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        bounds = []
        for keyword in (None, "to", "step"):
            if keyword:
                parser.parse_keyword(keyword)
            bounds.append(parser.parse_operand(IndexType()))
        kind = "serial"
        for candidate in LOOP_KINDS:
            if parser.parse_optional_keyword(candidate) is not None:
                kind = candidate
                break
        name = ""
        if parser.parse_optional_keyword("name") is not None:
            parser.parse_punctuation("(")
            name = parser.parse_str_literal()
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        attributes = attributes.data if attributes is not None else {}
        body = parser.parse_region((iv.resolve(IndexType()),))
        op = cls(*bounds, body, kind=kind, name=name)
        op.attributes |= attributes
        for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
            ensure_terminator(op, trait)
        return op


def _check_indices(op: IRDLOperation, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
    rank = len(memref.type.get_shape())
    if len(indices) != rank:
        raise VerifyException(f"{op.name}: {len(indices)} indices for a rank-{rank} buffer {memref.type}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """``%x = loop.load %A[%i, %j] : memref<16x8xf32>``"""

    name = "loop.load"
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def()

    def __init__(self, buffer: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[buffer, indices], result_types=[buffer.type.element_type])

    def verify_(self) -> None:
        _check_indices(self, self.buffer, self.indices)
        if self.result.type != self.buffer.type.element_type:
            raise VerifyException(f"loop.load: result {self.result.type} vs element {self.buffer.type.element_type}")

    def print(self, printer: Printer) -> None:
        print_access(printer, self, self.buffer, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        buffer, indices, attributes = parse_access(parser)
        op = cls(buffer, indices)
        op.attributes |= attributes
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """``loop.store %x, %C[%i, %j] : memref<16x8xf32>``"""

    name = "loop.store"
    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)

    def __init__(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, buffer, indices])

    def verify_(self) -> None:
        _check_indices(self, self.buffer, self.indices)
        if self.value.type != self.buffer.type.element_type:
            raise VerifyException(f"loop.store: value {self.value.type} vs element {self.buffer.type.element_type}")

    def print(self, printer: Printer) -> None:
        print_access(printer, self, self.buffer, self.indices, self.value)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buffer, indices, attributes = parse_access(parser)
        op = cls(parser.resolve_operand(value, buffer.type.element_type), buffer, indices)
        op.attributes |= attributes
        return op


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer; dynamic dims take their sizes from operands.

    Example: ``%t = loop.alloc(%n) {scope = "global"} : memref<?x512xf32>``
    """

    name = "loop.alloc"
    dynamic_sizes = var_operand_def(IndexType)
    scope = prop_def(StringAttr)
    result = result_def(MemRefType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $dynamic_sizes `)` attr-dict `:` type($result)"

    def __init__(self, buffer_type: MemRefType, dynamic_sizes: Sequence[SSAValue] = (), scope: str = "global"):
        super().__init__(
            operands=[dynamic_sizes], properties={"scope": StringAttr(scope)}, result_types=[buffer_type]
        )

    def verify_(self) -> None:
        dynamic = sum(1 for d in self.result.type.get_shape() if d < 0)
        if dynamic != len(self.dynamic_sizes):
            raise VerifyException(f"loop.alloc: {dynamic} dynamic dims but {len(self.dynamic_sizes)} sizes")
        if self.scope.data not in BUFFER_SCOPES:
            raise VerifyException(f"loop.alloc: unknown scope '{self.scope.data}'")
        if self.scope.data == "local" and dynamic:
            raise VerifyException("loop.alloc: a local buffer must have a static shape")


@irdl_op_definition
class FreeOp(IRDLOperation):
    """Release a global buffer: ``loop.free %t : memref<?x512xf32>``"""

    name = "loop.free"
    buffer = operand_def(MemRefType)
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])


@irdl_op_definition
class DimOp(IRDLOperation):
    """The size of a buffer along an axis: ``%n = loop.dim %A, 0 : memref<?x8xf32>``"""

    name = "loop.dim"
    buffer = operand_def(MemRefType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$buffer `,` $axis attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, axis: int):
        super().__init__(operands=[buffer], properties={"axis": IntegerAttr(axis, i64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if not 0 <= self.axis.value.data < len(self.buffer.type.get_shape()):
            raise VerifyException(f"loop.dim: axis {self.axis.value.data} out of range for {self.buffer.type}")


Loop = Dialect("loop", [ForOp, YieldOp, LoadOp, StoreOp, AllocOp, FreeOp, DimOp], [])
