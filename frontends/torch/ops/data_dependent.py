"""Ops whose result sizes depend on the data, and the run-time assertions of a model.

``nonzero``, ``masked_select`` and indexing by a boolean mask (``x[mask]``) return as
many rows as the data has true elements: torch.export names that count with a fresh
symbol (``u0``). Here the count is computed, read by the host (``graph.data_size``,
run by the VM) and the rows placed by a scatter: element ``i`` goes to row
``cumsum(flags)[i] - 1``. ``item()`` of an integer tensor is a symbol too, a size the
ops after it may use (``torch.arange(n.item())``).

``unique`` sorts, then keeps the first of each run of equal neighbours the same way.

``_assert_scalar`` (a condition on sizes torch.export could not prove, or on an
``item()``) becomes a ``graph.check`` unless the symbols' ranges, which every executor
checks, already imply it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from ....dialects.graph.types import broadcast_shapes, element_type_of, format_shape, numpy_dtype, shape_of
from ....runtime import dim_arith
from ....runtime.dim_expr import free_symbols
from ..context import ImportContext, dim_of_expression, symbol_name
from ..registry import converter

_INT64 = np.dtype(np.int64)


def input_symbols(ctx: ImportContext) -> set[str]:
    """The symbols the function's inputs give."""
    return {s for arg in ctx.b._block.args for d in shape_of(arg.type) if isinstance(d, str) for s in free_symbols(d)}  # noqa: SLF001


def new_data_symbol(ctx: ImportContext, node: Any) -> str:
    """The symbol torch.export made up for the data-dependent size of ``node``'s result
    (``u0``): the one in its shape that no input gives (an earlier op may have bound it:
    torch.export names ``nonzero`` of one tensor once)."""
    metas = node.meta["val"] if isinstance(node.meta["val"], list | tuple) else [node.meta["val"]]
    dims = [symbol_name(d) for meta in metas if hasattr(meta, "shape") for d in meta.shape]
    found = {s for d in dims if isinstance(d, str) for s in free_symbols(d)} - input_symbols(ctx)
    if len(found) != 1:
        raise NotImplementedError(f"expected one new data-dependent size in the result, found {sorted(found) or 'none'}")
    return found.pop()


