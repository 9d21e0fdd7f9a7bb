"""The native call entry: a compiled model's call made by one C-level function of the
interpreter, with no Python frame between the caller and the model's entry.

``CompiledModule._run`` (the general path) spends ~8 us of Python per call (checks, the
arrays' pointers through ``.ctypes``, the argument array, a ctypes call). The native
entry does the same work for the common call -- every argument an exact
``numpy.ndarray`` of the expected dtype object, C-contiguous, of the expected rank and
static dims, its symbols consistent and in range -- in well under a microsecond, and
returns :data:`FALLBACK` for anything else, after which the caller takes the general
path: so every error is raised by the same code, with the same message, as before.

This module is the entry's contract and builds its data (numpy and ctypes only, like
the rest of the runtime): a :class:`NativeCallContext` is an ``int64`` array of the
words below, read by the function ``tk_native_call`` that ``backends/llvm/native_entry.py``
generates in LLVM IR. Its machine code is the same in every process (what differs, such
as the address of ``numpy.ndarray``, is in the words: ``python_abi.py``), so it is made
once per process for built models (the backend registers it here with
:func:`register_compiled_entry`) and linked into every exported ``model.so``: an artifact
loaded by ``load_module`` calls its own, in a process without llvmlite too. (An artifact
exported before, loaded without the compiler, takes the general path.)

What the entry does, for ``lib(*args)`` (METH_VARARGS; ``self`` is the context array):

0. the words are of its version (:data:`CONTRACT_VERSION`);
1. each argument: its type is ``numpy.ndarray``, its dtype object the one expected
   (``descr``), C-contiguous, its ``ndim`` and static dims as expected; each symbolic
   dim binds its symbol (or must equal its value), then every symbol lies in its range;
2. the workspace (the entry's temporaries, when it takes them) is idle and was made for
   these symbol values (:meth:`NativeCallContext.adopt` installs one);
3. each output is allocated (``PyArray_NewFromDescr``; its byte count must fit in
   ``int64``); the argument array -- the template's copy, with the inputs' and outputs'
   pointers and dynamic dims written in -- goes to the packed entry with the GIL
   released, as ctypes did;
4. each run-time check's predicate holds (else FALLBACK: the general path runs the call
   again and raises the check's error); one output, or a tuple, is returned.

Disable it with ``TK_NATIVE_CALL=0`` in the environment.

Example::

    context = NativeCallContext.create(signature, entry, weights, head, workspaces, library)
    call = make_native_entry(context, library.address)   # None: no entry, or not eligible
    result = call(*args)
    if result is FALLBACK:
        result = general_path(*args)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .dim_expr import is_symbol
from .manifest import ArtifactError
from .python_abi import PYTHON_FUNCTIONS, builtin_function, layout_problem, process_words
from .signature import Signature
from .workspace import Workspaces, _Workspace

#: the entry's symbol, in the JIT's code and in an exported ``model.so``
ENTRY_SYMBOL = "tk_native_call"
#: the version of the words below: an entry of another version returns FALLBACK
CONTRACT_VERSION = 1

# -- the context's header: word offsets (the native entry reads these) ---------------

VERSION = 0  #: :data:`CONTRACT_VERSION`
ENTRY = 1  #: the address of the packed entry (``packed_call.py``)
SLOTS = 2  #: the argument array's length in 8-byte slots
TEMPLATE = 3  #: the address of the argument array's template (weights, workspace in place)
INPUTS = 4  #: how many arguments a call takes
OUTPUTS = 5  #: how many buffers the entry writes (the outputs, then the checks' predicates)
RESULTS = 6  #: how many of those are returned (the model's outputs)
SYMBOLS = 7  #: how many symbols the dims name
FALLBACK_OBJECT = 8  #: the address of :data:`FALLBACK`
HAS_WORKSPACE = 9  #: 1 when the entry takes temporaries (from the installed workspace)
BUSY = 10  #: 1 while a call uses the installed workspace (read and written holding the GIL)
RANGES = 11  #: where the symbols' ranges start: ``lowest, highest`` per symbol
WORKSPACE_SYMBOLS = 12  #: where the symbol values of the installed workspace start
RECORDS = 13  #: where the tensor records start: per input, then per entry output,
#: ``descr address, itemsize, ndim, dim...`` with a static dim as itself and the
#: symbol ``s`` as ``-1 - s``
PROCESS = 14  #: where this process's addresses start (``python_abi.process_words``):
#: ``numpy.ndarray``, ``PyArray_NewFromDescr``, then ``python_abi.PYTHON_FUNCTIONS``
HEADER = PROCESS + 2 + len(PYTHON_FUNCTIONS)

#: no workspace is installed: symbol values that no call has
_NO_WORKSPACE = -1

INT64_MAX = 2**63 - 1

ENVIRONMENT = "TK_NATIVE_CALL"


class _Fallback:
    """What the native entry returns when the general path must make the call."""

    def __repr__(self) -> str:
        return "FALLBACK"


FALLBACK = _Fallback()

#: the address of the entry the compiler made in this process (set by the backend:
#: ``backends/llvm/native_entry.py``), for code that carries none of its own
_compiled_entry: Callable[[], int | None] | None = None


def register_compiled_entry(address: Callable[[], int | None]) -> None:
    """Use ``address()`` (the entry compiled into this process, made on first use; None
    where it cannot be) for every module whose native code has no entry of its own."""
    global _compiled_entry
    _compiled_entry = address


def not_eligible(signature: Signature) -> str | None:
    """Why calls of ``signature`` cannot take the native entry (None: they can)."""
    if signature.random_state is not None:
        return "it draws random numbers (a hidden random-state input)"
    if signature.computed_dims:
        return "it checks computed dims at run time"
    for spec in signature.inputs + signature.entry_outputs:
        for d in spec.shape:
            if isinstance(d, str) and not is_symbol(d):
                return f"'{spec.name}' has a computed dim '{d}'"
    return None


class _Words(np.ndarray):
    """The context's words (an ``int64`` array: the entry reads its data), holding the
    context, so that the entry's function object alone keeps all they point to alive."""

    context: NativeCallContext


