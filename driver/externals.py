"""Making BYOC external modules callable from compiled code (the CPU closing sequence uses it).

Each ``byoc.call`` is lowered to a call of the module's symbol; before the native code
is loaded, :func:`bind_externals` binds every symbol to its module's native entry
(``llvm.add_symbol``), and the compiled library keeps the modules alive and re-raises
errors a Python-backed module met during a call.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from ..backends.llvm.jit import bind_external_symbol
from ..byoc.external import ExternalModule
from ..dialects.byoc import CallOp
from ..runtime.module import CompiledModule


def bind_externals(module: ModuleOp) -> list[ExternalModule]:
    """Bind the native entry of every external module ``module`` calls; returns them."""
    modules: list[ExternalModule] = []
    for op in module.walk():
        if isinstance(op, CallOp) and op.external not in modules:
            modules.append(op.external)
            bind_external_symbol(op.external.symbol, op.external.native_address())
    return modules


class CompiledModuleWithExternals(CompiledModule):
    """A compiled module that calls external modules: keeps them alive, and raises the
    error one of them met (a Python callback cannot unwind through native code)."""

    external_modules: list[ExternalModule]

    def __call__(self, *args: Any) -> Any:
        outputs = super().__call__(*args)
        for module in self.external_modules:
            module.raise_pending()
        return outputs


__all__ = ["CompiledModuleWithExternals", "bind_externals"]
