"""Targets: a target string parsed once, and the registry of target kinds.

A target string is a kind and options, as in TVM: ``"llvm"``, ``"llvm -mcpu=znver4
-mattr=+avx512f"``, ``"cuda -arch=sm_90 -tf32"``. :func:`parse_target` reads it once
into a :class:`Target`: its kind, its options as written, and the backend's own reading
of them (``config``: a :class:`~tensorkiln.backends.llvm.jit.CPUTarget` with the CPU,
its features and SIMD width; the CUDA backend's ``CudaOptions``). Everything after the
entry point takes the ``Target``, never the string.

A backend is one file that registers a :class:`TargetKind` (``driver/cpu.py``,
``driver/cuda.py``): how to read its options, and how to build a graph module for it::

    register_target_kind(TargetKind("toy", parse=ToyOptions.parse, build=build_toy))
    lib = tk.build(module, target="toy -lanes=4")
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from ..passes.pipeline import PassContext


@dataclass(frozen=True)
class BuildRequest:
    """What ``tk.build`` was asked for, handed to a target kind's ``build``."""

    #: the function of the module to compile
    function: str = "main"
    #: the pass context the build runs under (opt level, dumps, instruments)
    ctx: PassContext = field(default_factory=PassContext.current)
    #: the arithmetic of linear layers (``driver.pipelines.PRECISIONS``: "fp32", "bf16");
    #: a kind without bfloat16 products ignores it
    precision: str = "fp32"
    #: schedules kernels instead of the default schedule (``tk.build(tuning_log=...)``):
    #: ``schedule(loops, run_default)`` where ``run_default(module)`` runs the default
    #: scheduling pipeline on a module of the kernels it leaves unscheduled
    schedule: Callable[[ModuleOp, Callable[[ModuleOp], Any]], None] | None = None


@dataclass(frozen=True)
class TargetKind:
    """A backend, as the driver sees it.

    - ``parse(target_text)``: the backend's reading of the whole target string (raise
      ``ValueError`` naming a bad option); the result is the target's ``config``;
    - ``build(module, target, request)``: compile a graph module; returns the callable
      (a ``CompiledModule``, a ``CudaModule``, a VM...);
    - ``emit_source(module, target, function)``: the code it generates, as text
      (None: the backend has no text form).
    """

    name: str
    parse: Callable[[str], Any]
    build: Callable[[ModuleOp, Target, BuildRequest], Any]
    emit_source: Callable[[ModuleOp, Target, str], str] | None = None
    #: one line for error messages and ``target_kinds()``
    description: str = ""


@dataclass(frozen=True)
class Target:
    """A parsed target: ``kind`` (``"llvm"``, ``"cuda"``...), ``options`` as written
    (``("-mcpu=znver4",)``) and ``config``, the backend's reading of them.

    Example::

        target = parse_target("llvm -mattr=+avx2")
        target.kind, target.config.vector_bits      # ("llvm", 256)
    """

    text: str
    kind: str
    options: tuple[str, ...]
    config: Any = field(compare=False)

    def __str__(self) -> str:
        return self.text

    @property
    def vector_bits(self) -> int | None:
        """The SIMD width kernels are scheduled for (None: the backend has none)."""
        return getattr(self.config, "vector_bits", None)

    @property
    def features(self) -> str:
        """The CPU features code is generated for ("" where the backend has none)."""
        return getattr(self.config, "features", "")


_KINDS: dict[str, TargetKind] = {}


def register_target_kind(kind: TargetKind, *, replace: bool = False) -> TargetKind:
    """Make ``kind.name`` a target kind ``tk.build`` and ``tk.emit_source`` accept."""
    if kind.name in _KINDS and not replace and _KINDS[kind.name] is not kind:
        raise ValueError(f"target kind '{kind.name}' is already registered (replace=True to replace it)")
    _KINDS[kind.name] = kind
    _parse.cache_clear()
    return kind


def unregister_target_kind(name: str) -> None:
    _KINDS.pop(name, None)
    _parse.cache_clear()


def target_kinds() -> dict[str, TargetKind]:
    """The registered target kinds, by name."""
    return dict(_KINDS)


def target_kind(name: str) -> TargetKind:
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted(_KINDS)) or "none"
        raise ValueError(f"unknown target kind '{name}' (registered: {known})") from None


@lru_cache(maxsize=64)
def _parse(text: str) -> Target:
    words = shlex.split(text)
    if not words:
        raise ValueError(f"empty target string (expected a kind: {', '.join(sorted(_KINDS))})")
    kind = target_kind(words[0])
    return Target(text, kind.name, tuple(words[1:]), kind.parse(text))


def parse_target(target: str | Target) -> Target:
    """``target`` read once (a :class:`Target` is returned as it is)."""
    if isinstance(target, Target):
        return target
    if not isinstance(target, str):
        raise TypeError(f"target must be a string such as 'llvm' or a Target, got {type(target).__name__}")
    return _parse(target.strip())


__all__ = [
    "BuildRequest",
    "Target",
    "TargetKind",
    "parse_target",
    "register_target_kind",
    "target_kind",
    "target_kinds",
    "unregister_target_kind",
]
