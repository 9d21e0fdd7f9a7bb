"""The native call entry (``runtime/native_call.py`` says what it does and why): the C
function ``tk_native_call`` of the interpreter, generated here in LLVM IR, that makes a
compiled model's call from the words of a ``NativeCallContext``.

A ``METH_VARARGS`` function (``PyObject *f(PyObject *context, PyObject *args)``, made
callable by ``runtime/python_abi.py``), its ``self`` the context's ``int64`` array. It
reads CPython's and numpy's object layouts directly (the tuple's items; the array's
data, ndim, dims, dtype and flags) and calls numpy's ``PyArray_NewFromDescr`` and the
interpreter's ``Py_IncRef``, ``PyEval_SaveThread``... through addresses in the context's
words, so its machine code is the same in every process and refers to no symbol but
``memcpy``: it is compiled once per process for built models (:func:`compiled_entry`,
registered with the runtime) and linked into every exported ``model.so``
(:func:`entry_object`), which a deployed model calls without llvmlite.

Example::

    from tensorkiln.backends.llvm import native_entry
    address = native_entry.compiled_entry()        # this process's copy (None: cannot run)
    object_bytes = native_entry.entry_object(target)   # for a shared library
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ...runtime import native_call as nc
from ...runtime.python_abi import (
    ARRAY_DATA,
    ARRAY_DESCR,
    ARRAY_DIMS,
    ARRAY_FLAGS,
    ARRAY_NDIM,
    C_CONTIGUOUS,
    OB_TYPE,
    PYTHON_FUNCTIONS,
    TUPLE_ITEMS,
    TUPLE_SIZE,
    layout_problem,
)
from .jit import JITModule
from .target import CPUTarget, pic_target_machine, target_machine

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

#: the most dims an output may have here (numpy's NPY_MAXDIMS is 64 since 2.0, 32 before)
MAX_DIMS = 64

#: the interpreter's functions the entry calls (their addresses: the context's words
#: from ``nc.PROCESS + 2`` on, in ``PYTHON_FUNCTIONS``' order)
PYTHON_TYPES = {
    "Py_IncRef": ir.FunctionType(VOID, [PTR]),
    "Py_DecRef": ir.FunctionType(VOID, [PTR]),
    "PyEval_SaveThread": ir.FunctionType(PTR, []),
    "PyEval_RestoreThread": ir.FunctionType(VOID, [PTR]),
    "PyTuple_New": ir.FunctionType(PTR, [I64]),
    "PyTuple_SetItem": ir.FunctionType(I32, [PTR, I64, PTR]),
}
#: numpy's PyArray_NewFromDescr(subtype, descr, nd, dims, strides, data, flags, obj)
NEW_FROM_DESCR = ir.FunctionType(PTR, [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR])


class _Emitter:
    """An IRBuilder with the few shapes of code the entry is made of."""

    def __init__(self, function: ir.Function):
        self.function = function
        self.b = ir.IRBuilder(function.append_basic_block("entry"))
        self._allocas = self.b.block
        self.words: ir.Value | None = None  # the context's words, once loaded

    def variable(self, initial: ir.Value, type: ir.Type = I64) -> ir.AllocaInstr:
        """A mutable local (promoted to a register by the optimiser)."""
        with self.b.goto_block(self._allocas):
            self.b.position_at_start(self._allocas)
            slot = self.b.alloca(type)
        self.b.store(initial, slot)
        return slot

    def at(self, base: ir.Value, offset: int | ir.Value, type: ir.Type = I64) -> ir.Value:
        """The ``type`` value at ``base + offset`` bytes."""
        offset = ir.Constant(I64, offset) if isinstance(offset, int) else offset
        return self.b.load(self.b.gep(base, [offset], source_etype=I8), typ=type)

    def element(self, base: ir.Value, index: ir.Value | int, type: ir.Type = I64) -> ir.Value:
        """Pointer to ``base[index]`` (``type`` elements)."""
        index = ir.Constant(I64, index) if isinstance(index, int) else index
        return self.b.gep(base, [index], source_etype=type)

    def word(self, base: ir.Value, index: ir.Value | int) -> ir.Value:
        return self.b.load(self.element(base, index), typ=I64)

    def pointer(self, address: ir.Value) -> ir.Value:
        return self.b.inttoptr(address, PTR)

    def callee(self, address: ir.Value, type: ir.FunctionType) -> ir.Value:
        """The function of ``type`` at ``address``, callable with ``b.call`` (llvmlite
        takes an indirect callee's type from its pointer type: LLVM reads it as ``ptr``)."""
        return self.b.inttoptr(address, type.as_pointer())

    def require(self, condition: ir.Value, otherwise: ir.Block) -> None:
        """Go on when ``condition`` holds, else branch to ``otherwise``."""
        go_on = self.function.append_basic_block()
        self.b.cbranch(condition, go_on, otherwise)
        self.b.position_at_end(go_on)

    @contextmanager
    def counting(self, start: ir.Value, stop: ir.Value) -> Iterator[ir.Value]:
        """``for i in range(start, stop)``: the body is emitted in the block; yields i."""
        index = self.variable(start)
        head, body, done = (self.function.append_basic_block() for _ in range(3))
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.load(index, typ=I64)
        self.b.cbranch(self.b.icmp_signed("<", i, stop), body, done)
        self.b.position_at_end(body)
        yield i
        self.b.store(self.b.add(i, ir.Constant(I64, 1)), index)
        self.b.branch(head)
        self.b.position_at_end(done)

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        """Call the interpreter's function ``name`` (its address from the context)."""
        address = self.word(self.words, nc.PROCESS + 2 + PYTHON_FUNCTIONS.index(name))
        return self.b.call(self.callee(address, PYTHON_TYPES[name]), args)

    def release(self, objects: ir.Value, start: ir.Value, stop: ir.Value) -> None:
        """``Py_DecRef`` each of ``objects[start:stop]``."""
        with self.counting(start, stop) as j:
            self.call("Py_DecRef", self.b.load(self.element(objects, j, PTR), typ=PTR))


def _const(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def entry_module() -> ir.Module:
    """The entry's LLVM IR: ``ptr tk_native_call(ptr context, ptr args)`` (see
    ``runtime/native_call.py`` for the steps)."""
    module = ir.Module(nc.ENTRY_SYMBOL)
    function = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR]), nc.ENTRY_SYMBOL)
    e = _Emitter(function)
    b = e.b
    zero, one = _const(0), _const(1)
    context, args = function.args
    fallback = function.append_basic_block("fallback")
    words = e.words = e.at(context, ARRAY_DATA, PTR)  # the context array's data

    def header(index: int) -> ir.Value:
        return e.word(words, index)

    e.require(b.icmp_signed("==", header(nc.VERSION), _const(nc.CONTRACT_VERSION)), fallback)
    ndarray = e.pointer(header(nc.PROCESS))
    new_array = e.callee(header(nc.PROCESS + 1), NEW_FROM_DESCR)
    inputs = header(nc.INPUTS)
    e.require(b.icmp_signed("==", e.at(args, TUPLE_SIZE), inputs), fallback)
    # the argument array: the template's copy (weights and workspace in place)
    count = header(nc.SLOTS)
    slots = b.alloca(I64, count)
    b.call(module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64]),
           [slots, e.pointer(header(nc.TEMPLATE)), b.mul(count, _const(8)), ir.Constant(ir.IntType(1), 0)])  # fmt: skip
    symbols = header(nc.SYMBOLS)
    values = b.alloca(I64, b.add(symbols, one))  # each symbol's value; -1: not bound yet
    with e.counting(zero, symbols) as s:
        b.store(_const(-1), e.element(values, s))
    record = e.variable(e.element(words, header(nc.RECORDS)), PTR)  # the tensor records
    cursor = e.variable(zero)  # the next slot to write

    def next_slot(value: ir.Value) -> None:
        at = b.load(cursor, typ=I64)
        b.store(value, e.element(slots, at))
        b.store(b.add(at, one), cursor)

    def dim_code(d: ir.Value) -> ir.Value:
        return e.word(b.load(record, typ=PTR), b.add(d, _const(3)))

    def next_record(ndim: ir.Value) -> None:
        b.store(e.element(b.load(record, typ=PTR), b.add(ndim, _const(3))), record)

    # 1. the arguments
    with e.counting(zero, inputs) as i:
        array = b.load(e.element(b.gep(args, [_const(TUPLE_ITEMS)], source_etype=I8), i, PTR), typ=PTR)
        e.require(b.icmp_unsigned("==", e.at(array, OB_TYPE, PTR), ndarray), fallback)
        rec = b.load(record, typ=PTR)
        ndim = b.sext(e.at(array, ARRAY_NDIM, I32), I64)
        contiguous = b.and_(e.at(array, ARRAY_FLAGS, I32), ir.Constant(I32, C_CONTIGUOUS))
        e.require(b.and_(b.and_(b.icmp_signed("==", e.at(array, ARRAY_DESCR), e.word(rec, 0)),
                                b.icmp_signed("==", ndim, e.word(rec, 2))),
                         b.icmp_signed("!=", contiguous, ir.Constant(I32, 0))), fallback)  # fmt: skip
        next_slot(e.at(array, ARRAY_DATA))
        dims = e.at(array, ARRAY_DIMS, PTR)
        with e.counting(zero, ndim) as d:
            got, code = e.word(dims, d), dim_code(d)
            with b.if_else(b.icmp_signed(">=", code, zero)) as (static, symbolic):
                with static:
                    e.require(b.icmp_signed("==", got, code), fallback)
                with symbolic:
                    where = e.element(values, b.sub(_const(-1), code))
                    bound = b.load(where, typ=I64)
                    unbound = b.icmp_signed("==", bound, _const(-1))
                    e.require(b.or_(unbound, b.icmp_signed("==", bound, got)), fallback)
                    b.store(got, where)
                    next_slot(got)
        next_record(ndim)
    # every symbol in its range (an unbound one, -1, is in none)
    ranges = e.element(words, header(nc.RANGES))
    with e.counting(zero, symbols) as s:
        value = e.word(values, s)
        lowest, highest = e.word(ranges, b.mul(s, _const(2))), e.word(ranges, b.add(b.mul(s, _const(2)), one))
        e.require(b.and_(b.icmp_signed(">=", value, lowest), b.icmp_signed("<=", value, highest)), fallback)
    # 2. the workspace: idle, and made for these symbol values
    has_workspace = b.icmp_signed("!=", header(nc.HAS_WORKSPACE), zero)
    busy = e.element(words, nc.BUSY)
    with b.if_then(has_workspace):
        e.require(b.icmp_signed("==", b.load(busy, typ=I64), zero), fallback)
        made_for = e.element(words, header(nc.WORKSPACE_SYMBOLS))
        with e.counting(zero, symbols) as s:
            e.require(b.icmp_signed("==", e.word(made_for, s), e.word(values, s)), fallback)
    # 3. the outputs
    outputs, results = header(nc.OUTPUTS), header(nc.RESULTS)
    made = b.alloca(PTR, b.add(outputs, one))
    shape = b.alloca(I64, _const(MAX_DIMS))
    allocated = e.variable(zero)
    undo = function.append_basic_block("release_then_fallback")
    failed = function.append_basic_block("release_then_fail")
    with e.counting(zero, outputs) as j:
        rec = b.load(record, typ=PTR)
        descr, itemsize, ndim = e.word(rec, 0), e.word(rec, 1), e.word(rec, 2)
        e.require(b.icmp_signed("<=", ndim, _const(MAX_DIMS)), undo)
        own_slot = b.load(cursor, typ=I64)
        b.store(b.add(own_slot, one), cursor)  # the data pointer's slot, filled once allocated
        nbytes = e.variable(itemsize)
        with e.counting(zero, ndim) as d:
            code = dim_code(d)
            with b.if_else(b.icmp_signed(">=", code, zero)) as (static, symbolic):
                with static:
                    b.store(code, e.element(shape, d))
                with symbolic:
                    size = e.word(values, b.sub(_const(-1), code))
                    b.store(size, e.element(shape, d))
                    next_slot(size)
            product = b.smul_with_overflow(b.load(nbytes, typ=I64), e.word(shape, d))
            e.require(b.not_(b.extract_value(product, 1)), undo)  # more bytes than int64 counts
            b.store(b.extract_value(product, 0), nbytes)
        e.call("Py_IncRef", e.pointer(descr))  # (PyArray_NewFromDescr steals it)
        null = ir.Constant(PTR, None)
        out = b.call(new_array, [ndarray, e.pointer(descr), b.trunc(ndim, I32), shape, null, null, ir.Constant(I32, 0), null])
        e.require(b.icmp_unsigned("!=", out, null), failed)
        b.store(out, e.element(made, j, PTR))
        b.store(b.add(j, one), allocated)
        b.store(e.at(out, ARRAY_DATA), e.element(slots, own_slot))
        next_record(ndim)
    with b.if_then(has_workspace):
        b.store(one, busy)
    state = e.call("PyEval_SaveThread")
    b.call(e.callee(header(nc.ENTRY), ir.FunctionType(ir.VoidType(), [PTR])), [slots])  # the model
    e.call("PyEval_RestoreThread", state)
    with b.if_then(has_workspace):
        b.store(zero, busy)
    # 4. the checks' predicates: all true, else the general path makes the call again
    holds = e.variable(ir.Constant(I8, 1), I8)
    with e.counting(results, outputs) as j:
        predicate = e.at(e.at(b.load(e.element(made, j, PTR), typ=PTR), ARRAY_DATA, PTR), 0, I8)
        held = b.zext(b.icmp_unsigned("!=", predicate, ir.Constant(I8, 0)), I8)
        b.store(b.and_(b.load(holds, typ=I8), held), holds)
    e.release(made, results, outputs)
    b.store(results, allocated)
    e.require(b.icmp_unsigned("!=", b.load(holds, typ=I8), ir.Constant(I8, 0)), undo)
    with b.if_then(b.icmp_signed("==", results, one)):
        b.ret(b.load(made, typ=PTR))
    result = e.call("PyTuple_New", results)
    e.require(b.icmp_unsigned("!=", result, ir.Constant(PTR, None)), failed)
    with e.counting(zero, results) as j:
        e.call("PyTuple_SetItem", result, j, b.load(e.element(made, j, PTR), typ=PTR))
    b.ret(result)
    # the outputs made so far released, then the general path (or the error raised)
    for block, then in ((undo, fallback), (failed, None)):
        b.position_at_end(block)
        e.release(made, zero, b.load(allocated, typ=I64))
        if then is None:
            b.ret(ir.Constant(PTR, None))
        else:
            b.branch(then)
    b.position_at_end(fallback)
    sentinel = e.pointer(header(nc.FALLBACK_OBJECT))
    e.call("Py_IncRef", sentinel)
    b.ret(sentinel)
    return module


