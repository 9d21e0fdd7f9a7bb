"""``transform_layout``: store a kernel argument with its dimensions permuted.

A kernel reads its weight ``W[n, k]`` along ``k`` while its register tile wants rows of
``n`` (a dense layer); after ``transform_layout(kernel, 1, [1, 0])`` the kernel takes
``Wt[k, n]`` and every access ``W[a, b]`` reads ``Wt[b, a]``. The kernel's callers
must then pass the argument in the new layout: the permutations applied are recorded
in the kernel's ``tk.layouts`` attribute (argument index -> permutation of the original
dimensions), and :func:`tensorkiln.schedule.strategies.pack_constant_arguments`
rewrites the calls whose argument is a constant weight, transposing the weight once,
at compile time (TVM's weight pre-packing / alter-op-layout).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute

from ..dialects import loop
from .nest import ScheduleError, transformation

LAYOUTS_ATTR = "tk.layouts"


def recorded_layouts(kernel: func.FuncOp) -> dict[int, list[int]]:
    """Argument index -> permutation of its original dims, as recorded by transform_layout."""
    attr = kernel.attributes.get(LAYOUTS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {int(k): [d.value.data for d in v.data] for k, v in attr.data.items()}


def _record(kernel: func.FuncOp, layouts: dict[int, list[int]]) -> None:
    kernel.attributes[LAYOUTS_ATTR] = DictionaryAttr(
        {str(k): ArrayAttr([IntegerAttr(d, i64) for d in perm]) for k, perm in sorted(layouts.items())}
    )


@transformation("transform_layout")
def transform_layout(kernel: func.FuncOp, buffer: int, permutation: Sequence[int]) -> None:
    """Permute the dims of kernel argument ``buffer``: new dim ``d`` is old dim
    ``permutation[d]``; every load, store and ``loop.dim`` of it is rewritten."""
    P = "transform_layout"
    args = kernel.body.block.args
    if isinstance(buffer, bool) or not isinstance(buffer, int) or not 0 <= buffer < len(args):
        raise ScheduleError(P, f"kernel '{kernel.sym_name.data}' has no argument {buffer!r} (it has {len(args)})")
    arg = args[buffer]
    if not isinstance(arg.type, MemRefType):
        raise ScheduleError(P, f"argument {buffer} of '{kernel.sym_name.data}' is {arg.type}, not a buffer")
    shape = list(arg.type.get_shape())
    perm = list(permutation)
    if sorted(perm) != list(range(len(shape))) or not all(isinstance(d, int) for d in perm):
        raise ScheduleError(P, f"{perm!r} is not a permutation of the {len(shape)} dims of argument {buffer}")
    new_type = MemRefType(arg.type.element_type, [shape[d] for d in perm])
    new_arg = kernel.body.block.insert_arg(new_type, buffer)
    old_arg = kernel.body.block.args[buffer + 1]
    for use in list(old_arg.uses):
        op = use.operation
        if isinstance(op, loop.LoadOp):
            new = loop.LoadOp(new_arg, [op.indices[d] for d in perm])
        elif isinstance(op, loop.StoreOp):
            new = loop.StoreOp(op.value, new_arg, [op.indices[d] for d in perm])
        elif isinstance(op, loop.DimOp):
            new = loop.DimOp(new_arg, perm.index(op.axis.value.data))
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
    layouts = recorded_layouts(kernel)
    before = layouts.get(buffer, list(range(len(shape))))
    layouts[buffer] = [before[d] for d in perm]
    _record(kernel, layouts)


__all__ = ["LAYOUTS_ATTR", "recorded_layouts", "transform_layout"]
