"""Loop-level module -> native code in this process, through the compile cache.

The step of ``tk.build`` after scheduling: identical kernels are merged, the graph
executor's program is read off the host function (whose temporaries then become
arguments, passed in the program's planned storages), and the object code comes from
the disk cache or from loop-to-llvm + LLVM (then stored). The same object code is what
``export_library`` links into a shared library.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from ..backends.llvm.jit import CPUTarget
from ..backends.llvm.object_code import ObjectCode, ObjectModule, compile_object
from ..dialects.functions import find_function
from ..lowering.hoist_temporaries import hoist_temporaries
from ..lowering.loop_to_llvm import PACKED_ENTRY_ATTR
from ..lowering.te_to_loop import WEIGHTS_ATTR, entry_layout
from ..passes.pipeline import fewer_gc_pauses
from ..runtime.graph_program import GraphProgram
from ..runtime.signature import Signature
from . import compile_cache
from ..passes.dedupe_kernels import KERNEL_ATTR, dedupe_kernels
from .host_program import graph_program


@dataclass
class NativeBuild:
    """What a build produced below the loop level."""

    module: ObjectModule
    code: ObjectCode
    program: GraphProgram
    weight_data: list
    function: str
    target: CPUTarget
    cache_hit: bool
    #: how many temporaries the entry takes as trailing arguments (``program``'s)
    temporaries: int
    timings: list[tuple[str, float]] = field(default_factory=list)


def compile_loops(
    loops: ModuleOp,
    target: CPUTarget,
    function: str,
    signature: Signature,
    lower_to_llvm: Callable[[ModuleOp], list[tuple[str, float]]],
    use_disk_cache: bool = True,
) -> NativeBuild:
    """Compile a scheduled loop-level module (changed in place) to native code.

    ``lower_to_llvm(module)`` runs the loop -> llvm pipeline and returns its timings; it
    is skipped when the disk cache has the module's object code."""
    start = time.perf_counter()
    kept, merged = dedupe_kernels(loops)
    compile_cache.count(kernel_hits=merged, kernel_misses=len(kept))
    host = find_function(loops, function)
    _, _, weight_data = entry_layout(host)
    program = graph_program(host, signature)
    temporaries = hoist_temporaries(host)  # the AOT entry takes the plan's storages
    for f in loops.ops:  # the runtime calls the entry, the graph executor every function, with argument arrays
        if isinstance(f, func.FuncOp):
            f.attributes[PACKED_ENTRY_ATTR] = UnitAttr()
    timings: list[tuple[str, float]] = []
    key = None
    code = None
    if use_disk_cache and compile_cache.cache_dir() is not None:
        parts = [target.cpu, target.features, str(target.opt_level), function]
        for op in loops.ops:
            if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes:
                parts.append(f"{op.sym_name.data}={kept[op.sym_name.data]}")
            else:
                parts.append(_text_without_weights(op))
        key = compile_cache.module_key(parts)
        code = compile_cache.load(key)
    timings.append(("dedupe-kernels+cache-lookup", time.perf_counter() - start))
    hit = code is not None
    if code is None:
        timings += lower_to_llvm(loops)
        with fewer_gc_pauses():  # (the LLVM IR text is printed from xDSL ops)
            code = compile_object(loops, target)
        timings += code.timings
        if key is not None:
            compile_cache.store(key, code)
    loaded = time.perf_counter()
    module = ObjectModule(code, target)
    timings.append(("load-object", time.perf_counter() - loaded))
    return NativeBuild(module, code, program, list(weight_data), function, target, hit, temporaries, timings)


def _text_without_weights(op) -> str:
    """The printed op without its ``tk.weights`` list: weights are passed by pointer, so
    their names and data (which passes may rename, e.g. ``const0.packed.1``) do not
    change the code."""
    weights = op.attributes.pop(WEIGHTS_ATTR, None)
    try:
        return str(op)
    finally:
        if weights is not None:
            op.attributes[WEIGHTS_ATTR] = weights


def contiguous(arrays: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(a, order="C") for a in arrays]


__all__ = ["NativeBuild", "compile_loops"]
