"""The native call entry (``runtime/native_call.py`` says what it does and why): one
function of this interpreter, generated here in LLVM IR and compiled once per process,
that makes a compiled model's call from the words of a ``NativeCallContext``.

It is a ``METH_VARARGS`` C function (``PyObject *f(PyObject *context, PyObject *args)``)
made callable with ``PyCFunction_NewEx``, its ``self`` the context's ``int64`` array.
It reads CPython's and numpy's object layouts directly (the tuple's items, the array's
data, ndim, dims, dtype and flags: numpy's ABI, stable since 1.7), allocates outputs
with numpy's C API (``PyArray_NewFromDescr``, from numpy's API table) and calls the
interpreter's exported functions (``Py_IncRef``, ``PyEval_SaveThread``...). Before it
is registered, :func:`layout_problem` checks those layouts against this interpreter and
numpy; where they differ (a free-threaded build, another object layout) nothing is
registered and calls take the general path.

Example::

    from tensorkiln.backends.llvm import native_entry   # registers the entry maker
    call = native_entry.native_entry(context)           # call(*arrays)
"""

from __future__ import annotations

import ctypes
import sysconfig
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from ...runtime import native_call as nc
from .jit import CPUTarget, JITModule, bind_external_symbol, target_machine

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()

FUNCTION = "tk_native_call"

# CPython's object layout (a build with the GIL; checked by layout_problem)
OB_TYPE = 8  #: PyObject.ob_type
TUPLE_SIZE = 16  #: PyTupleObject.ob_size
TUPLE_ITEMS = 24  #: PyTupleObject.ob_item
# numpy's array layout (PyArrayObject_fields)
ARRAY_DATA = 16
ARRAY_NDIM = 24  #: an int
ARRAY_DIMS = 32
ARRAY_DESCR = 56
ARRAY_FLAGS = 64  #: an int
C_CONTIGUOUS = 0x1  #: NPY_ARRAY_C_CONTIGUOUS
#: the most dims an output may have here (numpy's NPY_MAXDIMS is 64 since 2.0, 32 before)
MAX_DIMS = 64
#: the numpy API table's entries used (numpy's __multiarray_api.h; the table only grows)
API_ARRAY_TYPE, API_NEW_FROM_DESCR = 2, 94

#: the interpreter's functions the entry calls: name -> (result, arguments)
PYTHON_API = {
    "Py_IncRef": (ir.VoidType(), [PTR]),
    "Py_DecRef": (ir.VoidType(), [PTR]),
    "PyEval_SaveThread": (PTR, []),
    "PyEval_RestoreThread": (ir.VoidType(), [PTR]),
    "PyTuple_New": (PTR, [I64]),
    "PyTuple_SetItem": (I32, [PTR, I64, PTR]),
}


# (prototypes of our own: ctypes.pythonapi's function objects are shared by everyone)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
_new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCFunction_NewEx", ctypes.pythonapi)
)


def _numpy_api() -> int:
    """The address of numpy's C API table (the ``_ARRAY_API`` capsule)."""
    core = getattr(np, "_core", None) or np.core
    return _capsule_pointer(core._multiarray_umath._ARRAY_API, None)


def _api_entry(index: int) -> int:
    return ctypes.c_void_p.from_address(_numpy_api() + 8 * index).value or 0


def layout_problem() -> str | None:
    """Why the entry cannot run in this interpreter (None: the layouts above hold)."""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "a free-threaded interpreter (another object layout)"
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return "not a 64-bit interpreter"
    array = np.empty((3, 5), np.float32)[:, 1:]
    pair = (array, 7)

    def word(obj: Any, offset: int) -> int:
        return ctypes.c_int64.from_address(id(obj) + offset).value

    def int32(obj: Any, offset: int) -> int:
        return ctypes.c_int32.from_address(id(obj) + offset).value

    dims = ctypes.cast(word(array, ARRAY_DIMS), ctypes.POINTER(ctypes.c_int64))
    expected = [
        (word(array, OB_TYPE), id(np.ndarray)),
        (word(pair, TUPLE_SIZE), 2),
        (word(pair, TUPLE_ITEMS + 8), id(7)),
        (word(array, ARRAY_DATA), array.ctypes.data),
        (int32(array, ARRAY_NDIM), 2),
        ((dims[0], dims[1]), (3, 4)),
        (word(array, ARRAY_DESCR), id(array.dtype)),
        (int32(array, ARRAY_FLAGS) & C_CONTIGUOUS, 0),
        (int32(np.empty(2), ARRAY_FLAGS) & C_CONTIGUOUS, C_CONTIGUOUS),
        (_api_entry(API_ARRAY_TYPE), id(np.ndarray)),
    ]
    for k, (got, want) in enumerate(expected):
        if got != want:
            return f"an unexpected CPython or numpy object layout (check {k}: {got} != {want})"
    return None


