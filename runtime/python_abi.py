"""What the native call entry (``native_call.py``) needs from the running interpreter
and numpy, found with ctypes: the object layouts it reads, the C functions it calls
(their addresses), and a builtin function made from a C function's address.

The entry's machine code is the same in every process (the JIT's, or the one linked
into an exported ``model.so``): everything that differs between processes -- the
address of ``numpy.ndarray``, of numpy's ``PyArray_NewFromDescr``, of ``Py_IncRef``... --
reaches it through the context's words (:func:`process_words`).

Example::

    if layout_problem() is None:
        f = builtin_function(address, self_object)   # f(*args) calls the C function
"""

from __future__ import annotations

import ctypes
import sysconfig
import threading
from functools import lru_cache
from typing import Any

import numpy as np

# CPython's object layout (a build with the GIL; checked by layout_problem)
OB_TYPE = 8  #: PyObject.ob_type
TUPLE_SIZE = 16  #: PyTupleObject.ob_size
TUPLE_ITEMS = 24  #: PyTupleObject.ob_item
# numpy's array layout (PyArrayObject_fields: numpy's ABI, stable since 1.7)
ARRAY_DATA = 16
ARRAY_NDIM = 24  #: an int
ARRAY_DIMS = 32
ARRAY_DESCR = 56
ARRAY_FLAGS = 64  #: an int
C_CONTIGUOUS = 0x1  #: NPY_ARRAY_C_CONTIGUOUS
#: the numpy C API table's entries used (numpy's __multiarray_api.h; the table only grows)
API_ARRAY_TYPE, API_NEW_FROM_DESCR = 2, 94

#: the interpreter's functions the entry calls, in the order of their context words
PYTHON_FUNCTIONS = ("Py_IncRef", "Py_DecRef", "PyEval_SaveThread", "PyEval_RestoreThread", "PyTuple_New", "PyTuple_SetItem")

# (prototypes of our own: ctypes.pythonapi's function objects are shared by everyone)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
_new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCFunction_NewEx", ctypes.pythonapi)
)


def _numpy_api_entry(index: int) -> int:
    """Entry ``index`` of numpy's C API table (the ``_ARRAY_API`` capsule)."""
    core = getattr(np, "_core", None) or np.core
    table = _capsule_pointer(core._multiarray_umath._ARRAY_API, None)
    return ctypes.c_void_p.from_address(table + 8 * index).value or 0


@lru_cache(maxsize=1)
def process_words() -> tuple[int, ...]:
    """The addresses the entry calls or compares with, in this process: ``numpy.ndarray``,
    ``PyArray_NewFromDescr``, then each of :data:`PYTHON_FUNCTIONS`."""
    python = [ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in PYTHON_FUNCTIONS]
    return (id(np.ndarray), _numpy_api_entry(API_NEW_FROM_DESCR), *python)


@lru_cache(maxsize=1)
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
        (_numpy_api_entry(API_ARRAY_TYPE), id(np.ndarray)),
    ]
    for k, (got, want) in enumerate(expected):
        if got != want:
            return f"an unexpected CPython or numpy object layout (check {k}: {got} != {want})"
    return None


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_void_p), ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


METH_VARARGS = 0x1

#: a PyMethodDef per C function made callable (kept for the life of the process: every
#: function object made from one points to it)
_definitions: dict[int, _MethodDef] = {}
_definitions_lock = threading.Lock()


def builtin_function(address: int, self: object, name: str = "tk_native_call") -> Any:
    """A builtin function calling the ``METH_VARARGS`` C function at ``address``
    (``PyObject *f(PyObject *self, PyObject *args)``) with ``self``."""
    with _definitions_lock:
        definition = _definitions.get(address)
        if definition is None:
            definition = _definitions[address] = _MethodDef(name.encode(), address, METH_VARARGS, None)
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(definition))  # (never freed, even at exit)
    return _new_function(ctypes.addressof(definition), self, None)


__all__ = ["PYTHON_FUNCTIONS", "builtin_function", "layout_problem", "process_words"]
