"""Optional values where they are plain tensors or absent (an ``optional`` type at the
graph's boundary, and optionals of sequences, are refused by the importer by name):
``OptionalHasElement`` is a constant, ``OptionalGetElement`` of a tensor the tensor."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter


@converter("OptionalHasElement", since=15)
def optional_has_element(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """True for a tensor, false where the input is left out (an empty optional)."""
    return ctx.constant(np.asarray(node.input(0) is not None))


@converter("OptionalGetElement", since=15)
def optional_get_element(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    x = node.input(0)
    if x is None:
        raise refuse("an empty optional (OptionalGetElement of a left-out input fails at run time in ONNX)")
    return x
