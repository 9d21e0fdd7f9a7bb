"""Bring your own codegen: offload parts of a model to an external backend (TVM's BYOC).

Register patterns for a backend, partition a graph module into composites of those
patterns, and let the backend's codegen compile them; the rest is compiled as usual::

    import tensorkiln as tk

    part = tk.byoc.partition_for(module, "blas")   # dense/matmul (+bias, +relu) -> sgemm
    lib = tk.build(part)                           # host code calls the external modules
    y = lib(x)

``partition_for`` runs the passes ``partition{backend=...}``, ``merge-composites``,
``annotate-codegen`` and ``run-codegen`` (each usable alone in ``tensorkiln-opt``).
Built-in backends: ``example_npu`` (a teaching backend with a decision log),
``blas`` (CPU sgemm from scipy's BLAS), ``cublas`` (GPU, through cupy). A backend of your
own: :func:`register_backend` + :func:`register_patterns` (see ``tests/test_byoc_user_backend.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# numpy and ctypes only: a deployed artifact deserializes external modules without xDSL
from .external import ExternalModule, PythonExternalModule, TensorSpec, deserialize, register_kind

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

#: the compiler side, imported on first use
_LAZY = {
    **dict.fromkeys(["Match", "Pattern", "is_constant", "is_op", "wildcard"], "pattern"),
    **dict.fromkeys(
        ["get_backend", "patterns_for", "register_backend", "register_patterns", "unregister_backend"], "registry"
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorkiln.byoc' has no attribute {name!r}")


def partition_pipeline(backend: str, *, bind_constants: bool = True, merge: bool = True) -> tuple[str, ...]:
    """The pass names :func:`partition_for` runs, in order."""
    steps = [f"partition{{backend={backend} bind_constants={'true' if bind_constants else 'false'}}}"]
    if merge:
        steps.append("merge-composites")
    steps += [f"annotate-codegen{{backend={backend}}}", "run-codegen"]
    return tuple(steps)


def partition_for(
    module: ModuleOp, backend: str, *, bind_constants: bool = True, merge: bool = True, codegen: bool = True
) -> ModuleOp:
    """A copy of ``module`` with ``backend``'s patterns offloaded to it.

    ``bind_constants``: weights go to the backend at compile time (else they are passed at
    every call); ``merge``: adjacent composites share one external module; ``codegen=False``
    stops before compiling (the module then holds tagged ``byoc.region`` ops).

    Example::

        part = tk.byoc.partition_for(module, "example_npu")
        y = tk.build(part)(x)
    """
    from ..passes.pipeline import PassContext, run_pipeline
    from .registry import get_backend, patterns_for

    patterns_for(backend)  # an unknown backend fails here, naming the known ones
    if codegen:
        reason = get_backend(backend).unavailable()
        if reason:
            raise RuntimeError(f"BYOC backend '{backend}' cannot run here: {reason}")
    steps = partition_pipeline(backend, bind_constants=bind_constants, merge=merge)
    work = module.clone()
    run_pipeline(work, steps if codegen else steps[:-1], PassContext(opt_level=0, dump_ir=False))
    return work


def external_modules(module: ModuleOp) -> list[ExternalModule]:
    """The external modules a (partitioned) module calls, in order."""
    from ..dialects.byoc import CallOp

    return [op.external for op in module.walk() if isinstance(op, CallOp)]


__all__ = [
    "ExternalModule",
    "Match",
    "Pattern",
    "PythonExternalModule",
    "TensorSpec",
    "deserialize",
    "external_modules",
    "get_backend",
    "is_constant",
    "is_op",
    "partition_for",
    "partition_pipeline",
    "patterns_for",
    "register_backend",
    "register_kind",
    "register_patterns",
    "unregister_backend",
    "wildcard",
]
