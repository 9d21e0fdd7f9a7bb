"""``parallel`` loops -> the OpenMP runtime (libgomp), as C compilers do.

A parallel loop ``loop.for %i = %lb to %ub step %s parallel { body }`` in ``@f``
becomes two functions and a call:

* ``@f_parallel<k>_body(captures..., %begin: i64, %end: i64, %step: i64)``: the loop
  over ``[begin, end)`` with the body converted as usual. The captures are every value
  the body uses and ``@f`` defines (buffers as pointer + dynamic sizes, scalars), in
  first-use order; buffer pointers keep their ``noalias`` attribute (LLVM inlines the
  body into the thread function and keeps the alias facts as scopes, so the body still
  vectorises). Integer constants are re-made inside instead of captured.
* ``@f_parallel<k>(%data: !llvm.ptr)``, the thread function: reads the captures from
  ``data``, an array of 8-byte slots (slot ``j`` holds the ``j``-th flattened capture:
  a pointer, or an i64 holding the value's bits, zero-extended; the last three slots
  hold ``lb``, ``ub`` and ``step``), then takes chunks of iterations
  (``GOMP_loop_nonmonotonic_dynamic_next``) and calls the body function on each until
  none is left (``GOMP_loop_end_nowait``);
* in ``@f``: the slots are a stack array (entry-block ``alloca``) filled in place of
  the loop, then ``GOMP_parallel_loop_nonmonotonic_dynamic(@f_parallel<k>, data,
  tk_num_threads, lb, ub, step, chunk, 0)``; it returns when every thread is done.

Dynamic scheduling (OpenMP's ``schedule(nonmonotonic:dynamic, chunk)``), not static
chunks: the iterations are cut into about ``CHUNKS_PER_THREAD`` chunks per thread
that the threads take from a shared counter, so when another process holds one core
the thread running there takes fewer chunks instead of stalling the whole loop.

Thread count: the generated code reads the 32-bit global ``tk_num_threads`` (an
external symbol) at each launch and passes it to ``GOMP_parallel``; 0 means libgomp's
default (``OMP_NUM_THREADS``, else every core). The runtime owns the variable
(``tensorkiln.runtime.threads``: ``TK_NUM_THREADS``, ``set_num_threads``), and the JIT
binds the symbol to it. A global rather than ``omp_set_num_threads``: that one sets a
per-thread OpenMP variable, so it would not reach code called from other Python threads.

Each iteration runs exactly once, on some thread, with the same arithmetic as the
serial loop: results do not depend on the thread count (a schedule must not mark a
loop parallel whose iterations write the same element). Buffers allocated outside the
loop are shared by the threads; ``local`` buffers allocated inside are private.
Parallel loops nested in a parallel loop run serially.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import DictionaryAttr, UnitAttr, i8, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from . import llvm_ops
from .denormals import enter_flush_mode, leave_flush_mode, resume_flush_mode
from .llvm_converter import Buffer, FunctionConverter, loop_converter
from .packed_slots import from_slot, slot_type, to_slot
from .scalar_to_llvm import int_constant

#: the 32-bit global the generated code reads the thread count from (0: libgomp's default)
NUM_THREADS_SYMBOL = "tk_num_threads"

#: chunks per thread of a parallel loop's iterations: threads take chunks from a shared
#: counter, so one slowed down (by another process on its core) takes fewer of them
CHUNKS_PER_THREAD = 4


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

    # -- the thread function: unpack the slots, take this thread's chunk, call the body
    thread = FunctionConverter(stem, state)
    data = thread.add_argument(llvm.LLVMPointerType())
    data.name_hint = "data"
    ins = thread.emit

    def slot(k: int, t: Attribute = i64) -> SSAValue:
        return ins(llvm.GEPOp.from_mixed_indices(data, [k], pointee_type=t, inbounds=True))

    unpacked = []
    for k, v in enumerate(slots):
        t = slot_type(v.type)
        unpacked.append(from_slot(ins, ins(llvm.LoadOp(slot(k, t), t)), v.type))
    n = len(slots)
    st = ins(llvm.LoadOp(slot(n + 2), i64))
    # every thread running chunks of a kernel that flushes denormals flushes them too
    flush_mode = enter_flush_mode(thread) if conv.flush_mode is not None else None
    # take chunks from libgomp's shared iteration counter until none is left
    one = int_constant(thread.alloca_builder, 1)
    begin_p = thread.alloca_builder.insert(llvm.AllocaOp(one, i64, alignment=8)).res
    end_p = thread.alloca_builder.insert(llvm.AllocaOp(one, i64, alignment=8)).res
    header, chunk_block, exit_block = Block(), Block(), Block()
    thread.region.add_block([header, chunk_block, exit_block])
    ins(llvm.BrOp(header))
    thread.block = header
    more = ins(llvm.CallOp("GOMP_loop_nonmonotonic_dynamic_next", begin_p, end_p, return_type=i8))
    zero8 = int_constant(thread.b, 0, i8)
    ins(llvm.CondBrOp(ins(llvm.ICmpOp(more, zero8, llvm_ops.icmp_predicate("ne"))), chunk_block, [], exit_block, []))
    thread.block = chunk_block
    begin_v = ins(llvm.LoadOp(begin_p, i64))
    end_v = ins(llvm.LoadOp(end_p, i64))
    ins(llvm.CallOp(f"{stem}_body", *unpacked, begin_v, end_v, st))
    ins(llvm.BrOp(header))
    thread.block = exit_block
    ins(llvm.CallOp("GOMP_loop_end_nowait"))
    if flush_mode is not None:
        leave_flush_mode(thread, flush_mode)
    ins(llvm.ReturnOp())
    state.new_functions.append(thread.finish([DictionaryAttr({})]))

    # -- in the caller: fill the slots, launch
    slots += [conv.values[op.lb], conv.values[op.ub], conv.values[op.step]]
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
    chunk = _chunk_size(conv, lb, ub, st, threads)
    if conv.flush_mode is not None:
        leave_flush_mode(conv, conv.flush_mode)  # (threads made by the launch inherit the mode)
    conv.emit(
        llvm.CallOp(
            "GOMP_parallel_loop_nonmonotonic_dynamic",
            function, array.res, threads, lb, ub, st, chunk, int_constant(conv.b, 0, i32),
        )
    )
    if conv.flush_mode is not None:
        resume_flush_mode(conv, conv.flush_mode)
    return True


def _chunk_size(conv: FunctionConverter, lb: SSAValue, ub: SSAValue, step: SSAValue, threads: SSAValue) -> SSAValue:
    """Iterations per chunk: ``max(1, trips / (CHUNKS_PER_THREAD * threads))``, with
    ``threads`` the requested count or, for 0, ``omp_get_max_threads()``."""
    ins = conv.emit
    zero32 = int_constant(conv.b, 0, i32)
    default = ins(llvm.CallOp("omp_get_max_threads", return_type=i32))
    count = ins(llvm.SelectOp(ins(llvm.ICmpOp(threads, zero32, llvm_ops.icmp_predicate("eq"))), default, threads))
    one = int_constant(conv.b, 1)
    span = ins(llvm.SubOp(ins(llvm.AddOp(ins(llvm.SubOp(ub, lb)), step)), one))
    trips = ins(llvm.SDivOp(span, step))
    pieces = ins(llvm.MulOp(ins(llvm.SExtOp(count, i64)), int_constant(conv.b, CHUNKS_PER_THREAD)))
    chunk = ins(llvm.SDivOp(trips, pieces))
    return ins(llvm.SelectOp(ins(llvm.ICmpOp(chunk, one, llvm_ops.icmp_predicate("slt"))), one, chunk))


__all__ = ["NUM_THREADS_SYMBOL", "convert_parallel", "free_values"]
