"""tensorize: replace a loop nest by a call to a named micro-kernel.

``tensorize(kernel, "k0", "gemm_4x16")`` replaces the loop ``k0`` (and everything
inside it) by ``func.call @gemm_4x16(<buffers>, <scalars>)``. The arguments are the
values the nest uses but does not define, constants aside: first the buffers (kernel
arguments and local tiles), then the scalars (outer induction variables: the offsets
of the tile, loop bounds, ...), each group in order of first use. They are returned,
described, so a strategy can write a micro-kernel with that signature.

If the module has no function ``@gemm_4x16`` yet, the nest is outlined into one
(``attributes {tk.microkernel = "outlined"}``): the program computes the same
thing, and a strategy can replace the body by a hand-written micro-kernel. If it
has one, its type must match the call; an outlined one must also have the same body
(two different nests may not share a name).
"""

from __future__ import annotations

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Region, SSAValue

from ..dialects.loop import is_outlined_microkernel, mark_outlined_microkernel
from .nest import ScheduleError, defined_inside, find_loop, transformation

def _symbol(module: ModuleOp, name: str):
    for op in module.ops:
        if getattr(op, "sym_name", None) is not None and op.sym_name.data == name:
            return op
    return None


def nest_arguments(nest) -> list[SSAValue]:
    """Values used in ``nest`` and defined outside it, constants excluded: buffers
    first, then the rest, each in order of first use."""
    used: list[SSAValue] = []
    seen: set[SSAValue] = set()
    for op in nest.walk():
        for v in op.operands:
            if v in seen or defined_inside(v, nest) or isinstance(v.owner, arith.ConstantOp):
                continue
            seen.add(v)
            used.append(v)
    return [v for v in used if isinstance(v.type, MemRefType)] + [v for v in used if not isinstance(v.type, MemRefType)]


@transformation("tensorize")
def tensorize(kernel: func.FuncOp, loop: str, microkernel: str) -> list[str]:
    """Replace loop ``loop`` and its body by a call to ``@microkernel`` (outlined
    from the nest unless the module has it); returns the argument types, in order."""
    P = "tensorize"
    nest = find_loop(kernel, loop, P)
    if not isinstance(microkernel, str) or not microkernel.replace("_", "a").replace(".", "a").isalnum():
        raise ScheduleError(P, f"the micro-kernel needs a symbol name (letters, digits, '_', '.'), got {microkernel!r}")
    module = kernel.parent_op()
    if not isinstance(module, ModuleOp):
        raise ScheduleError(P, f"kernel '{kernel.sym_name.data}' must be inside a module (the micro-kernel goes there)")
    if microkernel == kernel.sym_name.data:
        raise ScheduleError(P, "the micro-kernel cannot be the kernel itself")
    arguments = nest_arguments(nest)
    types = [v.type for v in arguments]

    entry = Block(arg_types=types)
    mapping: dict[SSAValue, SSAValue] = dict(zip(arguments, entry.args))
    builder = Builder(InsertPoint.at_end(entry))
    for op in nest.walk():
        for v in op.operands:
            if v not in mapping and not defined_inside(v, nest) and isinstance(v.owner, arith.ConstantOp):
                mapping[v] = builder.insert(v.owner.clone()).result
    builder.insert(nest.clone(value_mapper=mapping))
    builder.insert(func.ReturnOp())
    outlined = func.FuncOp(microkernel, (types, []), Region(entry))
    mark_outlined_microkernel(outlined)

    existing = _symbol(module, microkernel)
    if existing is not None:
        if not isinstance(existing, func.FuncOp):
            raise ScheduleError(P, f"symbol @{microkernel} exists and is not a function")
        if existing.function_type != outlined.function_type:
            raise ScheduleError(
                P,
                f"@{microkernel} has type {existing.function_type}, but the nest at loop '{loop}' "
                f"needs {outlined.function_type}",
            )
        if is_outlined_microkernel(existing) and str(existing) != str(outlined):
            raise ScheduleError(P, f"@{microkernel} was outlined from a different nest; give this one another name")
    call = func.CallOp(microkernel, arguments, [])
    nest.parent_block().insert_op_before(call, nest)
    nest.detach()
    nest.erase()
    if existing is None:
        module.body.block.insert_op_after(outlined, kernel)
    return [str(t) for t in types]


__all__ = ["nest_arguments", "tensorize"]
