"""The graph executor: runs a :class:`GraphProgram` kernel by kernel from Python.

Pure numpy + ctypes. Everything that does not change between calls is prepared once
per set of symbol values (a *binding*): the storages of the memory plan, each kernel's
ctypes function, each call's argument array (pointers and dims, for the kernel's packed
companion: ``packed_call.py``). A call then only binds the inputs, allocates the outputs,
patches their pointers into the argument arrays that use them, and runs ``fn(args)`` per
node: the dispatch loop does no other Python work.

Not reentrant: two threads calling one executor at once would share its storages.
"""

from __future__ import annotations

import ctypes
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .graph_program import GraphProgram
from .packed_call import packed_caller, packed_entry_name

#: storages are aligned like the compiler's heap buffers (a cache line)
ALIGNMENT = 64

#: how many bindings (symbol values) keep their storages and argument lists
MAX_BINDINGS = 4


def aligned_bytes(nbytes: int) -> np.ndarray:
    """An uninitialised, ``ALIGNMENT``-aligned byte array of ``nbytes`` (at least 1)."""
    raw = np.empty(max(nbytes, 1) + ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset : offset + max(nbytes, 1)]


class _Binding:
    """Storages and argument lists of one set of symbol values."""

    def __init__(self, executor: GraphExecutor, symbols: dict[str, int]):
        program = executor.program
        self.storages = [aligned_bytes(n) for n in program.storage_bytes(symbols)]
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
        self._bindings: OrderedDict[tuple[tuple[str, int], ...], _Binding] = OrderedDict()

    def _binding(self, symbols: dict[str, int]) -> _Binding:
        key = tuple(sorted(symbols.items()))
        bound = self._bindings.get(key)
        if bound is None:
            bound = _Binding(self, symbols)
            self._bindings[key] = bound
            while len(self._bindings) > MAX_BINDINGS:
                self._bindings.popitem(last=False)
        return bound

    def _prepare(self, args: Sequence[Any]) -> tuple[_Binding, list[np.ndarray]]:
        arrays, symbols = self.signature.bind(args)
        bound = self._binding(symbols)
        outputs = [np.empty(shape, spec.dtype) for shape, spec in zip(bound.output_shapes, self.signature.entry_outputs)]
        slots = [a.ctypes.data for a in arrays] + [o.ctypes.data for o in outputs]
        for args_list, position, slot in bound.patches:
            args_list[position] = slots[slot]
        return bound, outputs

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        bound, outputs = self._prepare(args)
        for fn, call_args in bound.calls:
            fn(call_args)
        return self.signature.results(outputs)

    def run_timed(self, *args: Any) -> tuple[np.ndarray | tuple[np.ndarray, ...], list[float]]:
        """Run once, timing every kernel call: (outputs, seconds per node)."""
        bound, outputs = self._prepare(args)
        clock = time.perf_counter
        seconds = []
        for fn, call_args in bound.calls:
            start = clock()
            fn(call_args)
            seconds.append(clock() - start)
        return self.signature.results(outputs), seconds


__all__ = ["ALIGNMENT", "GraphExecutor", "aligned_bytes"]
