"""The driver's entry: a graph module built for a target by its target kind."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from .target import BuildRequest, Target, parse_target, target_kind


def build(module: ModuleOp, target: str | Target = "llvm", request: BuildRequest | None = None) -> Any:
    """Compile ``module`` for ``target`` (parsed once, here) by its kind's build.

    Example: ``lib = build(module, "llvm -mattr=+avx2", BuildRequest(function="main"))``
    """
    parsed = parse_target(target)
    return target_kind(parsed.kind).build(module, parsed, request or BuildRequest())


def emit_source(module: ModuleOp, target: str | Target = "llvm", function: str = "main") -> str:
    """The code ``target``'s kind generates for ``module``, as text."""
    parsed = parse_target(target)
    kind = target_kind(parsed.kind)
    if kind.emit_source is None:
        raise ValueError(f"target kind '{kind.name}' generates no source text")
    return kind.emit_source(module, parsed, function)


__all__ = ["build", "emit_source"]
