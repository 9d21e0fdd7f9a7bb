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

from .api import create_executor, emit_source, parse_module
from .build import UnsupportedOperatorError, build
from .frontends.builder import GraphBuilder
from .passes.pipeline import PassContext

__version__ = "0.1.0"

__all__ = [
    "GraphBuilder",
    "PassContext",
    "UnsupportedOperatorError",
    "build",
    "create_executor",
    "emit_source",
    "parse_module",
]
