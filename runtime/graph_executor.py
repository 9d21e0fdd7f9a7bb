"""The graph executor: runs a :class:`GraphProgram` kernel by kernel from Python.

Pure numpy + ctypes. Everything that does not change between calls is prepared once
per set of symbol values (a *binding*): the storages of the memory plan, each kernel's
ctypes function, each call's argument array (pointers and dims, for the kernel's packed
companion: ``packed_call.py``). A call then only binds the inputs, allocates the outputs,
patches their pointers into the argument arrays that use them, and runs ``fn(args)`` per
node: the dispatch loop does no other Python work.

Safe to call from several threads at once: a call takes a binding no other call is
using (``binding_pool.py``; concurrent callers get a copy each).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .binding_pool import BindingPool
from .graph_program import GraphProgram
from .packed_call import packed_caller, packed_entry_name

#: storages are aligned like the compiler's heap buffers (a cache line)
ALIGNMENT = 64

def aligned_bytes(nbytes: int) -> np.ndarray:
    """An uninitialised, ``ALIGNMENT``-aligned byte array of ``nbytes`` (at least 1)."""
    raw = np.empty(max(nbytes, 1) + ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset : offset + max(nbytes, 1)]


def allocate_storages(program: GraphProgram, symbols: dict[str, int]) -> list[np.ndarray]:
    """The memory plan's storages for ``symbols``; a MemoryError names the tensors of one
    that cannot be allocated (sizes that overflow 64 bits are refused before any is)."""
    sizes = program.storage_bytes(symbols)
    storages = []
    for k, nbytes in enumerate(sizes):
        try:
            storages.append(aligned_bytes(nbytes))
        except MemoryError as e:
            names = ", ".join(program.tensors[t].name for t in program.storages[k])
            raise MemoryError(f"cannot allocate {nbytes} bytes for the intermediate tensors {names} ({e})") from e
    return storages


class _Binding:
    """Storages and argument lists of one set of symbol values."""

    def __init__(self, executor: GraphExecutor, symbols: dict[str, int]):
        program = executor.program
        self.storages = allocate_storages(program, symbols)
        self.output_shapes = [tuple(s) for s in program.signature.output_shapes(symbols)]
        pointers: dict[int, int] = {}
        for k, t in enumerate(program.tensors):
            if t.kind == "temp":
                pointers[k] = self.storages[t.storage].ctypes.data
            elif t.kind == "weight":
                pointers[k] = executor.weight_pointers[t.index]
        self.calls: list[tuple[Callable[..., None], Any]] = []
        #: (argument array, position, caller slot): input k is slot k, output k is n_inputs + k
        self.patches: list[tuple[Any, int, int]] = []
        n_inputs = len(program.signature.inputs)
        for node in program.nodes:
            args: list[int] = []
            patches: list[tuple[int, int]] = []
            for t in node.args:
                tensor = program.tensors[t]
                if tensor.kind in ("input", "output"):
                    patches.append((len(args), tensor.index + (n_inputs if tensor.kind == "output" else 0)))
                    args.append(0)
                else:
                    args.append(pointers[t])
                shape = tensor.concrete_shape(symbols)
                args += [shape[a] for a in tensor.dynamic_axes]
            array = (ctypes.c_int64 * len(args))(*args)
            self.patches += [(array, position, slot) for position, slot in patches]
            self.calls.append((executor.functions[node.kernel], array))


class GraphExecutor:
    """``run(*inputs)`` calls the program's kernels in order (see the module docstring).

    ``lookup(name)`` gives a kernel's native address; ``keep_alive`` owns the code.

    Example::

        ex = GraphExecutor(program, jit.address, weights)
        y = ex(x)
    """

    def __init__(
        self,
        program: GraphProgram,
        lookup: Callable[[str], int],
        weights: Sequence[np.ndarray],
        keep_alive: Any = None,
    ):
        self.program = program
        self.signature = program.signature
        self._keep_alive = keep_alive
        self.weights = [np.asarray(w, order="C") for w in weights]
        self.weight_pointers = [w.ctypes.data for w in self.weights]
        self.functions: dict[str, Callable[..., None]] = {}
        for node in program.nodes:
            if node.kernel not in self.functions:
                self.functions[node.kernel] = packed_caller(lookup(packed_entry_name(node.kernel)))
        self._bindings: BindingPool[_Binding] = BindingPool(lambda symbols: _Binding(self, symbols))

    def _prepare(self, bound: _Binding, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs of a call, allocated, and every pointer patched into ``bound``."""
        outputs = [np.empty(shape, spec.dtype) for shape, spec in zip(bound.output_shapes, self.signature.entry_outputs)]
        slots = [a.ctypes.data for a in arrays] + [o.ctypes.data for o in outputs]
        for args_list, position, slot in bound.patches:
            args_list[position] = slots[slot]
        return outputs

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        arrays, symbols = self.signature.bind(args)
        key, bound = self._bindings.take(symbols)
        try:
            outputs = self._prepare(bound, arrays)
            for fn, call_args in bound.calls:
                fn(call_args)
        finally:
            self._bindings.give_back(key, bound)
        return self.signature.results(outputs)

    def run_timed(self, *args: Any) -> tuple[np.ndarray | tuple[np.ndarray, ...], list[float]]:
        """Run once, timing every kernel call: (outputs, seconds per node)."""
        arrays, symbols = self.signature.bind(args)
        clock = time.perf_counter
        seconds = []
        with self._bindings.using(symbols) as bound:
            outputs = self._prepare(bound, arrays)
            for fn, call_args in bound.calls:
                start = clock()
                fn(call_args)
                seconds.append(clock() - start)
        return self.signature.results(outputs), seconds


__all__ = ["ALIGNMENT", "GraphExecutor", "aligned_bytes", "allocate_storages"]
