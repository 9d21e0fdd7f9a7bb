"""The ``llvm`` target kind: native code for this CPU through LLVM.

    graph module -> compilable copy -> graph pipeline (the target's layout) -> loops
    -> default schedules (the target's SIMD width and ISA extensions) -> closing sequence
    (``native_build.py``: dedupe, graph program, hoist temporaries, loop -> llvm, LLVM,
    load) -> CompiledModule

A function with control flow or sizes read from data is compiled for the VM
(``vm.py``), each straight-line piece by the same steps.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from ..backends.llvm.jit import CPUTarget, llvm_ir
from ..dialects.functions import find_function, signature_of
from ..passes.pipeline import PassContext, PipelineReport, run_pipeline
from ..runtime.module import CompiledModule
from ..runtime.profiler import PassTimings
from ..runtime.signature import Signature
from . import build_cache, compile_cache
from .compilable import build_context, compilable_copy
from .externals import bind_externals
from .native_build import compile_native, load_compiled
from .pipelines import (
    DEDUPE,
    HOIST,
    TO_LOOPS,
    check_precision,
    graph_pipeline,
    optimize_graph,
    schedule_pipeline,
    to_llvm,
)
from .progress import BuildProgress
from .target import BuildRequest, Target, TargetKind, parse_target, register_target_kind
from .vm import VMModule, compile_vm, needs_vm


def _quiet(ctx: PassContext | None) -> PassContext:
    return ctx if ctx is not None else PassContext(opt_level=0, dump_ir=False)


def scheduled_loops(
    work: ModuleOp, cpu: CPUTarget, ctx: PassContext, schedule=None, precision: str = "fp32",
    progress: BuildProgress | None = None,
) -> list[PipelineReport]:  # fmt: skip
    """Optimize the compilable graph module ``work`` in place (linear layers in
    ``precision``), lower it to loops and schedule every kernel (``schedule(work,
    run_default)``, else the default schedules for ``cpu``); the pass reports.
    ``progress``: a step after each of the two."""
    reports = [optimize_graph(work, ctx, layout=cpu.layout, verify_input=False, precision=precision)]
    if progress is not None:
        progress.step("lowering, scheduling")
    if schedule is None:
        reports.append(run_pipeline(work, TO_LOOPS + schedule_pipeline(cpu), ctx, verify_input=False))
    else:
        reports.append(run_pipeline(work, TO_LOOPS, ctx, verify_input=False))
        schedule(work, lambda m: reports.append(run_pipeline(m, schedule_pipeline(cpu), ctx)))
    if progress is not None:
        progress.step("llvm")
    return reports


def build_straight_line(module: ModuleOp, target: Target, request: BuildRequest) -> CompiledModule:
    """``tk.build`` of a function without control flow for an ``llvm`` target: from the
    disk cache's build entry when it has one (``build_cache.py``), else every pass."""
    start = time.perf_counter()
    ctx, cpu, function = request.ctx, target.config, request.function
    # dumps and instruments want every pass to run: no disk cache for those builds
    use_cache = not ctx.dump_ir and not ctx.instruments
    key = None
    if use_cache and request.schedule is None and compile_cache.cache_dir() is not None:
        key = build_cache.build_key(module, function, cpu, ctx, request.precision)
        lib = build_cache.load_build(key, cpu) if key is not None else None
        if lib is not None:
            lib.compile_seconds = time.perf_counter() - start
            return lib
    with BuildProgress(function, steps=2) as progress:
        work = compilable_copy(module, ctx)
        signature = signature_of(find_function(work, function))
        externals = bind_externals(work)  # byoc: symbols of external modules, before code is loaded
        reports = scheduled_loops(work, cpu, ctx, request.schedule, request.precision, progress)
        native = compile_native(
            work, cpu, function, signature, to_llvm(cpu), ctx, use_disk_cache=use_cache, progress=progress
        )
    lib = load_compiled(native, signature, externals)
    lib.pass_timings = PassTimings([t for report in reports for t in report] + native.timings)
    if key is not None:
        build_cache.store_build(key, native, signature)
    lib.compile_seconds = time.perf_counter() - start
    return lib


