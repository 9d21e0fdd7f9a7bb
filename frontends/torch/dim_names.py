"""The user's names for torch's size symbols: ``Dim("batch")`` instead of ``s77``.

torch.export writes every dynamic size as a symbol of its own naming (``s77``, a hash
of where it came from), and keeps the ``Dim`` names the user gave only in its shape
environment (``source_name_to_debug_name``: ``"L['x'].size()[0]" -> "batch"``; the root
of a derived ``2*half`` has the source ``half``).
While a program is imported, its symbols are written with those names, so that shapes,
signatures and the range errors of a compiled model say ``batch``, as the user wrote.

A symbol keeps torch's name when the user gave none, when two of the program's
symbols would get one name, or when the name is another symbol's or a function of dim
expressions (``Max``). Private torch attributes are read defensively: without them,
nothing is renamed.

Example::

    with user_dim_names(ep):
        dim_text("s77 + 1")   # "batch + 1"
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ...runtime.dim_expr import FUNCTIONS

#: torch's symbol -> the user's name for it, during one import
_NAMES: ContextVar[dict[str, str]] = ContextVar("tensorkiln_torch_dim_names", default={})

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _shape_env(ep: Any) -> Any:
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        for size in getattr(node.meta.get("val"), "shape", ()):
            env = getattr(getattr(size, "node", None), "shape_env", None)
            if env is not None:
                return env
    return None


def dim_names_of(ep: Any) -> dict[str, str]:
    """torch's symbols of ``ep`` -> the names of the user's ``Dim`` they stand for."""
    env = _shape_env(ep)
    debug = getattr(env, "source_name_to_debug_name", None)
    sources = getattr(env, "var_to_sources", None)
    if not isinstance(debug, dict) or not isinstance(sources, dict):
        return {}
    symbols = {str(s) for s in getattr(ep, "range_constraints", {})}
    names: dict[str, str] = {}
    for symbol, places in sources.items():
        if str(symbol) not in symbols:
            continue
        found = set()
        for place in places:
            source = getattr(place, "name", None)
            source = source() if callable(source) else source
            if source in debug:
                found.add(debug[source])
            elif isinstance(source, str) and source.isidentifier():  # the root of a derived Dim (2*half): its name
                found.add(source)
        if len(found) == 1:
            names[str(symbol)] = found.pop()
    taken = list(names.values())
    return {
        symbol: name
        for symbol, name in names.items()
        if name.isidentifier() and taken.count(name) == 1 and name not in FUNCTIONS and (name == symbol or name not in symbols)
    }


@contextmanager
def user_dim_names(ep: Any) -> Iterator[dict[str, str]]:
    """Within the block, :func:`dim_text` writes ``ep``'s symbols with the user's names."""
    token = _NAMES.set(dim_names_of(ep))
    try:
        yield _NAMES.get()
    finally:
        _NAMES.reset(token)


def dim_text(text: str) -> str:
    """A dim expression of torch's symbols (``"2*s77"``) with the user's names (``"2*batch"``)."""
    names = _NAMES.get()
    if not names:
        return text
    return _IDENTIFIER.sub(lambda m: names.get(m.group(0), m.group(0)), text)


__all__ = ["dim_names_of", "dim_text", "user_dim_names"]
