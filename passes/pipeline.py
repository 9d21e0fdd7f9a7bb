"""Running passes by name: optimization levels, a context of options, instrumentation.

A :class:`PassContext` holds the options of a compilation (like TVM's
``tvm.transform.PassContext``): the optimization level, passes to skip, where to dump
the IR, instruments, free-form config. It is used as a context manager::

    with PassContext(opt_level=3, dump_ir="ir/"):
        lib = tk.build(module)                      # every pipeline sees the context

:func:`run_pipeline` applies passes by their registered names (``universe.PASSES`` and
xDSL's own, e.g. ``cse``, ``dce``), verifies the IR after each one (an error names the
pass that broke it), times each one, dumps the IR after each one when asked, and returns
a :class:`PipelineReport`. The pass lists themselves (the graph pipeline of each
optimization level, lowering, code generation) are in ``driver/pipelines.py``.

Dumps go to ``<dump_ir>/NN_<pass>.mlir``: ``00_input.mlir`` is the IR given to the first
pipeline run under a context, then one file per pass, numbered on across the pipelines
run under the same context (graph passes, then lowering passes, ...).
``TK_DUMP_IR=dir`` in the environment sets ``dump_ir`` for contexts that do not give it.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import gc
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import VerifyException

from ..universe import full_universe, make_context

#: environment variable giving the IR dump directory when a context does not
DUMP_IR_ENV = "TK_DUMP_IR"

#: passes a pipeline skips without error when they are not registered (fusion: the
#: graph pipelines of ``driver/pipelines.py`` list it)
OPTIONAL_PASSES: frozenset[str] = frozenset({"fuse-ops"})


class PassInstrument(Protocol):
    """Hooks around every pass a pipeline runs (each method is optional)::

    should_run(name, module) -> bool       # False skips the pass
    run_before_pass(name, module)
    run_after_pass(name, module, seconds)
    """


class PassError(Exception):
    """A pass left the IR invalid (or the pipeline's input was already invalid)."""

    def __init__(self, pass_name: str | list[str] | None, message: str):
        #: the pass that broke the IR, the passes one of which did (verified after
        #: them all), or None for the input
        self.pass_name = pass_name
        if isinstance(pass_name, list):
            where = (f"after the passes {', '.join(pass_name)} (verified after them all; "
                     "PassContext(verify='each') names the one)")  # fmt: skip
        else:
            where = f"after pass '{pass_name}'" if pass_name else "in the pipeline's input"
        super().__init__(f"invalid IR {where}: {message}")


_CURRENT: contextvars.ContextVar[tuple[PassContext, ...]] = contextvars.ContextVar(
    "tensorkiln_pass_context", default=()
)


@dataclass
class PassContext:
    """Options of a compilation; ``with PassContext(...):`` makes it the current one.

    - ``opt_level``: 0 (no graph optimization) to 3; 2 by default.
    - ``disabled_passes``: names of passes that pipelines skip.
    - ``dump_ir``: a directory to write the IR to after every pass (None: from the
      ``TK_DUMP_IR`` environment variable, else no dumps; False: no dumps, whatever
      the environment says).
    - ``verify``: verify each pipeline's input and result (True, the default), also the
      IR after every pass (``"each"``: names the pass that broke it, at 20-60% more
      compile time: ``benchmarks/compile_time.py``), or nothing (False).
    - ``timing``: print each pipeline's pass timings to stderr (they are always in the
      returned :class:`PipelineReport` and in ``timings``).
    - ``instruments``: :class:`PassInstrument` objects called around every pass.
    - ``config``: free-form options. An entry named like a pass whose value is a dict
      gives that pass's options: ``config={"fold-constants": {"inline_limit": 16}}``.
    """

    opt_level: int = 2
    disabled_passes: Sequence[str] = ()
    dump_ir: str | os.PathLike[str] | bool | None = None
    verify: bool | Literal["each"] = True
    timing: bool = False
    instruments: Sequence[Any] = ()
    config: dict[str, Any] = field(default_factory=dict)
    #: (pass, seconds) of every pass run under this context, in order
    timings: list[tuple[str, float]] = field(default_factory=list, init=False, repr=False)
    _dumps: int = field(default=0, init=False, repr=False)
    _tokens: list[contextvars.Token] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.opt_level not in (0, 1, 2, 3):
            raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {self.opt_level!r}")
        if isinstance(self.disabled_passes, str):
            self.disabled_passes = (self.disabled_passes,)
        self.disabled_passes = tuple(self.disabled_passes)
        if self.dump_ir is None:
            self.dump_ir = os.environ.get(DUMP_IR_ENV) or None
        if self.dump_ir is True:
            raise ValueError("dump_ir=True: give a directory (or False / None)")
        if self.dump_ir not in (None, False):
            self.dump_ir = Path(self.dump_ir)

    # -- the current context ----------------------------------------------------------

    def __enter__(self) -> PassContext:
        self._tokens.append(_CURRENT.set((*_CURRENT.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._tokens.pop())

    @contextlib.contextmanager
    def _active(self) -> Iterator[PassContext]:
        """Current for the duration (a local token: safe when one context object is
        used by several threads at once)."""
        token = _CURRENT.set((*_CURRENT.get(), self))
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    @staticmethod
    def current() -> PassContext:
        """The innermost context entered with ``with``, or a fresh default one."""
        stack = _CURRENT.get()
        return stack[-1] if stack else PassContext()

    # -- options ------------------------------------------------------------------------

    def is_enabled(self, pass_name: str) -> bool:
        return pass_name not in self.disabled_passes

    def pass_options(self, pass_name: str) -> Mapping[str, Any]:
        options = self.config.get(pass_name)
        return options if isinstance(options, Mapping) else {}

    # -- dumps ----------------------------------------------------------------------------

    def dump(self, module: ModuleOp, label: str) -> Path | None:
        """Write ``module`` to ``<dump_ir>/NN_<label>.mlir`` (next number) if dumping."""
        if self.dump_ir is None or self.dump_ir is False:
            return None
        directory = Path(self.dump_ir)
        directory.mkdir(parents=True, exist_ok=True)
        # (at most 80 characters: a pass's options, a target's feature list, can be long)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:80] or "ir"
        path = directory / f"{self._dumps:02d}_{safe}.mlir"
        self._dumps += 1
        try:
            text = str(module)
        except Exception as e:  # invalid IR may not print; say so in the file
            text = f"// could not print the IR: {type(e).__name__}: {e}\n"
        path.write_text(text if text.endswith("\n") else text + "\n")
        return path


@dataclass
class PipelineReport:
    """What :func:`run_pipeline` did: ``(pass, seconds)`` per pass run, in order.

    Iterating gives the ``(pass, seconds)`` pairs; ``str()`` is a table.
    """

    timings: list[tuple[str, float]] = field(default_factory=list)
    #: ``(pass, reason)`` of passes not run (disabled, not registered, instrument)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: IR files written (when dumping)
    dumps: list[Path] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return iter(self.timings)

    def __len__(self) -> int:
        return len(self.timings)

    @property
    def passes(self) -> list[str]:
        return [name for name, _ in self.timings]

    @property
    def total_seconds(self) -> float:
        return sum(s for _, s in self.timings)

    def __str__(self) -> str:
        width = max((len(n) for n, _ in self.timings), default=4)
        lines = [f"{'pass':<{width}}  {'ms':>9}"]
        lines += [f"{n:<{width}}  {s * 1e3:9.2f}" for n, s in self.timings]
        lines.append(f"{'total':<{width}}  {self.total_seconds * 1e3:9.2f}")
        lines += [f"(skipped {n}: {why})" for n, why in self.skipped]
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# running passes


def _available_passes() -> dict[str, Any]:
    return full_universe().all_passes


def make_pass(
    spec: str, ctx: PassContext | None = None, available: Mapping[str, Any] | None = None
) -> ModulePass:
    """The pass named by ``spec`` (``name`` or ``name{opt=value ...}``), with options
    from ``ctx.config[name]`` for those the spec does not give. ``available``: the
    registered passes (default: :func:`tensorkiln.universe.full_universe`'s)."""
    specs = list(parse_pipeline(spec))
    if len(specs) != 1:
        raise ValueError(f"expected one pass, got {spec!r}")
    (arg_spec,) = specs
    available = available if available is not None else _available_passes()
    if arg_spec.name not in available:
        raise ValueError(
            f"unknown pass '{arg_spec.name}' (registered: {', '.join(sorted(available))})"
        )
    pass_ = available[arg_spec.name]().from_pass_spec(arg_spec)
    options = dict((ctx or PassContext.current()).pass_options(arg_spec.name))
    for key in arg_spec.parameters:
        options.pop(key.replace("-", "_"), None)
        options.pop(key, None)
    return dataclasses.replace(pass_, **options) if options else pass_


def _split(pass_names: Sequence[str] | str) -> list[str]:
    """A comma pipeline (``"a,b{x=1}"``) or a list of pass specs, as a list of specs."""
    if not isinstance(pass_names, str):
        return list(pass_names)
    specs, depth, current = [], 0, ""
    for ch in pass_names:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            specs.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        specs.append(current.strip())
    return specs


def _call(instrument: Any, hook: str, *args: Any) -> Any:
    method = getattr(instrument, hook, None)
    return method(*args) if method is not None else None


#: Python's generation-0 collection threshold while IR is built and rewritten: passes
#: allocate millions of objects in reference cycles (ops, blocks, uses), and at the
#: default (700) the cyclic collector took 15-25% of a compile (a 16-layer DenseNet
#: block: 9.6-11.5 s -> 8.2-8.4 s, peak memory the same)
COMPILE_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """Collect cyclic garbage less often inside this block (restored after)."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], COMPILE_GC_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run_pipeline(
    module: ModuleOp,
    pass_names: Sequence[str] | str,
    ctx: PassContext | None = None,
    verify_input: bool = True,
    verify_result: bool = True,
) -> PipelineReport:
    """Apply the passes named in ``pass_names`` to ``module`` in place, in order.

    ``pass_names``: registered pass names (options allowed, ``"fold-constants{inline_limit=8}"``),
    as a list or one comma-separated string. Passes disabled in ``ctx`` are skipped, and
    so are :data:`OPTIONAL_PASSES` that are not registered; any other unknown name is a
    ``ValueError``. With ``ctx.verify`` the input and the result are verified; with
    ``ctx.verify == "each"`` also the IR after every pass (:class:`PassError` names the
    pass that broke it); ``verify_input=False`` skips the input's verification where the
    caller has just verified it (the previous pipeline's result), ``verify_result=False``
    the result's where something else checks it (LLVM's verifier, the printed llvm
    dialect). An exception raised by a pass propagates with a note naming the pass. ``ctx`` defaults to the current context,
    and is the current context while the passes run.
    """
    ctx = ctx if ctx is not None else PassContext.current()
    report = PipelineReport()
    available = _available_passes()
    specs = _split(pass_names)
    # Resolve every pass before running any: a typo fails fast, not after minutes of work.
    planned: list[tuple[str, ModulePass]] = []
    for spec in specs:
        name = next(iter(parse_pipeline(spec))).name
        if not ctx.is_enabled(name) or not ctx.is_enabled(spec):
            report.skipped.append((spec, "disabled"))
        elif name not in available and name in OPTIONAL_PASSES:
            report.skipped.append((spec, "not registered"))
        else:
            planned.append((spec, make_pass(spec, ctx, available)))
    xdsl_ctx = _xdsl_context() if planned else None
    with ctx._active(), fewer_gc_pauses():
        if ctx.verify and (verify_input or ctx.verify == "each"):
            _verify(module, None)
        if ctx._dumps == 0 and (path := ctx.dump(module, "input")) is not None:
            report.dumps.append(path)
        for spec, pass_ in planned:
            if any(_call(i, "should_run", spec, module) is False for i in ctx.instruments):
                report.skipped.append((spec, "instrument"))
                continue
            for instrument in ctx.instruments:
                _call(instrument, "run_before_pass", spec, module)
            start = time.perf_counter()
            try:
                pass_.apply(xdsl_ctx, module)
            except Exception as e:
                e.add_note(f"(in pass '{spec}' of the pipeline {', '.join(specs)})")
                raise
            seconds = time.perf_counter() - start
            report.timings.append((spec, seconds))
            ctx.timings.append((spec, seconds))
            path = ctx.dump(module, spec)
            if path is not None:
                report.dumps.append(path)
            if ctx.verify == "each":
                _verify(module, spec)
            for instrument in ctx.instruments:
                _call(instrument, "run_after_pass", spec, module, seconds)
        if ctx.verify is True and planned and verify_result:
            _verify(module, [spec for spec, _ in planned])
    if ctx.timing:
        print(report, file=sys.stderr)
    return report


def _verify(module: ModuleOp, pass_name: str | list[str] | None) -> None:
    """Raise :class:`PassError` for invalid IR after ``pass_name`` (the input: None;
    somewhere in a list of passes)."""
    try:
        module.verify()
    except Exception as e:  # VerifyException, or a verifier tripping over malformed IR
        raise PassError(pass_name, _describe_invalid(module, e)) from e


def _describe_invalid(module: ModuleOp, error: Exception) -> str:
    """The verifier's message, with the first op that fails to verify on its own
    (xDSL's messages for operand/result constraints do not name the op)."""
    message = str(error) if isinstance(error, VerifyException) else f"{type(error).__name__}: {error}"
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception:
            if op.regions:
                return f"{op.name}: {message}"
            text = str(op).strip().splitlines()[0]
            text = text if len(text) <= 240 else text[:237] + "..."
            return f"{op.name} ({text}): {message}"
    return message


def _xdsl_context() -> Context:
    return make_context()
