"""``item()`` and a model's run-time assertions.

``item()`` of an integer tensor is a symbol torch.export names (``u0``): a size the ops
after it may use (``torch.arange(n.item())``, through ``graph.data_size``) or a number.
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

from ....dialects.graph.types import numpy_dtype, shape_of
from ....runtime import dim_arith
from ....runtime.dim_expr import free_symbols
from ..context import ImportContext, dim_of_expression, symbol_name
from ..registry import converter, target_name
from .data_dependent import input_symbols
from .index_checks import all_true

_INT64 = np.dtype(np.int64)


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


#: views whose storage offset :func:`storage_offset` knows: (dim, start) of their arguments
_SLICES = {"aten.slice.Tensor": (1, 2), "aten.narrow.default": (1, 2)}


@converter("aten.sym_storage_offset.default")
def storage_offset(ctx: ImportContext, node, x):
    """The storage offset of a slice at a position read from data (``x[a:]``, ``a`` an
    ``item()``), which torch.export names and asserts non-negative: the start (from the
    end where negative, clamped into the axis, as torch's slice) times the axis' stride,
    for a slice of a tensor that is not itself a view (our values own their storage)."""
    view = node.args[0]
    name = target_name(view.target) if view.op == "call_function" else view.op
    base = view.args[0] if name in _SLICES else None
    if base is None or _is_view(base):
        raise NotImplementedError(f"the storage offset of '{view.name}' ({name}): only that of a slice of a non-view is known")
    dim_at, start_at = _SLICES[name]
    shape = ctx.shape(base)
    dim = (view.args[dim_at] if len(view.args) > dim_at else 0) % len(shape)
    start = view.args[start_at] if len(view.args) > start_at else None
    start = symbol_name(start.meta["val"]) if hasattr(start, "meta") else start
    offset = ctx.b.mul(ctx.slice_bound(start, shape[dim], 0), ctx.size_value(dim_arith.product(shape[dim + 1 :])))
    symbol = symbol_name(node.meta["val"])
    if isinstance(symbol, str) and free_symbols(symbol) == {symbol} and symbol not in ctx.symbol_values:
        ctx.bind_data_symbol(symbol, offset)
    return symbol


def _is_view(node: Any) -> bool:
    """Whether an fx node's result aliases its input (a view op: its schema says so)."""
    schema = getattr(getattr(node, "target", None), "_schema", None)
    return node.op == "call_function" and schema is not None and any(r.alias_info is not None for r in schema.returns)


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


@converter("aten._assert_async.default", "aten._assert_async.msg")
def assert_async(ctx: ImportContext, node, condition, message=""):
    """``torch._assert_async(t, msg)``: raise ``msg`` when the one-element tensor ``t`` is
    false or zero (decompositions use it: ``one_hot`` checks its classes so)."""
    pred = ctx.b.reshape(condition, ()) if shape_of(condition.type) else condition
    if pred.type.element_type != i1:
        pred = ctx.b.compare(pred, ctx.scalar(0, pred), "ne")
    ctx.b.check(pred, str(message or f"run-time assertion failed at node '{node.name}'"))


@converter("aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default")
def sym_constrain_range(ctx: ImportContext, node, size, *, min=None, max=None):  # noqa: A002
    """``torch._check_is_size`` / ``constrain_as_size``: the size lies in ``[min, max]``."""
    import sympy

    if not isinstance(size, str):
        return
    symbol = node.args[0].meta["val"].node.expr
    low = sympy.Ge(symbol, 0 if min is None else min)
    assert_sizes(ctx, low if max is None else sympy.And(low, sympy.Le(symbol, max)), f"{size} is outside [{min or 0}, {max}]")


#: linalg functions whose ``info`` result we compute -> what torch says when it is not 0;
#: their error check is kept (the importer drops the others': ``inv``, ``solve``)
CHECKED_INFO = {
    "aten.linalg_cholesky_ex.default": "The factorization could not be completed because the input is not positive-definite",
}


@converter("aten._linalg_check_errors.default")
def linalg_check_errors(ctx: ImportContext, node, info, api_name, *, is_matrix):
    """What torch raises when a factorization fails (``info != 0`` for some matrix)."""
    producer = node.args[0].args[0]  # info is getitem(factorization, 1)
    succeeded = all_true(ctx, ctx.b.compare(info, ctx.scalar(0, info), "eq"))
    ctx.b.check(succeeded, f"{api_name}: {CHECKED_INFO[target_name(producer.target)]}")
