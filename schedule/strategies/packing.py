"""Constant weights pre-packed at compile time into the layout their kernel wants.

A strategy that re-lays out a kernel argument (``transform_layout``, recorded in the
kernel's ``tk.layouts``) changes what the kernel's callers must pass. For each call of
such a kernel in a lowered host function, :func:`pack_constant_arguments` replaces
the weight operand by a new weight holding the permuted data (numpy, once, here) and
drops the original weight argument when nothing else uses it. An operand that is not
a constant weight is an error: a strategy re-lays out constant arguments only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp
from xdsl.utils.exceptions import PassFailedException

from ...dialects import loop
from ...dialects.graph import ConstantOp
from ...dialects.graph.types import WeightAttr
from ..layout import blocked_shape, recorded_blocks, recorded_layouts


def _array(data) -> np.ndarray:
    return data.array if isinstance(data, WeightAttr) else ConstantOp(data).array()


def _name(data) -> str:
    return data.data.name if isinstance(data, WeightAttr) else "const"


def _set_signature(host: func.FuncOp) -> None:
    host.function_type = FunctionType.from_lists(
        [a.type for a in host.body.block.args], list(host.function_type.outputs.data)
    )


def relaid_view(array: np.ndarray, permutation: Sequence[int], block: Sequence[int] | None = None) -> np.ndarray:
    """``array`` as a kernel that re-laid it out indexes it, as a view (no copy): dim
    ``block[0]`` split into blocks of ``block[1]`` if given, then the dims permuted."""
    if block is not None:
        array = array.reshape(blocked_shape(array.shape, block))
    return np.transpose(array, permutation)


def relaid(array: np.ndarray, permutation: Sequence[int], block: Sequence[int] | None = None) -> np.ndarray:
    """:func:`relaid_view`, contiguous (C order): what the kernel takes."""
    return np.asarray(relaid_view(array, permutation, block), order="C")


def _pack_call(host: func.FuncOp, call: func.CallOp, layouts: dict[int, list[int]], blocks: dict[int, list[int]]) -> None:
    for index, perm in layouts.items():
        block = host.body.block
        weights = loop.entry_weights(host)
        first = len(block.args) - len(weights)
        operand = call.arguments[index]
        args = list(block.args)
        if operand not in args or args.index(operand) < first:
            raise PassFailedException(
                f"pack-constant-arguments: argument {index} of the call to @{call.callee.string_value()} "
                f"is not a constant weight of @{host.sym_name.data}, but its kernel wants it re-laid out {perm}"
            )
        data = weights[args.index(operand) - first]
        packed = relaid(_array(data), perm, blocks.get(index))
        attr = WeightAttr.from_array(f"{_name(data)}.packed", packed)
        new_type = MemRefType(operand.type.element_type, packed.shape)
        new_arg = block.insert_arg(new_type, len(block.args))
        new_arg.name_hint = operand.name_hint
        call.operands[index] = new_arg
        weights.append(attr)
        if not operand.uses:
            del weights[args.index(operand) - first]
            block.erase_arg(operand)
        loop.set_entry_weights(host, weights)
        _set_signature(host)


def pack_constant_arguments(module: ModuleOp, only: Collection[str] | None = None) -> None:
    """Give every re-laid-out kernel argument its packed constant (see module docstring).
    ``only``: the kernels (by symbol) whose calls to rewrite; the others' calls may have
    been packed already (packing twice would permute the weight twice)."""
    kernels = {
        f.sym_name.data: recorded_layouts(f)
        for f in module.ops
        if isinstance(f, func.FuncOp) and recorded_layouts(f) and (only is None or f.sym_name.data in only)
    }
    if not kernels:
        return
    blocks = {f.sym_name.data: recorded_blocks(f) for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data in kernels}
    for host in [f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data not in kernels]:
        for call in [op for op in host.walk() if isinstance(op, func.CallOp)]:
            layouts = kernels.get(call.callee.string_value())
            if layouts:
                _pack_call(host, call, layouts, blocks[call.callee.string_value()])


__all__ = ["pack_constant_arguments", "relaid", "relaid_view"]
