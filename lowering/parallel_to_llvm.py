"""``parallel`` loops -> tensorkiln's thread pool (``backends/llvm/thread_pool_ir.py``).

A parallel loop ``loop.for %i = %lb to %ub step %s parallel { body }`` in ``@f``
becomes two functions and a call:

* ``@f_parallel<k>_body(captures..., %begin: i64, %end: i64, %step: i64)``: the loop
  over ``[begin, end)`` with the body converted as usual. The captures are every value
  the body uses and ``@f`` defines (buffers as pointer + dynamic sizes, scalars), in
  first-use order; buffer pointers keep their ``noalias`` attribute (LLVM inlines the
  body into the piece function and keeps the alias facts as scopes, so the body still
  vectorises). Integer constants are re-made inside instead of captured.
* ``@f_parallel<k>(%data: !llvm.ptr, %begin: i64, %end: i64)``, the piece function:
  reads the captures from ``data``, an array of 8-byte slots (slot ``j`` holds the
  ``j``-th flattened capture: a pointer, or an i64 holding the value's bits,
  zero-extended; the last slot holds the step), and runs the body on ``[begin, end)``;
* in ``@f``: the slots are a stack array (entry-block ``alloca``) filled in place of
  the loop, then ``tk_parallel_for(@f_parallel<k>, data, lb, ub, step, tk_num_threads,
  cap)``; it returns when every iteration is done.

The pool cuts ``[lb, ub)`` into pieces (a few per thread) that the threads, the calling
one included, take from a shared counter: a thread slowed down by another process on
its core takes fewer of them, and one not yet awake takes none. ``cap``: the most
threads worth waking for this loop (``loop.max_threads``, set by the schedule's cost
model: ``schedule/strategies/parallel.py``), else :data:`UNCAPPED`; a loop run on one
thread is one call of the piece function, with no synchronisation.

Thread count: the generated code reads the 32-bit global ``tk_num_threads`` (an
external symbol) at each launch; 0 means every core. The runtime owns the variable
(``tensorkiln.runtime.threads``: ``TK_NUM_THREADS``, ``set_num_threads``), and the JIT
binds the symbol to it.

Each iteration runs exactly once, on some thread, with the same arithmetic as the
serial loop: results do not depend on the thread count (a schedule must not mark a
loop parallel whose iterations write the same element). Buffers allocated outside the
loop are shared by the threads; ``local`` buffers allocated inside are private.
Parallel loops nested in a parallel loop run serially.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import DictionaryAttr, UnitAttr, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from .denormals import enter_flush_mode, leave_flush_mode, resume_flush_mode
from .llvm_converter import Buffer, FunctionConverter, loop_converter
from .packed_slots import from_slot, slot_type, to_slot
from .scalar_to_llvm import int_constant

#: the 32-bit global the generated code reads the thread count from (0: libgomp's default)
NUM_THREADS_SYMBOL = "tk_num_threads"

#: the thread pool's launch function (``backends/llvm/thread_pool_ir.py``)
LAUNCH_FUNCTION = "tk_parallel_for"
#: the thread cap of a loop the schedule gave none
UNCAPPED = 1 << 30


def free_values(op: Operation) -> list[SSAValue]:
    """Values used inside ``op``'s regions and defined outside ``op``, in first-use order."""
    seen: dict[SSAValue, None] = {}
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operands:
            if v not in seen and not op.is_ancestor(v.owner):
                seen[v] = None
    return list(seen)


