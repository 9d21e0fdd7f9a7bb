"""Padded reads in loop IR: recognised, and built again.

A convolution's or a pooling's window taps read their input through te's
``read_padded`` (``lowering/te_builder.py``): the index ``e`` of each padded dim is
clamped into the buffer for the load, and the loaded value is replaced by a fill
value (0 for a convolution, -inf for max pooling) where ``e`` lies outside::

    %in  = and(and(e >= 0, e < size), ...)           # one pair per padded dim
    %v   = loop.load %x[..., min(max(e, 0), size - 1), ...]
    %tap = arith.select %in, %v, %fill

``cache_read(..., pad=True)`` (``cache.py``) copies the *padded* box of such reads
into a local buffer -- the fill value where the box lies outside the input -- so the
reads inside become plain loads, without the bounds check at every tap (TVM's
``data_pad`` stage computed at a loop). :func:`match_padded_read` finds the form,
:func:`emit_padded_read` builds it (for the copy, and when the stage is inlined
again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.ir import SSAValue

from ..dialects import loop
from .nest import IndexBuilder, static_value

#: arith.cmpi predicates of the bounds check
_SGE, _SLT = "sge", "slt"


@dataclass(frozen=True)
class PaddedRead:
    """A bounds-checked read: ``select(inside(indices), load(clamped), fill)``."""

    load: loop.LoadOp
    select: arith.SelectOp
    #: the read's indices, unclamped on the padded dims
    indices: tuple[SSAValue, ...]
    #: the dims checked against the buffer
    padded: tuple[int, ...]
    #: the fill value (an ``arith.constant``)
    fill: SSAValue


def _folded(value: SSAValue) -> int | None:
    """The integer of a constant, or of a difference of constants (``size - 1`` as
    te-to-loop leaves it)."""
    owner = value.owner
    if isinstance(owner, arith.SubiOp):
        a, b = _folded(owner.lhs), _folded(owner.rhs)
        return None if a is None or b is None else a - b
    return static_value(value)


def _is_size(value: SSAValue, source: SSAValue, dim: int, minus: int = 0) -> bool:
    """Whether ``value`` is (dim ``dim`` of ``source``) - ``minus``: a constant of a
    static dim, or ``loop.dim`` (minus a constant) of a dynamic one."""
    size = source.type.get_shape()[dim]
    if size >= 0:
        return _folded(value) == size - minus
    owner = value.owner
    if minus:
        if not isinstance(owner, arith.SubiOp) or static_value(owner.rhs) != minus:
            return False
        owner = owner.lhs.owner
    return isinstance(owner, loop.DimOp) and owner.buffer == source and owner.axis.value.data == dim


def _unclamped(index: SSAValue, source: SSAValue, dim: int) -> SSAValue | None:
    """``e`` when ``index`` is ``min(max(e, 0), size - 1)`` for that dim of ``source``."""
    outer = index.owner
    if not isinstance(outer, arith.MinSIOp) or not _is_size(outer.rhs, source, dim, minus=1):
        return None
    inner = outer.lhs.owner
    if not isinstance(inner, arith.MaxSIOp) or _folded(inner.rhs) != 0:
        return None
    return inner.lhs


def _conjuncts(value: SSAValue) -> list[SSAValue]:
    """The leaves of a tree of ``arith.andi``."""
    owner = value.owner
    if isinstance(owner, arith.AndIOp):
        return _conjuncts(owner.lhs) + _conjuncts(owner.rhs)
    return [value]


def _check_of(value: SSAValue) -> tuple[str, SSAValue, SSAValue] | None:
    owner = value.owner
    if not isinstance(owner, arith.CmpiOp):
        return None
    predicate = {5: _SGE, 2: _SLT}.get(owner.predicate.value.data)
    return None if predicate is None else (predicate, owner.lhs, owner.rhs)


def match_padded_read(read: loop.LoadOp) -> PaddedRead | None:
    """The padded form of ``read`` (see the module docstring), or None: every clamped
    dim must be checked, no other dim, and the loaded value used by the select only."""
    source = read.buffer
    indices: list[SSAValue] = []
    padded: list[int] = []
    for dim, index in enumerate(read.indices):
        e = _unclamped(index, source, dim)
        indices.append(index if e is None else e)
        if e is not None:
            padded.append(dim)
    uses = list(read.result.uses)
    if not padded or len(uses) != 1:
        return None
    select = uses[0].operation
    if not isinstance(select, arith.SelectOp) or select.lhs != read.result or select.rhs == read.result:
        return None
    if not isinstance(select.rhs.owner, arith.ConstantOp):
        return None
    checks = [_check_of(leaf) for leaf in _conjuncts(select.cond)]
    expected = {(_SGE, d) for d in padded} | {(_SLT, d) for d in padded}
    found = set()
    for check in checks:
        if check is None:
            return None
        predicate, lhs, rhs = check
        dims = [d for d in padded if indices[d] == lhs]
        ok = [d for d in dims if (_folded(rhs) == 0 if predicate == _SGE else _is_size(rhs, source, d))]
        if not ok:
            return None
        found.add((predicate, ok[0]))
    if found != expected:
        return None
    return PaddedRead(read, select, tuple(indices), tuple(padded), select.rhs)


def padded_arguments(kernel: func.FuncOp) -> list[int]:
    """The kernel arguments read through bounds-checked window taps, by number."""
    args = list(kernel.body.block.args)
    found = {
        args.index(op.buffer)
        for op in kernel.walk()
        if isinstance(op, loop.LoadOp) and op.buffer in args and match_padded_read(op) is not None
    }
    return sorted(found)


def emit_padded_read(
    ib: IndexBuilder, source: SSAValue, indices: Sequence[SSAValue], padded: Sequence[int], fill: SSAValue
) -> SSAValue:
    """Build ``source[indices]`` bounds-checked on ``padded`` (``fill`` outside), in the
    form :func:`match_padded_read` recognises."""
    indices = list(indices)
    inside: SSAValue | None = None
    for dim in padded:
        static = source.type.get_shape()[dim]
        size = ib.const(static) if static >= 0 else ib.insert(loop.DimOp(source, dim))
        e = indices[dim]
        ok = ib.insert(
            arith.AndIOp(ib.insert(arith.CmpiOp(e, ib.const(0), _SGE)), ib.insert(arith.CmpiOp(e, size, _SLT)))
        )
        inside = ok if inside is None else ib.insert(arith.AndIOp(inside, ok))
        indices[dim] = ib.min(ib.max(e, ib.const(0)), ib.sub(size, ib.const(1)))
    value = ib.insert(loop.LoadOp(source, indices))
    return ib.insert(arith.SelectOp(inside, value, fill))


def erase_padded_read(read: PaddedRead, replacement: SSAValue) -> None:
    """Replace the select's value by ``replacement`` and erase the select and the load
    (the bounds checks, now unused, go with dead-code erasure)."""
    read.select.result.replace_all_uses_with(replacement)
    for op in (read.select, read.load):
        op.detach()
        op.erase()


__all__ = ["PaddedRead", "emit_padded_read", "erase_padded_read", "match_padded_read", "padded_arguments"]
