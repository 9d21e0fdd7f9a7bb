"""loop -> llvm: functions over buffers become ``llvm.func`` over pointers.

One walk over each function, with a value map (no greedy pattern rewriting and no
blanket type conversion, which are slow in pure Python; see the xDSL notes):

* a memref argument becomes a pointer followed by one ``i64`` per dynamic dim
  (the calling convention of every generated function: "bare pointer + sizes");
* ``loop.for`` becomes header/body/exit blocks with the induction variable as a
  block argument (a phi); ``loop.load``/``loop.store`` become ``getelementptr inbounds``
  + load/store on the row-major linear offset (inbounds GEPs, not inttoptr arithmetic,
  so LLVM can vectorise);
* ``loop.alloc`` is an entry-block ``alloca`` (local scope) or ``aligned_alloc``
  (global scope), ``loop.free`` calls ``free``;
* scalar ``arith``/``math`` ops go through :mod:`.scalar_to_llvm`.

Example (``tensorkiln-opt f.mlir -p loop-to-llvm``)::

    func.func @k(%A: memref<?x8xf32>)  ->  llvm.func @k(%A: !llvm.ptr {llvm.noalias}, %A_d0: i64)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from .scalar_to_llvm import SCALAR_CONVERTERS, int_constant, llvm_type

#: alignment of heap buffers, in bytes (a cache line; what AVX-512 loads like)
HEAP_ALIGNMENT = 64


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


class _FunctionConverter:
    def __init__(self, function: func.FuncOp):
        self.function = function
        self.values: dict[SSAValue, SSAValue] = {}
        self.buffers: dict[SSAValue, Buffer] = {}
        # The entry block holds the arguments and every alloca (so LLVM promotes them to
        # registers), then branches to the code.
        self.entry = Block()
        self.block = Block()
        self.region = Region([self.entry, self.block])
        self.alloca_builder = Builder(InsertPoint.at_end(self.entry))

    @property
    def b(self) -> Builder:
        return Builder(InsertPoint.at_end(self.block))

    def _ins(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    # -- functions -----------------------------------------------------------------

    def convert(self) -> llvm.FuncOp:
        f = self.function
        arg_types: list[Attribute] = []
        arg_attrs: list[DictionaryAttr] = []
        for arg in f.body.block.args:
            types = abi_types(arg.type)
            first = len(arg_types)
            for t in types:
                self.entry.insert_arg(t, len(self.entry.args))
            arg_types += types
            new_args = self.entry.args[first:]
            if isinstance(arg.type, MemRefType):
                self.entry.args[first].name_hint = arg.name_hint
                sizes = []
                dynamic = iter(new_args[1:])
                for d in arg.type.get_shape():
                    sizes.append(next(dynamic) if d < 0 else d)
                self.buffers[arg] = Buffer(new_args[0], sizes, arg.type.element_type)
                # Buffers never overlap: inputs are only read, outputs and temporaries are distinct.
                arg_attrs += [DictionaryAttr({"llvm.noalias": UnitAttr()})]
                arg_attrs += [DictionaryAttr({})] * (len(types) - 1)
            else:
                self.values[arg] = new_args[0]
                arg_attrs.append(DictionaryAttr({}))
        results = [llvm_type(t) for t in f.function_type.outputs.data]
        if len(results) > 1:
            raise PassFailedException(f"loop-to-llvm: '{f.sym_name.data}' returns several values")
        code = self.block
        self.convert_block_ops(f.body.block)
        self.entry.add_op(llvm.BrOp(code))
        function_type = llvm.LLVMFunctionType(arg_types, results[0] if results else None)
        out = llvm.FuncOp(f.sym_name.data, function_type, linkage=llvm.LinkageAttr("external"), body=self.region)
        out.arg_attrs = llvm.ArrayAttr(arg_attrs)
        return out

    def convert_block_ops(self, block: Block) -> None:
        for op in block.ops:
            self.convert_op(op)

    def convert_op(self, op: Operation) -> None:
        match op:
            case loop.ForOp():
                self.convert_for(op)
            case loop.YieldOp():
                pass
            case loop.LoadOp():
                self.values[op.result] = self._ins(llvm.LoadOp(self.address(op.buffer, op.indices), op.result.type))
            case loop.StoreOp():
                self._ins(llvm.StoreOp(self.values[op.value], self.address(op.buffer, op.indices)))
            case loop.AllocOp():
                self.convert_alloc(op)
            case loop.FreeOp():
                self._ins(llvm.CallOp("free", self.buffers[op.buffer].pointer))
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
                self._ins(call)
                if op.results:
                    self.values[op.results[0]] = call.returned
            case func.ReturnOp():
                self._ins(llvm.ReturnOp(self.values[op.arguments[0]] if op.arguments else None))
            case _:
                converter = SCALAR_CONVERTERS.get(type(op))
                if converter is None:
                    raise PassFailedException(
                        f"loop-to-llvm: no conversion for '{op.name}' in '{self.function.sym_name.data}'"
                    )
                self.values[op.results[0]] = converter(self.b, op, [self.values[v] for v in op.operands])

    # -- loops ---------------------------------------------------------------------

    def convert_for(self, op: loop.ForOp) -> None:
        """``for iv in [lb, ub) step s``: header(iv) -> body -> latch -> header | exit."""
        lb, ub, step = (self.values[v] for v in (op.lb, op.ub, op.step))
        header = Block(arg_types=[i64])
        body = Block()
        exit_block = Block()
        self.region.add_block([header, body])
        self._ins(llvm.BrOp(header, lb))
        iv = header.args[0]
        self.block = header
        in_range = self._ins(llvm.ICmpOp(iv, ub, IntegerAttr(llvm.ICmpPredicateFlag("slt").to_int(), i64)))
        self._ins(llvm.CondBrOp(in_range, body, [], exit_block, []))
        self.values[op.induction_var] = iv
        self.block = body
        self.convert_block_ops(op.body.block)
        # nsw: the induction variable never wraps (bounds are buffer sizes)
        nxt = self._ins(llvm.AddOp(iv, step, overflow=llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))))
        self._ins(llvm.BrOp(header, nxt))
        # in program order: the exit comes after every block the body added
        self.region.add_block(exit_block)
        self.block = exit_block

    # -- memory ----------------------------------------------------------------------

    def address(self, memref: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        """The element's pointer: base + row-major linear offset (inbounds GEP)."""
        buf = self.buffers[memref]
        offset: SSAValue | None = None
        stride: int | SSAValue = 1
        for axis in reversed(range(len(indices))):
            idx = self.values[indices[axis]]
            term = idx if _is_one(stride) else self._mul(idx, stride)
            offset = term if offset is None else self._ins(llvm.AddOp(offset, term))
            if axis:
                stride = self._mul_sizes(stride, buf.sizes[axis])
        if offset is None:
            return buf.pointer
        return self._ins(
            llvm.GEPOp.from_mixed_indices(buf.pointer, [offset], pointee_type=buf.element, inbounds=True)
        )

    def _mul(self, value: SSAValue, factor: int | SSAValue) -> SSAValue:
        f = int_constant(self.b, factor) if isinstance(factor, int) else factor
        return self._ins(llvm.MulOp(value, f))

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
            pointer = llvm.AllocaOp(one, t.element_type, alignment=HEAP_ALIGNMENT)
            self.alloca_builder.insert(pointer)
            pointer = pointer.results[0]
        else:
            nbytes = self._mul_sizes(count, element_size(t.element_type))
            if isinstance(nbytes, int):
                # aligned_alloc wants a multiple of the alignment, and never 0
                nbytes = int_constant(self.b, max(HEAP_ALIGNMENT, -(-nbytes // HEAP_ALIGNMENT) * HEAP_ALIGNMENT))
            else:
                mask = int_constant(self.b, HEAP_ALIGNMENT - 1)
                padded = self._ins(llvm.AddOp(nbytes, mask))
                nbytes = self._ins(llvm.AndOp(padded, int_constant(self.b, ~(HEAP_ALIGNMENT - 1))))
                nbytes = self._ins(llvm.OrOp(nbytes, int_constant(self.b, HEAP_ALIGNMENT)))
            alignment = int_constant(self.b, HEAP_ALIGNMENT)
            call = llvm.CallOp("aligned_alloc", alignment, nbytes, return_type=llvm.LLVMPointerType())
            pointer = self._ins(call)
        self.buffers[op.result] = Buffer(pointer, sizes, t.element_type)


def _is_one(v: int | SSAValue) -> bool:
    return isinstance(v, int) and v == 1


def _declare_external_calls(module: ModuleOp) -> None:
    """Declare the C functions the code calls (malloc family, libm) from their call sites."""
    defined = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)}
    declared: dict[str, llvm.FuncOp] = {}
    for op in module.walk():
        if isinstance(op, llvm.CallOp) and op.callee is not None:
            name = op.callee.string_value()
            if name in defined or name in declared:
                continue
            result = op.returned.type if op.returned is not None else None
            fn_type = llvm.LLVMFunctionType([a.type for a in op.args], result)
            declared[name] = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
    for decl in declared.values():
        module.body.block.add_op(decl)


@dataclass(frozen=True)
class LoopToLLVMPass(ModulePass):
    """Convert buffer-level functions (loop, arith, math, func) to the llvm dialect."""

    name = "loop-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            converted = _FunctionConverter(function).convert()
            Rewriter.replace_op(function, converted)
        _declare_external_calls(op)


__all__ = ["LoopToLLVMPass", "abi_types"]
