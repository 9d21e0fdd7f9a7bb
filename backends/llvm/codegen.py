"""LLVM IR text -> optimised module -> relocatable object code (llvmlite only).

What the code-generation worker processes run (``codegen_process.py``), and the build
itself when it compiles in this process. The result is plain data (bytes, names,
seconds), so that it crosses a process boundary as a pickle.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from .target import CPUTarget, pic_target_machine, target_machine


@dataclass
class EmittedObject:
    """One LLVM module's object code and what the loader needs to know about it."""

    object: bytes
    #: functions defined (external linkage), in module order
    functions: list[str]
    #: functions declared and called (C library, runtime, other objects' functions)
    declared: list[str]
    #: global variables, defined or declared (``tk_num_threads``)
    globals: list[str]
    optimized_ir: str
    timings: list[tuple[str, float]] = field(default_factory=list)


def optimize(ir_text: str, target: CPUTarget, opt_level: int | None = None) -> llvm.ModuleRef:
    """Parse, verify and optimise LLVM IR (the new pass manager at ``opt_level``, by
    default the target's; never above the target's)."""
    level = target.opt_level if opt_level is None else min(opt_level, target.opt_level)
    tm = target_machine(target)
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.PipelineTuningOptions(speed_level=level)
    pto.loop_vectorization = level >= 2
    pto.slp_vectorization = level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def optimize_and_emit(text: str, target: CPUTarget, opt_level: int | None = None) -> EmittedObject:
    """LLVM IR text, optimised (at ``opt_level``, by default the target's), as object code."""
    start = time.thread_time()
    try:  # (a build verifies the llvm-dialect module here, by LLVM's parser and verifier)
        optimized = optimize(text, target, opt_level)
    except Exception as e:
        e.add_note("(the lowered llvm-dialect module is invalid: a lowering bug; with "
                   "PassContext(verify='each') the IR is verified after every pass)")  # fmt: skip
        raise
    done = time.thread_time()
    machine = target if opt_level is None else dataclasses.replace(target, opt_level=min(opt_level, target.opt_level))
    emitted = EmittedObject(
        object=pic_target_machine(machine).emit_object(optimized),
        functions=[f.name for f in optimized.functions if not f.is_declaration],
        declared=[f.name for f in optimized.functions if f.is_declaration and not f.name.startswith("llvm.")],
        globals=[g.name for g in optimized.global_variables],
        optimized_ir=str(optimized),
    )
    emitted.timings = [("llvm-opt", done - start), ("llvm-codegen", time.thread_time() - done)]
    return emitted


__all__ = ["EmittedObject", "optimize", "optimize_and_emit"]
