"""``tensorkiln-opt``: xdsl-opt with every tensorkiln dialect and pass registered.

It parses ``.mlir`` text using any dialect of xDSL (builtin, func, arith, math, memref,
scf, cf, llvm, gpu, ...) or of tensorkiln (graph, te, loop), runs a pass pipeline and
prints the result::

    tensorkiln-opt model.mlir -p fold-constants,fuse-ops
    tensorkiln-opt model.mlir --print-op-generic
    tensorkiln-opt bad.mlir --verify-diagnostics

Dialects and passes come from :func:`tensorkiln.universe.full_universe`: xDSL's own,
ours (``universe.DIALECTS`` / ``universe.PASSES``) and any other installed package's
``xdsl.universe`` entry point.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from xdsl.xdsl_opt_main import xDSLOptMain

from tensorkiln.universe import full_universe


class TensorkilnOptMain(xDSLOptMain):
    """xDSLOptMain whose dialects and passes are those of :func:`full_universe` (targets: xDSL's)."""

    version_format = "tensorkiln-opt built on xdsl version {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        self._universe = full_universe()
        super().__init__(description="tensorkiln modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        for name, factory in self._universe.all_dialects.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in self._universe.all_passes.items():
            self.register_pass(name, factory)


def main(args: Sequence[str] | None = None) -> None:
    """Console-script entry point (``tensorkiln-opt``)."""
    warnings.filterwarnings("default", category=DeprecationWarning)
    TensorkilnOptMain(args=args).run()


if __name__ == "__main__":
    main()
