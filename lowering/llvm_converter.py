"""The function converter of the loop -> llvm lowering (``loop_to_llvm.py``): one walk
over a function with a value map, emitting ``llvm`` ops into a region of blocks.

:class:`FunctionConverter` converts buffers (a memref argument becomes a pointer and one
``i64`` per dynamic dim), loads, stores, allocations, calls and scalar ops, and serial
loops; each other loop kind has a converter of its own, registered here by kind
(:data:`LOOP_CONVERTERS`): ``parallel_to_llvm.py``, ``vectorize.py``,
``unroll_to_llvm.py``. A new loop kind is one file::

    @loop_converter("my_kind")
    def convert_my_kind(conv: FunctionConverter, op: loop.ForOp) -> bool:
        ...            # emit the loop through conv (conv.emit, conv.values, conv.serial_loop...)
        return True    # False: this loop is lowered serially instead
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, MemRefType, UnitAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from . import llvm_ops
from .denormals import FlushMode, enter_flush_mode, flushes_denormals, leave_flush_mode
from .scalar_to_llvm import SCALAR_CONVERTERS, int_constant, llvm_type

#: alignment of heap buffers, in bytes (a cache line; what AVX-512 loads like)
HEAP_ALIGNMENT = 64



#: converts a loop of one kind into the converter's function; False: it declined
#: (the loop is then lowered serially)
LoopConverter = Callable[["FunctionConverter", loop.ForOp], bool]

#: loop kind -> its converter (``serial`` and the GPU bindings have none: serial loops)
LOOP_CONVERTERS: dict[str, LoopConverter] = {}


def loop_converter(kind: str) -> Callable[[LoopConverter], LoopConverter]:
    """Register the decorated function as the converter of loops of ``kind``."""
    if kind not in loop.LOOP_KINDS:
        raise ValueError(f"loop_converter: unknown loop kind {kind!r} (expected one of {', '.join(loop.LOOP_KINDS)})")

    def register(convert: LoopConverter) -> LoopConverter:
        if kind in LOOP_CONVERTERS:
            raise ValueError(f"loops of kind {kind!r} already have a converter")
        LOOP_CONVERTERS[kind] = convert
        return convert

    return register


def element_size(t: Attribute) -> int:
    bits = getattr(t, "bitwidth", None) or t.width.data
    return max(1, bits // 8)


def abi_types(t: Attribute) -> list[Attribute]:
    """LLVM argument types of one function argument of type ``t``."""
    if isinstance(t, MemRefType):
        dynamic = sum(1 for d in t.get_shape() if d < 0)
        return [llvm.LLVMPointerType()] + [i64] * dynamic
    return [llvm_type(t)]


@dataclass
class Buffer:
    """A memref in LLVM terms: its base pointer and its sizes (ints or i64 values)."""

    pointer: SSAValue
    sizes: list[int | SSAValue]
    element: Attribute


@dataclass
class ConversionState:
    """What the conversion of one module shares between its functions."""

    #: SIMD register width in bits (512 for AVX-512, 256 for AVX2)
    vector_bits: int = 512
    #: functions made by the conversion (outlined parallel loops), added to the module
    new_functions: list[llvm.FuncOp] = field(default_factory=list)
    #: globals the generated code reads (``tk_num_threads``)
    new_globals: dict[str, llvm.GlobalOp] = field(default_factory=dict)
    #: symbol names in use (new functions get fresh ones)
    names: set[str] = field(default_factory=set)

    def unique_name(self, stem: str) -> str:
        """``stem`` + the first number that makes an unused symbol name."""
        k = 0
        while f"{stem}{k}" in self.names:
            k += 1
        self.names.add(f"{stem}{k}")
        return f"{stem}{k}"


class FunctionConverter:
    """Converts one function (or one outlined loop body) into one ``llvm.func``."""

    def __init__(self, name: str, state: ConversionState | None = None, *, in_parallel: bool = False):
        self.name = name
        self.state = state or ConversionState()
        #: inside an outlined parallel loop: nested parallel loops run serially
        self.in_parallel = in_parallel
        self.values: dict[SSAValue, SSAValue] = {}
        self.buffers: dict[SSAValue, Buffer] = {}
        # The entry block holds the arguments and every alloca (so LLVM promotes them to
        # registers), then branches to the code.
        self.entry = Block()
        self.block = Block()
        self.region = Region([self.entry, self.block])
        self.alloca_builder = Builder(InsertPoint.at_end(self.entry))
        #: while a ``tk.flush_denormals`` kernel runs: the caller's MXCSR, restored at return
        self.flush_mode: FlushMode | None = None

    @property
    def b(self) -> Builder:
        return Builder(InsertPoint.at_end(self.block))

    def emit(self, op: Operation) -> SSAValue:
        """Append ``op`` to the current block; its first result (None if it has none)."""
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def add_argument(self, t: Attribute) -> SSAValue:
        return self.entry.insert_arg(t, len(self.entry.args))

    def finish(self, arg_attrs: list[DictionaryAttr], result: Attribute | None = None) -> llvm.FuncOp:
        """Close the entry block and wrap the region into ``llvm.func @name``."""
        self.entry.add_op(llvm_ops.br(self.region.blocks[1]))
        function_type = llvm.LLVMFunctionType([a.type for a in self.entry.args], result)
        out = llvm.FuncOp(self.name, function_type, linkage=llvm.LinkageAttr("external"), body=self.region)
        out.arg_attrs = llvm.ArrayAttr(arg_attrs)
        return out

    # -- functions -----------------------------------------------------------------

    def convert_function(self, f: func.FuncOp) -> llvm.FuncOp:
        self.function = f
        arg_attrs: list[DictionaryAttr] = []
        args = f.body.block.args
        # hoisted temporaries share storages (lowering/hoist_temporaries.py): they may alias
        may_alias = set(args[len(args) - loop.hoisted_temporaries(f) :])
        for arg in args:
            types = abi_types(arg.type)
            new_args = [self.add_argument(t) for t in types]
            if isinstance(arg.type, MemRefType):
                new_args[0].name_hint = arg.name_hint
                sizes = []
                dynamic = iter(new_args[1:])
                for d in arg.type.get_shape():
                    sizes.append(next(dynamic) if d < 0 else d)
                self.buffers[arg] = Buffer(new_args[0], sizes, arg.type.element_type)
                # Buffers never overlap: inputs are only read, outputs and temporaries are distinct.
                arg_attrs += [DictionaryAttr({} if arg in may_alias else {"llvm.noalias": UnitAttr()})]
                arg_attrs += [DictionaryAttr({})] * (len(types) - 1)
            else:
                self.values[arg] = new_args[0]
                arg_attrs.append(DictionaryAttr({}))
        results = [llvm_type(t) for t in f.function_type.outputs.data]
        if len(results) > 1:
            raise PassFailedException(f"loop-to-llvm: '{f.sym_name.data}' returns several values")
        if flushes_denormals(f):
            self.flush_mode = enter_flush_mode(self)
        self.convert_block_ops(f.body.block)
        return self.finish(arg_attrs, results[0] if results else None)

    def convert_block_ops(self, block: Block) -> None:
        for op in block.ops:
            self.convert_op(op)

    def convert_op(self, op: Operation) -> None:
        converter = SCALAR_CONVERTERS.get(type(op))
        if converter is not None:  # (most ops: first, before the class patterns' slow ABC checks)
            self.values[op.results[0]] = converter(self.b, op, [self.values[v] for v in op.operands])
            return
        match op:
            case loop.ForOp():
                self.convert_for(op)
            case loop.YieldOp():
                pass
            case loop.LoadOp():
                self.values[op.result] = self.emit(llvm_ops.load(self.address(op.buffer, op.indices), op.result.type))
            case loop.StoreOp():
                self.emit(llvm_ops.store(self.values[op.value], self.address(op.buffer, op.indices)))
            case loop.AllocOp():
                self.convert_alloc(op)
            case loop.FreeOp():
                self.emit(llvm.CallOp("free", self.buffers[op.buffer].pointer))
            case loop.DimOp():
                size = self.buffers[op.buffer].sizes[op.axis.value.data]
                self.values[op.result] = size if isinstance(size, SSAValue) else int_constant(self.b, size)
            case func.CallOp():
                args = []
                for a in op.arguments:
                    if a in self.buffers:
                        buf = self.buffers[a]
                        args += [buf.pointer] + [s for s in buf.sizes if isinstance(s, SSAValue)]
                    else:
                        args.append(self.values[a])
                result_type = llvm_type(op.results[0].type) if op.results else None
                call = llvm.CallOp(op.callee.string_value(), *args, return_type=result_type)
                self.emit(call)
                if op.results:
                    self.values[op.results[0]] = call.returned
            case func.ReturnOp():
                if self.flush_mode is not None:
                    leave_flush_mode(self, self.flush_mode)
                self.emit(llvm.ReturnOp(self.values[op.arguments[0]] if op.arguments else None))
            case _:
                raise PassFailedException(f"loop-to-llvm: no conversion for '{op.name}' in '{self.name}'")

    # -- loops ---------------------------------------------------------------------

    def convert_for(self, op: loop.ForOp) -> None:
        """A loop by the converter of its kind (:data:`LOOP_CONVERTERS`), or serially: a
        kind without one (GPU bindings), or one its converter declines."""
        convert = LOOP_CONVERTERS.get(op.kind.data)
        if convert is None or not convert(self, op):
            self.serial_loop(op)

    def serial_loop(
        self,
        op: loop.ForOp,
        lb: SSAValue | None = None,
        ub: SSAValue | None = None,
        step: SSAValue | None = None,
    ) -> None:
        """``for iv in [lb, ub) step s``: header(iv) -> body -> latch -> header | exit.

        The bounds default to the loop's own (converted) operands."""
        lb = self.values[op.lb] if lb is None else lb
        ub = self.values[op.ub] if ub is None else ub
        step = self.values[op.step] if step is None else step
        header = Block(arg_types=[i64])
        body = Block()
        exit_block = Block()
        self.region.add_block([header, body])
        self.emit(llvm_ops.br(header, lb))
        iv = header.args[0]
        self.block = header
        in_range = self.emit(llvm_ops.make(llvm.ICmpOp, iv, ub, llvm_ops.icmp_predicate("slt")))
        self.emit(llvm_ops.cond_br(in_range, body, exit_block))
        self.values[op.induction_var] = iv
        self.block = body
        self.convert_block_ops(op.body.block)
        # nsw: the induction variable never wraps (bounds are buffer sizes)
        nxt = self.emit(llvm_ops.add(iv, step, llvm_ops.NO_SIGNED_WRAP))
        self.emit(llvm_ops.br(header, nxt))
        # in program order: the exit comes after every block the body added
        self.region.add_block(exit_block)
        self.block = exit_block

    # -- memory ----------------------------------------------------------------------

    def address(self, memref: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        """The element's pointer: base + row-major linear offset (inbounds GEP)."""
        return self.address_of(self.buffers[memref], [self.values[i] for i in indices])

    def address_of(self, buf: Buffer, indices: Sequence[SSAValue]) -> SSAValue:
        """The pointer to ``buf[indices]``, the indices being converted (i64) values."""
        offset: SSAValue | None = None
        stride: int | SSAValue = 1
        for axis in reversed(range(len(indices))):
            idx = indices[axis]
            term = idx if _is_one(stride) else self._mul(idx, stride)
            offset = term if offset is None else self.emit(llvm_ops.add(offset, term))
            if axis:
                stride = self._mul_sizes(stride, buf.sizes[axis])
        if offset is None:
            return buf.pointer
        return self.emit(llvm_ops.gep(buf.pointer, offset, buf.element))

    def _mul(self, value: SSAValue, factor: int | SSAValue) -> SSAValue:
        f = int_constant(self.b, factor) if isinstance(factor, int) else factor
        return self.emit(llvm_ops.mul(value, f))

    def _mul_sizes(self, a: int | SSAValue, c: int | SSAValue) -> int | SSAValue:
        if isinstance(a, int) and isinstance(c, int):
            return a * c
        if _is_one(a):
            return c
        return self._mul(c if isinstance(c, SSAValue) else a, a if isinstance(c, SSAValue) else c)

    def convert_alloc(self, op: loop.AllocOp) -> None:
        t: MemRefType = op.result.type
        dynamic = iter(self.values[v] for v in op.dynamic_sizes)
        sizes: list[int | SSAValue] = [next(dynamic) if d < 0 else d for d in t.get_shape()]
        count: int | SSAValue = 1
        for s in sizes:
            count = self._mul_sizes(count, s)
        if op.scope.data == "local":
            one = int_constant(self.alloca_builder, int(count))
            alloca = llvm.AllocaOp(one, t.element_type, alignment=HEAP_ALIGNMENT)
            self.alloca_builder.insert(alloca)
            # llvmlite types an alloca's pointer by its element (float*), which refuses
            # vector stores; a no-op cast makes it an opaque ptr like every other buffer
            pointer = self.alloca_builder.insert(llvm.BitcastOp(alloca.results[0], llvm.LLVMPointerType())).results[0]
        else:
            nbytes = self._mul_sizes(count, element_size(t.element_type))
            if isinstance(nbytes, int):
                # aligned_alloc wants a multiple of the alignment, and never 0
                nbytes = int_constant(self.b, max(HEAP_ALIGNMENT, -(-nbytes // HEAP_ALIGNMENT) * HEAP_ALIGNMENT))
            else:
                mask = int_constant(self.b, HEAP_ALIGNMENT - 1)
                padded = self.emit(llvm.AddOp(nbytes, mask))
                nbytes = self.emit(llvm.AndOp(padded, int_constant(self.b, ~(HEAP_ALIGNMENT - 1))))
                nbytes = self.emit(llvm.OrOp(nbytes, int_constant(self.b, HEAP_ALIGNMENT)))
            alignment = int_constant(self.b, HEAP_ALIGNMENT)
            call = llvm.CallOp("aligned_alloc", alignment, nbytes, return_type=llvm.LLVMPointerType())
            pointer = self.emit(call)
        self.buffers[op.result] = Buffer(pointer, sizes, t.element_type)


def _is_one(v: int | SSAValue) -> bool:
    return isinstance(v, int) and v == 1


def constant_int(value: SSAValue) -> int | None:
    """The value of an ``arith.constant`` integer/index (loop level), else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def static_upper_bound(value: SSAValue) -> int | None:
    """A compile-time bound ``value`` never exceeds: a constant, or a ``minsi`` with a
    bounded operand (the inner loop bound of a split); else None."""
    if (c := constant_int(value)) is not None:
        return c
    owner = value.owner
    if isinstance(owner, arith.MinSIOp):
        bounds = [b for v in owner.operands if (b := static_upper_bound(v)) is not None]
        return min(bounds) if bounds else None
    return None


__all__ = [
    "HEAP_ALIGNMENT",
    "LOOP_CONVERTERS",
    "Buffer",
    "ConversionState",
    "FunctionConverter",
    "LoopConverter",
    "abi_types",
    "constant_int",
    "element_size",
    "loop_converter",
    "static_upper_bound",
]
