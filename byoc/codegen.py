"""``run-codegen``: compile each tagged region with its backend; call the result.

Every ``byoc.region`` tagged by ``annotate-codegen`` is handed to its backend's codegen,
which returns an :class:`~tensorkiln.byoc.external.ExternalModule`; the region is
replaced by ``byoc.call`` of that module (held by reference in the IR, like weights).
A backend that cannot run here (no BLAS library, no GPU) fails the pass with its reason.

Example::

    %y = byoc.call #byoc.external<"blas_main_0"> (%x) : (tensor<4x64xf32>) -> (tensor<4x32xf32>)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects.byoc import CallOp, RegionOp, register_external
from .external import ExternalModule, spec_of
from .registry import get_backend


def compile_region(region: RegionOp) -> ExternalModule:
    """Run the region's backend codegen; the module is registered under the region's symbol."""
    if region.codegen is None or region.symbol is None:
        raise PassFailedException("run-codegen: a byoc.region is not tagged (run annotate-codegen first)")
    name = region.codegen.data
    try:
        backend = get_backend(name)
    except ValueError as e:
        raise PassFailedException(f"run-codegen: {e}") from None
    reason = backend.unavailable()
    if reason:
        raise PassFailedException(f"run-codegen: backend '{name}' cannot run here: {reason}")
    try:
        module = backend.codegen(region)
    except ValueError as e:
        raise PassFailedException(f"run-codegen ({region.symbol.data}): {e}") from None
    if not isinstance(module, ExternalModule):
        raise PassFailedException(f"run-codegen: backend '{name}' returned {type(module).__name__}, not an ExternalModule")
    expected = [spec_of(v.type) for v in region.inputs], [spec_of(t) for t in region.outputs.types]
    if (module.inputs, module.outputs) != expected:
        raise PassFailedException(f"run-codegen: backend '{name}' made a module whose signature differs from its region")
    module.symbol = register_external(region.symbol.data, module)
    return module


@dataclass(frozen=True)
class RunCodegenPass(ModulePass):
    """Replace each tagged byoc.region by a byoc.call of its compiled external module."""

    name = "run-codegen"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            for region in [r for r in function.body.block.ops if isinstance(r, RegionOp) and r.codegen is not None]:
                module = compile_region(region)
                call = CallOp(module, list(region.inputs), list(region.outputs.types))
                Rewriter.replace_op(region, call)


__all__ = ["RunCodegenPass", "compile_region"]
