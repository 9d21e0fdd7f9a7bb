"""``transform_layout``: store a kernel argument with its dimensions permuted.

A kernel reads its weight ``W[n, k]`` along ``k`` while its register tile wants rows of
``n`` (a dense layer); after ``transform_layout(kernel, 1, [1, 0])`` the kernel takes
``Wt[k, n]`` and every access ``W[a, b]`` reads ``Wt[b, a]``. The kernel's callers
must then pass the argument in the new layout: the permutations applied are recorded
in the kernel's ``tk.layouts`` attribute (argument index -> permutation of the original
dimensions), and :func:`tensorkiln.schedule.strategies.pack_constant_arguments`
rewrites the calls whose argument is a constant weight, transposing the weight once,
at compile time (TVM's weight pre-packing / alter-op-layout). A blocked layout (one dim
split into blocks first, recorded in ``tk.layout_blocks``) stores a weight as the
contiguous panels a register tile reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, MemRefType
from xdsl.ir import Attribute

from ..dialects import loop
from .nest import IndexBuilder, ScheduleError, transformation

# what transform_layout records (``dialects/loop.py``), read by the weight packing
recorded_layouts, recorded_blocks = loop.argument_layouts, loop.argument_blocks


def blocked_shape(shape: Sequence[int], block: Sequence[int] | None) -> list[int]:
    """``shape`` with dim ``block[0]`` split into ``(dim / block[1], block[1])``."""
    if block is None:
        return list(shape)
    axis, size = block
    return [*shape[:axis], shape[axis] // size, size, *shape[axis + 1 :]]


@transformation("transform_layout")
def transform_layout(
    kernel: func.FuncOp, buffer: int, permutation: Sequence[int], block: Sequence[int] | None = None
) -> None:
    """Permute the dims of kernel argument ``buffer``: new dim ``d`` is old dim
    ``permutation[d]``; every load, store and ``loop.dim`` of it is rewritten.
    ``block = (axis, size)`` first splits static dim ``axis`` into blocks of ``size``
    (``(axis / size, size)``, the permutation then over one dim more): a dense weight
    ``W[n, k]`` with ``block=(0, 24)`` and ``permutation=[0, 2, 1]`` is stored as panels
    ``P[n/24, k, 24]``, each a contiguous k x 24 panel of the transposed weight (what
    BLAS packs at run time), and ``W[j, k]`` reads ``P[j / 24, k, j % 24]``."""
    P = "transform_layout"
    args = kernel.body.block.args
    if isinstance(buffer, bool) or not isinstance(buffer, int) or not 0 <= buffer < len(args):
        raise ScheduleError(P, f"kernel '{kernel.sym_name.data}' has no argument {buffer!r} (it has {len(args)})")
    arg = args[buffer]
    if not isinstance(arg.type, MemRefType):
        raise ScheduleError(P, f"argument {buffer} of '{kernel.sym_name.data}' is {arg.type}, not a buffer")
    shape = list(arg.type.get_shape())
    if block is not None:
        block = list(block)
        if len(block) != 2 or not 0 <= block[0] < len(shape) or block[1] < 1 or shape[block[0]] < 0 or shape[block[0]] % block[1]:
            raise ScheduleError(P, f"block {block!r}: expected (axis, size) with size dividing static dim axis of {shape}")
        if buffer in recorded_layouts(kernel):
            raise ScheduleError(P, f"argument {buffer} is re-laid out already; a blocked layout must come first")
    split = blocked_shape(shape, block)
    perm = list(permutation)
    if sorted(perm) != list(range(len(split))) or not all(isinstance(d, int) for d in perm):
        raise ScheduleError(P, f"{perm!r} is not a permutation of the {len(split)} dims of argument {buffer}")
    new_type = MemRefType(arg.type.element_type, [split[d] for d in perm])
    new_arg = kernel.body.block.insert_arg(new_type, buffer)
    old_arg = kernel.body.block.args[buffer + 1]
    for use in list(old_arg.uses):
        op = use.operation
        if isinstance(op, loop.LoadOp | loop.StoreOp):
            indices = _blocked_indices(kernel, op, list(op.indices), block)
            indices = [indices[d] for d in perm]
            new = loop.LoadOp(new_arg, indices) if isinstance(op, loop.LoadOp) else loop.StoreOp(op.value, new_arg, indices)
        elif isinstance(op, loop.DimOp) and block is None:
            new = loop.DimOp(new_arg, perm.index(op.axis.value.data))
        elif isinstance(op, loop.DimOp):  # static, the original dim's size
            new = arith.ConstantOp(IntegerAttr(shape[op.axis.value.data], IndexType()))
        else:
            raise ScheduleError(P, f"argument {buffer} is used by {op.name}; only loads, stores and loop.dim can follow")
        op.parent_block().insert_op_before(new, op)
        if op.results:
            op.results[0].replace_all_uses_with(new.results[0])
        op.detach()
        op.erase()
    kernel.body.block.erase_arg(old_arg)
    inputs: list[Attribute] = [a.type for a in kernel.body.block.args]
    kernel.function_type = FunctionType.from_lists(inputs, list(kernel.function_type.outputs.data))
    before = recorded_layouts(kernel).get(buffer, list(range(len(split))))
    loop.set_argument_layout(kernel, buffer, [before[d] for d in perm], block)


def _blocked_indices(kernel: func.FuncOp, op, indices: list, block: Sequence[int] | None) -> list:
    """``indices`` into the split shape: index ``i`` on the blocked axis becomes
    ``(i / size, i % size)`` (simplify_indices folds them against the loop bounds)."""
    if block is None:
        return indices
    axis, size = block
    b = IndexBuilder(kernel, InsertPoint.before(op))
    i = indices[axis]
    return [*indices[:axis], b.divui(i, b.const(size)), b.remui(i, b.const(size)), *indices[axis + 1 :]]


__all__ = ["blocked_shape", "recorded_blocks", "recorded_layouts", "transform_layout"]
