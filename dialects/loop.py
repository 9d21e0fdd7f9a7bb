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

Allocations have a scope: ``global`` (heap, freed by ``loop.free``), ``local`` (a
small per-call scratch buffer, e.g. a reduction accumulator, that lives in registers
after optimisation) or ``shared`` (one per GPU block).

``loop.shuffle_xor`` exchanges a value between the threads of a GPU warp (CUDA's
``__shfl_xor_sync``, MLIR's ``gpu.shuffle xor``) and ``loop.mma_tf32`` multiplies two
matrix tiles spread over a warp's registers on the tensor cores (PTX's ``mma.sync``
m16n8k8 with TF32 inputs); they only appear in GPU schedules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
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

#: what a loop iterates over, as te-to-loop records it (``role(...)``; schedules read it,
#: never the loop's name): ``spatial``, the kernel's output elements (the output loops,
#: independent iterations); ``reduction``, the axes a reduction combines; ``scan``, a line
#: walked in order, each step reading the last (a scan, a sort, an elimination);
#: ``update``, a scatter's updates, applied in order; ``init``, elements written before
#: later loops read or update them (a scatter's targets reset, a row kernel's stashed
#: producer). Splits, fusions and reorders keep the role of the loops they transform.
LOOP_ROLES = ("spatial", "reduction", "scan", "update", "init")

#: threads in a GPU warp: the most lanes a shuffle spans
WARP_SIZE = 32


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "loop.yield"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


@irdl_op_definition
class ForOp(IRDLOperation):
    """``for (iv = lb; iv < ub; iv += step)`` with a kind, a name (see module docstring)
    and a role (:data:`LOOP_ROLES`), printed ``role(spatial)``, when it has one."""

    name = "loop.for"
    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    kind = prop_def(StringAttr)
    loop_name = prop_def(StringAttr)
    role = opt_prop_def(StringAttr)
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
        role: str | None = None,
    ):
        if isinstance(body, Block):
            body = Region(body)
        properties = {"kind": StringAttr(kind), "loop_name": StringAttr(name)}
        if role is not None:
            properties["role"] = StringAttr(role)
        super().__init__(operands=[lb, ub, step], properties=properties, regions=[body])

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def loop_role(self) -> str | None:
        """What the loop iterates over (:data:`LOOP_ROLES`), or None."""
        return self.role.data if self.role is not None else None

    def verify_(self) -> None:
        if self.kind.data not in LOOP_KINDS:
            raise VerifyException(
                f"loop.for: unknown kind '{self.kind.data}' (expected one of {', '.join(LOOP_KINDS)})"
            )
        if self.role is not None and self.role.data not in LOOP_ROLES:
            raise VerifyException(
                f"loop.for: unknown role '{self.role.data}' (expected one of {', '.join(LOOP_ROLES)})"
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
        if self.role is not None:
            printer.print_string(f" role({self.role.data})")
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
        role = None
        if parser.parse_optional_keyword("role") is not None:
            parser.parse_punctuation("(")
            role = parser.parse_identifier()
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        attributes = attributes.data if attributes is not None else {}
        body = parser.parse_region((iv.resolve(IndexType()),))
        op = cls(*bounds, body, kind=kind, name=name, role=role)
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


def shuffle_type_ok(t: object) -> bool:
    """Whether warp shuffles move values of type ``t`` (CUDA: the float types and the
    integers of a C type; narrow integers travel widened to ``int``)."""
    if isinstance(t, Float16Type | Float32Type | Float64Type):
        return True
    return isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64)


