"""ATen op -> graph ops: one converter per ATen overload, registered by name.

A converter receives the import context, the fx node, and the node's arguments with
fx nodes replaced by what they were converted to (graph values, or Python ints /
symbol names for SymInts)::

    @converter("aten.relu.default")
    def relu(ctx: ImportContext, node, x):
        return ctx.b.relu(x)

It returns a graph value, or a tuple of them for ops with several results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Converter = Callable[..., Any]

CONVERTERS: dict[str, Converter] = {}


def converter(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function for these ATen overloads (``"aten.add.Tensor"``)."""

    def register(fn: Converter) -> Converter:
        for name in names:
            if name in CONVERTERS:
                raise ValueError(f"{name} already has a converter")
            CONVERTERS[name] = fn
        return fn

    return register


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
