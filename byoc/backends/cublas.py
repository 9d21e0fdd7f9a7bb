"""``cublas``: the GEMM patterns offloaded to cuBLAS through cupy (``cupy.matmul`` calls
cuBLAS ``sgemm`` / ``sgemmStridedBatched``), for the CUDA target.

Small on purpose: each step copies what it needs to the GPU (weights stay there after
the first call), runs the product, the bias and the activation on the GPU with cupy,
and copies the region's outputs back. Without cupy or a GPU the backend reports itself
unavailable (its tests skip with that reason). Not measured on a GPU in this tree yet.
"""

from __future__ import annotations

from ..dialect import RegionOp
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
