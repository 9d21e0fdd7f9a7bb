"""llvm dialect -> LLVM IR text -> native code in this process (llvmlite MCJIT, O3).

Targets (``CPUTarget``, ``"llvm -mcpu=..."``) are in ``target.py``; LLVM's optimiser and
code generation in ``codegen.py`` (the builds' object code: ``object_code.py``).

Code with ``parallel`` loops calls the OpenMP runtime (``GOMP_parallel``...) and reads
the thread count from ``tk_num_threads``: before such a module is loaded, libgomp is
loaded into the process and the symbol is bound to the runtime's variable
(:mod:`tensorkiln.runtime.threads`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from functools import lru_cache

import llvmlite.binding as llvm
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp

from ...runtime import threads
from .codegen import optimize
from .ir_text import Unsupported, module_text
from .target import CPUTarget, new_target_machine, target_machine  # (CPUTarget: also imported from here)
from .thread_pool import calls_pool, pool_addresses


#: ``TK_LLVM_IR_PRINTER=xdsl``: print LLVM IR with xDSL's translation only (``ir_text.py``)
PRINTER_VARIABLE = "TK_LLVM_IR_PRINTER"


def llvm_ir(module: ModuleOp, target: CPUTarget) -> str:
    """LLVM IR text of an llvm-dialect module, for ``target`` (``ir_text.py``'s printer,
    xDSL's translation for what it does not print)."""
    tm = target_machine(target)
    if os.environ.get(PRINTER_VARIABLE, "") != "xdsl":
        try:
            return module_text(module, tm.triple, str(tm.target_data))
        except Unsupported:
            pass
    return str(convert_module(module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)))


class JITModule:
    """Native code loaded in this process; keeps the engine alive as long as it lives."""

    def __init__(self, module: llvm.ModuleRef, target: CPUTarget):
        self.target = target
        self._module = module
        # The engine owns and frees the target machine it is given: give it its own, never
        # the cached one (freeing that one left later builds with a dangling pointer).
        link_runtime(module)
        _check_external_symbols(module)
        self._engine = llvm.create_mcjit_compiler(module, new_target_machine(target))
        self._engine.finalize_object()

    def address(self, name: str) -> int:
        address = self._engine.get_function_address(name)
        if not address:
            raise KeyError(f"no function '{name}' in the compiled module")
        return address

    def assembly(self) -> str:
        return target_machine(self.target).emit_assembly(self._module)

    def optimized_ir(self) -> str:
        return str(self._module)


#: prefixes of the OpenMP runtime functions generated code calls (parallel loops)
_OPENMP_PREFIXES = ("GOMP_", "omp_")


@lru_cache(maxsize=1)
def load_openmp_runtime() -> str:
    """Bind the OpenMP runtime functions generated code calls (``GOMP_...``, ``omp_...``)
    to tensorkiln's own instance of libgomp (:mod:`tensorkiln.runtime.threads`: not the
    copy torch loads, and with its own thread-wait policy); returns the library's name."""
    for name in threads.OPENMP_FUNCTIONS:
        bind_external_symbol(name, threads.openmp_function(name))
    return ctypes.util.find_library("gomp") or "libgomp.so.1"


@lru_cache(maxsize=1)
def load_thread_pool() -> None:
    """Bind the thread pool's functions (parallel loops: ``thread_pool.py``) for generated code."""
    for name, address in pool_addresses().items():
        bind_external_symbol(name, address)


@lru_cache(maxsize=1)
def _bind_thread_count() -> None:
    llvm.add_symbol(threads.NUM_THREADS_SYMBOL, threads.native_address())


def link_runtime(module: llvm.ModuleRef) -> None:
    """Make the native symbols ``module`` needs from tensorkiln's runtime resolvable:
    libgomp for parallel loops (bound to tensorkiln's own instance of it, see
    :mod:`tensorkiln.runtime.threads`), the thread-count variable."""
    if any(f.is_declaration and f.name.startswith(_OPENMP_PREFIXES) for f in module.functions):
        load_openmp_runtime()
    if calls_pool(f.name for f in module.functions if f.is_declaration):
        load_thread_pool()
    if any(g.name == threads.NUM_THREADS_SYMBOL for g in module.global_variables):
        _bind_thread_count()


#: native functions bound by name for generated code (external modules, tensorkiln.byoc):
#: name -> address. MCJIT resolves them through llvm.add_symbol; dlsym does not see them.
EXTERNAL_SYMBOLS: dict[str, int] = {}


def bind_external_symbol(name: str, address: int) -> None:
    """Make ``name`` resolve to ``address`` in code loaded from now on (JIT and objects)."""
    if not address:
        raise ValueError(f"external symbol '{name}': address is 0")
    llvm.add_symbol(name, address)
    EXTERNAL_SYMBOLS[name] = address


def _check_external_symbols(module: llvm.ModuleRef) -> None:
    """Fail clearly if the code calls a function this process does not have (MCJIT
    would resolve it to address 0 and the first call would crash)."""
    process = ctypes.CDLL(None)  # dlsym over everything loaded, as MCJIT resolves
    missing = [
        f.name
        for f in module.functions
        if f.is_declaration
        and not f.name.startswith("llvm.")
        and f.name not in EXTERNAL_SYMBOLS
        and not hasattr(process, f.name)
    ]
    if missing:
        raise RuntimeError(f"generated code calls functions not found in this process: {', '.join(missing)}")


def jit_compile(module: ModuleOp, target: CPUTarget) -> JITModule:
    """Compile an llvm-dialect module to native code in this process.

    ``jit.timings`` holds the seconds spent printing LLVM IR, optimising, and
    generating machine code."""
    start = time.perf_counter()
    text = llvm_ir(module, target)
    printed = time.perf_counter()
    optimized = optimize(text, target)
    done = time.perf_counter()
    jit = JITModule(optimized, target)
    jit.timings = [
        ("llvm-ir-text", printed - start),
        ("llvm-opt", done - printed),
        ("llvm-codegen", time.perf_counter() - done),
    ]
    return jit