@loop_converter("parallel")
def convert_parallel(conv: FunctionConverter, op: loop.ForOp) -> bool:
    """Replace the parallel loop ``op`` by a ``GOMP_parallel`` launch (see the module
    doc); declines a parallel loop inside an outlined one (it runs serially)."""
    if conv.in_parallel:
        return False
    state = conv.state
    stem = state.unique_name(f"{conv.name}_parallel")

    # -- the body function: captures + (begin, end, step) -> the loop over [begin, end)
    body = FunctionConverter(f"{stem}_body", state, in_parallel=True)
    slots: list[SSAValue] = []  # the caller's values, in slot order
    arg_attrs: list[DictionaryAttr] = []
    constants: list[Operation] = []
    for v in free_values(op):
        if v in conv.buffers:
            buf = conv.buffers[v]
            pointer = body.add_argument(llvm.LLVMPointerType())
            pointer.name_hint = buf.pointer.name_hint
            arg_attrs.append(DictionaryAttr({"llvm.noalias": UnitAttr()}))
            slots.append(buf.pointer)
            sizes: list[int | SSAValue] = []
            for s in buf.sizes:
                if isinstance(s, SSAValue):
                    sizes.append(body.add_argument(i64))
                    arg_attrs.append(DictionaryAttr({}))
                    slots.append(s)
                else:
                    sizes.append(s)
            body.buffers[v] = Buffer(pointer, sizes, buf.element)
        elif isinstance(v.owner, arith.ConstantOp):
            constants.append(v.owner)
        else:
            value = conv.values[v]
            body.values[v] = body.add_argument(value.type)
            body.values[v].name_hint = v.name_hint or value.name_hint
            arg_attrs.append(DictionaryAttr({}))
            slots.append(value)
    begin, end, step = (body.add_argument(i64) for _ in range(3))
    arg_attrs += [DictionaryAttr({})] * 3
    for c in constants:
        body.convert_op(c)
    body.serial_loop(op, begin, end, step)
    body.emit(llvm.ReturnOp())
    state.new_functions.append(body.finish(arg_attrs))

    # -- the piece function: unpack the slots, call the body on [begin, end)
    piece = FunctionConverter(stem, state)
    data = piece.add_argument(llvm.LLVMPointerType())
    data.name_hint = "data"
    piece_begin, piece_end = piece.add_argument(i64), piece.add_argument(i64)
    piece_begin.name_hint, piece_end.name_hint = "begin", "end"
    ins = piece.emit

    def slot(k: int, t: Attribute = i64) -> SSAValue:
        return ins(llvm.GEPOp.from_mixed_indices(data, [k], pointee_type=t, inbounds=True))

    unpacked = []
    for k, v in enumerate(slots):
        t = slot_type(v.type)
        unpacked.append(from_slot(ins, ins(llvm.LoadOp(slot(k, t), t)), v.type))
    step_value = ins(llvm.LoadOp(slot(len(slots)), i64))
    # every thread running pieces of a kernel that flushes denormals flushes them too
    flush_mode = enter_flush_mode(piece) if conv.flush_mode is not None else None
    ins(llvm.CallOp(f"{stem}_body", *unpacked, piece_begin, piece_end, step_value))
    if flush_mode is not None:
        leave_flush_mode(piece, flush_mode)
    ins(llvm.ReturnOp())
    state.new_functions.append(piece.finish([DictionaryAttr({})] * 3))

    # -- in the caller: fill the slots (the captures, then the step), launch
    slots.append(conv.values[op.step])
    # (slots typed as pointers: llvmlite then types the array as an opaque pointer, into
    # which both pointers and i64s can be stored)
    array = llvm.AllocaOp(int_constant(conv.alloca_builder, len(slots)), llvm.LLVMPointerType(), alignment=8)
    conv.alloca_builder.insert(array)
    for k, v in enumerate(slots):
        raw = to_slot(conv.emit, v)
        address = conv.emit(llvm.GEPOp.from_mixed_indices(array.res, [k], pointee_type=raw.type, inbounds=True))
        conv.emit(llvm.StoreOp(raw, address))
    if NUM_THREADS_SYMBOL not in state.new_globals:
        state.new_globals[NUM_THREADS_SYMBOL] = llvm.GlobalOp(i32, NUM_THREADS_SYMBOL, "external")
    threads = conv.emit(
        llvm.LoadOp(conv.emit(llvm.AddressOfOp(NUM_THREADS_SYMBOL, llvm.LLVMPointerType())), i32)
    )
    function = conv.emit(llvm.AddressOfOp(stem, llvm.LLVMPointerType()))
    lb, ub, st = (conv.values[v] for v in (op.lb, op.ub, op.step))
    cap = int_constant(conv.b, loop.max_threads(op) or UNCAPPED)
    if conv.flush_mode is not None:
        leave_flush_mode(conv, conv.flush_mode)  # (workers the launch creates inherit the mode)
    conv.emit(llvm.CallOp(LAUNCH_FUNCTION, function, array.res, lb, ub, st, threads, cap))
    if conv.flush_mode is not None:
        resume_flush_mode(conv, conv.flush_mode)
    return True


__all__ = ["LAUNCH_FUNCTION", "NUM_THREADS_SYMBOL", "UNCAPPED", "convert_parallel", "free_values"]
