"""The AOT entry's temporaries become arguments, so the runtime passes them.

``te-to-loop`` gives the host function one ``loop.alloc`` per temporary, all freed at
the end. Lowered as they are, every call mallocs and frees every intermediate tensor:
the whole model's activations at once, and, as glibc returns large blocks to the system
on ``free``, fresh pages each call (ViT-B/16 at 224x224: 57 of 212 ms were page
faults). Instead the temporaries become trailing arguments of the entry; the runtime
(:class:`tensorkiln.runtime.workspace.Workspaces`) passes the storages of the static
memory plan (temporaries share storage by liveness), allocated once and reused::

    %t = loop.alloc(%n) {scope = "global"} : memref<?x6xf32>     func.func @main(..., %t: memref<?x6xf32>)
    func.call @dense_0(%x, %w, %t)                         ->    func.call @dense_0(%x, %w, %t)
    loop.free %t : memref<?x6xf32>

Temporaries that share a storage get the same pointer, so these arguments are not
``noalias`` (``loop-to-llvm`` reads their count from the entry attribute).

As a pass, ``hoist-temporaries`` applies to every host function (``tk.entry``); the
build reads the graph executor's program off the host function before it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ..dialects import loop


def hoist_temporaries(host: func.FuncOp) -> int:
    """Make the host function's global ``loop.alloc`` temporaries trailing arguments (in
    allocation order, the order of the graph program's temporaries) and drop their
    frees; returns how many. Records the count as ``temporaries`` in ``tk.entry``."""
    block = host.body.block
    allocs = [op for op in block.ops if isinstance(op, loop.AllocOp) and op.scope.data == "global"]
    for alloc in allocs:
        argument = block.insert_arg(alloc.result.type, len(block.args))
        alloc.result.replace_all_uses_with(argument)
        block.erase_op(alloc)  # its size operands stay behind, dead (LLVM drops them)
    for free in [op for op in block.ops if isinstance(op, loop.FreeOp)]:
        block.erase_op(free)
    host.update_function_type()
    loop.set_hoisted_temporaries(host, len(allocs))
    return len(allocs)


@dataclass(frozen=True)
class HoistTemporariesPass(ModulePass):
    """Every host function's temporaries become trailing arguments (see the module doc)."""

    name = "hoist-temporaries"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for host in [f for f in op.ops if isinstance(f, func.FuncOp) and loop.is_entry(f)]:
            hoist_temporaries(host)


__all__ = ["HoistTemporariesPass", "hoist_temporaries"]
