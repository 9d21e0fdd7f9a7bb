"""Complex tensors inside a model, as pairs of real graph values.

The graph has no complex element type: a complex fx value is imported as a ``Complex``
(its real and imaginary parts, each a real tensor of the matching float type). Complex
parameters become two constants. Ops on complex values are converted by

* a converter of this table (``complex_converter``): FFTs, products, ``abs``, ``angle``,
  ``view_as_real``..., which combine the parts;
* the op's ordinary converter run once per part, for the ops in ``BY_PARTS`` that move
  or select elements without mixing them (views, slices, concatenation, scatters of
  slices): there the parts never meet.

Anything else on a complex value is refused by name. A model may not take or return
complex tensors (``torch.view_as_real`` converts them), only compute with them.

Example: ``torch.fft.irfft(torch.fft.rfft(u) * torch.fft.rfft(k))`` (a long convolution)
imports as real ops only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.ir import SSAValue

from ...dialects.graph.types import is_float
from .context import PART_DTYPES
from .registry import CONVERTERS


@dataclass(frozen=True)
class Complex:
    """A complex tensor as its real and imaginary parts (real tensors of one shape)."""

    real: SSAValue
    imag: SSAValue

    def part(self, k: int) -> SSAValue:
        return self.imag if k else self.real


COMPLEX_CONVERTERS: dict[str, Callable[..., Any]] = {}

#: ops converted once per part by their ordinary converter (they never mix elements' values)
BY_PARTS = frozenset(
    f"aten.{name}"
    for name in (
        "view.default", "_unsafe_view.default", "reshape.default", "permute.default", "transpose.int", "t.default",
        "expand.default", "squeeze.dim", "squeeze.dims", "squeeze.default", "unsqueeze.default", "clone.default",
        "alias.default", "slice.Tensor", "select.int", "cat.default", "stack.default", "flip.default", "roll.default",
        "slice_scatter.default", "select_scatter.default", "index_select.default", "gather.default",
        "sum.dim_IntList", "sum.default", "mean.dim", "mean.default", "diagonal.default", "unbind.int",
        "split.Tensor", "split_with_sizes.default", "chunk.default",
    )
)  # fmt: skip


def complex_converter(*names: str) -> Callable:
    """Register the decorated function for these ATen overloads on complex values."""

    def register(fn: Callable) -> Callable:
        for name in names:
            COMPLEX_CONVERTERS[name] = fn
        return fn

    return register


def is_complex_node(node: Any) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, list | tuple) else [val]
    return any(str(getattr(v, "dtype", "")) in PART_DTYPES for v in vals)


def has_complex(args: Any) -> bool:
    if isinstance(args, Complex):
        return True
    if isinstance(args, list | tuple):
        return any(has_complex(a) for a in args)
    if isinstance(args, dict):
        return any(has_complex(a) for a in args.values())
    return False


def part_of(args: Any, k: int) -> Any:
    """``args`` with every Complex replaced by its real (k = 0) or imaginary (k = 1) part."""
    if isinstance(args, Complex):
        return args.part(k)
    if isinstance(args, list | tuple):
        return type(args)(part_of(a, k) for a in args)
    if isinstance(args, dict):
        return {key: part_of(a, k) for key, a in args.items()}
    return args


def pair_results(real: Any, imag: Any) -> Any:
    """Per-part results (a value, or tuples of them) zipped back into Complex values."""
    if isinstance(real, list | tuple):
        return type(real)(pair_results(r, i) for r, i in zip(real, imag))
    return Complex(real, imag)


def convert_complex(ctx: Any, node: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Convert a node that takes or makes complex values (module docstring)."""
    if name in COMPLEX_CONVERTERS:
        return COMPLEX_CONVERTERS[name](ctx, node, *args, **kwargs)
    if name not in BY_PARTS or not has_complex((args, kwargs)):
        raise NotImplementedError(f"{name} on complex tensors is not supported")
    flat = [a for a in (*args, *kwargs.values()) for a in (a if isinstance(a, list | tuple) else [a])]
    if any(isinstance(a, SSAValue) and is_float(a.type.element_type) for a in flat):
        raise NotImplementedError(f"{name} of complex and real tensors together is not supported")
    ctx.complex_parts = True
    try:
        real, imag = (CONVERTERS[name](ctx, node, *part_of(args, k), **part_of(kwargs, k)) for k in (0, 1))
    finally:
        ctx.complex_parts = False
    return pair_results(real, imag)


__all__ = ["BY_PARTS", "COMPLEX_CONVERTERS", "PART_DTYPES", "Complex", "complex_converter", "convert_complex"]
