"""``cublas``: the GEMM patterns offloaded to cuBLAS through cupy (``cupy.matmul`` calls
cuBLAS ``sgemm`` / ``sgemmStridedBatched``).

On the CUDA target (``tk.build(part, target="cuda")``) the host program calls each
region's module between its own kernel launches, on the device buffers it allocated:
no copy to the host, weights uploaded once (see :mod:`.cublas_module`). In a CPU build
or the interpreter the module copies its inputs to the GPU and its outputs back. Without
cupy or a GPU the backend reports itself unavailable (its tests skip with that reason).
Unlike ``blas``, it takes batch broadcasting of any shape (``cupy.matmul`` broadcasts).
"""

from __future__ import annotations

from ...dialects.byoc import RegionOp
from ..gemm import gemm_patterns, gemm_program
from ..registry import register_backend, register_patterns
from .cublas_module import CuBLASModule, unavailable
from .gemm_module import program_specs


def cublas_codegen(region: RegionOp) -> CuBLASModule:
    program = gemm_program(region, "cublas")
    inputs, outputs = program_specs(program)
    module = CuBLASModule(region.symbol.data, "cublas", inputs, outputs, program)
    module.init(program.weights)
    return module


register_backend("cublas", cublas_codegen, unavailable=unavailable, description="GPU cuBLAS through cupy")
register_patterns("cublas", gemm_patterns())

__all__ = ["CuBLASModule", "cublas_codegen", "unavailable"]
