"""llvm dialect -> optimised LLVM IR -> relocatable object code, and object code -> native
code in this process.

One machine-code generation serves three uses: the in-process JIT (MCJIT loads the
objects with ``add_object_file``), the compile cache (the object bytes are what it
stores), and ``export_library`` (the objects are linked into a shared library). Objects
are position independent so that the system linker can make a ``.so`` of them, and use
the large code model (``target.pic_target_machine`` says why).

A build's code is one object per group of kernels (:func:`compile_objects`): the groups
are optimised and emitted at once by the worker processes of ``codegen_process.py``
while this process prints the next group's LLVM IR; a small build compiles here. The
objects call each other's functions by name (external linkage): MCJIT resolves them
among the objects of one engine, the system linker within the shared library.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

import llvmlite.binding as llvm
from xdsl.dialects.builtin import ModuleOp

from ...runtime import threads
from . import codegen_process
from .codegen import EmittedObject, optimize_and_emit
from .jit import EXTERNAL_SYMBOLS, llvm_ir, load_openmp_runtime, load_thread_pool
from .target import CPUTarget, new_target_machine, pic_target_machine, target_machine
from .thread_pool import calls_pool

#: between the optimised LLVM IR texts of a build's modules in ``optimized_ir``
MODULE_SEPARATOR = "\n; ---- tensorkiln: next module ----\n"


@dataclass
class ObjectCode:
    """Relocatable machine code of a build (one object per module) and what it needs
    from the process."""

    #: the objects (a single ``bytes`` is taken as one object)
    objects: list[bytes]
    #: functions defined (external linkage), in module order
    functions: list[str]
    #: C functions the code calls that no object defines (malloc family, libm, runtime)
    externals: list[str]
    #: whether the code reads the thread-count variable ``tk_num_threads``
    reads_thread_count: bool
    #: the optimised LLVM IR of each module (for ``assembly()``), between MODULE_SEPARATORs
    optimized_ir: str | None = None
    timings: list[tuple[str, float]] = field(default_factory=list)
    #: each object's functions defined and functions called but not defined there (by
    #: default, for one object: ``functions`` and ``externals``)
    symbols: list[tuple[list[str], list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.objects, bytes | bytearray):
            self.objects = [bytes(self.objects)]
        if not self.symbols and len(self.objects) == 1:
            self.symbols = [(list(self.functions), list(self.externals))]
        if len(self.symbols) != len(self.objects):
            raise ValueError(f"{len(self.objects)} objects but symbols of {len(self.symbols)}")

    @property
    def uses_openmp(self) -> bool:
        return any(name.startswith(("GOMP_", "omp_")) for name in self.externals)

    @staticmethod
    def combine(parts: list[EmittedObject]) -> ObjectCode:
        """The code of a build made of the modules ``parts`` (LLVM rows of ``timings``:
        seconds summed over the modules)."""
        functions = [name for part in parts for name in part.functions]
        defined = set(functions)
        declared = dict.fromkeys(name for part in parts for name in part.declared)
        seconds: dict[str, float] = {}
        for part in parts:
            for name, value in part.timings:
                seconds[name] = seconds.get(name, 0.0) + value
        return ObjectCode(
            objects=[part.object for part in parts],
            functions=functions,
            externals=[name for name in declared if name not in defined],
            reads_thread_count=any(threads.NUM_THREADS_SYMBOL in part.globals for part in parts),
            optimized_ir=MODULE_SEPARATOR.join(part.optimized_ir for part in parts),
            timings=list(seconds.items()),
            symbols=[(list(part.functions), list(part.declared)) for part in parts],
        )


def compile_object(module: ModuleOp, target: CPUTarget) -> ObjectCode:
    """Optimise an llvm-dialect module and generate its object code for ``target``."""
    return compile_objects([(module, None)], target, parallel=False)


def compile_objects(
    modules: Iterable[tuple[ModuleOp, int | None]],
    target: CPUTarget,
    parallel: bool,
    done: Callable[[], None] | None = None,
) -> ObjectCode:
    """Optimise llvm-dialect ``modules`` (each with its LLVM optimisation level, None:
    the target's) and generate their object code, one object each. ``parallel``: in the
    worker processes, each module handed over as soon as its IR is printed (``modules``
    may be a generator lowering the next one meanwhile); else here. ``done()`` is called
    as each module's object is ready (from another thread when ``parallel``)."""
    printing = 0.0
    parts: list[EmittedObject | Future] = []
    try:
        for module, opt_level in modules:
            start = time.perf_counter()
            text = llvm_ir(module, target)
            printing += time.perf_counter() - start
            if parallel:
                parts.append(codegen_process.pool().submit("optimize_and_emit", text, target, opt_level))
                if done is not None:
                    parts[-1].add_done_callback(lambda _: done())
            else:
                codegen_process.count_jobs_here(1)
                parts.append(optimize_and_emit(text, target, opt_level))
                if done is not None:
                    done()
    finally:  # (an error lowering a module: the modules already handed over are waited for)
        emitted = _results(parts)
    code = ObjectCode.combine(emitted)
    code.timings.insert(0, ("llvm-ir-text", printing))
    return code


def _results(parts: list[EmittedObject | Future]) -> list[EmittedObject]:
    """Each module's object, waiting for those being compiled; the first error raised
    once every module is done (a crashed worker fails this build only)."""
    results, error = [], None
    for part in parts:
        if isinstance(part, Future):
            try:
                part = part.result()
            except Exception as e:  # noqa: BLE001 (raised below, after the others finish)
                error = error or e
                continue
        results.append(part)
    if error is not None:
        raise error
    return results


@lru_cache(maxsize=1)
def _bind_thread_count() -> None:
    llvm.add_symbol(threads.NUM_THREADS_SYMBOL, threads.native_address())


_loading = threading.Lock()


def _load_order(symbols: list[tuple[list[str], list[str]]]) -> list[int]:
    """The objects in an order where each comes after those defining what it calls
    (calls between objects: the host function's to the kernels)."""
    definer = {name: k for k, (defined, _) in enumerate(symbols) for name in defined}
    order: list[int] = []
    state: dict[int, str] = {}

    def visit(k: int) -> None:
        if state.get(k) == "done":
            return
        if state.get(k) == "visiting":
            raise RuntimeError("the objects of a build call each other in a cycle (functions of one group "
                               "call another group's and back): they cannot be loaded one by one")  # fmt: skip
        state[k] = "visiting"
        for name in symbols[k][1]:
            if name in definer and definer[name] != k:
                visit(definer[name])
        state[k] = "done"
        order.append(k)

    for k in range(len(symbols)):
        visit(k)
    return order


def _check_externals(code: ObjectCode) -> None:
    process = ctypes.CDLL(None)
    missing = [name for name in code.externals if name not in EXTERNAL_SYMBOLS and not hasattr(process, name)]
    if missing:
        raise RuntimeError(f"generated code calls functions not found in this process: {', '.join(missing)}")


class ObjectModule:
    """Object code loaded into this process by MCJIT (kept alive with this).

    One engine per object: MCJIT's loader takes the first ``.got`` section of all the
    objects of an engine as the base of every object's GOT-relative references (LLVM's
    ``RuntimeDyldELF``, ``R_X86_64_GOTOFF64``), which the large code model uses for
    constant pools: in a second object of one engine they read the wrong constants.
    An object is loaded after those defining the functions it calls, each of which is
    bound by name (``llvm.add_symbol``) just before (a lock keeps two loads apart: the
    names are process-wide and builds reuse them)."""

    def __init__(self, code: ObjectCode, target: CPUTarget):
        self.code = code
        self.target = target
        if code.uses_openmp:
            load_openmp_runtime()
        if calls_pool(code.externals):
            load_thread_pool()
        if code.reads_thread_count:
            _bind_thread_count()
        _check_externals(code)
        self._addresses: dict[str, int] = {}
        self._engines = []
        with _loading:
            for k in _load_order(code.symbols):
                defined, called = code.symbols[k]
                for name in called:
                    if name in self._addresses:
                        llvm.add_symbol(name, self._addresses[name])
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine(target))
                engine.add_object_file(llvm.ObjectFileRef.from_data(code.objects[k]))
                engine.finalize_object()
                self._engines.append(engine)
                self._addresses.update((name, engine.get_function_address(name)) for name in defined)

    def address(self, name: str) -> int:
        address = self._addresses.get(name) or EXTERNAL_SYMBOLS.get(name, 0)
        if not address:
            raise KeyError(f"no function '{name}' in the compiled module")
        return address

    def assembly(self) -> str:
        if self.code.optimized_ir is None:
            raise RuntimeError("this module keeps no LLVM IR to show its assembly")
        machine = target_machine(self.target)
        return "\n".join(
            machine.emit_assembly(llvm.parse_assembly(text)) for text in self.code.optimized_ir.split(MODULE_SEPARATOR)
        )

    def optimized_ir(self) -> str:
        return self.code.optimized_ir or ""


__all__ = ["MODULE_SEPARATOR", "ObjectCode", "ObjectModule", "compile_object", "compile_objects", "pic_target_machine"]