class NativeCallContext:
    """The words the native entry reads for one compiled module (see the module doc),
    and what they point to, kept alive here."""

    def __init__(
        self, words: np.ndarray, template: np.ndarray, symbols: list[str], workspaces: Workspaces | None, keep: tuple
    ):
        self.words = words.view(_Words)
        self.words.context = self
        self._keep = keep  # what the words point to: the dtypes, the weights, the native code
        self.template = template
        self.symbols = symbols
        self._workspaces = workspaces
        self._workspace: _Workspace | None = None
        #: workspaces replaced while a call may have been using them (given back later)
        self._retired: list[_Workspace] = []
        self._adopting = threading.Lock()  # one thread installs at a time
        #: where the workspace's arguments go in the template
        self._tail = template.size - (len(workspaces.argument_types()) if workspaces is not None else 0)

    @staticmethod
    def create(
        signature: Signature,
        entry: int,
        weights: Sequence[np.ndarray],
        head: int,
        workspaces: Workspaces | None,
        code: Any = None,
    ) -> NativeCallContext | None:
        """The context of a module whose packed entry is at ``entry`` (in native code
        that ``code`` owns), taking ``head`` slots of inputs' and outputs' pointers and
        dims, then ``weights``' pointers, then ``workspaces``' temporaries; None if its
        calls are not eligible."""
        if not_eligible(signature) is not None:
            return None
        specs = signature.inputs + signature.entry_outputs
        symbols = sorted({d for spec in specs for d in spec.shape if isinstance(d, str)})
        index = {s: k for k, s in enumerate(symbols)}
        ranges = {s: (max(lowest, 0), INT64_MAX if highest is None else highest) for s, lowest, highest in signature.ranges}
        records: list[int] = []
        dtypes = [_canonical(spec.dtype) for spec in specs]
        for spec, descr in zip(specs, dtypes):
            records += [id(descr), descr.itemsize, len(spec.shape)]
            records += [d if isinstance(d, int) else -1 - index[d] for d in spec.shape]
        tail = len(workspaces.argument_types()) if workspaces is not None else 0
        template = np.zeros(head + len(weights) + tail, np.int64)
        template[head : head + len(weights)] = [w.ctypes.data for w in weights]
        header = [0] * PROCESS
        header[VERSION] = CONTRACT_VERSION
        header[ENTRY] = entry
        header[SLOTS] = template.size
        header[TEMPLATE] = template.ctypes.data
        header[INPUTS] = len(signature.inputs)
        header[OUTPUTS] = len(signature.entry_outputs)
        header[RESULTS] = len(signature.outputs)
        header[SYMBOLS] = len(symbols)
        header[FALLBACK_OBJECT] = id(FALLBACK)
        header[HAS_WORKSPACE] = int(workspaces is not None)
        header[RANGES] = HEADER
        header[WORKSPACE_SYMBOLS] = HEADER + 2 * len(symbols)
        header[RECORDS] = HEADER + 3 * len(symbols)
        words = header + list(process_words()) + [v for s in symbols for v in ranges.get(s, (0, INT64_MAX))] + [_NO_WORKSPACE] * len(symbols) + records
        return NativeCallContext(np.array(words, np.int64), template, symbols, workspaces, (dtypes, list(weights), code))

    def adopt(self, symbols: dict[str, int]) -> None:
        """Install a workspace for ``symbols``' values (those of a call the general path
        made), unless a call is using the installed one or it is already theirs. It is
        taken from the general path's pool (an idle one if there is: no second copy of
        the temporaries), and the one it replaces goes back there once no call uses it.

        Other threads run Python between any two of these steps, and the entry's
        prologue (which reads the template and the symbol values, then sets BUSY) runs
        whole while it holds the GIL. So the values are first set to ones no call has,
        then the template, then the values: a prologue sees the old workspace or the new
        one, never a mix. A call already running on the old one holds BUSY until it
        returns; BUSY seen clear after the swap means none does. One thread installs at
        a time (two interleaved would mix their steps)."""
        if self._workspaces is None or self.words[BUSY] or not self._adopting.acquire(blocking=False):
            return  # (another thread installing one: it will do)
        try:
            self._install(symbols)
        finally:
            self._adopting.release()

    def _install(self, symbols: dict[str, int]) -> None:
        self._give_back_retired()
        values = [symbols.get(s, _NO_WORKSPACE) for s in self.symbols]
        start = int(self.words[WORKSPACE_SYMBOLS])
        made_for = self.words[start : start + len(values)]  # (a view)
        if self._workspace is not None and list(made_for) == values:
            return
        workspace = self._workspaces.take(symbols)
        made_for[:] = _NO_WORKSPACE
        self.template[self._tail :] = workspace.arguments
        made_for[:] = values
        if self._workspace is not None:
            self._retired.append(self._workspace)
        self._workspace = workspace
        self._give_back_retired()

    def _give_back_retired(self) -> None:
        if self._retired and not self.words[BUSY]:  # no call runs: none on a retired one
            for old in self._retired:
                self._workspaces.give_back(old)
            self._retired.clear()


