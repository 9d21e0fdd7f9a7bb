"""A compiled model, callable with numpy arrays: one native call per invocation.

Pure numpy + ctypes. The native entry function takes, in order, for each input then
each output: the buffer's pointer followed by its dynamic dims (``int64``); then each
weight's pointer; then, where the compiler hoisted them (``temporaries``), each
intermediate tensor the same way, in storages of the memory plan that are reused between
calls (``workspace.py``). Outputs are allocated here, with shapes from the symbols bound
by the inputs. The arguments go in an array to the entry's packed companion
(``packed_call.py``: ctypes calls at most 1024 arguments, and slowly).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import native_call
from .graph_executor import GraphExecutor
from .graph_program import GraphProgram
from .manifest import seal
from .profiler import BenchmarkResult, ProfileReport, benchmark, profile_kernels
from .packed_call import packed_caller
from .signature import Signature
from .workspace import Workspaces
from .random_state import Seedable


def _dynamic_dims(shape: Sequence[Any]) -> list[int]:
    return [k for k, d in enumerate(shape) if not isinstance(d, int)]


class CompiledModule(Seedable):
    """``lib(*inputs)`` runs the model; returns an array, or a tuple for several outputs."""

    def __init__(
        self,
        entry_address: int,
        signature: Signature,
        weights: Sequence[np.ndarray],
        keep_alive: Any = None,
        temporaries: GraphProgram | None = None,
    ):
        """``entry_address``: the entry's packed companion (``packed_call.py``);
        ``temporaries``: the graph program whose temporaries the entry takes as its
        trailing arguments (None: the entry allocates its own)."""
        self.signature = signature
        self._keep_alive = keep_alive  # the native code's owner (the JIT engine)
        self._weights = [np.asarray(w, order="C") for w in weights]
        #: the arguments before the weights' (each input's and output's pointer and dims)
        self._head = sum(1 + len(_dynamic_dims(spec.shape)) for spec in signature.inputs + signature.entry_outputs)
        self._workspaces = Workspaces(temporaries) if temporaries is not None else None
        tail = len(self._workspaces.argument_types()) if self._workspaces is not None else 0
        count = self._head + len(self._weights) + tail
        self._arguments = ctypes.c_int64 * count
        #: the argument array with the weight pointers in place, copied for each call
        self._template = self._arguments()
        self._template[self._head : self._head + len(self._weights)] = [w.ctypes.data for w in self._weights]
        self._entry = packed_caller(entry_address)
        self._input_dynamic = [_dynamic_dims(s.shape) for s in signature.inputs]
        self._output_dynamic = [_dynamic_dims(s.shape) for s in signature.entry_outputs]
        self._static_outputs = signature.output_shapes({}) if signature.is_static else None
        #: the native entry's data (None: calls take the general path); the entry itself
        #: is made at the second call (``native_call.py``; once per process, ~40 ms)
        self._native_context = native_call.NativeCallContext.create(
            signature, entry_address, self._weights, self._head, self._workspaces, keep_alive
        )
        self._native: Any = None
        #: the graph executor's program over the same native code (set by ``tk.build``)
        self.graph_program: GraphProgram | None = None
        self.compile_seconds: float | None = None
        self.pass_timings: list[tuple[str, float]] = []
        #: the latency of the first call (None until it is made)
        self.first_run_seconds: float | None = None
        self._graph_executor: GraphExecutor | None = None
        self._exporter: Any = None

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        native = self._native  # (the common case first: one Python frame, then native code)
        if native is not None:
            result = native(*args)
            if result is not native_call.FALLBACK:
                return result
        if self.first_run_seconds is None:
            start = time.perf_counter()
            result = self._run_general(args)
            self.first_run_seconds = time.perf_counter() - start
            return result
        return self._general(args)

    def _run(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """A call: through the native entry, or where it does not apply, the general path."""
        native = self._native
        if native is not None:
            result = native(*args)
            if result is not native_call.FALLBACK:
                return result
        return self._general(args)

    def _general(self, args: Sequence[Any]) -> np.ndarray | tuple[np.ndarray, ...]:
        """The general path; at the second call, the native entry is made first (a model
        called again is likely called many times: then the entry pays its making)."""
        if self._native is None and self._native_context is not None and self.first_run_seconds is not None:
            self._native = native_call.make_native_entry(self._native_context, getattr(self._keep_alive, "address", None))
            if self._native is None:
                self._native_context = None
            else:
                result = self._native(*args)
                if result is not native_call.FALLBACK:
                    return result
        return self._run_general(args)

    def _run_general(self, args: Sequence[Any]) -> np.ndarray | tuple[np.ndarray, ...]:
        """A call in Python: every check of ``signature.bind``, then one ctypes call."""
        arrays, symbols = self.signature.bind(args)
        shapes = self._static_outputs or self.signature.output_shapes(symbols)
        outputs = [np.empty(shape, spec.dtype) for shape, spec in zip(shapes, self.signature.entry_outputs)]
        call_args: list[int] = []
        for array, dynamic in zip(arrays, self._input_dynamic):
            call_args.append(array.ctypes.data)
            call_args += [array.shape[k] for k in dynamic]
        for array, dynamic in zip(outputs, self._output_dynamic):
            call_args.append(array.ctypes.data)
            call_args += [array.shape[k] for k in dynamic]
        arguments = self._arguments.from_buffer_copy(self._template)
        arguments[: self._head] = call_args
        if self._workspaces is None:
            self._entry(arguments)
        else:
            workspace = self._workspaces.take(symbols)
            try:
                arguments[self._head + len(self._weights) :] = workspace.arguments
                self._entry(arguments)
            finally:
                self._workspaces.give_back(workspace)
            if self._native is not None:  # the native entry's workspace: for these sizes now
                self._native_context.adopt(symbols)
        return self.signature.results(outputs)

    def assembly(self) -> str:
        """The assembly text of the native code, from the compiler that made it (the JIT).

        Example: ``assert "zmm" in lib.assembly()`` (AVX-512 vector code was generated).
        """
        emit = getattr(self._keep_alive, "assembly", None)
        if emit is None:
            raise RuntimeError("this module keeps no compiler object that can show its assembly")
        return emit()

    # -- executors, profiling, export ------------------------------------------------

    def graph_executor(self) -> GraphExecutor:
        """The graph executor over this module's kernels (one Python call per kernel).

        Example: ``y = lib.graph_executor()(x)``
        """
        if self._graph_executor is None:
            lookup = getattr(self._keep_alive, "address", None)
            if self.graph_program is None or lookup is None:
                raise RuntimeError("this module has no graph program (build it with tk.build)")
            self._graph_executor = GraphExecutor(self.graph_program, lookup, self._weights, keep_alive=self._keep_alive)
        return self._graph_executor

    def benchmark(self, *inputs: Any, number: int = 10, repeat: int = 5, executor: str = "aot") -> BenchmarkResult:
        """Seconds per call like TVM's ``time_evaluator``: ``repeat`` means of ``number``
        calls each; ``.median``, ``.mean``, ``.min``, ``.max``, ``.results``.

        Example: ``print(lib.benchmark(x, number=100, repeat=5).median)``
        """
        run = self._runner(executor)
        return benchmark(lambda: run(*inputs), number=number, repeat=repeat)

    def profile(self, *inputs: Any, runs: int = 10) -> ProfileReport:
        """Per-kernel calls, total and mean time and share (slowest first), plus the compile
        time, the first-run latency and the steady-state latency (median, AOT executor).

        Example: ``print(lib.profile(x))``
        """
        if self.first_run_seconds is None:
            self(*inputs)
        graph = self.graph_executor()
        names = [node.kernel for node in graph.program.nodes]
        graph.run_timed(*inputs)  # warm the binding (storages, argument lists)
        kernels, total = profile_kernels(graph.run_timed, names, inputs, runs)
        steady = self.benchmark(*inputs, number=max(1, runs), repeat=5).median
        return ProfileReport(kernels, self.compile_seconds, self.first_run_seconds, steady, total, runs)

    def _runner(self, executor: str) -> Any:
        if executor == "aot":
            return self._run
        if executor == "graph":
            return self.graph_executor()
        raise ValueError(f"unknown executor {executor!r} (expected 'aot' or 'graph')")

    def export_library(self, path: str) -> None:
        """Write a deployable artifact (a directory): the native code as a shared library,
        the graph program and entry signature as JSON, the weights as ``.npz``. Load it
        with ``tensorkiln.runtime.load_module(path)`` (numpy and ctypes only).

        Example: ``lib.export_library("model.tk")``
        """
        if self._exporter is None:
            raise RuntimeError("this module cannot be exported (it was not built by tk.build)")
        self._exporter(path)
        seal(path)  # the SHA-256 of every file, checked by load_module
