"""The CUDA compilation pipeline: graph -> loops -> GPU schedules -> gpu dialect, then
CUDA C (for NVRTC/nvcc) or a CPU emulation of the same kernels (for tests).

    gpu = lower_to_gpu(module)            # builtin.module {gpu.container_module}
    src = emit_cuda(gpu)                  # one CUDA C translation unit
    lib = build_emulated(module)          # the gpu-dialect kernels run on the CPU
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, UnitAttr

from ...passes.pipeline import PassContext, optimize_graph, run_pipeline

#: loop-level kernels -> gpu dialect
GPU_LOWERING = ("gpu-default-schedule", "bf16-storage", "loop-to-gpu")
#: graph rewrites for the GPU's shape of parallelism, before the graph pipeline
GPU_GRAPH_PASSES = ("split-reductions",)


def _context(opt_level: int | None) -> PassContext:
    ctx = PassContext.current()
    if opt_level is not None:
        ctx = dataclasses.replace(ctx, opt_level=opt_level)
    return ctx


@dataclass(frozen=True)
class CudaOptions:
    """What a ``"cuda ..."`` target string asks for."""

    #: ``-arch=sm_XX`` (None: NVRTC's default for the GPU in use)
    arch: str | None = None
    #: ``-tf32``: matrix products and convolutions on the tensor cores, inputs rounded to TF32
    tf32: bool = False

    @property
    def gpu_lowering(self) -> tuple[str, ...]:
        """The passes from loops to the gpu dialect, with these options."""
        schedule, *rest = GPU_LOWERING
        return (f"{schedule}{{tf32=true}}" if self.tf32 else schedule, *rest)


def lower_to_gpu(
    module: ModuleOp, *, opt_level: int | None = None, ctx: PassContext | None = None, target: str = "cuda"
) -> tuple[ModuleOp, list[tuple[str, float]]]:
    """A copy of a graph module optimized and lowered to the gpu dialect (host function +
    ``gpu.module @kernels``) for ``target``, with the pass timings."""
    from ...build import compilable_copy

    parse_cuda_target(target)  # a bad target fails first
    work = compilable_copy(module)
    return work, gpu_passes(work, ctx or _context(opt_level), target)


def gpu_passes(work: ModuleOp, ctx: PassContext, target: str) -> list[tuple[str, float]]:
    """Optimize and lower ``work`` (from ``compilable_copy``) in place to the gpu dialect;
    the pass timings."""
    from ...build import TO_LOOPS

    options = parse_cuda_target(target)
    to_loops = tuple("te-to-loop" if name.startswith("te-to-loop") else name for name in TO_LOOPS)  # no stash
    # (before fuse-ops, so that each step fuses with its producers or epilogue)
    timings = list(run_pipeline(work, GPU_GRAPH_PASSES, ctx))
    timings += optimize_graph(work, ctx)
    timings += run_pipeline(work, to_loops + options.gpu_lowering, ctx)
    return timings


#: the CUDA C of a module without kernels (every op offloaded to external modules)
NO_KERNELS = "// no kernels: every op of this model runs in external modules (BYOC)\n"


def _kernel_module(gpu_level: ModuleOp):
    """The ``gpu.module`` of a gpu-level module, or None: loop-to-gpu makes none when no
    kernel is left (a model offloaded whole to external modules)."""
    from xdsl.dialects import gpu

    return next((op for op in gpu_level.ops if isinstance(op, gpu.ModuleOp)), None)


def emit_cuda(gpu_level: ModuleOp) -> str:
    """The CUDA C of every kernel of a gpu-level module (from :func:`lower_to_gpu`)."""
    from .printer import print_cuda

    kernels = _kernel_module(gpu_level)
    return NO_KERNELS if kernels is None else print_cuda(kernels)


def kernel_names(gpu_level: ModuleOp) -> list[str]:
    """The names of the kernels of a gpu-level module, in order."""
    from xdsl.dialects import gpu

    kernels = _kernel_module(gpu_level)
    return [] if kernels is None else [f.sym_name.data for f in kernels.body.block.ops if isinstance(f, gpu.FuncOp)]


def build_emulated(module: ModuleOp, *, function: str = "main", opt_level: int | None = None, target: str = "cuda"):
    """Compile ``module`` for the GPU down to the gpu dialect, then run those kernels on
    the CPU (``emulate-gpu``: every block and thread, barriers honoured) through the
    LLVM JIT. Returns a CPU :class:`CompiledModule`, called like ``tk.build``'s. External
    modules (BYOC) are called through their CPU entry, as in a CPU build.

    Example::

        lib = build_emulated(module)
        np.testing.assert_allclose(lib(x), reference(x), rtol=1e-5)
    """
    from ...backends.llvm.jit import CPUTarget, jit_compile
    from ...build import compilable_copy, to_llvm, weight_array
    from ...byoc.bind import CompiledModuleWithExternals, bind_externals
    from ...dialects.functions import find_function
    from ...lowering.loop_to_llvm import PACKED_ENTRY_ATTR
    from ...lowering.te_to_loop import entry_layout
    from ...runtime.module import CompiledModule
    from ...runtime.packed_call import packed_entry_name
    from ...dialects.functions import signature_of

    start = time.perf_counter()
    ctx = _context(opt_level)
    externals = bind_externals(module)  # byoc regions run as in a CPU build, between the emulated kernels
    work = compilable_copy(module)
    signature = signature_of(find_function(work, function))
    timings = gpu_passes(work, ctx, target)
    _, _, weights = entry_layout(find_function(work, function))
    cpu = CPUTarget.parse("llvm")
    find_function(work, function).attributes[PACKED_ENTRY_ATTR] = UnitAttr()
    timings += run_pipeline(work, ("emulate-gpu",) + to_llvm(cpu), ctx)
    jit = jit_compile(work, cpu)
    lib = (CompiledModuleWithExternals if externals else CompiledModule)(
        jit.address(packed_entry_name(function)), signature, [weight_array(w) for w in weights], keep_alive=jit
    )
    lib.external_modules = externals
    lib.pass_timings = timings + jit.timings
    lib.compile_seconds = time.perf_counter() - start
    return lib




#: the first architecture whose tensor cores take TF32 (Ampere)
TF32_MIN_ARCH = 80


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


def is_cuda_target(target: str) -> bool:
    return target.split()[:1] == ["cuda"]


def emit_cuda_source(module: ModuleOp, *, opt_level: int | None = None, target: str = "cuda") -> str:
    """The CUDA C of every kernel of a graph module (no GPU or cupy needed)."""
    return emit_cuda(lower_to_gpu(module, opt_level=opt_level, target=target)[0])


def build_cuda(module: ModuleOp, target: str = "cuda", *, function: str = "main", opt_level: int | None = None):
    """``tk.build`` for CUDA targets: a :class:`~.runtime.CudaModule` (needs cupy and a GPU).

    External modules (``tk.byoc.partition_for``) are called by the host program on the
    device buffers; each must run on CUDA memory (``cublas``), else HostOnlyExternalError."""
    from ...build import compilable_copy, weight_array
    from ...byoc import external_modules
    from ...dialects.functions import find_function
    from ...lowering.te_to_loop import entry_layout
    from ...dialects.functions import signature_of
    from .host import print_host
    from .runtime import CudaModule, check_device_modules, require_cupy

    options = parse_cuda_target(target)
    externals = list(dict.fromkeys(external_modules(module)))
    check_device_modules(externals)  # a host-only BYOC region: fail before compiling
    cupy = require_cupy()  # fail before compiling when it cannot run
    capability = cupy.cuda.Device().compute_capability if options.tf32 else None
    if capability is not None and int(capability) < TF32_MIN_ARCH:
        raise ValueError(
            f"target {target!r}: this GPU (sm_{capability}) has no TF32 tensor cores "
            f"(sm_{TF32_MIN_ARCH} or later); build for 'cuda'"
        )
    start = time.perf_counter()
    work = compilable_copy(module)
    signature = signature_of(find_function(work, function))
    timings = gpu_passes(work, _context(opt_level), target)
    host = find_function(work, function)
    _, _, weights = entry_layout(host)
    source = emit_cuda(work)
    names = kernel_names(work)
    lib = CudaModule(
        source, print_host(host), function, signature, [weight_array(w) for w in weights], names, options.arch, externals
    )
    lib.pass_timings = timings
    lib.compile_seconds = time.perf_counter() - start
    return lib


__all__ = [
    "GPU_LOWERING",
    "CudaOptions",
    "build_cuda",
    "build_emulated",
    "emit_cuda",
    "emit_cuda_source",
    "is_cuda_target",
    "kernel_names",
    "lower_to_gpu",
    "parse_cuda_target",
]