def true_positions(ctx: ImportContext, flags: SSAValue, symbol: str) -> SSAValue:
    """The flat positions (int64, in order) of the true elements of the 1-d boolean
    ``flags``: a tensor of ``symbol`` elements, ``symbol`` bound to their count."""
    b = ctx.b
    (length,) = shape_of(flags.type)
    ones = ctx.cast(flags, _INT64)
    if symbol not in ctx.symbol_values:
        ctx.bind_data_symbol(symbol, b.reduce_sum(ones, [0]))
    order = b.sub(b.cumsum(ones, 0), ctx.constant(np.int64(1)))
    rows = b.where(flags, order, ctx.size_value(symbol))  # the others to one spare row, cut off
    slots = b.full((dim_arith.add(symbol, 1),), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
    placed = b.scatter(slots, rows, ctx.positions(length, [flags]), axis=0, mode="update")
    return b.slice(placed, [0], [-1])


def _flat_flags(ctx: ImportContext, x: SSAValue) -> SSAValue:
    """``x != 0`` as a 1-d boolean vector (row-major)."""
    b = ctx.b
    shape = shape_of(x.type)
    flat = b.reshape(x, (dim_arith.product(shape),))
    return flat if x.type.element_type == i1 else b.compare(flat, ctx.scalar(0, flat), "ne")


def coordinates(ctx: ImportContext, positions: SSAValue, shape: tuple) -> list[SSAValue]:
    """The coordinates in ``shape`` of flat row-major ``positions``, one int64 vector per axis."""
    b = ctx.b
    columns, stride = [], 1
    for size in reversed(shape):
        q = positions if stride == 1 else b.div(positions, ctx.size_value(stride))  # positions >= 0: div floors
        columns.append(b.sub(q, b.mul(b.div(q, ctx.size_value(size)), ctx.size_value(size))))
        stride = dim_arith.mul(stride, size)
    return columns[::-1]


@converter("aten.nonzero.default")
def nonzero(ctx: ImportContext, node, x):
    """The coordinates of the non-zero elements of ``x``, one row each, in row-major order."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    shape = shape_of(x.type)
    positions = true_positions(ctx, _flat_flags(ctx, x if shape else b.reshape(x, (1,))), symbol)
    if not shape:
        return b.full((symbol, 0), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
    columns = [b.reshape(c, (symbol, 1)) for c in coordinates(ctx, positions, shape)]
    return columns[0] if len(columns) == 1 else b.concat(columns, 1)


@converter("aten.masked_select.default")
def masked_select(ctx: ImportContext, node, x, mask):
    """The elements of ``x`` where ``mask`` (both broadcast) is true, as a vector."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    shape = broadcast_shapes(shape_of(x.type), shape_of(mask.type))
    count = dim_arith.product(shape)
    flags = b.reshape(b.broadcast_to(mask, shape), (count,))
    positions = true_positions(ctx, flags, symbol)
    return b.take(b.reshape(b.broadcast_to(x, shape), (count,)), positions, 0)


def masked_rows(ctx: ImportContext, node, x: SSAValue, at: int, mask: SSAValue) -> SSAValue:
    """``x[..., mask]`` with ``mask`` covering the axes of ``x`` from ``at`` (whole axes
    before it): the true cells' rows of ``x`` with those axes merged into one."""
    b = ctx.b
    x_shape, mask_shape = shape_of(x.type), shape_of(mask.type)
    before, after = x_shape[:at], x_shape[at + len(mask_shape) :]
    positions = true_positions(ctx, _flat_flags(ctx, mask), new_data_symbol(ctx, node))
    return b.take(b.reshape(x, (*before, dim_arith.product(mask_shape), *after)), positions, at)


def masks_as_indices(ctx: ImportContext, node, indices: list) -> list:
    """An advanced index with a boolean mask (``x[mask]``, ``x[:, mask]``) as the integer
    index it means: the mask's ``nonzero`` columns in place of the axes it covers."""
    masks = [k for k, t in enumerate(indices) if t is not None and t.type.element_type == i1]
    if not masks:
        return list(indices)
    if len(masks) > 1:
        raise NotImplementedError("indexing with more than one boolean mask is not supported")
    (at,) = masks
    mask = indices[at]
    mask_shape = shape_of(mask.type)
    if not mask_shape:
        raise NotImplementedError("indexing with a 0-d boolean mask (x[True]) is not supported")
    symbol = new_data_symbol(ctx, node)
    positions = true_positions(ctx, _flat_flags(ctx, mask), symbol)
    return [*indices[:at], *coordinates(ctx, positions, mask_shape), *indices[at + 1 :]]


def masked_put(ctx: ImportContext, x: SSAValue, at: int, mask: SSAValue, values: SSAValue, accumulate: bool) -> SSAValue:
    """``x[..., mask, ...] = values`` (``+=`` with ``accumulate``), the mask covering the
    axes of ``x`` from ``at``: the ``j``-th true position takes the ``j``-th row of
    ``values`` (or its only one). A ``graph.check`` raises, as torch does, when
    ``values`` has neither one row nor one per true position."""
    b = ctx.b
    x_shape = shape_of(x.type)
    mask_shape = shape_of(mask.type)
    before, after = x_shape[:at], x_shape[at + len(mask_shape) :]
    cells = dim_arith.product(mask_shape)
    v_shape = shape_of(values.type)
    length = v_shape[-(len(after) + 1)] if len(v_shape) > len(after) else 1
    rows = b.broadcast_to(values, (*before, length, *after))
    flags = b.reshape(mask, (cells,))
    ones = ctx.cast(flags, _INT64)
    if length != 1:
        count = b.reduce_sum(ones, [0])
        ctx.b.check(
            b.compare(count, ctx.size_value(length), "eq"),
            f"shape mismatch: value tensor of shape {format_shape(v_shape)} cannot be broadcast to the "
            "number of elements the boolean mask selects",
        )
    last = ctx.size_value(length)
    if not isinstance(length, int):  # one spare row to read where there may be none (no selection)
        rows = b.pad(rows, [0] * (len(before) + 1 + len(after)),
                     [0] * len(before) + [1] + [0] * len(after))  # fmt: skip
    else:
        last = b.sub(last, ctx.constant(np.int64(1)))
    order = b.min(b.max(b.sub(b.cumsum(ones, 0), ctx.constant(np.int64(1))), ctx.constant(np.int64(0))), last)
    placed = b.take(rows, order, len(before))  # (*before, cells, *after)
    merged = b.reshape(x, (*before, cells, *after))
    chosen = b.reshape(flags, (*(1 for _ in before), cells, *(1 for _ in after)))
    updated = b.where(chosen, b.add(merged, placed) if accumulate else placed, merged)
    return b.reshape(updated, x_shape)


def _unique_runs(ctx: ImportContext, node, values: SSAValue, order: SSAValue | None, return_inverse, return_counts, shape):
    """The runs of equal neighbours among the rows of ``values`` (along axis 0; ``order``:
    the positions they came from, None for in place): one row per run; the run of each
    original row (in ``shape``), and each run's length, where asked for (else empty, as
    torch)."""
    b = ctx.b
    symbol = new_data_symbol(ctx, node)
    length, *rest = shape_of(values.type)
    _, inverse_meta, counts_meta = node.meta["val"]  # along a dim, torch gives both, asked for or not
    return_inverse = return_inverse or tuple(map(symbol_name, inverse_meta.shape)) != (0,)
    return_counts = return_counts or tuple(map(symbol_name, counts_meta.shape)) != (0,)
    at = ctx.positions(length, [values])
    previous = b.take(values, b.max(b.sub(at, ctx.constant(np.int64(1))), ctx.constant(np.int64(0))), 0)
    differs = b.compare(values, previous, "ne")  # NaN != NaN: each NaN its own run
    if rest:
        differs = b.compare(b.reduce_max(ctx.cast(differs, np.dtype(np.int8)), list(range(1, 1 + len(rest)))), ctx.constant(np.int8(0)), "ne")
    starts = b.bitwise_or(b.compare(at, ctx.constant(np.int64(0)), "eq"), differs)
    unique = b.take(values, true_positions(ctx, starts, symbol), 0)
    run = b.sub(b.cumsum(ctx.cast(starts, _INT64), 0), ctx.constant(np.int64(1)))  # of each row of values
    inverse = counts = ctx.constant(np.zeros(0, np.int64))
    if return_inverse:  # the run of each row, in its own place
        placed = run if order is None else b.scatter(b.full((length,), 0, element_type_of(_INT64), [values]), order, run, axis=0)
        inverse = b.reshape(placed, shape)
    if return_counts:
        slots = b.full((symbol,), 0, element_type_of(_INT64), [ctx.carrier(symbol)])
        counts = b.scatter(slots, run, b.full((length,), 1, element_type_of(_INT64), [values]), axis=0, mode="add")
    return unique, inverse, counts


@converter("aten._unique2.default")
def unique(ctx: ImportContext, node, x, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    """``torch.unique``: the distinct values in ascending order (NaNs last, each its own);
    on the CPU torch sorts them whatever ``sorted`` says, as here."""
    b = ctx.b
    shape = shape_of(x.type)
    flat = b.reshape(x, (dim_arith.product(shape),))
    order = b.argsort(flat, 0)  # stable, NaN last
    return _unique_runs(ctx, node, b.take(flat, order, 0), order, return_inverse, return_counts, shape)


def _rows_along(ctx: ImportContext, x: SSAValue, dim: int) -> tuple[SSAValue, list[int] | None]:
    """``x`` with axis ``dim`` first (and the permutation, None if none was needed)."""
    if dim == 0:
        return x, None
    permutation = [dim, *(a for a in range(ctx.rank(x)) if a != dim)]
    return ctx.b.transpose(x, permutation), permutation


def _from_rows(ctx: ImportContext, rows: SSAValue, permutation: list[int] | None) -> SSAValue:
    if permutation is None:
        return rows
    return ctx.b.transpose(rows, [permutation.index(a) for a in range(len(permutation))])


@converter("aten.unique_dim.default")
def unique_dim(ctx: ImportContext, node, x, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    """``torch.unique(x, dim=d)``: the distinct slices along ``d`` in lexicographic order
    (a stable argsort by each column, the last first)."""
    b = ctx.b
    dim %= max(ctx.rank(x), 1)
    rows, permutation = _rows_along(ctx, x, dim)
    length, *rest = shape_of(rows.type)
    table = b.reshape(rows, (length, dim_arith.product(rest)))
    columns = dim_arith.product(rest)
    if not isinstance(columns, int):
        raise NotImplementedError("unique along a dim with symbolic other dims is not supported")
    order = ctx.positions(length, [rows])
    for column in reversed(range(columns)):  # least significant first: stable sorts keep the rest's order
        key = b.take(b.reshape(b.slice(table, [column], [column + 1], [1]), (length,)), order, 0)
        order = b.take(order, b.argsort(key, 0), 0)
    unique_rows, inverse, counts = _unique_runs(ctx, node, b.take(rows, order, 0), order, return_inverse, return_counts, (length,))
    return _from_rows(ctx, unique_rows, permutation), inverse, counts


@converter("aten.unique_consecutive.default")
def unique_consecutive(ctx: ImportContext, node, x, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique_consecutive``: one value (slice along ``dim``) per run of equal
    neighbours."""
    if dim is None:
        shape = shape_of(x.type)
        flat = ctx.b.reshape(x, (dim_arith.product(shape),))
        return _unique_runs(ctx, node, flat, None, return_inverse, return_counts, shape)
    rows, permutation = _rows_along(ctx, x, dim % ctx.rank(x))
    unique_rows, inverse, counts = _unique_runs(ctx, node, rows, None, return_inverse, return_counts, shape_of(rows.type)[:1])
    return _from_rows(ctx, unique_rows, permutation), inverse, counts


# ---------------------------------------------------------------------------
# item() and run-time assertions


@converter("aten._local_scalar_dense.default")
def local_scalar_dense(ctx: ImportContext, node, x):
    """``x.item()``: for an integer, the symbol torch.export named it (its value is ``x``'s,
    a size the ops after may use); a boolean stays the one-element tensor it is (a
    predicate for ``_assert_scalar``)."""
    import torch

    value = node.meta["val"]
    if isinstance(value, bool | int):  # what torch.export assumed it is (a check it folded in)
        expected = ctx.cast(ctx.constant(np.asarray(value)), numpy_dtype(x.type.element_type))
        ctx.b.check(ctx.b.compare(ctx.b.reshape(x, ()), expected, "eq"), f"item() of '{node.args[0].name}' is not "
                    f"{value}, the value the model was exported for")  # fmt: skip
        return value
    if isinstance(value, torch.SymBool):  # torch names it Eq(u2, 1): u2 is the boolean as 0 or 1
        for symbol in sorted({str(s) for s in value.node.expr.free_symbols} - set(ctx.symbol_values)):
            ctx.bind_data_symbol(symbol, ctx.b.reshape(x, ()))
            _check_range(ctx, symbol, (0, 1))
        return x
    if not isinstance(value, torch.SymInt):
        raise NotImplementedError(f"item() of a {type(value).__name__} is not supported (integers and booleans are)")
    dim = dim_of_expression(value.node.expr)
    if not isinstance(dim, str) or free_symbols(dim) != {dim} or dim in input_symbols(ctx) | set(ctx.symbol_values):
        # what torch.export found it is, from a check it folded in (k == x.shape[0])
        ctx.b.check(ctx.b.compare(ctx.cast(ctx.b.reshape(x, ()), _INT64), ctx.size_value(dim), "eq"),
                    f"item() of '{node.args[0].name}' is not {dim}, what the model was exported for")  # fmt: skip
        return dim
    ctx.bind_data_symbol(dim, ctx.b.reshape(x, ()))
    _check_range(ctx, dim)
    return dim


def _check_range(ctx: ImportContext, symbol: str, always: tuple[int, int] | None = None) -> None:
    """Check that the value of ``symbol`` (an ``item()``) lies in the range torch.export
    assumed for it (what ``torch._check(k <= 7)`` says: torch.export folds such checks
    into the range), unless every value it can take (``always``) does."""
    lowest, highest = ctx.symbol_ranges.get(symbol, (None, None))
    if always is not None and (lowest is None or lowest <= always[0]) and (highest is None or highest >= always[1]):
        return
    b, value = ctx.b, ctx.symbol_values[symbol]
    bounds = [(lowest, "ge"), (highest, "le")]
    tests = [b.compare(value, ctx.constant(np.int64(v)), how) for v, how in bounds if v is not None]
    if tests:
        within = tests[0] if len(tests) == 1 else b.bitwise_and(*tests)
        shown = f"[{'-inf' if lowest is None else lowest}, {'inf' if highest is None else highest}]"
        b.check(within, f"the data-dependent value {symbol} is outside the range {shown} the model was exported for")


def _implied(ctx: ImportContext, expr: Any) -> bool:
    """Whether the ranges of the symbols (which every executor checks) imply ``expr``."""
    from torch.utils._sympy.value_ranges import bound_sympy

    try:
        bounds = bound_sympy(expr, ctx.range_constraints)
    except Exception:  # noqa: BLE001  (an expression bound_sympy cannot bound: not implied)
        return False
    return bool(bounds.is_singleton() and bounds.lower)


_RELATIONS = {">=": "ge", ">": "gt", "<=": "le", "<": "lt", "==": "eq", "!=": "ne"}


def sympy_value(ctx: ImportContext, expr: Any) -> SSAValue:
    """A 0-d tensor computing the sympy expression ``expr`` on sizes: int64 for a size
    (``u0 + 1``, ``Piecewise((1, Eq(u2, 1)), (0, True))``), bool for a condition."""
    import sympy

    b = ctx.b
    if isinstance(expr, bool) or expr in (sympy.true, sympy.false):
        return ctx.constant(np.asarray(bool(expr)))
    combine = {sympy.And: b.bitwise_and, sympy.Or: b.bitwise_or, sympy.Add: b.add, sympy.Mul: b.mul}.get(type(expr))
    # sums and products of plain sizes are dims (size_value below); of piecewise sizes, graph ops
    if combine is not None and (isinstance(expr, sympy.And | sympy.Or) or any(isinstance(a, sympy.Piecewise) for a in expr.args)):
        return functools.reduce(combine, [sympy_value(ctx, a) for a in expr.args])
    if isinstance(expr, sympy.Not):
        return b.compare(sympy_value(ctx, expr.args[0]), ctx.constant(np.asarray(False)), "eq")
    if getattr(expr, "rel_op", None) in _RELATIONS:
        return b.compare(sympy_value(ctx, expr.lhs), sympy_value(ctx, expr.rhs), _RELATIONS[expr.rel_op])
    if isinstance(expr, sympy.Piecewise):  # the first case whose condition holds
        result = None
        for value, condition in reversed(expr.args):
            value = sympy_value(ctx, value)
            result = value if result is None else b.where(sympy_value(ctx, condition), value, result)
        return result
    try:
        return ctx.size_value(dim_of_expression(expr))
    except NotImplementedError as e:
        raise NotImplementedError(f"a run-time assertion on {expr}: {e}") from None


def assert_sizes(ctx: ImportContext, condition: Any, message: str) -> None:
    """Check the sympy ``condition`` on sizes at run time: nothing when the symbols'
    ranges imply it (the inputs' are checked at every call, a data-dependent symbol's
    where it is read), else a ``graph.check``."""
    if condition is False or condition is not True and not _implied(ctx, condition):
        ctx.b.check(sympy_value(ctx, condition), message)
        _unify(ctx, condition)


def _unify(ctx: ImportContext, condition: Any) -> None:
    """After a check that two symbols are equal (``Eq(u1, u0)``: two selections by equal
    masks, concatenated), torch.export writes one for both: an input's symbol, else the
    older data-dependent one."""
    import sympy

    if not isinstance(condition, sympy.Eq) or not all(isinstance(a, sympy.Symbol) for a in condition.args):
        return
    inputs = input_symbols(ctx)
    kept, replaced = sorted((str(a) for a in condition.args), key=lambda name: (name not in inputs, len(name), name))
    if replaced not in inputs:
        ctx.alias(replaced, kept)


@converter("aten._assert_scalar.default")
def assert_scalar(ctx: ImportContext, node, condition, message=""):
    """A run-time assertion (``torch._check``, or what torch.export could not prove)."""
    text = str(message or f"run-time assertion failed at node '{node.name}'")
    if isinstance(condition, SSAValue):  # a boolean item()
        ctx.b.check(ctx.b.reshape(condition, ()) if shape_of(condition.type) else condition, text)
    else:
        assert_sizes(ctx, condition, text)


@converter("aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default")
def sym_constrain_range(ctx: ImportContext, node, size, *, min=None, max=None):  # noqa: A002
    """``torch._check_is_size`` / ``constrain_as_size``: the size lies in ``[min, max]``."""
    import sympy

    if not isinstance(size, str):
        return
    symbol = node.args[0].meta["val"].node.expr
    low = sympy.Ge(symbol, 0 if min is None else min)
    assert_sizes(ctx, low if max is None else sympy.And(low, sympy.Le(symbol, max)), f"{size} is outside [{min or 0}, {max}]")
