"""The sizes of symbolic dims inside a kernel or the host function (te-to-loop): a dim
read off a buffer that has it (``loop.dim``), a dim computed from symbols (``4*n``,
``runtime/dim_expr.py``) where needed, and a symbol solved from a dim linear in it::

    symbols = SymbolSizes(b, tensors, buffers)     # reads the dims the buffers have
    n = symbols.size(b, "n")
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.graph.types import shape_of
from ..runtime.dim_expr import evaluate, free_symbols, is_symbol, lower


class SymbolSizes:
    """Index values of symbolic dims: those of some buffer read off it (``loop.dim``), a
    dim computed from symbols (``4*n``, ``runtime/dim_expr.py``) computed where needed."""

    #: index arithmetic for each operator of a dim expression
    OPS = {
        "+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "//": arith.FloorDivSIOp,
        "%": arith.RemSIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
    }  # fmt: skip

    def __init__(self, b: Builder, tensors: Sequence[SSAValue], buffers: Sequence[SSAValue]):
        """Read the symbolic dims of ``tensors`` off the buffers holding them (the first
        buffer that has each)."""
        self.read: dict[str, SSAValue] = {}
        for tensor, buffer in zip(tensors, buffers):
            for axis, d in enumerate(shape_of(tensor.type)):
                if isinstance(d, str) and d not in self.read:
                    self.read[d] = b.insert(loop.DimOp(buffer, axis)).result

    def size(self, b: Builder, dim: str, t: Attribute | None = None) -> SSAValue:
        """The value of ``dim`` (computed at ``b`` if it is an expression not read off a buffer)."""
        if dim in self.read:
            return self.read[dim]
        if is_symbol(dim):
            solved = self._solve(b, dim)
            if solved is None:
                raise PassFailedException(f"te-to-loop: symbolic dim '{dim}'{f' of {t}' if t else ''} is not an input dim")
            self.read[dim] = solved
            return solved

        def index(k: int) -> SSAValue:
            return b.insert(arith.ConstantOp(IntegerAttr(k, IndexType()))).result

        def binary(make: type[Operation]):
            return lambda x, y: b.insert(make(x, y)).result

        emit = {op: binary(make) for op, make in self.OPS.items()}
        emit["neg"] = lambda x: b.insert(arith.SubiOp(index(0), x)).result
        return lower(dim, lambda name: self.size(b, name, t), emit, index)


    def _solve(self, b: Builder, symbol: str) -> SSAValue | None:
        """``symbol`` from a dim read off a buffer that is linear in it alone: a kernel
        whose input has ``4*n`` rows (a batch merged with another axis) and whose output
        has ``n`` computes ``n = (dim - 0) / 4``."""
        for expr, value in self.read.items():
            line = linear_in(expr, symbol)
            if line is None:
                continue
            offset, scale = line
            index = lambda k: b.insert(arith.ConstantOp(IntegerAttr(k, IndexType()))).result  # noqa: E731
            rest = b.insert(arith.SubiOp(value, index(offset))).result if offset else value
            return b.insert(arith.DivUIOp(rest, index(scale))).result if scale != 1 else rest
        return None


def linear_in(dim: str, symbol: str) -> tuple[int, int] | None:
    """(offset, scale) when ``dim`` is ``offset + scale*symbol`` (scale > 0), else None."""
    if dim == symbol:
        return 0, 1
    if is_symbol(dim) or free_symbols(dim) != {symbol}:
        return None
    offset, *points = (evaluate(dim, {symbol: k}) for k in range(4))
    scale = points[0] - offset
    if scale <= 0 or any(p != offset + k * scale for k, p in enumerate(points, 1)):
        return None
    return offset, scale


def gives_symbol(t: Attribute, symbol: str) -> bool:
    """Whether a tensor of type ``t`` gives ``symbol``: a dim of it linear in it alone
    (``4*n`` gives ``n``)."""
    return isinstance(t, TensorType) and any(
        isinstance(d, str) and linear_in(d, symbol) is not None for d in shape_of(t)
    )


def unsized_symbols(op: Operation, tensors: Sequence[SSAValue]) -> set[str]:
    """The symbols a kernel of ``op`` would need that no tensor of ``tensors`` (its
    buffers) gives: those of a dim inside ``op`` that is not itself a dim of a buffer
    (:class:`SymbolSizes` computes such a dim from its symbols). A fused kernel whose
    buffers are all padded to ``-8*((-s)//8)`` rows but which slices ``s`` of them
    cannot recover ``s``."""
    read = {d for v in tensors for d in shape_of(v.type) if isinstance(d, str)}
    needed: set[str] = set()
    for inner in op.walk():
        for value in (*inner.results, *(a for r in inner.regions for blk in r.blocks for a in blk.args)):
            if isinstance(value.type, TensorType):
                unread = (d for d in shape_of(value.type) if isinstance(d, str) and d not in read)
                needed.update(s for d in unread for s in free_symbols(d))
    return {s for s in needed if not any(gives_symbol(v.type, s) for v in tensors)}


__all__ = ["SymbolSizes", "gives_symbol", "linear_in", "unsized_symbols"]
