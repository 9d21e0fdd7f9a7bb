"""Carrying external modules into a deployed shared library (numpy and ctypes only).

Compiled host code calls each external module by its symbol (``blas_main_0``). In the
JIT the symbol is bound with ``llvm.add_symbol``; a shared library made by
``export_library`` needs it defined at link time and pointed at the module when the
library is loaded. This module gives both halves:

- :func:`trampoline_source`: C source defining, for each module, its symbol as a
  function that forwards its arguments through a pointer variable ``tk_ext_<symbol>``
  (link it into the library beside the model's object code);
- :func:`bind_trampolines`: after ``dlopen``, set each pointer to the module's
  ``native_address()`` (the module deserialized from the artifact with
  :func:`tensorkiln.byoc.external.deserialize`, from the bytes ``module.serialize()``
  wrote at export).

Until bound, a trampoline's pointer is null: the library must not be called before
:func:`bind_trampolines`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from .external import ExternalModule, TensorSpec

POINTER_PREFIX = "tk_ext_"


def _c_params(specs: Sequence[TensorSpec]) -> list[tuple[str, str]]:
    """(C type, name) of each argument in the native calling convention."""
    params: list[tuple[str, str]] = []
    for k, spec in enumerate(specs):
        params.append(("void *", f"a{k}"))
        params += [("int64_t ", f"a{k}_d{axis}") for axis in spec.symbolic]
    return params


def trampoline_source(modules: Sequence[ExternalModule]) -> str:
    """C source of one forwarding function per module (see the module docstring)."""
    lines = ["#include <stdint.h>", ""]
    for module in modules:
        if not module.symbol.isidentifier():
            raise ValueError(f"external module symbol {module.symbol!r} is not a C identifier")
        params = _c_params(module.inputs + module.outputs)
        types = ", ".join(t.strip() for t, _ in params) or "void"
        declared = ", ".join(t + n for t, n in params) or "void"
        pointer = POINTER_PREFIX + module.symbol
        lines += [
            f"void (*{pointer})({types}) = 0;",
            f"void {module.symbol}({declared}) {{ {pointer}({', '.join(n for _, n in params)}); }}",
            "",
        ]
    return "\n".join(lines)


def bind_trampolines(library: ctypes.CDLL, modules: Sequence[ExternalModule]) -> None:
    """Point each module's trampoline in a loaded ``library`` at the module."""
    for module in modules:
        slot = ctypes.c_void_p.in_dll(library, POINTER_PREFIX + module.symbol)
        slot.value = module.native_address()


def load_external_modules(library: ctypes.CDLL, blobs: Sequence[bytes]) -> list[ExternalModule]:
    """The external modules of a deployed model (their serialized bytes), deserialized and
    bound to its loaded ``library``: the loader ``tensorkiln.runtime.load_module`` calls,
    by the name the artifact gives."""
    from .external import deserialize

    modules = [deserialize(data) for data in blobs]
    bind_trampolines(library, modules)
    return modules


__all__ = ["POINTER_PREFIX", "bind_trampolines", "load_external_modules", "trampoline_source"]