def _optimized(target: CPUTarget, machine: llvm.TargetMachine) -> llvm.ModuleRef:
    """The entry's module, verified, after the passes that make registers of its locals
    and straighten its branches (the full O2 pipeline took 3x as long to save ~30 ns a call)."""
    module = llvm.parse_assembly(str(entry_module()))
    module.triple, module.data_layout = machine.triple, str(machine.target_data)
    module.verify()
    passes = llvm.create_new_module_pass_manager()
    passes.add_sroa_pass()
    passes.add_instruction_combine_pass()
    passes.add_simplify_cfg_pass()
    passes.run(module, llvm.create_pass_builder(machine, llvm.PipelineTuningOptions(speed_level=1)))
    return module


_compiling = threading.Lock()


def compiled_entry() -> int | None:
    """The address of the entry compiled into this process (made once, ~40 ms, machine
    code at -O0; threads asking at once wait for the first); None where
    ``python_abi.layout_problem`` finds one."""
    with _compiling:
        compiled = _compile_once()
    return compiled[1] if compiled is not None else None


@lru_cache(maxsize=1)
def _compile_once() -> tuple[JITModule, int] | None:
    if layout_problem() is not None:
        return None
    target = CPUTarget.parse("llvm -opt-level=0")
    jit = JITModule(_optimized(target, target_machine(target)), target)
    # function objects made from it may be called until the process ends, even while the
    # interpreter tears down its objects: never free the code
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(jit))
    return jit, jit.address(nc.ENTRY_SYMBOL)


@lru_cache(maxsize=8)
def entry_object(target: CPUTarget) -> bytes:
    """The entry as position-independent object code for ``target``'s CPU (linked into
    exported shared libraries)."""
    machine = pic_target_machine(target)
    return machine.emit_object(_optimized(target, machine))


nc.register_compiled_entry(compiled_entry)

__all__ = ["compiled_entry", "entry_module", "entry_object"]
