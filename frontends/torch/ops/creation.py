"""Tensor creation ATen ops: arange, full/zeros/ones/empty, the ``*_like`` and ``new_*``
variants, scalar_tensor, fill, eye, tril/triu_indices.

A static shape becomes a numpy constant (held by reference, foldable). A shape with
symbolic dims becomes ``graph.full`` / ``graph.arange``, whose operands are tensors that
carry those dims (the ``*_like`` input, or a function input with the symbol).
``empty`` gives zeros.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.types import element_type_of
from ..context import ImportContext
from ..registry import converter


def _full(ctx: ImportContext, node, value, candidates: Sequence[SSAValue] = ()):
    if isinstance(value, SSAValue | str):
        raise NotImplementedError(f"a fill value computed in the model ({value}) is not supported")
    return filled(ctx, ctx.shape(node), value, ctx.dtype(node), candidates)


def filled(ctx: ImportContext, shape, value, dtype: np.dtype, candidates: Sequence[SSAValue] = ()) -> SSAValue:
    """A tensor of ``shape`` holding ``value``: a constant when the shape is static, else a
    ``graph.full`` whose sizes come from ``candidates`` or the inputs (or size carriers)."""
    if all(isinstance(d, int) for d in shape):
        return ctx.constant(np.full(shape, value, dtype=dtype))
    return ctx.b.full(shape, np.asarray(value).astype(dtype).item(), element_type_of(dtype), ctx.dim_sources(shape, candidates))


@converter("aten.full.default")
def full(ctx: ImportContext, node, size, fill_value, **kwargs):
    return _full(ctx, node, fill_value)


@converter(
    "aten.zeros.default", "aten.empty.memory_format", "aten.empty.default", "aten.empty_strided.default",
    "aten.empty_permuted.default",
)
def zeros(ctx: ImportContext, node, size, *args, **kwargs):
    return _full(ctx, node, 0)


@converter("aten.ones.default")
def ones(ctx: ImportContext, node, size, **kwargs):
    return _full(ctx, node, 1)


@converter("aten.full_like.default")
def full_like(ctx: ImportContext, node, x, fill_value, **kwargs):
    return _full(ctx, node, fill_value, [x])


@converter("aten.zeros_like.default", "aten.empty_like.default")
def zeros_like(ctx: ImportContext, node, x, **kwargs):
    return _full(ctx, node, 0, [x])


@converter("aten.ones_like.default")
def ones_like(ctx: ImportContext, node, x, **kwargs):
    return _full(ctx, node, 1, [x])


@converter("aten.new_full.default")
def new_full(ctx: ImportContext, node, x, size, fill_value, **kwargs):
    return _full(ctx, node, fill_value, [x])


@converter("aten.new_zeros.default", "aten.new_empty.default", "aten.new_empty_strided.default")
def new_zeros(ctx: ImportContext, node, x, size, *args, **kwargs):
    return _full(ctx, node, 0, [x])


@converter("aten.new_ones.default")
def new_ones(ctx: ImportContext, node, x, size, **kwargs):
    return _full(ctx, node, 1, [x])


@converter("aten.fill.Scalar")
def fill(ctx: ImportContext, node, x, value):
    return _full(ctx, node, value, [x])


@converter("aten.scalar_tensor.default", "prims.scalar_tensor.default")
def scalar_tensor(ctx: ImportContext, node, value, **kwargs):
    return _full(ctx, node, value)


def _arange(ctx: ImportContext, node, start, end, step):
    (length,) = ctx.shape(node)
    dtype = ctx.dtype(node)
    if isinstance(length, int):
        if np.issubdtype(dtype, np.integer):
            return ctx.constant((int(start) + np.arange(length, dtype=np.int64) * int(step)).astype(dtype))
        # torch computes float aranges in double, then rounds
        return ctx.constant((start + np.arange(length, dtype=np.float64) * step).astype(dtype))
    if isinstance(step, str):
        raise NotImplementedError(f"arange with a symbolic step ({step})")
    if isinstance(start, str):  # a size (XLNet's arange(klen, -qlen, -1.0)): i * step + start
        positions = ctx.b.arange(length, 0, step, element_type_of(dtype), ctx.dim_sources((length,)))
        return ctx.b.add(positions, ctx.cast(ctx.size_value(start), dtype))
    return ctx.b.arange(length, start, step, element_type_of(dtype), ctx.dim_sources((length,)))


@converter("aten.arange.default")
def arange(ctx: ImportContext, node, end, **kwargs):
    return _arange(ctx, node, 0, end, 1)


@converter("aten.arange.start")
def arange_start(ctx: ImportContext, node, start, end, **kwargs):
    return _arange(ctx, node, start, end, 1)


@converter("aten.arange.start_step")
def arange_start_step(ctx: ImportContext, node, start, end, step=1, **kwargs):
    return _arange(ctx, node, start, end, step)


@converter("aten.eye.default", "aten.eye.m")
def eye(ctx: ImportContext, node, n, m=None, **kwargs):
    """Ones on the diagonal. Kept whole (the decomposition compares two uint8 aranges);
    symbolic sizes compare two int64 aranges."""
    rows, columns = ctx.shape(node)
    dtype = ctx.dtype(node)
    if isinstance(rows, int) and isinstance(columns, int):
        return ctx.constant(np.eye(rows, columns, dtype=dtype))
    diagonal = ctx.b.compare(ctx.b.reshape(ctx.positions(rows), (rows, 1)), ctx.positions(columns), "eq")
    return ctx.cast(diagonal, dtype)


@converter("aten.tril_indices.default", "aten.triu_indices.default")
def triangle_indices(ctx: ImportContext, node, rows, columns, offset=0, **kwargs):
    """The (2, K) coordinates of a lower (upper) triangle, row-major, as a constant."""
    if not all(isinstance(v, int) for v in (rows, columns, offset)):
        raise NotImplementedError(f"{node.target} of symbolic sizes ({rows}, {columns}) is not supported")
    lower = "tril" in str(node.target)
    indices = (np.tril_indices if lower else np.triu_indices)(rows, offset, columns)
    return ctx.constant(np.stack(indices).astype(ctx.dtype(node)))
