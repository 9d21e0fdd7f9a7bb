"""``tensorkiln-opt``: xdsl-opt with every tensorkiln dialect and pass registered.

It parses ``.mlir`` text using any dialect of xDSL (builtin, func, arith, math, memref,
scf, cf, llvm, gpu, ...) or of tensorkiln (graph, te, loop), runs a pass pipeline and
prints the result::

    tensorkiln-opt model.mlir -p fold-constants,fuse-ops
    tensorkiln-opt model.mlir --print-op-generic
    tensorkiln-opt bad.mlir --verify-diagnostics

An error (a parse error, a verifier's diagnostic, a pass that fails, input that is not
text) is printed alone, as ``tensorkiln-opt: error: ...``, with exit status 1;
``--traceback`` shows Python's traceback as well (for reporting a bug).

Dialects and passes come from :func:`tensorkiln.universe.full_universe`: xDSL's own,
ours (``universe.DIALECTS`` / ``universe.PASSES``) and any other installed package's
``xdsl.universe`` entry point.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from tensorkiln.dialects.dims import check_static_dims

from tensorkiln.errors import unreadable_input
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

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        module = super().parse_chunk(chunk, file_extension, start_offset)
        if module is not None:
            check_static_dims(module)  # (a dim past int64 in any dialect's type, as MLIR refuses it)
        return module

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--traceback", default=False, action="store_true", help="show the Python traceback of an error"
        )


def describe_error(error: BaseException) -> str:
    """One message for an error of ``tensorkiln-opt`` (what the user sees without --traceback)."""
    problem = unreadable_input(error)
    if problem is not None:
        return f"the input is {problem}"
    if isinstance(error, OSError) and error.filename:
        return f"{error.filename}: {error.strerror}"
    text = str(error).strip() or type(error).__name__
    known = type(error).__module__.startswith(("xdsl", "tensorkiln")) or isinstance(error, ValueError)
    notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))  # xDSL: the IR, the error marked
    return (text if known else f"{type(error).__name__}: {text}") + notes


def main(args: Sequence[str] | None = None) -> None:
    """Console-script entry point (``tensorkiln-opt``)."""
    warnings.filterwarnings("default", category=DeprecationWarning)
    show_traceback = "--traceback" in (sys.argv[1:] if args is None else args)
    try:
        TensorkilnOptMain(args=args).run()
    except Exception as error:  # noqa: BLE001 (every error is reported, as one message)
        if show_traceback:
            raise
        print(f"tensorkiln-opt: error: {describe_error(error)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
