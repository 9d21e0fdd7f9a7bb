"""The :class:`~tensorkiln.runtime.signature.Signature` of a graph-dialect function."""

from __future__ import annotations

from xdsl.dialects import func

from .dialects.graph.types import numpy_dtype, shape_of
from .runtime.dim_expr import free_symbols, is_symbol
from .runtime.signature import Signature, TensorSpec


def signature_of(function: func.FuncOp) -> Signature:
    """Input names (SSA name hints, else ``arg<i>``), shapes and dtypes, and the outputs'."""
    inputs = tuple(
        TensorSpec(arg.name_hint or f"arg{i}", shape_of(arg.type), numpy_dtype(arg.type.element_type))
        for i, arg in enumerate(function.body.block.args)
    )
    outputs = tuple(
        TensorSpec(f"output{i}", shape_of(t), numpy_dtype(t.element_type))
        for i, t in enumerate(function.function_type.outputs.data)
    )
    bound = {d for spec in inputs for d in spec.shape if isinstance(d, str) and is_symbol(d)}
    for spec in outputs:
        unbound = [d for d in spec.shape if isinstance(d, str) and not free_symbols(d) <= bound]
        if unbound:
            raise ValueError(f"{spec.name}: symbolic dims {unbound} do not appear in any input")
    return Signature(inputs, outputs)