class _Emitter:
    """An IRBuilder with the few shapes of code the entry is made of."""

    def __init__(self, function: ir.Function, python: dict[str, ir.Function]):
        self.function = function
        self.python = python
        self.b = ir.IRBuilder(function.append_basic_block("entry"))
        self._allocas = self.b.block

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
        return self.b.call(self.python[name], args)

    def release(self, objects: ir.Value, start: ir.Value, stop: ir.Value) -> None:
        """``Py_DecRef`` each of ``objects[start:stop]``."""
        with self.counting(start, stop) as j:
            self.call("Py_DecRef", self.b.load(self.element(objects, j, PTR), typ=PTR))


def _const(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def entry_module(ndarray_type: int, new_from_descr: int) -> ir.Module:
    """The entry's LLVM IR: ``ptr tk_native_call(ptr context, ptr args)`` (see
    ``runtime/native_call.py`` for the steps); numpy's array type and allocator at the
    addresses given (this process's)."""
    module = ir.Module("tk_native_call")
    python = {name: ir.Function(module, ir.FunctionType(result, arguments), name) for name, (result, arguments) in PYTHON_API.items()}
    function = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR]), FUNCTION)
    e = _Emitter(function, python)
    b = e.b
    zero, one = _const(0), _const(1)
    context, args = function.args
    fallback = function.append_basic_block("fallback")
    ndarray = e.pointer(_const(ndarray_type))
    new_array = e.callee(_const(new_from_descr), ir.FunctionType(PTR, [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR]))

    words = e.at(context, ARRAY_DATA, PTR)  # the context array's data

    def header(index: int) -> ir.Value:
        return e.word(words, index)

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
        b.call(python["Py_IncRef"], [e.pointer(descr)])  # (PyArray_NewFromDescr steals it)
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
    b.call(e.callee(header(nc.ENTRY), ir.FunctionType(ir.VoidType(), [PTR])), [slots])
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


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_void_p), ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


METH_VARARGS = 0x1

_compiling = threading.Lock()


def _compiled() -> tuple[JITModule, _MethodDef] | None:
    """The entry compiled into this process and its PyMethodDef (made once, and kept for
    the life of the process: every function object made from it points to it; threads
    making their models' entries at once wait for the first); None where
    :func:`layout_problem` finds one."""
    with _compiling:
        return _compile_once()


@lru_cache(maxsize=1)
def _compile_once() -> tuple[JITModule, _MethodDef] | None:
    """(~40 ms) Only the passes that make registers of the entry's locals and straighten
    its branches run, and machine code is made at -O0: the full O2 pipeline took 3x as
    long to save ~30 ns per call."""
    if layout_problem() is not None:
        return None
    for name in PYTHON_API:
        bind_external_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
    target = CPUTarget.parse("llvm -opt-level=0")
    machine = target_machine(target)
    module = llvm.parse_assembly(str(entry_module(id(np.ndarray), _api_entry(API_NEW_FROM_DESCR))))
    module.triple, module.data_layout = machine.triple, str(machine.target_data)
    module.verify()
    passes = llvm.create_new_module_pass_manager()
    passes.add_sroa_pass()
    passes.add_instruction_combine_pass()
    passes.add_simplify_cfg_pass()
    passes.run(module, llvm.create_pass_builder(machine, llvm.PipelineTuningOptions(speed_level=1)))
    jit = JITModule(module, target)
    definition = _MethodDef(FUNCTION.encode(), jit.address(FUNCTION), METH_VARARGS, b"a compiled model's call (native entry)")
    return jit, definition


def native_entry(context: nc.NativeCallContext) -> Callable[..., Any] | None:
    """A builtin function making the calls ``context`` describes: ``f(*arrays)`` returns
    the model's output(s), or ``FALLBACK`` (None where this interpreter's layouts differ)."""
    compiled = _compiled()
    if compiled is None:
        return None
    _, definition = compiled
    return _new_function(ctypes.addressof(definition), context.words, None)


nc.register_native_entry(native_entry)

__all__ = ["entry_module", "layout_problem", "native_entry"]
