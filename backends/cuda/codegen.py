"""What the CUDA backend generates from a gpu-level module: the CUDA C of its kernels
(for NVRTC/nvcc), and how it reads a ``"cuda ..."`` target string.

    options = parse_cuda_target("cuda -arch=sm_90 -tf32")
    src = emit_cuda(gpu_level)            # one CUDA C translation unit

The pipeline that makes the gpu-level module is the driver's (``driver/cuda.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp

from .printer import print_cuda

#: the first architecture whose tensor cores take TF32 (Ampere)
TF32_MIN_ARCH = 80

#: the CUDA C of a module without kernels (every op offloaded to external modules)
NO_KERNELS = "// no kernels: every op of this model runs in external modules (BYOC)\n"


@dataclass(frozen=True)
class CudaOptions:
    """What a ``"cuda ..."`` target string asks for."""

    #: ``-arch=sm_XX`` (None: NVRTC's default for the GPU in use)
    arch: str | None = None
    #: ``-tf32``: matrix products and convolutions on the tensor cores, inputs rounded to TF32
    tf32: bool = False


def parse_cuda_target(target: str) -> CudaOptions:
    """The options of ``"cuda"``, ``"cuda -arch=sm_90"``, ``"cuda -tf32"``; ValueError
    for anything else."""
    words = target.split()
    if not words or words[0] != "cuda":
        raise ValueError(f"not a CUDA target: {target!r} (expected 'cuda' or 'cuda -arch=sm_XX')")
    arch, tf32 = None, False
    for word in words[1:]:
        if word.startswith("-arch=") and word[6:].startswith(("sm_", "compute_")) and word[6:].split("_", 1)[1].isdigit():
            arch = word[6:]
        elif word == "-tf32":
            tf32 = True
        else:
            raise ValueError(f"unknown option {word!r} in target {target!r} (known: -arch=sm_XX, -tf32)")
    if tf32 and arch is not None and int(arch.split("_", 1)[1]) < TF32_MIN_ARCH:
        raise ValueError(f"target {target!r}: TF32 tensor cores need sm_{TF32_MIN_ARCH} or later")
    return CudaOptions(arch, tf32)


def _kernel_module(gpu_level: ModuleOp) -> gpu.ModuleOp | None:
    """The ``gpu.module`` of a gpu-level module, or None: loop-to-gpu makes none when no
    kernel is left (a model offloaded whole to external modules)."""
    return next((op for op in gpu_level.ops if isinstance(op, gpu.ModuleOp)), None)


def emit_cuda(gpu_level: ModuleOp) -> str:
    """The CUDA C of every kernel of a gpu-level module (from ``driver.cuda.lower_to_gpu``)."""
    kernels = _kernel_module(gpu_level)
    return NO_KERNELS if kernels is None else print_cuda(kernels)


def kernel_names(gpu_level: ModuleOp) -> list[str]:
    """The names of the kernels of a gpu-level module, in order."""
    kernels = _kernel_module(gpu_level)
    return [] if kernels is None else [f.sym_name.data for f in kernels.body.block.ops if isinstance(f, gpu.FuncOp)]


__all__ = ["NO_KERNELS", "TF32_MIN_ARCH", "CudaOptions", "emit_cuda", "kernel_names", "parse_cuda_target"]
