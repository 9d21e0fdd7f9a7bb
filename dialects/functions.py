"""Conventions on a module's functions: finding one by name, and the
:class:`~tensorkiln.runtime.signature.Signature` of a graph-dialect function with the
attributes it is read from (``tk.dim_ranges``, ``tk.random_state``, ``tk.checks``).

Example::

    main = find_function(module)          # "main", or the module's only function
    print([spec.describe() for spec in signature_of(main).inputs])
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64

from ..runtime.dim_arith import linear_symbol
from ..runtime.dim_expr import free_symbols, is_symbol
from ..runtime.signature import RuntimeCheck, Signature, TensorSpec
from .graph.host import data_size_symbols
from .graph.types import numpy_dtype, shape_of


#: function attribute: the range of each symbolic dim (torch.export's range constraints)
DIM_RANGES_ATTR = "tk.dim_ranges"
#: function attribute: the index of the argument that is the random state (``[seed, call]``)
RANDOM_STATE_ATTR = "tk.random_state"
#: function attribute: the run-time checks whose predicates are the function's last
#: results, ``[[message, error], ...]`` (``passes/checks_to_outputs.py``)
CHECKS_ATTR = "tk.checks"


def find_function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    """The function ``name`` of a module, or the module's only function."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in functions:
        if f.sym_name.data == name:
            return f
    if len(functions) == 1:
        return functions[0]
    raise ValueError(
        f"module has no function '{name}' (functions: {', '.join(f.sym_name.data for f in functions) or 'none'})"
    )


def signature_of(function: func.FuncOp) -> Signature:
    """Input names (SSA name hints, else ``arg<i>``), shapes and dtypes, and the outputs'."""
    inputs = tuple(
        TensorSpec(arg.name_hint or f"arg{i}", shape_of(arg.type), numpy_dtype(arg.type.element_type))
        for i, arg in enumerate(function.body.block.args)
    )
    checks = function_checks(function)
    results = function.function_type.outputs.data
    outputs = tuple(
        TensorSpec(f"output{i}", shape_of(t), numpy_dtype(t.element_type))
        for i, t in enumerate(results[: len(results) - len(checks)])
    )
    # symbols an input dim gives: itself, or solved from a dim linear in one symbol (2*s0)
    bound = {d for spec in inputs for d in spec.shape if isinstance(d, str) and is_symbol(d)}
    bound |= {linear_symbol(d) for spec in inputs for d in spec.shape} - {None}
    bound |= data_size_symbols(function)  # sizes the model reads from data (nonzero's count)
    for spec in outputs:
        unbound = [d for d in spec.shape if isinstance(d, str) and not free_symbols(d) <= bound]
        if unbound:
            raise ValueError(f"{spec.name}: symbolic dims {unbound} do not appear in any input nor graph.data_size")
    # computed dims that can be negative (a subtraction in them: symbols are never negative),
    # checked at every call
    dims: list = []
    for op in function.walk():  # one pass: result dims, and bounds ops require (slices)
        dims += [d for r in op.results if hasattr(r.type, "get_shape") for d in shape_of(r.type)]
        dims += op.size_requirements() if hasattr(op, "size_requirements") else []
    computed = sorted({d for d in dims if isinstance(d, str) and not is_symbol(d) and "-" in d})
    return Signature(inputs, outputs, dim_ranges(function), tuple(computed), random_state_index(function), checks)


def function_checks(function: func.FuncOp) -> tuple[RuntimeCheck, ...]:
    """The run-time checks recorded on ``function`` (``tk.checks``): its last results are
    their predicates."""
    attr = function.attributes.get(CHECKS_ATTR)
    if not isinstance(attr, ArrayAttr):
        return ()
    return tuple(RuntimeCheck(message.data, error.data) for message, error in (pair.data for pair in attr.data))


def set_function_checks(function: func.FuncOp, checks: Sequence[RuntimeCheck]) -> None:
    """Record ``checks`` on ``function`` (``tk.checks``; read by :func:`function_checks`)."""
    function.attributes[CHECKS_ATTR] = ArrayAttr([ArrayAttr([StringAttr(c.message), StringAttr(c.error)]) for c in checks])


def random_state_index(function: func.FuncOp) -> int | None:
    """The argument of ``function`` that holds the random state, if it has one."""
    attr = function.attributes.get(RANDOM_STATE_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def dim_ranges(function: func.FuncOp) -> tuple[tuple[str, int, int | None], ...]:
    """The symbols' ranges recorded on ``function`` (``tk.dim_ranges``: symbol ->
    ``[lowest, highest]``, highest -1 for unbounded; the torch importer sets it)."""
    attr = function.attributes.get(DIM_RANGES_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return ()
    ranges = []
    for name, bounds in sorted(attr.data.items()):
        lowest, highest = (b.value.data for b in bounds.data)
        ranges.append((name, lowest, highest if highest >= 0 else None))
    return tuple(ranges)


def set_dim_ranges(function: func.FuncOp, ranges: dict[str, tuple[int, int | None]]) -> None:
    """Record each symbol's ``(lowest, highest or None)`` on ``function``; every compiled
    form of it checks them at call time (see :func:`dim_ranges`)."""
    function.attributes[DIM_RANGES_ATTR] = DictionaryAttr(
        {
            name: ArrayAttr([IntegerAttr(lowest, i64), IntegerAttr(-1 if highest is None else highest, i64)])
            for name, (lowest, highest) in sorted(ranges.items())
        }
    )
