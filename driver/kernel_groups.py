"""A scheduled build's functions in groups, one LLVM module each, so that LLVM compiles
them in parallel (``backends/llvm/object_code.py``, ``codegen_process.py``).

Each function of the loop-level module (the host function, every kernel) is lowered to
the llvm dialect on its own: a call becomes an ``llvm.call`` by name and a callee
defined in another group is declared from its call site (``loop-to-llvm``'s external
declarations), so a group needs nothing from the others; the objects are linked by name
when loaded. A group is one large function or several small ones in module order, of
about ``total / target_groups`` ops each (and at least :data:`MIN_GROUP_OPS`: a module
costs LLVM a fixed amount of set-up). The host function, which only calls kernels, is
a module of its own compiled at a lower LLVM optimisation level (:data:`CALLS_OPT_LEVEL`).

Groups depend only on the module, so a build's objects are the same from run to run
(the disk cache stores them).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from ..dialects import loop
from ..dialects.walk import walk_ops

#: the fewest loop-level ops worth an LLVM module of their own
MIN_GROUP_OPS = 400

#: LLVM optimisation level of the functions that only call kernels: their code is calls,
#: which O1 emits as well as O3, but O3's code generation took 0.17 s on EfficientNet-B0's
#: host function (a thousand calls in one block) and O1's 0.05 s
CALLS_OPT_LEVEL = 1


def op_count(op: Operation) -> int:
    """The ops of ``op`` and everything it holds (the size LLVM's work grows with)."""
    return len(walk_ops(op))


def calls_only(op: Operation) -> bool:
    """Whether ``op`` is a function that is not a kernel and runs no loop (the host
    function: a sequence of kernel calls)."""
    return isinstance(op, func.FuncOp) and not loop.is_kernel(op) and not any(isinstance(o, loop.ForOp) for o in walk_ops(op))


def split_into_groups(module: ModuleOp, target_groups: int) -> list[tuple[ModuleOp, int | None]]:
    """Move the top-level ops of ``module`` (left empty) into about ``target_groups``
    new modules of similar size, in order, each with its LLVM optimisation level (None:
    the target's). Functions that only call kernels (:func:`calls_only`) go together at
    :data:`CALLS_OPT_LEVEL` when they are worth a module of their own."""
    ops = list(module.ops)
    sizes = [op_count(op) for op in ops]
    callers = {op for op in ops if calls_only(op)}
    # (a call's arguments are each a few LLVM instructions: the host's ops undercount it)
    if sum(len(o.operands) + 1 for op in callers for o in walk_ops(op)) < MIN_GROUP_OPS:
        callers = set()
    chunk = max(MIN_GROUP_OPS, sum(size for op, size in zip(ops, sizes) if op not in callers) // max(1, target_groups))
    groups: list[tuple[list[Operation], int | None]] = []
    callers_group: tuple[list[Operation], int | None] | None = None
    current: tuple[list[Operation], int | None] | None = None
    filled = 0
    for op, size in zip(ops, sizes):
        if op in callers:
            if callers_group is None:
                callers_group = ([], CALLS_OPT_LEVEL)
                groups.append(callers_group)
            callers_group[0].append(op)
            continue
        if current is None or (current[0] and filled + size > chunk):
            current = ([], None)
            groups.append(current)
            filled = 0
        current[0].append(op)
        filled += size
    for op in ops:
        op.detach()
    return [(ModuleOp(group), level) for group, level in groups if group]


__all__ = ["CALLS_OPT_LEVEL", "MIN_GROUP_OPS", "calls_only", "op_count", "split_into_groups"]
