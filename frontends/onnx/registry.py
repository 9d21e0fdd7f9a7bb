"""ONNX op -> graph ops: converters registered by (domain, op type, since-version).

ONNX versions each operator: a model with opset 13 uses, for ``Split``, the newest
schema of ``Split`` whose ``since_version`` is at most 13 (``Split-13``, which takes
``split`` as an input instead of an attribute). A converter is registered for the
schema versions it handles, from ``since`` up to the next converter of the same op::

    @converter("Relu", since=6)
    def relu(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
        return ctx.b.relu(node.input(0))

    @converter("Split", since=2)        # split as an attribute
    @converter("Split", since=13)       # split as an input
    ...

For a model's opset, :func:`find_converter` asks ``onnx.defs`` which schema version the
op has and picks the converter with the largest ``since`` not above it. A converter
returns the node's outputs: a value, or a tuple (``None`` for an output it does not
compute, which the importer refuses if anything reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import onnx

#: the ONNX default domain, as models spell it (``""``) and as tables print it
DEFAULT_DOMAIN = "ai.onnx"

Convert = Callable[..., Any]


@dataclass(frozen=True)
class Converter:
    domain: str
    op_type: str
    since: int
    fn: Convert


#: (domain, op type) -> converters, by increasing ``since``
CONVERTERS: dict[tuple[str, str], list[Converter]] = {}


def canonical_domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", DEFAULT_DOMAIN) else domain


def converter(*op_types: str, since: int = 1, domain: str = DEFAULT_DOMAIN) -> Callable[[Convert], Convert]:
    """Register the decorated function for ``op_types`` from schema version ``since``."""

    def register(fn: Convert) -> Convert:
        for op_type in op_types:
            key = (canonical_domain(domain), op_type)
            entries = CONVERTERS.setdefault(key, [])
            if any(c.since == since for c in entries):
                raise ValueError(f"{key[0]}.{op_type} since {since} already has a converter")
            entries.append(Converter(key[0], op_type, since, fn))
            entries.sort(key=lambda c: c.since)
        return fn

    return register


def schema_version(domain: str, op_type: str, opset: int) -> int | None:
    """The ``since_version`` of the schema of ``op_type`` a model with ``opset`` uses
    (None when ``onnx.defs`` knows no such op at that opset)."""
    domain = "" if canonical_domain(domain) == DEFAULT_DOMAIN else domain
    try:
        return onnx.defs.get_schema(op_type, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


def find_converter(domain: str, op_type: str, opset: int) -> Converter | None:
    """The converter for ``op_type`` under ``opset`` of ``domain``, or None."""
    entries = CONVERTERS.get((canonical_domain(domain), op_type))
    if not entries:
        return None
    version = schema_version(domain, op_type, opset)
    if version is None:
        return None
    usable = [c for c in entries if c.since <= version]
    return usable[-1] if usable else None