def build_cpu(module: ModuleOp, target: Target, request: BuildRequest) -> CompiledModule | VMModule:
    """The ``llvm`` kind's build: one native function, or the VM when the function has
    control flow or sizes read from data."""
    if needs_vm(find_function(module, request.function)):
        return compile_vm(module, request.function, _segment_compiler(target, request))
    return build_straight_line(module, target, request)


def _segment_compiler(target: Target, request: BuildRequest) -> Callable[[ModuleOp, str], CompiledModule]:
    return lambda segment, name: build_straight_line(segment, target, dataclasses.replace(request, function=name))


def build_vm(
    module: ModuleOp, target: str | Target = "llvm", *, function: str = "main",
    opt_level: int | None = None, dump_ir: str | None = None, precision: str = "fp32",
) -> VMModule:  # fmt: skip
    """Compile ``function`` of ``module`` for the VM (control flow, dynamic shapes), each
    straight-line piece for ``target``.

    Example: ``vm = build_vm(module); y = vm(x)``
    """
    request = BuildRequest(function, build_context(opt_level, dump_ir), precision=check_precision(precision))
    return compile_vm(module, function, _segment_compiler(parse_target(target), request))


def emit_llvm_ir(module: ModuleOp, target: Target, function: str = "main") -> str:
    """The LLVM IR ``tk.build`` compiles for ``module`` (before LLVM's optimizer)."""
    cpu = target.config
    ctx = dataclasses.replace(PassContext.current(), dump_ir=False)
    loops = compilable_copy(module)
    scheduled_loops(loops, cpu, ctx)
    run_pipeline(loops, DEDUPE + HOIST + to_llvm(cpu), ctx)
    return llvm_ir(loops, cpu)


def lower_to_loops(module: ModuleOp, ctx: PassContext | None = None) -> ModuleOp:
    """A copy of a graph module lowered to the loop dialect (host function + kernels),
    without graph-level optimization (O0: 16-bit floats legalized only).

    Example::

        loops = lower_to_loops(module)
        for kernel in kernels(loops):
            Schedule(kernel).vectorize("i1")
    """
    lowered = compilable_copy(module)
    run_pipeline(lowered, graph_pipeline(0) + TO_LOOPS, _quiet(ctx))
    return lowered


def lower_to_llvm_dialect(loops: ModuleOp, ctx: PassContext | None = None, target: str | Target = "llvm") -> ModuleOp:
    """Lower a loop-dialect module (from :func:`lower_to_loops`) in place to xDSL's llvm
    dialect: f32 exp/log/tanh/erf/pow expanded to vectorisable arith code, then loop-to-llvm."""
    run_pipeline(loops, to_llvm(parse_target(target).config), _quiet(ctx))
    return loops


def jit_loops(loops: ModuleOp, signature: Signature, target: str | Target = "llvm", function: str = "main") -> CompiledModule:
    """A loop-dialect module (from :func:`lower_to_loops`, its kernels scheduled by hand)
    lowered in place and compiled: callable like ``tk.build``'s result.

    Example::

        loops = lower_to_loops(module)
        for kernel in kernels(loops):
            Schedule(kernel).vectorize("i1")
        lib = jit_loops(loops, signature_of(find_function(module, "main")))
    """
    cpu = parse_target(target).config
    native = compile_native(
        loops, cpu, function, signature, to_llvm(cpu), _quiet(None),
        graph_executor=False, use_disk_cache=False, verify=True,
    )  # fmt: skip
    return load_compiled(native, signature)


LLVM = register_target_kind(
    TargetKind(
        "llvm",
        parse=CPUTarget.parse,
        build=build_cpu,
        emit_source=emit_llvm_ir,
        description="this CPU through LLVM: llvm [-mcpu=NAME] [-mattr=+f,-g] [-opt-level=N] [-layout=NHWC|NCHW]",
    )
)


__all__ = [
    "LLVM",
    "build_cpu",
    "build_straight_line",
    "build_vm",
    "emit_llvm_ir",
    "jit_loops",
    "lower_to_llvm_dialect",
    "lower_to_loops",
    "scheduled_loops",
]
