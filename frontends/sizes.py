"""Symbolic sizes as graph values, for every frontend.

A model computes with its sizes (``x.shape[1] - 1``, ``arange(seq_len)``); when a size is a
symbolic dim (``"batch"``, ``"2*s0 + 1"``) the graph needs it as a run-time value. Ops
that make tensors of symbolic shapes (``graph.full``, ``graph.arange``) take *size
sources*: tensors whose dims hold the symbols. These helpers find them and build the
values::

    b = GraphBuilder()
    x = b.input("x", ("n", 4))
    length = size_value(b, "2*n + 1")           # a 0-d int64 tensor: 2 * sum(ones(n)) + 1
    idx = positions(b, "n")                     # graph.arange(n), its size taken from x

Symbols read from data (``NonZero``'s count) are not dims of an input: a frontend passes
their size carriers (``graph.data_size``) as ``candidates`` and their 0-d values as
``symbol_values``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.ir import SSAValue

from ..dialects.graph.types import Dim, element_type_of, format_shape, shape_of
from ..runtime.dim_expr import free_symbols, lower
from .builder import GraphBuilder


class MissingDimSource(NotImplementedError):
    """No input or candidate has a dim holding a symbol a shape needs."""


def needed_symbols(shape: Sequence[Dim]) -> set[str]:
    """The symbols the dims of ``shape`` are written in (``("n", "2*m")`` -> ``{"n", "m"}``)."""
    return {symbol for d in shape if isinstance(d, str) for symbol in free_symbols(d)}


def dim_sources(builder: GraphBuilder, shape: Sequence[Dim], candidates: Sequence[SSAValue] = ()) -> list[SSAValue]:
    """Values whose dims give the symbols of ``shape``: ``candidates`` first, then the
    function's inputs (where every other symbol comes from)::

        dim_sources(b, ("n", 4))   # -> [x] for an input x of shape (n, 4)
    """
    needed = needed_symbols(shape)
    found: list[SSAValue] = []
    if not needed:
        return found
    for value in [*candidates, *builder._block.args]:  # noqa: SLF001  (the function's inputs)
        # a dim that IS the symbol: an op reads a symbol's size from such a dim, not from
        # an expression of it ("4*n")
        dims = {d for d in shape_of(value.type) if isinstance(d, str)}
        if dims & needed:
            found.append(value)
            needed -= dims
        if not needed:
            return found
    raise MissingDimSource(f"the symbolic dims {sorted(needed)} of {format_shape(shape)} are not dims of any input")


def positions(builder: GraphBuilder, length: Dim, candidates: Sequence[SSAValue] = ()) -> SSAValue:
    """``0 .. length - 1`` as int64: a constant when ``length`` is static, else a
    ``graph.arange`` whose size comes from ``candidates`` or the inputs."""
    if isinstance(length, int):
        return builder.constant(np.arange(length, dtype=np.int64))
    return builder.arange(length, 0, 1, element_type_of(np.int64), dim_sources(builder, (length,), candidates))


def size_value(
    builder: GraphBuilder,
    dim: Dim,
    symbol_values: Mapping[str, SSAValue] | None = None,
    candidates: Sequence[SSAValue] = (),
) -> SSAValue:
    """A 0-d int64 tensor holding ``dim``: a symbol in ``symbol_values`` (a size read from
    data) is that value, any other the sum of a ones vector that long; an expression
    (``2*n + 1``, ``(n - 1)//2``) is graph arithmetic on them, ``//`` and ``%`` flooring
    as dims do."""
    b = builder
    symbol_values = symbol_values or {}

    def constant(k: int) -> SSAValue:
        return b.constant(np.asarray(k, dtype=np.int64))

    def symbol(name: str) -> SSAValue:
        if name in symbol_values:
            return symbol_values[name]
        ones = b.full((name,), 1, element_type_of(np.int64), dim_sources(b, (name,), candidates))
        return b.reduce_sum(ones, [0])

    def floordiv(x: SSAValue, y: SSAValue) -> SSAValue:  # graph.div truncates; dims floor ((-s)//8)
        q = b.div(x, y)
        r = b.sub(x, b.mul(q, y))
        zero = constant(0)
        below = b.where(b.compare(r, zero, "ne"), b.compare(b.compare(r, zero, "lt"), b.compare(y, zero, "lt"), "ne"),
                        b.constant(np.asarray(False)))  # fmt: skip
        return b.sub(q, b.cast(below, element_type_of(np.int64)))

    def mod(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.sub(x, b.mul(floordiv(x, y), y))

    if isinstance(dim, int):
        return constant(dim)
    emit = {"+": b.add, "-": b.sub, "*": b.mul, "//": floordiv, "%": mod, "max": b.max, "min": b.min, "neg": b.neg}
    return lower(dim, symbol, emit, constant)
