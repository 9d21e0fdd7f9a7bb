"""A scheduled build's functions in groups, one LLVM module each, so that LLVM compiles
them in parallel (``backends/llvm/object_code.py``, ``codegen_process.py``).

Each function of the loop-level module (the host function, every kernel) is lowered to
the llvm dialect on its own: a call becomes an ``llvm.call`` by name and a callee
defined in another group is declared from its call site (``loop-to-llvm``'s external
declarations), so a group needs nothing from the others; the objects are linked by name
when loaded. A group is one large function or several small ones in module order, of
about ``total / target_groups`` ops each (and at least :data:`MIN_GROUP_OPS`: a module
costs LLVM a fixed amount of set-up).

Groups depend only on the module, so a build's objects are the same from run to run
(the disk cache stores them).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from ..dialects.walk import walk_ops

#: the fewest loop-level ops worth an LLVM module of their own
MIN_GROUP_OPS = 400


def op_count(op: Operation) -> int:
    """The ops of ``op`` and everything it holds (the size LLVM's work grows with)."""
    return len(walk_ops(op))


def split_into_groups(module: ModuleOp, target_groups: int) -> list[ModuleOp]:
    """Move the top-level ops of ``module`` (left empty) into about ``target_groups``
    new modules of similar size, in order."""
    ops = list(module.ops)
    sizes = [op_count(op) for op in ops]
    chunk = max(MIN_GROUP_OPS, sum(sizes) // max(1, target_groups))
    groups: list[list[Operation]] = [[]]
    filled = 0
    for op, size in zip(ops, sizes):
        if groups[-1] and filled + size > chunk:
            groups.append([])
            filled = 0
        groups[-1].append(op)
        filled += size
    for op in ops:
        op.detach()
    return [ModuleOp(group) for group in groups if group]


__all__ = ["MIN_GROUP_OPS", "op_count", "split_into_groups"]
