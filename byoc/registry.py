"""Backends and their patterns: what ``partition{backend=...}`` offloads and who compiles it.

A backend is a name, a pattern table and a codegen::

    import tensorkiln as tk
    from tensorkiln.byoc.pattern import is_op, wildcard

    tk.byoc.register_backend("mine", codegen=my_codegen)     # my_codegen(region) -> ExternalModule
    tk.byoc.register_patterns("mine", [
        ("add_relu", is_op("graph.relu", is_op("graph.add", wildcard(), wildcard())), None, 2),
        ("add", is_op("graph.add", wildcard(), wildcard()), None, 1),
    ])

Patterns are tried in decreasing ``priority`` (a fused pattern outranks its parts); equal
priorities keep their registration order. The built-in backends (``example_npu``,
``blas``, ``cublas``) register themselves when first named.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .pattern import Match, Pattern

#: backend name -> module that registers it (imported on first use)
BUILTIN_BACKENDS = {
    "example_npu": "tensorkiln.byoc.backends.example_npu",
    "blas": "tensorkiln.byoc.backends.blas",
    "cublas": "tensorkiln.byoc.backends.cublas",
}


@dataclass(frozen=True)
class PatternEntry:
    """One pattern of a backend: composites are named ``backend.name``."""

    backend: str
    name: str
    pattern: Pattern
    check: Callable[[Match], bool] | None
    priority: int
    order: int

    @property
    def composite_name(self) -> str:
        return f"{self.backend}.{self.name}"

    def accepts(self, match: Match) -> bool:
        return self.check is None or bool(self.check(match))


@dataclass(frozen=True)
class Backend:
    """A codegen: ``codegen(region)`` compiles a ``byoc.region`` to an ExternalModule.

    ``unavailable()`` returns why it cannot run in this process (a missing library, no
    GPU), or None when it can."""

    name: str
    codegen: Callable[[Any], Any]
    unavailable: Callable[[], str | None] = lambda: None
    description: str = ""


_BACKENDS: dict[str, Backend] = {}
_PATTERNS: dict[str, list[PatternEntry]] = {}


def _load_builtin(name: str) -> None:
    if name in BUILTIN_BACKENDS and name not in _BACKENDS:
        importlib.import_module(BUILTIN_BACKENDS[name])


def register_backend(
    name: str,
    codegen: Callable[[Any], Any],
    *,
    unavailable: Callable[[], str | None] | None = None,
    description: str = "",
) -> Backend:
    """Register (or replace) the codegen of backend ``name``.

    Example: ``register_backend("mine", codegen=lambda region: MyModule(region))``"""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"backend name must be letters, digits and '_', got {name!r}")
    backend = Backend(name, codegen, unavailable or (lambda: None), description)
    _BACKENDS[name] = backend
    return backend


def register_patterns(
    backend: str, entries: Iterable[tuple[str, Pattern, Callable[[Match], bool] | None, int]]
) -> None:
    """Add ``(name, pattern, check, priority)`` entries to ``backend``'s pattern table.

    ``check(match)`` (or None) decides on what the pattern matched (sizes, attributes);
    ``priority`` is an int, higher first.

    Example::

        register_patterns("blas", [("dense_relu", is_op("relu", is_op("dense", wildcard(), wildcard())), None, 20)])
    """
    _load_builtin(backend)
    table = _PATTERNS.setdefault(backend, [])
    known = {e.name for e in table}
    for k, entry in enumerate(entries):
        if not isinstance(entry, tuple) or len(entry) != 4:
            raise ValueError(f"register_patterns('{backend}'): entry #{k} must be (name, pattern, check, priority), got {entry!r}")
        name, pattern, check, priority = entry
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"register_patterns('{backend}'): entry #{k} name must be a non-empty string without '.', got {name!r}")
        if not isinstance(pattern, Pattern):
            raise ValueError(f"register_patterns('{backend}'): pattern '{name}' is {pattern!r}, not a Pattern")
        if check is not None and not callable(check):
            raise ValueError(f"register_patterns('{backend}'): check of '{name}' is not callable: {check!r}")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ValueError(f"register_patterns('{backend}'): priority of '{name}' must be an int, got {priority!r}")
        if name in known:
            raise ValueError(f"register_patterns('{backend}'): pattern '{name}' is already registered")
        known.add(name)
        table.append(PatternEntry(backend, name, pattern, check, priority, len(table)))


def patterns_for(backend: str) -> list[PatternEntry]:
    """``backend``'s patterns, highest priority first (ties: registration order)."""
    _load_builtin(backend)
    if backend not in _PATTERNS and backend not in _BACKENDS:
        known = sorted(set(_BACKENDS) | set(_PATTERNS) | set(BUILTIN_BACKENDS))
        raise ValueError(f"unknown BYOC backend '{backend}' (known: {', '.join(known)})")
    return sorted(_PATTERNS.get(backend, []), key=lambda e: (-e.priority, e.order))


def get_backend(name: str) -> Backend:
    """The registered backend ``name`` (built-in ones are loaded on first use)."""
    _load_builtin(name)
    if name not in _BACKENDS:
        known = sorted(set(_BACKENDS) | set(BUILTIN_BACKENDS))
        raise ValueError(f"no codegen registered for BYOC backend '{name}' (known: {', '.join(known)})")
    return _BACKENDS[name]


def unregister_backend(name: str) -> None:
    """Forget a backend and its patterns (for tests and notebooks)."""
    _BACKENDS.pop(name, None)
    _PATTERNS.pop(name, None)


__all__ = [
    "Backend",
    "PatternEntry",
    "get_backend",
    "patterns_for",
    "register_backend",
    "register_patterns",
    "unregister_backend",
]