@irdl_op_definition
class ShuffleXorOp(IRDLOperation):
    """The value of the lane ``lane ^ offset`` of this thread's warp (a butterfly step).

    ``%r = loop.shuffle_xor %x, 16, 32 : f32`` is CUDA's
    ``__shfl_xor_sync(0xffffffff, x, 16, 32)``. ``width`` (a power of two up to the warp
    size) splits the warp into segments of that many lanes; ``offset`` (a power of two
    below ``width``) keeps the partner lane inside the segment, so every partner exists
    and the result is always valid. Every lane of the warp must execute the shuffle
    together (it sits in code that whole warps run alike: ``loop-to-gpu`` checks).
    """

    name = "loop.shuffle_xor"
    value = operand_def()
    offset = prop_def(IntegerAttr[I64])
    width = prop_def(IntegerAttr[I64])
    result = result_def()

    def __init__(self, value: SSAValue | Operation, offset: int, width: int = WARP_SIZE):
        value = SSAValue.get(value)
        super().__init__(
            operands=[value],
            properties={"offset": IntegerAttr(offset, i64), "width": IntegerAttr(width, i64)},
            result_types=[value.type],
        )

    def verify_(self) -> None:
        offset, width = self.offset.value.data, self.width.value.data
        if not (0 < width <= WARP_SIZE and width & (width - 1) == 0):
            raise VerifyException(f"loop.shuffle_xor: width {width} is not a power of two from 1 to {WARP_SIZE}")
        if not (0 < offset < width and offset & (offset - 1) == 0):
            raise VerifyException(
                f"loop.shuffle_xor: offset {offset} is not a power of two below the width {width} "
                "(the partner lane would leave its segment)"
            )
        if not shuffle_type_ok(self.value.type):
            raise VerifyException(
                f"loop.shuffle_xor: cannot shuffle {self.value.type} (expected f16, f32, f64 or i1/i8/i16/i32/i64)"
            )
        if self.result.type != self.value.type:
            raise VerifyException(f"loop.shuffle_xor: result {self.result.type} vs value {self.value.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(f", {self.offset.value.data}, {self.width.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShuffleXorOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")
        width = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        op = cls(parser.resolve_operand(value, value_type), offset, width)
        op.attributes |= attributes
        return op


def warp_ops_phrase(names: set[str]) -> str:
    """How an error names a kernel's warp-wide ops (``loop.shuffle_xor``, ``loop.mma_tf32``)."""
    return "shuffles" if ShuffleXorOp.name in names else "tensor-core products"


#: the tile of one ``loop.mma_tf32``: (rows, columns, reduction) of D = A B + C
MMA_SHAPE = (16, 8, 8)


def mma_tf32_position(operand: str, register: int, lane: int) -> tuple[int, int]:
    """(row, column) in its tile of ``register`` of ``lane`` for operand "a" (16 x 8),
    "b" (8 x 8) or "c" (16 x 8, the accumulator and the result), as PTX lays out
    ``mma.m16n8k8`` with TF32 inputs: ``g = lane / 4``, ``t = lane % 4``; A's a0..a3 at
    (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B's b0, b1 at (t, g), (t + 4, g);
    C's c0..c3 at (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)."""
    g, t = lane // 4, lane % 4
    if operand == "a":
        return g + 8 * (register % 2), t + 4 * (register // 2)
    if operand == "b":
        return t + 4 * register, g
    if operand == "c":
        return g + 8 * (register // 2), 2 * t + register % 2
    raise ValueError(f"no operand {operand!r} of loop.mma_tf32 (expected 'a', 'b' or 'c')")


@irdl_op_definition
class MmaTf32Op(IRDLOperation):
    """``D = A B + C`` for a 16 x 8 tile, on the tensor cores: A (16 x 8) and B (8 x 8)
    rounded to TF32 (10-bit mantissas), products summed in f32. Each lane of the warp
    holds 4 elements of A, 2 of B and 4 of C and gets 4 of D, at the places
    :func:`mma_tf32_position` gives; every lane of the warp runs it together.

    ``%d0, %d1, %d2, %d3 = loop.mma_tf32 %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3``
    is PTX's ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` (sm_80 and later).
    """

    name = "loop.mma_tf32"
    operands_ = var_operand_def(Float32Type)
    results_ = var_result_def(Float32Type)

    def __init__(self, a: Sequence[SSAValue], b: Sequence[SSAValue], c: Sequence[SSAValue]):
        super().__init__(operands=[[*a, *b, *c]], result_types=[[f32] * 4])

    @property
    def a(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands_[0:4])

    @property
    def b(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands_[4:6])

    @property
    def c(self) -> tuple[SSAValue, ...]:
        return tuple(self.operands_[6:10])

    def verify_(self) -> None:
        if len(self.operands_) != 10 or len(self.results_) != 4:
            raise VerifyException(
                f"loop.mma_tf32: expected 4 + 2 + 4 operands (a, b, c) and 4 results, got "
                f"{len(self.operands_)} and {len(self.results_)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands_, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> MmaTf32Op:
        values = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        if len(values) != 10:
            parser.raise_error(f"loop.mma_tf32 takes 10 operands (4 of a, 2 of b, 4 of c), got {len(values)}")
        resolved = [parser.resolve_operand(v, f32) for v in values]
        op = cls(resolved[0:4], resolved[4:6], resolved[6:10])
        op.attributes |= attributes
        return op


# ---------------------------------------------------------------------------
# conventions of a lowered module
#
# te-to-loop turns each graph function into a host function (``tk.entry``) that calls
# kernels (``tk.kernel``); the schedules, the LLVM and GPU lowerings and the driver
# read and add facts as attributes of those functions. Each name is spelled here once,
# and read and set through the accessors below::
#
#     for kernel in kernels(module):
#         if kernel_tag(kernel) == "copy": ...
#     inputs, outputs, weights = entry_layout(host)

#: a kernel function: what it computes, a name stem (``"dense_add_relu"``: the graph ops
#: of its fused group; ``"copy"``, ``"scatter"``, ``"sort"``...)
KERNEL_ATTR = "tk.kernel"
#: a kernel made of graph ops (te-to-loop records them when its tag names graph ops):
#: the ops in order, the anchor, and the elementwise epilogue (see :class:`KernelAnchor`)
OPS_ATTR = "tk.ops"
ANCHOR_ATTR = "tk.anchor"
EPILOGUE_ATTR = "tk.epilogue"
#: the host function: ``{inputs = n, outputs = m}`` (and ``temporaries = t`` once its
#: temporaries are hoisted into arguments): its arguments are the inputs, the output
#: buffers, the weights, then the temporaries
ENTRY_ATTR = "tk.entry"
#: the host function: the data of its weight arguments, in order
WEIGHTS_ATTR = "tk.weights"
#: a function (unit): also give it ``@<name>_packed(ptr)`` (``lowering/loop_to_llvm.py``)
PACKED_ENTRY_ATTR = "tk.packed_entry"
#: a kernel attribute (unit): run it with denormal floats flushed to zero
#: (``lowering/denormals.py``; set by the ``flush_denormals`` schedule primitive)
FLUSH_DENORMALS_ATTR = "tk.flush_denormals"
#: a kernel: the name of the default strategy (CPU) or GPU strategy that scheduled it
STRATEGY_ATTR = "tk.strategy"
GPU_STRATEGY_ATTR = "tk.gpu_strategy"
#: a function holding a nest outlined by ``tensorize``: ``"outlined"``
MICROKERNEL_ATTR = "tk.microkernel"
#: a kernel: the layouts ``transform_layout`` gave its arguments (argument index ->
#: permutation) and the blocks of blocked ones (``schedule/layout.py``)
LAYOUTS_ATTR = "tk.layouts"
LAYOUT_BLOCKS_ATTR = "tk.layout_blocks"
#: a ``loop.alloc`` made by ``cache_read``/``cache_write``: its stage name, and for a
#: padded read the padded dims and the fill value (``schedule/cache.py``)
STAGE_ATTR = "tk.stage"
PAD_DIMS_ATTR = "tk.pad_dims"
PAD_FILL_ATTR = "tk.pad_fill"
#: a parallel ``loop.for``: the most threads worth running it on (the schedule's cost
#: model, ``schedule/strategies/parallel.py``; none: as many as the runtime has)
MAX_THREADS_ATTR = "tk.max_threads"


def _string(op: Operation, name: str) -> str | None:
    attr = op.attributes.get(name)
    return attr.data if isinstance(attr, StringAttr) else None


def is_kernel(op: Operation) -> bool:
    """Whether ``op`` is a kernel function (te-to-loop made it; it has a ``tk.kernel`` tag)."""
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes


def kernels(module: ModuleOp) -> list[func.FuncOp]:
    """The kernel functions of a lowered module, in order."""
    return [op for op in module.ops if is_kernel(op)]


def kernel_tag(kernel: Operation) -> str | None:
    """What ``kernel`` computes (``"dense_add_relu"``), or None for a function that is no kernel."""
    return _string(kernel, KERNEL_ATTR)


def set_kernel_tag(kernel: Operation, tag: str) -> None:
    """Make ``kernel`` a kernel computing ``tag`` (see :data:`KERNEL_ATTR`)."""
    kernel.attributes[KERNEL_ATTR] = StringAttr(tag)


@dataclass(frozen=True)
class KernelAnchor:
    """What a kernel made of graph ops computes: its ops in order (``dense``, ``add``,
    ``relu``), its anchor -- the op whose loops it has, the one of highest fusion
    pattern kind (``dense``; a reduction in ``mul_reduce_mean``) -- and its epilogue: the
    ops after the anchor when each is elementwise or broadcast, applied to the anchor's
    result inside its loops (``("add", "relu")``; None when an op after the anchor moves
    elements, a transpose or a reshape, whose loops are then the kernel's).

    Printed on the kernel as ``tk.ops = ["dense", "add", "relu"], tk.anchor = "dense",
    tk.epilogue = ["add", "relu"]``; a kernel of one op shows its anchor alone, and one
    whose ops after the anchor are not an epilogue has no ``tk.epilogue``."""

    ops: tuple[str, ...]
    op: str
    epilogue: tuple[str, ...] | None


def _strings(values: Sequence[str]) -> ArrayAttr:
    return ArrayAttr([StringAttr(v) for v in values])


def set_kernel_anchor(kernel: Operation, anchor: KernelAnchor) -> None:
    """Record what ``kernel`` computes (te-to-loop)."""
    if anchor.ops != (anchor.op,):
        kernel.attributes[OPS_ATTR] = _strings(anchor.ops)
    kernel.attributes[ANCHOR_ATTR] = StringAttr(anchor.op)
    if anchor.epilogue:
        kernel.attributes[EPILOGUE_ATTR] = _strings(anchor.epilogue)


def kernel_anchor(kernel: Operation) -> KernelAnchor | None:
    """What ``kernel`` computes, or None when it is not made of graph ops (a copy, a
    sort, a scan's own kernel...)."""
    op = _string(kernel, ANCHOR_ATTR)
    if op is None:
        return None
    listed = kernel.attributes.get(OPS_ATTR)
    ops = tuple(s.data for s in listed.data) if isinstance(listed, ArrayAttr) else (op,)
    after = ops[ops.index(op) + 1 :] if op in ops else ()
    epilogue = kernel.attributes.get(EPILOGUE_ATTR)
    return KernelAnchor(ops, op, after if not after or isinstance(epilogue, ArrayAttr) else None)


def loops_with_role(root: Operation, *roles: str) -> list[ForOp]:
    """The loops inside ``root`` (a kernel) whose role is one of ``roles``, outermost first
    (in program order)."""
    return [op for op in root.walk() if isinstance(op, ForOp) and op.loop_role in roles]


def set_entry(host: func.FuncOp, inputs: int, outputs: int, weights: Sequence[Attribute]) -> None:
    """Make ``host`` the entry of a lowered module: ``inputs`` input buffers, then
    ``outputs`` output buffers, then one argument per weight (its data in ``weights``)."""
    host.attributes[ENTRY_ATTR] = DictionaryAttr({"inputs": IntegerAttr(inputs, i64), "outputs": IntegerAttr(outputs, i64)})
    host.attributes[WEIGHTS_ATTR] = ArrayAttr(weights)


def is_entry(op: Operation) -> bool:
    """Whether ``op`` is the host function of a lowered module."""
    return isinstance(op, func.FuncOp) and ENTRY_ATTR in op.attributes


def entry_layout(host: func.FuncOp) -> tuple[int, int, list[Attribute]]:
    """(number of inputs, number of outputs, weight data) of a lowered host function."""
    entry = host.attributes[ENTRY_ATTR]
    return entry.data["inputs"].value.data, entry.data["outputs"].value.data, entry_weights(host)


def entry_weights(host: func.FuncOp) -> list[Attribute]:
    """The data of the host function's weight arguments, in order (none: ``[]``)."""
    weights = host.attributes.get(WEIGHTS_ATTR)
    return list(weights.data) if isinstance(weights, ArrayAttr) else []


def set_entry_weights(host: func.FuncOp, weights: Sequence[Attribute]) -> None:
    """Replace the data of the host function's weight arguments (a pass that re-lays one out)."""
    host.attributes[WEIGHTS_ATTR] = ArrayAttr(weights)


def weight_arguments(host: func.FuncOp) -> list[SSAValue]:
    """The host function's arguments that hold weights (none for a function that is no entry)."""
    if not is_entry(host):
        return []
    args = list(host.body.block.args)
    return args[len(args) - hoisted_temporaries(host) - len(entry_weights(host)) : len(args) - hoisted_temporaries(host)]


def without_weights(op: Operation) -> str:
    """``op`` printed without its weight data (weights are passed by pointer: their names
    and data, which passes may rename, do not change the code)."""
    weights = op.attributes.pop(WEIGHTS_ATTR, None)
    try:
        return str(op)
    finally:
        if weights is not None:
            op.attributes[WEIGHTS_ATTR] = weights


def set_hoisted_temporaries(host: func.FuncOp, count: int) -> None:
    """Record that the last ``count`` arguments of ``host`` are its hoisted temporaries."""
    entry = dict(host.attributes[ENTRY_ATTR].data)
    entry["temporaries"] = IntegerAttr(count, i64)
    host.attributes[ENTRY_ATTR] = DictionaryAttr(entry)


def hoisted_temporaries(host: func.FuncOp) -> int:
    """How many trailing arguments of a host function are hoisted temporaries (0 if none)."""
    entry = host.attributes.get(ENTRY_ATTR)
    count = entry.data.get("temporaries") if isinstance(entry, DictionaryAttr) else None
    return count.value.data if isinstance(count, IntegerAttr) else 0


def mark_packed_entry(function: Operation) -> None:
    """Give ``function`` a packed entry (``@<name>_packed(ptr)``) when lowered to LLVM."""
    function.attributes[PACKED_ENTRY_ATTR] = UnitAttr()


def has_packed_entry(function: Operation) -> bool:
    return PACKED_ENTRY_ATTR in function.attributes


def mark_flush_denormals(kernel: Operation) -> None:
    """Run ``kernel`` with denormal floats flushed to zero (see :data:`FLUSH_DENORMALS_ATTR`)."""
    kernel.attributes[FLUSH_DENORMALS_ATTR] = UnitAttr()


def flushes_denormals(kernel: Operation) -> bool:
    return FLUSH_DENORMALS_ATTR in kernel.attributes


def kernel_strategy(kernel: Operation, gpu: bool = False) -> str | None:
    """The name of the (GPU) strategy that scheduled ``kernel``, or None."""
    return _string(kernel, GPU_STRATEGY_ATTR if gpu else STRATEGY_ATTR)


def set_kernel_strategy(kernel: Operation, name: str, gpu: bool = False) -> None:
    kernel.attributes[GPU_STRATEGY_ATTR if gpu else STRATEGY_ATTR] = StringAttr(name)


#: what a kernel keeps of its attributes when a lowering rebuilds it (``loop-to-gpu``)
KERNEL_FACTS = (KERNEL_ATTR, GPU_STRATEGY_ATTR)


def copy_kernel_facts(source: Operation, target: Operation) -> None:
    """Give ``target`` (a kernel rebuilt from ``source``) the facts of :data:`KERNEL_FACTS` it has."""
    for name in KERNEL_FACTS:
        if name in source.attributes:
            target.attributes[name] = source.attributes[name]


def is_outlined_microkernel(function: Operation) -> bool:
    """Whether ``function`` holds a nest ``tensorize`` outlined."""
    return _string(function, MICROKERNEL_ATTR) == "outlined"


def mark_outlined_microkernel(function: Operation) -> None:
    function.attributes[MICROKERNEL_ATTR] = StringAttr("outlined")


def max_threads(for_op: Operation) -> int | None:
    """The most threads a parallel loop is worth (:data:`MAX_THREADS_ATTR`), or None."""
    attr = for_op.attributes.get(MAX_THREADS_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def set_max_threads(for_op: Operation, threads: int | None) -> None:
    """Cap the threads a parallel loop runs on (None: no cap)."""
    if threads is None:
        for_op.attributes.pop(MAX_THREADS_ATTR, None)
    else:
        for_op.attributes[MAX_THREADS_ATTR] = IntegerAttr(threads, i64)


def _int_lists(kernel: Operation, name: str) -> dict[int, list[int]]:
    attr = kernel.attributes.get(name)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {int(k): [d.value.data for d in v.data] for k, v in attr.data.items()}


def _set_int_lists(kernel: Operation, name: str, values: dict[int, Sequence[int]]) -> None:
    kernel.attributes[name] = DictionaryAttr(
        {str(k): ArrayAttr([IntegerAttr(d, i64) for d in v]) for k, v in sorted(values.items())}
    )


def argument_layouts(kernel: Operation) -> dict[int, list[int]]:
    """Argument index -> permutation of its original dims (``transform_layout``); ``{}`` if none."""
    return _int_lists(kernel, LAYOUTS_ATTR)


def argument_blocks(kernel: Operation) -> dict[int, list[int]]:
    """Argument index -> ``[axis, size]`` of a blocked layout (applied before its permutation)."""
    return _int_lists(kernel, LAYOUT_BLOCKS_ATTR)


def set_argument_layout(kernel: Operation, argument: int, permutation: Sequence[int], block: Sequence[int] | None) -> None:
    """Record that argument ``argument`` of ``kernel`` is laid out as ``permutation`` of
    its original dims, after splitting ``block = [axis, size]`` (None: not blocked)."""
    _set_int_lists(kernel, LAYOUTS_ATTR, {**argument_layouts(kernel), argument: permutation})
    if block is not None:
        _set_int_lists(kernel, LAYOUT_BLOCKS_ATTR, {**argument_blocks(kernel), argument: block})


def stage_of(alloc: Operation) -> str | None:
    """The cache stage a ``loop.alloc`` holds (``cache_read``/``cache_write``), or None."""
    return _string(alloc, STAGE_ATTR)


def set_stage(alloc: Operation, stage: str) -> None:
    alloc.attributes[STAGE_ATTR] = StringAttr(stage)


def padding_of(alloc: Operation) -> tuple[list[int], Attribute] | None:
    """(padded dims, fill value) of a padded cache stage, or None."""
    dims, fill = alloc.attributes.get(PAD_DIMS_ATTR), alloc.attributes.get(PAD_FILL_ATTR)
    if not isinstance(dims, ArrayAttr) or fill is None:
        return None
    return [d.value.data for d in dims.data], fill


def set_padding(alloc: Operation, dims: Sequence[int], fill: Attribute) -> None:
    alloc.attributes[PAD_DIMS_ATTR] = ArrayAttr([IntegerAttr(d, i64) for d in dims])
    alloc.attributes[PAD_FILL_ATTR] = fill


Loop = Dialect("loop", [ForOp, YieldOp, LoadOp, StoreOp, AllocOp, FreeOp, DimOp, ShuffleXorOp, MmaTf32Op], [])
