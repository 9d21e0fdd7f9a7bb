"""Shape arithmetic on symbolic sizes, at import.

Exported models compute shapes from shapes: ``Shape(x)`` -> ``Gather`` -> ``Concat`` ->
``Reshape``. With static shapes every step folds to a constant (the builder folds ops of
constants). With a symbolic batch, ``Shape(x)`` is ``[batch, 768]``: the integer vectors
derived from it are followed here, element by element as dims (``batch``, ``2*batch``,
768), so that the ``Reshape`` still sees its target at import. Each rule takes the node's
inputs as object arrays of dims (or int arrays of constants) and gives its outputs;
the values also exist as tensors (``OnnxContext.dims_value``) for ops that read them
as data.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...runtime import dim_arith
from .context import OnnxNode

Rule = Callable[[OnnxNode, list[np.ndarray]], np.ndarray | None]

RULES: dict[str, Rule] = {}


def rule(*op_types: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op_type in op_types:
            RULES[op_type] = fn
        return fn

    return register


def _elementwise(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return np.frompyfunc(lambda a, b: fn(_dim(a), _dim(b)), 2, 1)


def _dim(v: object) -> int | str:
    return v if isinstance(v, str) else int(v)


@rule("Identity")
def identity(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray:
    return values[0]


@rule("Cast")
def cast(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray | None:
    import onnx

    integer = {onnx.TensorProto.INT64, onnx.TensorProto.INT32}
    return values[0] if node.attr("to") in integer else None


@rule("Gather")
def gather(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray:
    data, indices = values
    return np.take(data, np.asarray(indices, dtype=np.int64), axis=node.attr("axis", 0))


@rule("Concat")
def concat(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(v, dtype=object) for v in values], axis=node.attr("axis", 0))


@rule("Unsqueeze", "Squeeze", "Reshape", "Flatten")
def reshape(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray | None:
    data = values[0]
    if node.op_type == "Flatten":
        return data.reshape(1, -1) if data.ndim else None
    if node.op_type == "Reshape":
        return data.reshape([int(d) for d in values[1]]) if all(int(d) > 0 or d == -1 for d in values[1]) else None
    axes = [int(a) for a in values[1]] if len(values) > 1 else node.attr("axes")
    if node.op_type == "Squeeze":
        return data.reshape(()) if data.size == 1 else np.squeeze(data, tuple(axes) if axes is not None else None)
    result = data
    for axis in sorted(a % (data.ndim + len(axes)) for a in axes):
        result = np.expand_dims(result, axis)
    return result


@rule("Slice")
def slice_(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray | None:
    data = values[0]
    if data.ndim != 1 or len(values) < 3:
        return None
    start, end = int(values[1][0]), int(values[2][0])
    step = int(values[4][0]) if len(values) > 4 else 1
    return data[slice(start, end, step)]


_ARITHMETIC = {
    "Add": dim_arith.add,
    "Sub": dim_arith.sub,
    "Mul": dim_arith.mul,
    "Div": dim_arith.floordiv,  # (sizes are non-negative: truncation is flooring)
}


def _arithmetic(fn: Callable) -> Rule:
    combine = _elementwise(fn)

    def apply(node: OnnxNode, values: list[np.ndarray]) -> np.ndarray:
        return combine(values[0], values[1])

    return apply


for _op_type, _fn in _ARITHMETIC.items():
    rule(_op_type)(_arithmetic(_fn))


def propagate(node: OnnxNode, values: list[np.ndarray | None]) -> np.ndarray | None:
    """The node's single output as dims, or None when no rule follows it."""
    follow = RULES.get(node.op_type)
    if follow is None or any(v is None for v in values) or node.n_outputs != 1:
        return None
    try:
        result = follow(node, [np.asarray(v, dtype=object) for v in values])
    except (ValueError, IndexError, TypeError):  # (a dim expression we cannot write, a bad index: not followed)
        return None
    return None if result is None else np.asarray(result, dtype=object)
