"""The ``cuda`` target kind: graph -> loops -> GPU schedules -> gpu dialect, then CUDA C
(NVRTC at load: ``runtime/cuda.py``'s CudaModule), or a CPU emulation of the same
kernels (for tests without a GPU)::

    gpu, timings = lower_to_gpu(module)   # builtin.module {gpu.container_module}
    src = emit_cuda(gpu)                  # one CUDA C translation unit
    lib = build_emulated(module)          # the gpu-dialect kernels run on the CPU
"""

from __future__ import annotations

import dataclasses
import time

from xdsl.dialects.builtin import ModuleOp

from ..backends.cuda.codegen import TF32_MIN_ARCH, CudaOptions, emit_cuda, kernel_names, parse_cuda_target
from ..backends.cuda.host import print_host
from ..byoc import external_modules
from ..dialects import loop
from ..dialects.functions import find_function, signature_of
from ..passes.pipeline import PassContext, run_pipeline
from ..runtime import cuda as cuda_runtime
from ..runtime.module import CompiledModule
from ..runtime.profiler import PassTimings
from .compilable import build_context, compilable_copy
from .externals import bind_externals
from .native_build import compile_native, load_compiled, weight_array
from .pipelines import GPU_GRAPH_PASSES, gpu_lowering, gpu_to_loops, optimize_graph, to_llvm
from .target import BuildRequest, Target, TargetKind, parse_target, register_target_kind


def _cuda_target(target: str | Target) -> Target:
    parsed = parse_target(target)
    if parsed.kind != "cuda":
        raise ValueError(f"not a CUDA target: {str(parsed)!r} (expected 'cuda' or 'cuda -arch=sm_XX')")
    return parsed


def gpu_passes(work: ModuleOp, ctx: PassContext, options: CudaOptions) -> list[tuple[str, float]]:
    """Optimize and lower ``work`` (from ``compilable_copy``) in place to the gpu dialect;
    the pass timings."""
    # (before fuse-ops, so that each step fuses with its producers or epilogue)
    timings = list(run_pipeline(work, GPU_GRAPH_PASSES, ctx))
    timings += optimize_graph(work, ctx)
    timings += run_pipeline(work, gpu_to_loops() + gpu_lowering(options.tf32), ctx)
    return timings


def lower_to_gpu(
    module: ModuleOp, *, opt_level: int | None = None, ctx: PassContext | None = None, target: str | Target = "cuda"
) -> tuple[ModuleOp, list[tuple[str, float]]]:
    """A copy of a graph module optimized and lowered to the gpu dialect (host function +
    ``gpu.module @kernels``) for ``target``, with the pass timings."""
    options = _cuda_target(target).config  # a bad target fails first
    work = compilable_copy(module)
    return work, gpu_passes(work, ctx or build_context(opt_level), options)


def emit_cuda_source(module: ModuleOp, *, opt_level: int | None = None, target: str | Target = "cuda") -> str:
    """The CUDA C of every kernel of a graph module (no GPU or cupy needed)."""
    return emit_cuda(lower_to_gpu(module, opt_level=opt_level, target=target)[0])


def build_emulated(
    module: ModuleOp, *, function: str = "main", opt_level: int | None = None, target: str | Target = "cuda"
) -> CompiledModule:
    """Compile ``module`` for the GPU down to the gpu dialect, then run those kernels on
    the CPU (``emulate-gpu``: every block and thread, barriers honoured) through LLVM.
    Returns a CPU :class:`CompiledModule`, called like ``tk.build``'s. External modules
    (BYOC) are called through their CPU entry, as in a CPU build.

    Example::

        lib = build_emulated(module)
        np.testing.assert_allclose(lib(x), reference(x), rtol=1e-5)
    """
    start = time.perf_counter()
    options = _cuda_target(target).config
    ctx = build_context(opt_level)
    externals = bind_externals(module)  # byoc regions run as in a CPU build, between the emulated kernels
    work = compilable_copy(module)
    signature = signature_of(find_function(work, function))
    timings = gpu_passes(work, ctx, options)
    cpu = parse_target("llvm").config
    native = compile_native(
        work, cpu, function, signature, ("emulate-gpu",) + to_llvm(cpu), ctx,
        graph_executor=False, use_disk_cache=False, verify=True,
    )  # fmt: skip
    lib = load_compiled(native, signature, externals)
    lib.pass_timings = PassTimings(timings + lib.pass_timings)
    lib.compile_seconds = time.perf_counter() - start
    return lib


def build_cuda(module: ModuleOp, target: Target, request: BuildRequest) -> cuda_runtime.CudaModule:
    """``tk.build`` for CUDA targets: a :class:`~tensorkiln.runtime.cuda.CudaModule`
    (needs cupy and a GPU).

    External modules (``tk.byoc.partition_for``) are called by the host program on the
    device buffers; each must run on CUDA memory (``cublas``), else HostOnlyExternalError."""
    options: CudaOptions = target.config
    function = request.function
    externals = list(dict.fromkeys(external_modules(module)))
    cuda_runtime.check_device_modules(externals)  # a host-only BYOC region: fail before compiling
    cupy = cuda_runtime.require_cupy()  # fail before compiling when it cannot run (looked up here: tests fake it)
    capability = cupy.cuda.Device().compute_capability if options.tf32 else None
    if capability is not None and int(capability) < TF32_MIN_ARCH:
        raise ValueError(
            f"target {str(target)!r}: this GPU (sm_{capability}) has no TF32 tensor cores "
            f"(sm_{TF32_MIN_ARCH} or later); build for 'cuda'"
        )
    start = time.perf_counter()
    work = compilable_copy(module, request.ctx)
    signature = signature_of(find_function(work, function))
    timings = gpu_passes(work, request.ctx, options)
    host = find_function(work, function)
    _, _, weights = loop.entry_layout(host)
    lib = cuda_runtime.CudaModule(
        emit_cuda(work), print_host(host), function, signature, [weight_array(w) for w in weights],
        kernel_names(work), options.arch, externals,
    )  # fmt: skip
    lib.pass_timings = PassTimings(timings)
    lib.compile_seconds = time.perf_counter() - start
    return lib


def _emit(module: ModuleOp, target: Target, function: str) -> str:
    ctx = dataclasses.replace(PassContext.current(), dump_ir=False)
    return emit_cuda(lower_to_gpu(module, ctx=ctx, target=target)[0])


CUDA = register_target_kind(
    TargetKind(
        "cuda",
        parse=parse_cuda_target,
        build=build_cuda,
        emit_source=_emit,
        description="NVIDIA GPUs through CUDA C and NVRTC: cuda [-arch=sm_XX] [-tf32]",
    )
)


__all__ = ["CUDA", "build_cuda", "build_emulated", "emit_cuda", "emit_cuda_source", "gpu_passes", "lower_to_gpu"]
