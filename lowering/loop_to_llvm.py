"""loop -> llvm: functions over buffers become ``llvm.func`` over pointers.

One walk over each function, with a value map (no greedy pattern rewriting and no
blanket type conversion, which are slow in pure Python; see the xDSL notes):

* a memref argument becomes a pointer followed by one ``i64`` per dynamic dim
  (the calling convention of every generated function: "bare pointer + sizes");
* a ``serial`` ``loop.for`` becomes header/body/exit blocks with the induction variable
  as a block argument (a phi); the other kinds:

  - ``parallel``: the loop is outlined and run by the OpenMP runtime (libgomp's
    ``GOMP_parallel``), each thread taking a static chunk of the iterations
    (:mod:`.parallel_to_llvm`; a parallel loop inside one runs serially);
  - ``vectorized``: explicit SIMD code, a main loop over ``W`` lanes (LLVM vector
    types, ``W = vector_bits / widest element``) then a scalar remainder loop
    (:mod:`.vectorize`; a body it cannot vectorize is lowered serially, see there);
  - ``unrolled``: with constant lower bound and step and at most ``MAX_UNROLL``
    iterations (the upper bound a constant, or bounded by one: the inner loop of a
    split, then each copy is guarded), the body is emitted once per iteration with the
    induction variable a constant; otherwise the loop is lowered serially (LLVM may
    still unroll it);
  - GPU bindings (``blockIdx.x``...) are serial loops here (the GPU lowering binds them);

* ``loop.load``/``loop.store`` become ``getelementptr inbounds``
  + load/store on the row-major linear offset (inbounds GEPs, not inttoptr arithmetic,
  so LLVM can vectorise);
* ``loop.alloc`` is an entry-block ``alloca`` (local scope) or ``aligned_alloc``
  (global scope), ``loop.free`` calls ``free``;
* scalar ``arith``/``math`` ops go through :mod:`.scalar_to_llvm`.

Example (``tensorkiln-opt f.mlir -p loop-to-llvm``, or ``-p 'loop-to-llvm{vector_bits=256}'``
for an AVX2 target)::

    func.func @k(%A: memref<?x8xf32>)  ->  llvm.func @k(%A: !llvm.ptr {llvm.noalias}, %A_d0: i64)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith, func, llvm
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
from . import llvm_ops
from ..runtime.packed_call import packed_entry_name
from .denormals import FlushMode, enter_flush_mode, flushes_denormals, leave_flush_mode
from .hoist_temporaries import hoisted_temporaries
from .parallel_to_llvm import convert_parallel
from .scalar_to_llvm import SCALAR_CONVERTERS, int_constant, llvm_type
from .vectorize import convert_vectorized

#: (the name the driver imports from here until it marks functions with
#: ``loop.mark_packed_entry``): such a function also gets ``@<name>_packed(ptr)``
PACKED_ENTRY_ATTR = loop.PACKED_ENTRY_ATTR

#: alignment of heap buffers, in bytes (a cache line; what AVX-512 loads like)
HEAP_ALIGNMENT = 64

#: an ``unrolled`` loop with more iterations than this is lowered as a serial loop
MAX_UNROLL = 64


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


class _FunctionConverter:
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

    def _ins(self, op: Operation) -> SSAValue:
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
        may_alias = set(args[len(args) - hoisted_temporaries(f) :])
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
        match op:
            case loop.ForOp():
                self.convert_for(op)
            case loop.YieldOp():
                pass
            case loop.LoadOp():
                self.values[op.result] = self._ins(llvm_ops.load(self.address(op.buffer, op.indices), op.result.type))
            case loop.StoreOp():
                self._ins(llvm_ops.store(self.values[op.value], self.address(op.buffer, op.indices)))
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
                if self.flush_mode is not None:
                    leave_flush_mode(self, self.flush_mode)
                self._ins(llvm.ReturnOp(self.values[op.arguments[0]] if op.arguments else None))
            case _:
                converter = SCALAR_CONVERTERS.get(type(op))
                if converter is None:
                    raise PassFailedException(
                        f"loop-to-llvm: no conversion for '{op.name}' in '{self.name}'"
                    )
                self.values[op.results[0]] = converter(self.b, op, [self.values[v] for v in op.operands])

    # -- loops ---------------------------------------------------------------------

    def convert_for(self, op: loop.ForOp) -> None:
        kind = op.kind.data
        if kind == "parallel" and not self.in_parallel:
            convert_parallel(self, op)
        elif kind == "vectorized":
            if not convert_vectorized(self, op):
                self.serial_loop(op)
        elif kind == "unrolled":
            self.convert_unrolled(op)
        else:
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
        self._ins(llvm_ops.br(header, lb))
        iv = header.args[0]
        self.block = header
        in_range = self._ins(llvm_ops.make(llvm.ICmpOp, iv, ub, llvm_ops.icmp_predicate("slt")))
        self._ins(llvm_ops.cond_br(in_range, body, exit_block))
        self.values[op.induction_var] = iv
        self.block = body
        self.convert_block_ops(op.body.block)
        # nsw: the induction variable never wraps (bounds are buffer sizes)
        nxt = self._ins(llvm_ops.add(iv, step, llvm_ops.NO_SIGNED_WRAP))
        self._ins(llvm_ops.br(header, nxt))
        # in program order: the exit comes after every block the body added
        self.region.add_block(exit_block)
        self.block = exit_block

    def convert_unrolled(self, op: loop.ForOp) -> None:
        """The body once per iteration, the induction variable a constant, when the
        lower bound and step are constants and the trip count is at most ``MAX_UNROLL``.

        With a constant upper bound the copies are straight-line code; with an upper
        bound only bounded at compile time (``arith.minsi %c4, %rest``: the inner loop
        of a split), each copy is guarded by ``iv < ub`` and the first failing guard
        leaves. Otherwise the loop is lowered serially."""
        lb, step = constant_int(op.lb), constant_int(op.step)
        bound = static_upper_bound(op.ub)
        if lb is None or step is None or step <= 0 or bound is None:
            self.serial_loop(op)
            return
        iterations = range(lb, bound, step)
        if len(iterations) > MAX_UNROLL:
            self.serial_loop(op)
            return
        guarded = constant_int(op.ub) is None
        exit_block = Block()
        for k in iterations:
            iv = int_constant(self.b, k)
            if guarded:
                copy = Block()
                self.region.add_block(copy)
                runs = self._ins(llvm_ops.make(llvm.ICmpOp, iv, self.values[op.ub], llvm_ops.icmp_predicate("slt")))
                self._ins(llvm_ops.cond_br(runs, copy, exit_block))
                self.block = copy
            self.values[op.induction_var] = iv
            self.convert_block_ops(op.body.block)
        if guarded:
            self._ins(llvm_ops.br(exit_block))
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
            offset = term if offset is None else self._ins(llvm_ops.add(offset, term))
            if axis:
                stride = self._mul_sizes(stride, buf.sizes[axis])
        if offset is None:
            return buf.pointer
        return self._ins(llvm_ops.gep(buf.pointer, offset, buf.element))

    def _mul(self, value: SSAValue, factor: int | SSAValue) -> SSAValue:
        f = int_constant(self.b, factor) if isinstance(factor, int) else factor
        return self._ins(llvm_ops.mul(value, f))

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
                padded = self._ins(llvm.AddOp(nbytes, mask))
                nbytes = self._ins(llvm.AndOp(padded, int_constant(self.b, ~(HEAP_ALIGNMENT - 1))))
                nbytes = self._ins(llvm.OrOp(nbytes, int_constant(self.b, HEAP_ALIGNMENT)))
            alignment = int_constant(self.b, HEAP_ALIGNMENT)
            call = llvm.CallOp("aligned_alloc", alignment, nbytes, return_type=llvm.LLVMPointerType())
            pointer = self._ins(call)
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


def packed_entry(function: func.FuncOp, state: ConversionState) -> llvm.FuncOp:
    """``@<name>_packed(ptr %arguments)``: loads the arguments of ``function`` (defined
    here or declared: an external module's) from consecutive 8-byte slots of an array (a
    pointer, or an ``i64`` holding a scalar's bits) and calls it (why:
    ``runtime/packed_call.py``)."""
    from .parallel_to_llvm import _from_slot, _slot_type

    name = function.sym_name.data
    if function.function_type.outputs.data:
        raise PassFailedException(f"loop-to-llvm: a packed entry calls functions without results, not '{name}'")
    wrapper = _FunctionConverter(packed_entry_name(name), state)
    slots = wrapper.add_argument(llvm.LLVMPointerType())
    slots.name_hint = "arguments"
    types = [t for argument in function.function_type.inputs.data for t in abi_types(argument)]
    arguments = []
    for k, t in enumerate(types):
        slot = wrapper._ins(llvm.GEPOp.from_mixed_indices(slots, [k], pointee_type=_slot_type(t), inbounds=True))
        arguments.append(_from_slot(wrapper._ins, wrapper._ins(llvm.LoadOp(slot, _slot_type(t))), t))
    wrapper._ins(llvm.CallOp(name, *arguments))
    wrapper._ins(llvm.ReturnOp())
    return wrapper.finish([DictionaryAttr({})])


@dataclass(frozen=True)
class LoopToLLVMPass(ModulePass):
    """Convert buffer-level functions (loop, arith, math, func) to the llvm dialect.

    ``vector_bits``: the SIMD width ``vectorized`` loops are lowered for (512: AVX-512;
    256: AVX2; a wider width than the target has is still correct, LLVM splits the
    vectors)."""

    name = "loop-to-llvm"

    vector_bits: int = 512

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.vector_bits < 64 or self.vector_bits & (self.vector_bits - 1):
            raise PassFailedException(f"loop-to-llvm: vector_bits must be a power of two >= 64, got {self.vector_bits}")
        state = ConversionState(vector_bits=self.vector_bits)
        state.names |= {f.sym_name.data for f in op.ops if isinstance(f, func.FuncOp | llvm.FuncOp)}
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if loop.has_packed_entry(function):
                state.new_functions.append(packed_entry(function, state))
            if function.is_declaration:  # an external function (byoc): declared from its calls below
                function.detach()
                function.erase()
                continue
            converted = _FunctionConverter(function.sym_name.data, state).convert_function(function)
            Rewriter.replace_op(function, converted)
        for g in state.new_globals.values():
            op.body.block.add_op(g)
        for f in state.new_functions:
            op.body.block.add_op(f)
        _declare_external_calls(op)


__all__ = [
    "MAX_UNROLL",
    "PACKED_ENTRY_ATTR",
    "Buffer",
    "ConversionState",
    "LoopToLLVMPass",
    "abi_types",
    "constant_int",
    "static_upper_bound",
]
