"""llvm dialect -> optimised LLVM IR -> relocatable object code, and object code -> native
code in this process.

One machine-code generation serves three uses: the in-process JIT (MCJIT loads the
object with ``add_object_file``), the compile cache (the object bytes are what it
stores), and ``export_library`` (the object is linked into a shared library). Objects
are position independent so that the system linker can make a ``.so`` of them, and use
the large code model: MCJIT's loader places an object's code, constant pools and unwind
tables in separate mappings, which can land more than 2 GiB apart in a crowded address
space (seen with torch's CUDA build loaded: the small model's 32-bit PC-relative
relocations overflowed and LLVM aborted the process).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache

import llvmlite.binding as llvm
from xdsl.dialects.builtin import ModuleOp

from ...runtime import threads
from .codegen_process import in_helper
from .jit import (
    EXTERNAL_SYMBOLS,
    CPUTarget,
    _initialize,
    llvm_ir,
    load_openmp_runtime,
    new_target_machine,
    optimize,
)


@dataclass
class ObjectCode:
    """Relocatable machine code of a module and what it needs from the process."""

    object: bytes
    #: functions defined (external linkage), in module order
    functions: list[str]
    #: C functions the code calls (malloc family, libm, OpenMP)
    externals: list[str]
    #: whether the code reads the thread-count variable ``tk_num_threads``
    reads_thread_count: bool
    #: the optimised LLVM IR (for ``assembly()``), when kept
    optimized_ir: str | None = None
    timings: list[tuple[str, float]] = field(default_factory=list)

    @property
    def uses_openmp(self) -> bool:
        return any(name.startswith(("GOMP_", "omp_")) for name in self.externals)


@lru_cache(maxsize=8)
def pic_target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A target machine emitting position-independent objects (for shared libraries) whose
    references all have 64 bits (the large code model: see the module docstring)."""
    _initialize()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=target.cpu, features=target.features, opt=target.opt_level, reloc="pic", codemodel="large"
    )


def compile_object(module: ModuleOp, target: CPUTarget) -> ObjectCode:
    """Optimise an llvm-dialect module and generate its object code for ``target`` (in a
    helper process: ``codegen_process.py`` says why)."""
    start = time.perf_counter()
    text = llvm_ir(module, target)
    printed = time.perf_counter()
    code = in_helper("optimize_and_emit", text, target)
    code.timings.insert(0, ("llvm-ir-text", printed - start))
    return code


def optimize_and_emit(text: str, target: CPUTarget) -> ObjectCode:
    """LLVM IR text, optimised, as object code for ``target`` (what the helper process runs)."""
    start = time.perf_counter()
    try:  # (a build verifies the llvm-dialect module here, by LLVM's parser and verifier)
        optimized = optimize(text, target)
    except Exception as e:
        e.add_note("(the lowered llvm-dialect module is invalid: a lowering bug; with "
                   "PassContext(verify='each') the IR is verified after every pass)")  # fmt: skip
        raise
    done = time.perf_counter()
    obj = pic_target_machine(target).emit_object(optimized)
    code = ObjectCode(
        object=obj,
        functions=[f.name for f in optimized.functions if not f.is_declaration],
        externals=[f.name for f in optimized.functions if f.is_declaration and not f.name.startswith("llvm.")],
        reads_thread_count=any(g.name == threads.NUM_THREADS_SYMBOL for g in optimized.global_variables),
        optimized_ir=str(optimized),
    )
    code.timings = [("llvm-opt", done - start), ("llvm-codegen", time.perf_counter() - done)]
    return code


@lru_cache(maxsize=1)
def _bind_thread_count() -> None:
    llvm.add_symbol(threads.NUM_THREADS_SYMBOL, threads.native_address())


def _check_externals(code: ObjectCode) -> None:
    import ctypes

    process = ctypes.CDLL(None)
    missing = [name for name in code.externals if name not in EXTERNAL_SYMBOLS and not hasattr(process, name)]
    if missing:
        raise RuntimeError(f"generated code calls functions not found in this process: {', '.join(missing)}")


class ObjectModule:
    """Object code loaded into this process by an MCJIT engine (kept alive with this)."""

    def __init__(self, code: ObjectCode, target: CPUTarget):
        self.code = code
        self.target = target
        if code.uses_openmp:
            load_openmp_runtime()
        if code.reads_thread_count:
            _bind_thread_count()
        _check_externals(code)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine(target))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code.object))
        self._engine.finalize_object()

    def address(self, name: str) -> int:
        address = self._engine.get_function_address(name) or EXTERNAL_SYMBOLS.get(name, 0)
        if not address:
            raise KeyError(f"no function '{name}' in the compiled module")
        return address

    def assembly(self) -> str:
        if self.code.optimized_ir is None:
            raise RuntimeError("this module keeps no LLVM IR to show its assembly")
        from .jit import target_machine

        return target_machine(self.target).emit_assembly(llvm.parse_assembly(self.code.optimized_ir))

    def optimized_ir(self) -> str:
        return self.code.optimized_ir or ""


__all__ = ["ObjectCode", "ObjectModule", "compile_object", "optimize_and_emit", "pic_target_machine"]
