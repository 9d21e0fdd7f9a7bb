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

The walk is :class:`~.llvm_converter.FunctionConverter`'s; each loop kind but ``serial``
has a converter of its own registered by kind (``llvm_converter.LOOP_CONVERTERS``:
``parallel_to_llvm.py``, ``vectorize.py``, ``unroll_to_llvm.py``), loaded here.

Example (``tensorkiln-opt f.mlir -p loop-to-llvm``, or ``-p 'loop-to-llvm{vector_bits=256}'``
for an AVX2 target)::

    func.func @k(%A: memref<?x8xf32>)  ->  llvm.func @k(%A: !llvm.ptr {llvm.noalias}, %A_d0: i64)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.walk import walk_ops
from ..runtime.packed_call import packed_entry_name
from . import lowp_to_llvm  # noqa: F401  (the converters of lowp dot products: scalar and vector)
from . import parallel_to_llvm, unroll_to_llvm, vectorize  # noqa: F401  (register their loop converters)
from .llvm_converter import ConversionState, FunctionConverter, abi_types
from .packed_slots import from_slot, slot_type


def _declare_external_calls(module: ModuleOp) -> None:
    """Declare the C functions the code calls (malloc family, libm) from their call sites."""
    defined = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)}
    declared: dict[str, llvm.FuncOp] = {}
    for op in walk_ops(module):
        if type(op) is llvm.CallOp and op.callee is not None:  # (isinstance: ABCMeta's slow check)
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
    name = function.sym_name.data
    if function.function_type.outputs.data:
        raise PassFailedException(f"loop-to-llvm: a packed entry calls functions without results, not '{name}'")
    wrapper = FunctionConverter(packed_entry_name(name), state)
    slots = wrapper.add_argument(llvm.LLVMPointerType())
    slots.name_hint = "arguments"
    types = [t for argument in function.function_type.inputs.data for t in abi_types(argument)]
    arguments = []
    for k, t in enumerate(types):
        slot = wrapper.emit(llvm.GEPOp.from_mixed_indices(slots, [k], pointee_type=slot_type(t), inbounds=True))
        arguments.append(from_slot(wrapper.emit, wrapper.emit(llvm.LoadOp(slot, slot_type(t))), t))
    wrapper.emit(llvm.CallOp(name, *arguments))
    wrapper.emit(llvm.ReturnOp())
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
            converted = FunctionConverter(function.sym_name.data, state).convert_function(function)
            Rewriter.replace_op(function, converted)
        for g in state.new_globals.values():
            op.body.block.add_op(g)
        for f in state.new_functions:
            op.body.block.add_op(f)
        _declare_external_calls(op)


__all__ = ["LoopToLLVMPass", "packed_entry"]
