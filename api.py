"""The rest of the public API: executors, reading generated code, parsing IR text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from .build import build
from .universe import make_context
from .interpreter import interpret


class Executor:
    """What ``create_executor`` returns; ``evaluate()`` gives the callable (as in TVM)."""

    def __init__(self, kind: str, module: ModuleOp, target: str):
        self.kind, self.module, self.target = kind, module, target

    def evaluate(self, function: str = "main") -> Callable[..., Any]:
        if self.kind == "interpreter":
            return interpret(self.module, function)
        return build(self.module, self.target, function=function)


EXECUTOR_KINDS = ("interpreter", "aot")


def create_executor(kind: str, module: ModuleOp, target: str = "llvm") -> Executor:
    """An executor of ``kind`` for ``module``: ``"interpreter"`` (numpy reference,
    the debug executor) or ``"aot"`` (the whole model as one native function).

    Example: ``f = tk.create_executor("interpreter", module).evaluate(); y = f(x)``
    """
    if kind not in EXECUTOR_KINDS:
        raise ValueError(f"unknown executor kind {kind!r} (available: {', '.join(EXECUTOR_KINDS)})")
    return Executor(kind, module, target)


def parse_module(text: str) -> ModuleOp:
    """Parse IR text (any tensorkiln or upstream dialect) into a verified module."""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def emit_source(module: ModuleOp, target: str = "llvm", function: str = "main") -> str:
    """The code tensorkiln generates for ``module``: LLVM IR text for ``"llvm ..."`` targets,
    the CUDA C of every kernel (one translation unit, as ``tk.build`` compiles it; no GPU
    or cupy needed) for ``"cuda ..."`` targets.

    Example: ``print(tk.emit_source(module, target="llvm"))``
    """
    if target.split()[:1] == ["cuda"]:
        from .backends.cuda.pipeline import emit_cuda_source, parse_cuda_target

        parse_cuda_target(target)
        return emit_cuda_source(module)
    from .backends.llvm.jit import CPUTarget, llvm_ir
    from .build import lower_to_llvm_dialect, lower_to_loops

    cpu = CPUTarget.parse(target)
    return llvm_ir(lower_to_llvm_dialect(lower_to_loops(module), target=target), cpu)
