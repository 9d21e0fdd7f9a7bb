"""The rest of the public API: executors, reading generated code, parsing IR text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from . import driver
from .build import build
from .dialects.dims import check_static_dims
from .dialects.functions import find_function
from .errors import UnreadableInputError, unreadable_input
from .driver.vm import needs_vm
from .interpreter import interpret
from .universe import make_context


class Executor:
    """What ``create_executor`` returns; ``evaluate()`` gives the callable (as in TVM)."""

    def __init__(self, kind: str, module: ModuleOp, target: str, params: Mapping[str, Any] | None = None):
        self.kind, self.module, self.target = kind, module, target
        self.params = dict(params or {})

    def evaluate(self, function: str = "main") -> Callable[..., Any]:
        fn = self._callable(function)
        return _bind_params(fn, self.params) if self.params else fn

    def _callable(self, function: str) -> Callable[..., Any]:
        if self.kind == "interpreter":
            return interpret(self.module, function)
        if self.kind == "vm":
            return driver.build_vm(self.module, self.target, function=function)
        if needs_vm(find_function(self.module, function)):
            raise ValueError(
                f"the {self.kind} executor cannot run control flow (graph.if / graph.while) or sizes read from data "
                f"(graph.data_size: nonzero, boolean masks): use the 'vm' executor"
            )
        lib = build(self.module, self.target, function=function)
        return lib.graph_executor() if self.kind == "graph" else lib


def _bind_params(fn: Callable[..., Any], params: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` with the inputs named in ``params`` bound: the call takes the others, in order."""
    names = [spec.name for spec in fn.signature.inputs]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ValueError(f"params {unknown} are not inputs of the function (inputs: {', '.join(names)})")
    free = [k for k, name in enumerate(names) if name not in params]
    # the random state (models that draw random numbers) may be left out: fn fills it
    hidden = fn.signature.random_state

    def run(*args: Any) -> Any:
        given = free if hidden is None or len(args) == len(free) else [k for k in free if k != hidden]
        if len(args) != len(given):
            raise ValueError(
                f"expected {len(given)} arguments ({', '.join(names[k] for k in given)}), got {len(args)}"
            )
        full: list[Any] = [params.get(name) for name in names]
        for k, a in zip(given, args):
            full[k] = a
        if hidden is not None and hidden not in given:
            del full[hidden]  # fn fills it
        return fn(*full)

    run.signature = fn.signature  # type: ignore[attr-defined]
    return run


#: ``interpreter``: numpy reference; ``graph``: kernels called from Python over a planned
#: memory; ``vm``: bytecode with control flow and dynamic shapes; ``aot``: one native entry
EXECUTOR_KINDS = ("interpreter", "graph", "vm", "aot")


def create_executor(
    kind: str, module: ModuleOp, target: str = "llvm", params: Mapping[str, Any] | None = None
) -> Executor:
    """An executor of ``kind`` for ``module`` (as in TVM); ``evaluate()`` gives the callable:

    - ``"interpreter"``: the numpy reference (the debug executor);
    - ``"graph"``: the graph executor (a JSON graph of kernel calls and a static memory
      plan; ``lib.graph_program``);
    - ``"vm"``: the bytecode VM (``graph.if`` / ``graph.while``, dynamic shapes);
    - ``"aot"``: the whole model as one native function.

    ``params`` binds inputs by name (weights imported with ``keep_params_as_input``).

    Example: ``f = tk.create_executor("vm", module, target="llvm").evaluate(); y = f(x)``
    """
    if kind not in EXECUTOR_KINDS:
        raise ValueError(f"unknown executor kind {kind!r} (available: {', '.join(EXECUTOR_KINDS)})")
    return Executor(kind, module, target, params)


def parse_module(text: str | bytes) -> ModuleOp:
    """Parse IR text (any tensorkiln or upstream dialect; bytes are read as UTF-8) into a
    verified module. Text that is no IR raises xDSL's ``ParseError``; bytes that are not
    UTF-8 or IR nested too deeply to parse raise :class:`UnreadableInputError`.

    Example: ``module = tk.parse_module(open("model.mlir").read())``
    """
    try:
        if isinstance(text, bytes):
            text = text.decode()
        module = Parser(make_context(), text).parse_module()
        module.verify()
        check_static_dims(module)
    except (RecursionError, UnicodeDecodeError) as error:
        raise UnreadableInputError(f"the IR is {unreadable_input(error)}") from None
    return module


def emit_source(module: ModuleOp, target: str = "llvm", function: str = "main") -> str:
    """The code tensorkiln generates for ``module``: LLVM IR text for ``"llvm ..."`` targets,
    the CUDA C of every kernel (one translation unit, as ``tk.build`` compiles it; no GPU
    or cupy needed) for ``"cuda ..."`` targets.

    Example: ``print(tk.emit_source(module, target="llvm"))``
    """
    return driver.emit_source(module, target, function)
