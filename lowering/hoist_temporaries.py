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
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64

from ..dialects import loop
from .te_to_loop import ENTRY_ATTR


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
    entry = dict(host.attributes[ENTRY_ATTR].data)
    entry["temporaries"] = IntegerAttr(len(allocs), i64)
    host.attributes[ENTRY_ATTR] = DictionaryAttr(entry)
    return len(allocs)


def hoisted_temporaries(host: func.FuncOp) -> int:
    """How many trailing arguments of a host function are hoisted temporaries (0 if none)."""
    entry = host.attributes.get(ENTRY_ATTR)
    count = entry.data.get("temporaries") if isinstance(entry, DictionaryAttr) else None
    return count.value.data if isinstance(count, IntegerAttr) else 0


__all__ = ["hoist_temporaries", "hoisted_temporaries"]
