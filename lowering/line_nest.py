"""The loop nest of kernels that work line by line along one axis (``scatter_kernel.py``,
``scan_kernel.py``): one loop per other axis of a buffer, named ``i0, i1, ...`` as
te-to-loop's output loops (so the CPU default schedule may run them in parallel and
the GPU's ``one_thread_per_element`` binds them to threads), the line's work inside::

    loop.for %i0 ... name("i0") {            // the lines: every axis but ``axis``
      loop.for %i1 ... name("i1") {
        <per line: a serial loop along ``axis``, at(%k) = [%i0, %k, %i1]>
      }
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr
from xdsl.ir import Attribute, SSAValue

from ..dialects.graph.types import is_float
from .loop_nest import buffer_bounds, emit_loop_nest


@dataclass(frozen=True)
class LineNest:
    """The lines of a buffer along ``axis``, and a builder inside the innermost line loop."""

    axis: int
    #: the buffer's extent along each axis (constants or ``loop.dim``), built before the nest
    bounds: list[SSAValue]
    #: axis -> the induction variable of its line loop (every axis but ``axis``)
    line: dict[int, SSAValue]
    #: inside the innermost line loop (the kernel's entry when the buffer is 1-d)
    inner: Builder

    @property
    def size(self) -> SSAValue:
        """The extent along ``axis``."""
        return self.bounds[self.axis]

    def at(self, position: SSAValue) -> list[SSAValue]:
        """The indices of element ``position`` of the current line."""
        return [position if d == self.axis else self.line[d] for d in range(len(self.bounds))]


def line_nest(b: Builder, buffer: SSAValue, axis: int, within: Sequence[SSAValue] = ()) -> LineNest:
    """Emit at ``b`` the loops over the lines of ``buffer`` along ``axis`` (module
    docstring); with ``within`` (the extents of another buffer, e.g. a scatter's
    indices), only the lines inside those too. The bounds are computed before the nest,
    so the lines form a rectangular band that schedules may split and reorder."""
    bounds = buffer_bounds(b, buffer)
    if within:
        for d, other in enumerate(within):
            if d != axis and other is not bounds[d]:
                bounds[d] = _smaller(b, bounds[d], other)
    lines = [d for d in range(len(bounds)) if d != axis]
    ivs, inner = emit_loop_nest(b, [bounds[d] for d in lines], "i", role="spatial")
    return LineNest(axis, bounds, dict(zip(lines, ivs)), inner)


def _smaller(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    """``min(x, y)`` of two index values, folded when both are constants."""
    if isinstance(x.owner, arith.ConstantOp) and isinstance(y.owner, arith.ConstantOp):
        return x if x.owner.value.value.data <= y.owner.value.value.data else y
    return b.insert(arith.MinSIOp(x, y)).result


def scalar_literal(value: float | int | bool, t: Attribute) -> FloatAttr | IntegerAttr:
    """A typed literal (``0.0 : f32``, ``1 : i64``) for an ``arith.constant``."""
    return FloatAttr(float(value), t) if is_float(t) else IntegerAttr(int(value), t)


def index_const(b: Builder, k: int) -> SSAValue:
    """An ``index`` constant."""
    return b.insert(arith.ConstantOp(IntegerAttr(k, IndexType()))).result


__all__ = ["LineNest", "index_const", "line_nest", "scalar_literal"]
