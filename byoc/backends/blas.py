"""``blas``: dense / matmul / batch_matmul (+ bias, + relu/sigmoid/tanh) offloaded to a
real BLAS ``sgemm``, called from generated native code.

Which BLAS: the ``sgemm`` function pointer scipy exports in ``scipy.linalg.cython_blas``
(its ``__pyx_capi__`` PyCapsules; the Fortran interface, LP64 ints). That is a public,
documented way to reach an optimized BLAS (scipy's bundled OpenBLAS) from native code
without linking against a library file; numpy's own bundled OpenBLAS exports no stable
C entry point (its symbols are renamed and its location is private to the wheel).
scipy is the optional extra ``tensorkiln[blas]``; without it the backend reports itself
unavailable and its tests skip. The BLAS's own threads follow its usual controls
(``OPENBLAS_NUM_THREADS`` before scipy loads, or ``threadpoolctl`` at run time).

The codegen writes LLVM IR for the region (:mod:`.blas_glue`): bias rows copied into the
output, ``sgemm`` with beta = 1 (or 0), the activation in a loop; llvmlite compiles it
and the host code calls it like a kernel.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

import numpy as np

from ..dialect import RegionOp
from ..external import ExternalModule, native_arg_types, register_kind
from ..gemm import GemmParts, GemmProgram, gemm_patterns, gemm_program
from ..registry import register_backend, register_patterns
from .blas_glue import GLUE_FUNCTION, SGEMM_SYMBOL, glue_ir
from .gemm_module import describe_program, program_specs


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
def _bind_sgemm() -> None:
    from ...backends.llvm.jit import bind_external_symbol

    bind_external_symbol(SGEMM_SYMBOL, sgemm_address())


def _same_or_one(x: tuple, y: tuple) -> bool:
    return x == y or all(d == 1 for d in x) or all(d == 1 for d in y)


def blas_accepts(parts: GemmParts) -> bool:
    """sgemm handles batches that are equal on both sides or absent on one (stride 0)."""
    if parts.kind != "batch_matmul":
        return True
    from ...dialects.graph.types import shape_of

    a, b = (shape_of(v.type) for v in parts.product.operands)
    return _same_or_one(a[:-2], b[:-2])


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
        """The LLVM IR of the glue (weights' addresses baked in)."""
        return glue_ir(self.program, {k: v.ctypes.data for k, v in self.program.weights.items()})

    def native_address(self) -> int:
        if self._jit is None:
            from ...backends.llvm.jit import CPUTarget, JITModule, optimize

            _bind_sgemm()
            target = CPUTarget.parse("llvm")
            self._jit = JITModule(optimize(self.ir(), target), target)
        return self._jit.address(GLUE_FUNCTION)

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        symbols = self.bind(inputs)
        if self._entry is None:
            self._entry = ctypes.CFUNCTYPE(None, *native_arg_types(self.inputs + self.outputs))(self.native_address())
        outputs = [np.empty(s.concrete(symbols), np.dtype(s.dtype)) for s in self.outputs]
        args: list[int] = []
        for array, spec in zip([*(np.ascontiguousarray(a) for a in inputs), *outputs], self.inputs + self.outputs):
            args.append(array.ctypes.data)
            args += [array.shape[k] for k in spec.symbolic]
        self._entry(*args)
        return outputs

    def describe(self) -> dict[str, Any]:
        return {**describe_program(self, self.program), "library": "scipy.linalg.cython_blas.sgemm"}

    def payload(self) -> dict[str, Any]:
        return {"program": self.program.to_json()}

    @classmethod
    def from_payload(cls, symbol, backend, inputs, outputs, payload) -> BLASModule:
        return cls(symbol, backend, inputs, outputs, GemmProgram.from_json(payload["program"], {}))


def blas_codegen(region: RegionOp) -> BLASModule:
    """Compile a region of GEMM composites to sgemm glue."""
    program = gemm_program(region, "blas")
    inputs, outputs = program_specs(program)
    module = BLASModule(region.symbol.data, "blas", inputs, outputs, program)
    module.init(program.weights)
    return module


register_backend("blas", blas_codegen, unavailable=unavailable, description="CPU sgemm (scipy's BLAS)")
register_patterns("blas", gemm_patterns(blas_accepts))

__all__ = ["BLASModule", "blas_codegen", "sgemm_address", "unavailable"]
