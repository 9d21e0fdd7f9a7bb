"""The first step of every build: a copy of the graph module that a target can compile.

Each function becomes one straight-line function (its run-time checks become results:
``checks-to-outputs``, the caller checks them), every op is checked to be supported (one
:class:`UnsupportedOperatorError` naming all that are not), and the copy is verified.
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects.builtin import ModuleOp

from ..dialects.graph.control import CONTROL_FLOW_OPS
from ..dialects.graph.host import HOST_OPS
from ..errors import UnsupportedOperatorError
from ..lowering.graph_to_te import unsupported_ops
from ..passes.pipeline import PassContext, run_pipeline
from .pipelines import COMPILABLE

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


def compilable_copy(module: ModuleOp, ctx: PassContext | None = None) -> ModuleOp:
    """A copy of ``module`` to compile (see the module doc). ``ctx``: the build's context
    (``checks-to-outputs`` is its first dumped pass); default: no dumps."""
    work = module.clone()
    ctx = ctx if ctx is not None else PassContext(opt_level=0, dump_ir=False)
    # verified below, once the ops are known to be supported (that error comes first)
    run_pipeline(work, COMPILABLE, ctx, verify_input=False, verify_result=False)
    check_supported(work)
    work.verify()
    return work


def build_context(opt_level: int | None = None, dump_ir: str | None = None) -> PassContext:
    """The current PassContext, with ``opt_level`` / ``dump_ir`` where given."""
    ctx = PassContext.current()
    if opt_level is None and dump_ir is None:
        return ctx
    return dataclasses.replace(
        ctx,
        opt_level=ctx.opt_level if opt_level is None else opt_level,
        dump_ir=ctx.dump_ir if dump_ir is None else dump_ir,
    )


__all__ = ["VM_OPS", "build_context", "check_supported", "compilable_copy"]
