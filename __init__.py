"""tensorkiln: a deep-learning compiler in Python, built on xDSL.

A graph-dialect module (from the builder API, torch.export or ``.mlir`` text) is
lowered graph -> te -> loop -> llvm and JIT-compiled to native code::

    import numpy as np
    import tensorkiln as tk

    b = tk.GraphBuilder()
    x = b.input("x", (1, 784))
    y = b.relu(b.dense(x, np.random.rand(10, 784).astype("f4")))
    module = b.finish(y)

    lib = tk.build(module, target="llvm")
    out = lib(np.random.rand(1, 784).astype("f4"))
    ref = tk.create_executor("interpreter", module).evaluate()(np.ones((1, 784), "f4"))
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

# The compiler (xDSL, llvmlite) is imported on first use of a name below, so that a
# deployed model's process can import ``tensorkiln.runtime`` alone (numpy + ctypes).
_LAZY = {
    "GraphBuilder": "frontends.builder",
    "PassContext": "passes.pipeline",
    "UnsupportedOperatorError": "build",
    "build": "build",
    "create_executor": "api",
    "emit_source": "api",
    "parse_module": "api",
    "cache_info": "driver.compile_cache",
    "clear_cache_info": "driver.compile_cache",
    "set_cache_dir": "driver.compile_cache",
    "extract_tasks": "tuning",
    "tune": "tuning",
    "visualize": "tools.visualize",
    "quantize": "quantization",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in ("runtime", "tuning"):
        return importlib.import_module(f".{name}", __name__)
    if name == "byoc":  # bring your own codegen: tk.byoc.partition_for(module, "blas")
        return importlib.import_module(".byoc", __name__)
    raise AttributeError(f"module 'tensorkiln' has no attribute {name!r}")


class _Package(types.ModuleType):
    """``tensorkiln.build`` is the function even after ``import tensorkiln.build`` (the
    import system sets a package's attribute to each submodule it loads)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "build" and isinstance(value, types.ModuleType):
            value = value.build
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "byoc", "runtime", "tuning"])


__all__ = [
    "GraphBuilder",
    "PassContext",
    "UnsupportedOperatorError",
    "build",
    "cache_info",
    "clear_cache_info",
    "create_executor",
    "emit_source",
    "extract_tasks",
    "parse_module",
    "quantize",
    "set_cache_dir",
    "tune",
    "visualize",
]
