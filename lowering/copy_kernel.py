"""The kernel copying one buffer into another of the same type (row-major): an output
that is an input or an earlier output, a scatter's input before its updates."""

from __future__ import annotations

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Region

from ..dialects import loop
from .loop_nest import buffer_bounds, emit_loop_nest


def copy_kernel(t: MemRefType, name: str) -> func.FuncOp:
    """A kernel copying one buffer of type ``t`` into another (for outputs that are inputs)."""
    entry = Block(arg_types=[t, t])
    src, dst = entry.args
    b = Builder(InsertPoint.at_end(entry))
    ivs, inner = emit_loop_nest(b, buffer_bounds(b, dst), "i", role="spatial")
    inner.insert(loop.StoreOp(inner.insert(loop.LoadOp(src, ivs)).result, dst, ivs))
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, ([t, t], []), Region(entry))
    loop.set_kernel_tag(kernel, "copy")
    return kernel


__all__ = ["copy_kernel"]
