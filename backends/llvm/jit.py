"""llvm dialect -> LLVM IR text -> native code in this process (llvmlite MCJIT, O3).

Targets are strings like TVM's: ``"llvm"`` (the host CPU, its real name and features),
``"llvm -mcpu=skylake-avx512"``, ``"llvm -mattr=+avx2,-avx512f"``.

Code with ``parallel`` loops calls the OpenMP runtime (``GOMP_parallel``...) and reads
the thread count from ``tk_num_threads``: before such a module is loaded, libgomp is
loaded into the process and the symbol is bound to the runtime's variable
(:mod:`tensorkiln.runtime.threads`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shlex
import time
from dataclasses import dataclass, field
from functools import lru_cache

import llvmlite.binding as llvm
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp

from ...runtime import threads


@dataclass(frozen=True)
class CPUTarget:
    """Where code will run: CPU name, features, optimisation level, and the data layout
    its convolutions run in (``layout``: NHWC, whose channels the conv strategy
    vectorizes; ``-layout=NCHW`` keeps the model's own)."""

    cpu: str
    features: str
    opt_level: int = 3
    options: tuple[tuple[str, str], ...] = field(default=())
    layout: str = "NHWC"

    @staticmethod
    def parse(target: str) -> CPUTarget:
        """Parse ``"llvm [-mcpu=NAME] [-mattr=+f,-g] [-opt-level=N] [-layout=NHWC|NCHW]"``."""
        words = shlex.split(target)
        if not words or words[0] != "llvm":
            raise ValueError(f"not an LLVM CPU target: {target!r} (expected 'llvm ...')")
        _initialize()
        cpu = llvm.get_host_cpu_name()
        host_features = llvm.get_host_cpu_features().flatten()
        extra = []
        opt = 3
        layout = "NHWC"
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key == "-mcpu":
                cpu = value
                host_features = ""
            elif key == "-mattr":
                extra.append(value)
            elif key == "-opt-level":
                opt = int(value)
            elif key == "-layout" and value in ("NHWC", "NCHW"):
                layout = value
            else:
                raise ValueError(
                    f"unknown option {word!r} in target {target!r} "
                    "(known: -mcpu, -mattr, -opt-level, -layout=NHWC|NCHW)"
                )
        features = ",".join(f for f in [host_features, *extra] if f)
        # LLVM prefers 256-bit vectors on AVX-512 CPUs; our kernels are wide enough for zmm.
        if _enabled(features).get("avx512f") and "prefer-256-bit" not in features:
            features += ",-prefer-256-bit"
        return CPUTarget(cpu, features, opt, layout=layout)

    def describe(self) -> str:
        return f"llvm -mcpu={self.cpu}"

    @property
    def enabled_features(self) -> frozenset[str]:
        """The features code may use, ``+``-prefixed (``{"+avx2", "+fma", ...}``): the
        last mention of each in the feature string wins."""
        return frozenset(f"+{name}" for name, on in _enabled(self.features).items() if on)

    @property
    def vector_bits(self) -> int:
        """The SIMD register width ``vectorized`` loops should use (loop-to-llvm's
        ``vector_bits``): 512 with AVX-512, 256 with AVX, else 128."""
        enabled = _enabled(self.features)
        if enabled.get("avx512f"):
            return 512
        if enabled.get("avx") or enabled.get("avx2"):
            return 256
        return 128


def _enabled(features: str) -> dict[str, bool]:
    """Each feature of an LLVM feature string, enabled or not: the last mention wins, as
    in LLVM (``"+avx512f,...,-avx512f"``: the host's, then the target's ``-mattr``)."""
    return {f[1:]: f[0] == "+" for f in features.split(",") if f[:1] in ("+", "-")}


@lru_cache(maxsize=1)
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@lru_cache(maxsize=8)
def target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A shared target machine for ``target`` (never hand it to an execution engine)."""
    return new_target_machine(target)


def new_target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A fresh target machine; an MCJIT engine takes ownership of the one it is given."""
    _initialize()
    triple = llvm.get_process_triple()
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=target.cpu, features=target.features, opt=target.opt_level, jit=True
    )


def llvm_ir(module: ModuleOp, target: CPUTarget) -> str:
    """LLVM IR text of an llvm-dialect module, for ``target``."""
    tm = target_machine(target)
    return str(convert_module(module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)))


def optimize(ir_text: str, target: CPUTarget) -> llvm.ModuleRef:
    """Parse, verify and optimise LLVM IR (the new pass manager at the target's level)."""
    tm = target_machine(target)
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.PipelineTuningOptions(speed_level=target.opt_level)
    pto.loop_vectorization = target.opt_level >= 2
    pto.slp_vectorization = target.opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


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
def _bind_thread_count() -> None:
    llvm.add_symbol(threads.NUM_THREADS_SYMBOL, threads.native_address())


def link_runtime(module: llvm.ModuleRef) -> None:
    """Make the native symbols ``module`` needs from tensorkiln's runtime resolvable:
    libgomp for parallel loops (bound to tensorkiln's own instance of it, see
    :mod:`tensorkiln.runtime.threads`), the thread-count variable."""
    if any(f.is_declaration and f.name.startswith(_OPENMP_PREFIXES) for f in module.functions):
        load_openmp_runtime()
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
