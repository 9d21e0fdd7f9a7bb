"""The driver: from a graph module and a target to a callable module.

A target string is parsed once (``target.py``); its kind (``llvm``: ``cpu.py``,
``cuda``: ``cuda.py``, or any registered one) builds the module with the pass lists of
``pipelines.py``, starting from ``compilable.py``'s copy and, on the CPU, ending with
``native_build.py``'s closing sequence. ``vm.py`` compiles functions with control flow
for the VM, given the target's build as a callback. ``compile_cache.py`` keeps object
code on disk; ``export.py`` writes deployable artifacts.

Example::

    from tensorkiln.driver import build, parse_target
    lib = build(module, parse_target("llvm -mattr=+avx2"))
"""

from __future__ import annotations

from ..backends.llvm import native_entry  # noqa: F401  (registers compiled modules' native call entry)
from . import cpu, cuda  # noqa: F401  (the built-in target kinds register themselves)
from .build import build, emit_source
from .cpu import build_vm, jit_loops, lower_to_llvm_dialect, lower_to_loops
from .target import (
    BuildRequest,
    Target,
    TargetKind,
    parse_target,
    register_target_kind,
    target_kind,
    target_kinds,
    unregister_target_kind,
)

__all__ = [
    "BuildRequest",
    "Target",
    "TargetKind",
    "build",
    "build_vm",
    "emit_source",
    "jit_loops",
    "lower_to_llvm_dialect",
    "lower_to_loops",
    "parse_target",
    "register_target_kind",
    "target_kind",
    "target_kinds",
    "unregister_target_kind",
]
