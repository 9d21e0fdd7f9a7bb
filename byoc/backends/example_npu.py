"""``example_npu``: a teaching backend for an imaginary accelerator.

The "NPU" has a matrix engine (products), a vector engine (activations, bias adds it
cannot fuse), 256 KiB of on-chip SRAM and DRAM behind it. Its codegen plans every step
of a region -- which engine, which memory tier holds the operands, how the product is
tiled, what is fused into the matrix engine's output stage -- and writes those decisions
to a readable log (deterministic: the same region gives the same log). It then computes
the result with numpy, so its outputs are checked like any other backend's.

Example::

    part = tk.byoc.partition_for(module, "example_npu")
    (npu,) = tk.byoc.external_modules(part)
    print("\\n".join(npu.log))
"""

from __future__ import annotations

from ...dialects.byoc import RegionOp
from ..gemm import gemm_patterns, gemm_program
from ..registry import register_backend, register_patterns
from .gemm_module import program_specs
from .npu_module import NPUModule, plan


def npu_codegen(region: RegionOp) -> NPUModule:
    """Plan a region of GEMM composites for the NPU."""
    program = gemm_program(region, "example_npu")
    inputs, outputs = program_specs(program)
    module = NPUModule(region.symbol.data, "example_npu", inputs, outputs, program)
    module.init(program.weights)
    return module


register_backend("example_npu", npu_codegen, description="teaching NPU: decision log, numpy results")
register_patterns("example_npu", gemm_patterns())

__all__ = ["NPUModule", "npu_codegen", "plan"]
