"""``tk.build``: a graph-dialect module to a callable native module."""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, UnitAttr

from .backends.llvm.jit import CPUTarget
from .byoc.bind import CompiledModuleWithExternals, bind_externals
from .dialects.graph import ConstantOp
from .dialects.graph.control import CONTROL_FLOW_OPS
from .dialects.graph.host import HOST_OPS
from .dialects.graph.types import WeightAttr
from .errors import UnsupportedOperatorError
from .driver.export import export_library
from .driver.native_build import compile_loops
from .dialects.functions import find_function
from .lowering.graph_to_te import unsupported_ops
from .passes.checks_to_outputs import checks_as_outputs
from .passes.pipeline import PassContext, optimize_graph, run_pipeline
from .runtime.module import CompiledModule
from .runtime.packed_call import packed_entry_name
from .runtime.signature import Signature
from .dialects.functions import signature_of


def weight_array(data: WeightAttr | DenseIntOrFPElementsAttr) -> np.ndarray:
    """The numpy data of a constant, as listed in a lowered function's ``tk.weights``."""
    return data.array if isinstance(data, WeightAttr) else ConstantOp(data).array()


#: ops only the VM runs (control flow, sizes read from data; run-time checks in regions)
VM_OPS = {op.name for op in CONTROL_FLOW_OPS + HOST_OPS}


def check_supported(module: ModuleOp) -> None:
    """Raise one UnsupportedOperatorError naming every op that cannot be compiled."""
    missing = unsupported_ops(module)
    if missing:
        listed = ", ".join(f"{name} (x{n})" for name, n in sorted(missing.items()))
        vm_only = sorted(set(missing) & VM_OPS)
        hint = (
            f" ({', '.join(vm_only)}: run by the VM between compiled functions; tk.build for an llvm target "
            "builds a VM for them, this path compiles one straight-line function)"
            if vm_only
            else ""
        )
        raise UnsupportedOperatorError(f"cannot compile {sum(missing.values())} ops: {listed}{hint}")


#: lowering pipelines after the graph-level optimization (``passes/pipeline.py``)
#: graph -> loops; ``legalize-16bit-floats`` again for the paths that skip the graph pipeline
#: (a no-op after it: graph-to-te lowers no bfloat16 arithmetic); row kernels store softmax's
#: exp in the output row (``stash_rows``: CPU only)
TO_LOOPS = ("legalize-16bit-floats", "legalize-unsigned", "graph-to-te", "te-to-loop{stash_rows=true}")


def schedule_pipeline(target: CPUTarget) -> tuple[str, ...]:
    """The default schedules of every kernel, for ``target``'s SIMD width."""
    return (f"default-schedule{{vector_bits={target.vector_bits}}}",)


def to_llvm(target: CPUTarget) -> tuple[str, ...]:
    """The loop -> llvm pipeline for ``target`` (vectorized loops use its SIMD width)."""
    return ("partition-loops", "bf16-storage", "expand-math", f"loop-to-llvm{{vector_bits={target.vector_bits}}}")


def compilable_copy(module: ModuleOp) -> ModuleOp:
    """A copy of ``module`` to compile, each function as one straight-line function: its
    run-time checks become results (``checks-to-outputs``: the caller checks them), then
    every op is checked to be supported (one UnsupportedOperatorError naming all that are
    not) and the copy verified."""
    work = module.clone()
    for function in [op for op in work.ops if isinstance(op, func.FuncOp)]:
        checks_as_outputs(function)
    check_supported(work)
    work.verify()
    return work


def lower_to_loops(module: ModuleOp, ctx: PassContext | None = None) -> ModuleOp:
    """A copy of a graph module lowered to the loop dialect (host function + kernels),
    without graph-level optimization."""
    lowered = compilable_copy(module)
    run_pipeline(lowered, TO_LOOPS, ctx or PassContext(opt_level=0, dump_ir=False))
    return lowered


def lower_to_llvm_dialect(
    loops: ModuleOp, ctx: PassContext | None = None, target: str = "llvm"
) -> ModuleOp:
    """Lower a loop-dialect module (from :func:`lower_to_loops`) in place to xDSL's llvm
    dialect: f32 exp/log/tanh/erf/pow expanded to vectorisable arith code, then loop-to-llvm."""
    run_pipeline(loops, to_llvm(CPUTarget.parse(target)), ctx or PassContext(opt_level=0, dump_ir=False))
    return loops


