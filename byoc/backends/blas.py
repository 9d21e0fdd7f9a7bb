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

from ...dialects.byoc import RegionOp
from ..gemm import GemmParts, gemm_patterns, gemm_program
from ..registry import register_backend, register_patterns
from .blas_module import BLASModule, sgemm_address, unavailable
from .gemm_module import program_specs


def _same_or_one(x: tuple, y: tuple) -> bool:
    return x == y or all(d == 1 for d in x) or all(d == 1 for d in y)


def blas_accepts(parts: GemmParts) -> bool:
    """sgemm handles batches that are equal on both sides or absent on one (stride 0)."""
    if parts.kind != "batch_matmul":
        return True
    from ...dialects.graph.types import shape_of

    a, b = (shape_of(v.type) for v in parts.product.operands)
    return _same_or_one(a[:-2], b[:-2])


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