def _canonical(dtype: np.dtype) -> np.dtype:
    """The dtype object numpy gives new arrays of ``dtype`` (what the entry compares
    arguments' dtypes with, by identity: an equal dtype of another object takes the
    general path)."""
    return np.empty(0, dtype).dtype


def make_native_entry(context: NativeCallContext | None, lookup: Callable[[str], int] | None = None) -> Callable[..., Any] | None:
    """The native entry for ``context``: the one of the model's own native code (found
    with ``lookup(name)``: an exported ``model.so`` carries one), else the one compiled
    into this process; None when there is no context or entry, where this interpreter's
    layouts differ (``python_abi.layout_problem``), or with ``TK_NATIVE_CALL=0``."""
    if context is None or os.environ.get(ENVIRONMENT, "1").strip() == "0" or layout_problem() is not None:
        return None
    address = None
    if lookup is not None:
        try:
            address = lookup(ENTRY_SYMBOL)
        except (KeyError, ArtifactError):  # (code without an entry of its own)
            address = None
    if not address and _compiled_entry is not None:
        address = _compiled_entry()
    if not address:
        return None
    entry = builtin_function(address, context.words, ENTRY_SYMBOL)
    if not context.symbols:
        context.adopt({})  # a static model's one workspace (the general path's, when idle)
    return entry


__all__ = [
    "CONTRACT_VERSION",
    "ENTRY_SYMBOL",
    "FALLBACK",
    "NativeCallContext",
    "make_native_entry",
    "not_eligible",
    "register_compiled_entry",
]
