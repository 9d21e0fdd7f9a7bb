"""``annotate-codegen``: tag each region with the backend that compiles it and its symbol.

A composite that no other joined (``merge-composites`` left it alone, or did not run)
gets a region of its own. Each region is tagged ``codegen = "<backend>"`` and
``symbol = "<backend>_<function>_<k>"``, the name of the external function the host
code will call. ``backend=NAME`` tags only that backend's regions.

Example::

    %y = byoc.region (%x) : (tensor<4x64xf32>) -> (tensor<4x32xf32>) attributes {codegen = "blas", symbol = "blas_main_0"} {...}
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from ..dialects.byoc import CompositeOp, RegionOp
from .outline import outline


def annotate_function(function: func.FuncOp, backend: str = "") -> list[RegionOp]:
    """Wrap lone composites into regions and tag the regions of ``function``."""
    block = function.body.block
    for composite in [op for op in block.ops if isinstance(op, CompositeOp)]:
        if backend and composite.backend != backend:
            continue
        outline([composite], list(composite.inputs), [composite.result], lambda p, t, b: RegionOp(p, t, b))
    counters: dict[str, int] = {}
    for region in block.ops:
        if isinstance(region, RegionOp) and region.symbol is not None:
            counters[region.codegen.data] = counters.get(region.codegen.data, 0) + 1
    tagged = []
    for region in [op for op in block.ops if isinstance(op, RegionOp)]:
        name = region.backend
        if region.codegen is not None or (backend and name != backend):
            continue
        k = counters.get(name, 0)
        counters[name] = k + 1
        region.codegen = StringAttr(name)
        region.symbol = StringAttr(f"{name}_{function.sym_name.data}_{k}")
        tagged.append(region)
    return tagged


@dataclass(frozen=True)
class AnnotateCodegenPass(ModulePass):
    """Give every composite a region and tag regions with their backend and symbol."""

    name = "annotate-codegen"

    backend: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.is_declaration:
                annotate_function(function, self.backend)


__all__ = ["AnnotateCodegenPass", "annotate_function"]