def jit_loops(loops: ModuleOp, signature: Signature, target: str = "llvm", function: str = "main") -> CompiledModule:
    """A loop-dialect module (from :func:`lower_to_loops`, its kernels scheduled by hand)
    lowered in place and JIT-compiled: callable like ``tk.build``'s result.

    Example::

        loops = lower_to_loops(module)
        for kernel in kernels(loops):
            Schedule(kernel).vectorize("i1")
        lib = jit_loops(loops, signature_of(find_function(module, "main")))
    """
    from .backends.llvm.jit import jit_compile
    from .lowering.loop_to_llvm import PACKED_ENTRY_ATTR
    from .lowering.te_to_loop import entry_layout

    host = find_function(loops, function)
    _, _, weights = entry_layout(host)
    host.attributes[PACKED_ENTRY_ATTR] = UnitAttr()  # what CompiledModule calls
    lower_to_llvm_dialect(loops, target=target)
    jit = jit_compile(loops, CPUTarget.parse(target))
    return CompiledModule(jit.address(packed_entry_name(function)), signature, [weight_array(w) for w in weights], keep_alive=jit)


#: the loop -> llvm pipeline in a build: its input is the scheduled module verified just before
#: (kernels deduplicated since), and its result LLVM's verifier checks once printed (xDSL's
#: took a third of the chain model's build)
LLVM_CHECKS_IT = dict(verify_input=False, verify_result=False)


def optimize_and_schedule(work: ModuleOp, cpu: CPUTarget, ctx: PassContext) -> list:
    """Optimize the graph module ``work`` in place, lower it to loops and give every
    kernel its default schedule for ``cpu``, as :func:`build` does (``work`` verified
    before); the pass reports."""
    return [
        optimize_graph(work, ctx, layout=cpu.layout, verify_input=False),
        run_pipeline(work, TO_LOOPS + schedule_pipeline(cpu), ctx, verify_input=False),
    ]


def build(
    module: ModuleOp,
    target: str = "llvm",
    *,
    function: str = "main",
    opt_level: int | None = None,
    dump_ir: str | None = None,
    tuning_log: str | None = None,
) -> CompiledModule:
    """Compile ``function`` of a graph module for ``target``; returns a callable.

    The graph is optimized at ``opt_level`` (default: the current PassContext's, O2:
    constant folding, simplification, CSE, batch-norm folding, operator fusion), then
    lowered to native code. ``dump_ir="dir"`` writes the IR after every pass there.
    ``lib.pass_timings`` lists (pass, seconds); ``lib.compile_seconds`` is the total.
    ``tuning_log``: a ``tk.tune`` log; each kernel with a record gets its fastest
    record's schedule, the others their default schedule.

    Example::

        lib = tk.build(module, target="llvm")
        y = lib(np.ones((1, 784), np.float32))
    """
    if target.split()[:1] == ["cuda"]:  # "cuda", "cuda -arch=sm_90": backends/cuda
        from .backends.cuda.pipeline import build_cuda

        return build_cuda(module, target, function=function, opt_level=opt_level)
    from .driver.vm import build_vm, needs_vm

    if needs_vm(find_function(module, function)):  # control flow, data-dependent sizes: the VM
        return build_vm(module, target, function=function, opt_level=opt_level, dump_ir=dump_ir)
    start = time.perf_counter()
    ctx = PassContext.current()
    if opt_level is not None or dump_ir is not None:
        ctx = dataclasses.replace(
            ctx,
            opt_level=ctx.opt_level if opt_level is None else opt_level,
            dump_ir=ctx.dump_ir if dump_ir is None else dump_ir,
        )
    cpu = CPUTarget.parse(target)
    work = compilable_copy(module)
    signature = signature_of(find_function(work, function))
    externals = bind_externals(work)  # byoc: symbols of external modules, before code is loaded
    if tuning_log is None:
        reports = optimize_and_schedule(work, cpu, ctx)
    else:
        from .tuning.dispatch import schedule_from_log

        reports = [
            optimize_graph(work, ctx, layout=cpu.layout, verify_input=False),
            run_pipeline(work, TO_LOOPS, ctx, verify_input=False),
        ]
        schedule_from_log(work, target, tuning_log, lambda m: reports.append(run_pipeline(m, schedule_pipeline(cpu), ctx)))
    # dumps and instruments want every pass to run: no disk cache for those builds
    use_cache = not ctx.dump_ir and not ctx.instruments
    native = compile_loops(
        work, cpu, function, signature, lambda m: list(run_pipeline(m, to_llvm(cpu), ctx, **LLVM_CHECKS_IT)),
        use_disk_cache=use_cache,
    )
    timings = [t for report in reports for t in report] + native.timings
    weights = [weight_array(w) for w in native.weight_data]
    lib = (CompiledModuleWithExternals if externals else CompiledModule)(
        native.module.address(packed_entry_name(function)), signature, weights, keep_alive=native.module,
        temporaries=native.program if native.temporaries else None,
    )
    lib.external_modules = externals
    lib.graph_program = native.program
    lib.cache_hit = native.cache_hit
    lib._exporter = functools.partial(export_library, native=native, weights=lib._weights, external_modules=externals)
    lib.pass_timings = timings
    lib.compile_seconds = time.perf_counter() - start
    return lib
