"""The closing sequence of every build that runs on this CPU: a scheduled loop-level
module -> native code loaded in this process -> a callable :class:`CompiledModule`.

``tk.build`` for ``llvm`` targets, ``jit_loops`` (hand-scheduled loops) and the CUDA
target's CPU emulation all end here::

    mark the entry (what the runtime calls with one argument array)
    -> lower (the target's loop -> llvm pipeline; skipped on a disk cache hit)
    -> generate and load the object code (LLVM; ``ObjectModule``)
    -> CompiledModule (entry address, signature, weights)

A graph-executor build first merges identical kernels (``dedupe-kernels``), reads the
graph executor's program off the host function, makes its temporaries arguments
(``hoist-temporaries``: passed in the program's planned storages) and marks every
function callable, since the graph executor calls each kernel. The same object code is
what ``export_library`` links into a shared library.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp

from ..backends.llvm.jit import CPUTarget
from ..backends.llvm import codegen_process
from ..backends.llvm.object_code import ObjectCode, ObjectModule, compile_object, compile_objects
from ..dialects import loop
from ..dialects.functions import find_function
from ..dialects.graph import ConstantOp
from ..dialects.graph.types import WeightAttr
from ..passes.dedupe_kernels import kernel_hash
from ..passes.pipeline import PassContext, fewer_gc_pauses, run_pipeline
from ..runtime.graph_program import GraphProgram
from ..runtime.module import CompiledModule
from ..runtime.packed_call import packed_entry_name
from ..runtime.profiler import PassTimings
from ..runtime.signature import Signature
from . import compile_cache
from .export import export_library
from .externals import CompiledModuleWithExternals
from .host_program import graph_program
from .kernel_groups import op_count, split_into_groups
from .progress import BuildProgress
from .pipelines import DEDUPE, HOIST

#: the closing passes' input is the scheduled module verified just before, and the llvm
#: dialect they make is checked by LLVM's own verifier once printed (xDSL's verifier took
#: a third of the chain model's build)
UNVERIFIED = dict(verify_input=False, verify_result=False)


#: a build of at least this many loop-level ops compiles in the LLVM worker processes
#: even before the pool runs (it saves more than the pool's start costs)
PARALLEL_MIN_OPS = 3000
#: groups per worker: enough that the workers finish together (dynamic balance)
GROUPS_PER_WORKER = 4


def weight_array(data: WeightAttr | DenseIntOrFPElementsAttr | np.ndarray) -> np.ndarray:
    """The numpy data of a constant, as listed in a lowered function's ``tk.weights`` (or
    as a build entry of the disk cache holds it)."""
    if isinstance(data, np.ndarray):
        return data
    return data.array if isinstance(data, WeightAttr) else ConstantOp(data).array()


@dataclass
class NativeBuild:
    """What a build produced below the loop level."""

    module: ObjectModule
    code: ObjectCode
    #: the graph executor's program (None: a build without one, e.g. ``jit_loops``)
    program: GraphProgram | None
    weight_data: list
    function: str
    target: CPUTarget
    cache_hit: bool
    #: how many temporaries the entry takes as trailing arguments (``program``'s)
    temporaries: int
    timings: list[tuple[str, float]] = field(default_factory=list)
    #: the key of the object code's disk-cache entry (None: not cached)
    cache_key: str | None = None


def compile_native(
    loops: ModuleOp,
    cpu: CPUTarget,
    function: str,
    signature: Signature,
    lower: Sequence[str],
    ctx: PassContext,
    *,
    graph_executor: bool = True,
    use_disk_cache: bool = True,
    verify: bool = False,
    progress: BuildProgress | None = None,
) -> NativeBuild:
    """Compile a scheduled loop-level module (changed in place) to native code loaded in
    this process. ``lower``: the passes to the llvm dialect (run under ``ctx``), skipped
    when the disk cache has the module's object code; ``graph_executor``: also merge
    identical kernels and read the graph executor's program (see the module doc);
    ``verify``: verify the lowering's input and result (hand-written or hand-scheduled
    loops), where a build relies on the verification before and LLVM's after;
    ``progress``: a step per group of kernels LLVM compiles."""
    timings: list[tuple[str, float]] = []
    host = find_function(loops, function)
    _, _, weight_data = loop.entry_layout(host)
    program, temporaries = None, 0
    if graph_executor:
        before = _kernel_count(loops)
        timings += run_pipeline(loops, DEDUPE, ctx, **UNVERIFIED)
        kept = _kernel_count(loops)
        compile_cache.count(kernel_hits=before - kept, kernel_misses=kept)
        program = graph_program(host, signature)
        timings += run_pipeline(loops, HOIST, ctx, **UNVERIFIED)  # the AOT entry takes the plan's storages
        temporaries = loop.hoisted_temporaries(host)
    for f in loops.ops if graph_executor else [host]:  # what the runtime calls with an argument array
        if isinstance(f, func.FuncOp):
            loop.mark_packed_entry(f)
    start = time.perf_counter()
    key = code = None
    if use_disk_cache and compile_cache.cache_dir() is not None:
        key = compile_cache.module_key(_key_parts(loops, cpu, function))
        code = compile_cache.load(key)
    timings.append(("cache-lookup", time.perf_counter() - start))
    hit = code is not None
    if code is None:
        if graph_executor and not verify and not ctx.dump_ir and not ctx.instruments:
            code = _compile_in_groups(loops, cpu, lower, ctx, timings, progress)
        else:  # (one module, every pass as listed: dumps, instruments, verification)
            timings += run_pipeline(loops, lower, ctx, verify_input=verify, verify_result=verify)
            with fewer_gc_pauses():  # (the LLVM IR text is printed from xDSL ops)
                code = compile_object(loops, cpu)
        timings += code.timings
        if key is not None:
            compile_cache.store(key, code)
    loaded = time.perf_counter()
    module = ObjectModule(code, cpu)
    timings.append(("load-object", time.perf_counter() - loaded))
    return NativeBuild(module, code, program, list(weight_data), function, cpu, hit, temporaries, timings, key)


def load_compiled(native: NativeBuild, signature: Signature, externals: Sequence[Any] = ()) -> CompiledModule:
    """The callable of a native build: its entry, ``signature``, weights; keeps the BYOC
    ``externals`` it calls alive (and raises their errors)."""
    weights = [weight_array(w) for w in native.weight_data]
    lib = (CompiledModuleWithExternals if externals else CompiledModule)(
        native.module.address(packed_entry_name(native.function)), signature, weights, keep_alive=native.module,
        temporaries=native.program if native.temporaries else None,
    )
    lib.external_modules = list(externals)
    lib.graph_program = native.program
    lib.cache_hit = native.cache_hit
    if native.program is not None:
        lib._exporter = functools.partial(export_library, native=native, weights=lib._weights, external_modules=externals)
    lib.pass_timings = PassTimings(native.timings)
    return lib


def _compile_in_groups(
    loops: ModuleOp,
    cpu: CPUTarget,
    lower: Sequence[str],
    ctx: PassContext,
    timings: list[tuple[str, float]],
    progress: BuildProgress | None,
) -> ObjectCode:
    """Lower and compile ``loops`` as groups of functions (``kernel_groups.py``), in the
    LLVM worker processes when the build is large enough or the pool runs: each group
    is lowered by the last pass of ``lower`` (the conversion to the llvm dialect, one
    function at a time) while the workers compile the groups before it."""
    *whole_module, per_function = lower
    timings += run_pipeline(loops, whole_module, ctx, **UNVERIFIED)
    parallel = codegen_process.use_workers(large=op_count(loops) >= PARALLEL_MIN_OPS)
    groups = split_into_groups(loops, codegen_process.worker_count() * GROUPS_PER_WORKER if parallel else 1)

    def lowered() -> Iterator[tuple[ModuleOp, int | None]]:
        for group, opt_level in groups:
            timings.extend(run_pipeline(group, (per_function,), ctx, **UNVERIFIED))
            yield group, opt_level

    if progress is not None:
        progress.add(len(groups))
    with fewer_gc_pauses():  # (the LLVM IR text is printed from xDSL ops)
        return compile_objects(lowered(), cpu, parallel, done=progress.step if progress is not None else None)


def _kernel_count(module: ModuleOp) -> int:
    return sum(1 for op in module.ops if loop.is_kernel(op))


def _key_parts(loops: ModuleOp, cpu: CPUTarget, function: str) -> list[str]:
    """What the disk cache's key is made of: the target, the entry's name, each kernel by
    its structural hash, every other op printed without its ``tk.weights``."""
    parts = [cpu.cpu, cpu.features, str(cpu.opt_level), function]
    for op in loops.ops:
        if loop.is_kernel(op):
            parts.append(f"{op.sym_name.data}={kernel_hash(op)}")
        else:  # weights are passed by pointer: their names and data do not change the code
            parts.append(loop.without_weights(op))
    return parts


__all__ = ["NativeBuild", "compile_native", "load_compiled", "weight_array"]
