"""The ``blas`` backend's external module: the region's GEMM program, its glue code
(LLVM IR around scipy's ``sgemm``, see :mod:`.blas_glue`) compiled by llvmlite. Needs
numpy, ctypes, llvmlite and scipy -- not xDSL, so a deployed artifact can load it. The
codegen is in :mod:`.blas`."""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

import numpy as np

from ...runtime import threads
from ..external import ExternalModule, native_arg_types, register_kind
from ..gemm_program import GemmProgram
from .blas_glue import GLUE_FUNCTION, NUM_THREADS_SYMBOL, SET_THREADS_SYMBOL, SGEMM_SYMBOL, glue_ir
from .blas_threads import blas_thread_functions
from .gemm_module import describe_program


def unavailable() -> str | None:
    """Why the backend cannot run here, or None."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401
    except ImportError:
        return "scipy is not installed (pip install 'tensorkiln[blas]')"
    return None


@lru_cache(maxsize=1)
def sgemm_address() -> int:
    """The address of scipy's Fortran ``sgemm`` (from its PyCapsule)."""
    from scipy.linalg import cython_blas

    capsule = cython_blas.__pyx_capi__["sgemm"]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


@lru_cache(maxsize=1)
def _bind_sgemm() -> bool:
    """Bind ``sgemm`` (and the BLAS's thread setter with tensorkiln's thread count, when
    the BLAS has one: returns whether it does)."""
    import llvmlite.binding as llvm

    llvm.add_symbol(SGEMM_SYMBOL, sgemm_address())
    found = blas_thread_functions()
    if found is None:
        return False
    llvm.add_symbol(SET_THREADS_SYMBOL, found[0])
    llvm.add_symbol(NUM_THREADS_SYMBOL, threads.native_address())
    return True


class _Glue:
    """LLVM IR compiled for this CPU by llvmlite alone (no xDSL: deployable)."""

    def __init__(self, ir: str):
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        features = llvm.get_host_cpu_features().flatten()
        self.machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, jit=True)
        module = llvm.parse_assembly(ir)
        module.verify()
        module.triple, module.data_layout = self.machine.triple, str(self.machine.target_data)
        tuning = llvm.PipelineTuningOptions(speed_level=3)
        tuning.loop_vectorization = tuning.slp_vectorization = True
        builder = llvm.create_pass_builder(self.machine, tuning)
        builder.getModulePassManager().run(module, builder)
        engine_machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=features, opt=3, jit=True
        )  # the engine owns (and frees) the machine it is given
        self.engine = llvm.create_mcjit_compiler(module, engine_machine)
        self.engine.finalize_object()

    def address(self, name: str) -> int:
        return self.engine.get_function_address(name)


@register_kind
class BLASModule(ExternalModule):
    """A region compiled to native glue code around ``sgemm``."""

    kind = "blas.sgemm"

    def __init__(self, symbol, backend, inputs, outputs, program: GemmProgram | None = None):
        super().__init__(symbol, backend, inputs, outputs)
        self.program = program or GemmProgram()
        self._jit: Any = None
        self._entry: Any = None

    def init(self, weights) -> None:
        super().init(weights)
        self.program.weights = dict(self.weights)
        self._jit = self._entry = None

    def ir(self) -> str:
        """The LLVM IR of the glue (weights' addresses baked in; the BLAS's threads sized
        to tensorkiln's when the BLAS can be told)."""
        size_threads = _bind_sgemm()
        return glue_ir(self.program, {k: v.ctypes.data for k, v in self.program.weights.items()}, size_threads)

    def native_address(self) -> int:
        if self._jit is None:
            self._jit = _Glue(self.ir())
        return self._jit.address(GLUE_FUNCTION)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        symbols = self.bind(inputs)
        if self._entry is None:
            self._entry = ctypes.CFUNCTYPE(None, *native_arg_types(self.inputs + self.outputs))(self.native_address())
        outputs = [np.empty(s.concrete(symbols), np.dtype(s.dtype)) for s in self.outputs]
        args: list[int] = []
        for array, spec in zip([*(np.asarray(a, order="C") for a in inputs), *outputs], self.inputs + self.outputs):
            args.append(array.ctypes.data)
            args += [array.shape[k] for k in spec.symbolic]
        self._entry(*args)
        return outputs

    def describe(self) -> dict[str, Any]:
        found = blas_thread_functions()
        return {
            **describe_program(self, self.program),
            "library": "scipy.linalg.cython_blas.sgemm",
            "threads": f"tensorkiln's count, set through {found[2]}" if found else "the BLAS's own controls",
        }

    def payload(self) -> dict[str, Any]:
        return {"program": self.program.to_json()}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload) -> BLASModule:
        return cls(symbol, backend, inputs, outputs, GemmProgram.from_json(payload["program"], {}))


__all__ = ["BLASModule", "sgemm_address", "unavailable"]
