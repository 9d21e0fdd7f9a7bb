"""ATen op -> graph ops: one converter per ATen overload, registered by name.

A converter receives the import context, the fx node, and the node's arguments with
fx nodes replaced by what they were converted to (graph values, or Python ints /
symbol names for SymInts)::

    @converter("aten.relu.default")
    def relu(ctx: ImportContext, node, x):
        return ctx.b.relu(x)

It returns a graph value, or a tuple of them for ops with several results.

Ops taking a dim accept a 0-d tensor as a one-element vector (dim 0 or -1): registered
with ``scalars_as_vectors=True``, their converter sees such tensors reshaped to ``(1,)``
and its results are reshaped back to the shapes torch recorded.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from ...dialects.graph.types import shape_of
from .context import symbol_name

Converter = Callable[..., Any]

CONVERTERS: dict[str, Converter] = {}


def converter(*names: str, scalars_as_vectors: bool = False) -> Callable[[Converter], Converter]:
    """Register the decorated function for these ATen overloads (``"aten.add.Tensor"``)."""

    def register(fn: Converter) -> Converter:
        for name in names:
            if name in CONVERTERS:
                raise ValueError(f"{name} already has a converter")
            CONVERTERS[name] = _on_vectors(fn) if scalars_as_vectors else fn
        return fn

    return register


def result_used(node: Any, k: int) -> bool:
    """Whether result ``k`` of a multi-result fx node is read (through ``getitem``)."""
    return any(user.target is operator.getitem and user.args[1] == k for user in node.users)


def _on_vectors(fn: Converter) -> Converter:
    @functools.wraps(fn)
    def convert(ctx: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        lifted = False

        def lift(a: Any) -> Any:
            nonlocal lifted
            if isinstance(a, list | tuple):
                return type(a)(lift(x) for x in a)
            if isinstance(a, SSAValue) and isinstance(a.type, TensorType) and not a.type.get_shape():
                lifted = True
                return ctx.b.reshape(a, (1,))
            return a

        args, kwargs = lift(args), {k: lift(v) for k, v in kwargs.items()}
        result = fn(ctx, node, *args, **kwargs)
        return _reshaped_like(ctx, result, node.meta.get("val")) if lifted else result

    return convert


def _reshaped_like(ctx: Any, result: Any, meta: Any) -> Any:
    """``result`` (a value or a tuple of them) reshaped to the shapes of torch's ``meta``."""
    if isinstance(result, list | tuple):
        return type(result)(_reshaped_like(ctx, r, m) for r, m in zip(result, meta))
    if isinstance(result, SSAValue) and hasattr(meta, "shape"):
        shape = tuple(symbol_name(d) for d in meta.shape)
        if shape_of(result.type) != shape:
            return ctx.b.reshape(result, shape)
    return result


def target_name(target: Any) -> str:
    """``aten.add.Tensor`` for an OpOverload, the qualified name for Python callables."""
    name = getattr(target, "name", None)
    if callable(name):  # torch OpOverload: name() -> "aten::add.Tensor"
        overload = name()
        if "::" not in overload:  # a higher-order op (torch.cond: "cond") -> "higher_order.cond"
            return f"higher_order.{overload}"
        namespace, _, rest = overload.partition("::")
        return f"{namespace}.{rest}" + ("" if "." in rest else ".default")
    module = getattr(target, "__module__", "") or ""
    return f"{module}.{getattr(target, '__name__', repr(target))}".lstrip(".")
