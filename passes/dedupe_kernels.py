"""Compile each distinct kernel once per build: structurally identical kernels are merged.

Kernels (``func.func`` with a ``tk.kernel`` tag, after ``te-to-loop``) are keyed by a
structural hash: the SHA-256 of their printed IR with their own name normalised away
(TVM's TECompiler cache key is the primitive function the same way). ResNet-style
models repeat blocks of the same shapes, so their kernels repeat too: every call is
redirected to the first kernel of each key and the copies are erased.
"""

from __future__ import annotations

import hashlib

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr

KERNEL_ATTR = "tk.kernel"


def kernel_hash(kernel: func.FuncOp) -> str:
    """The structural hash of a kernel: its printed IR, its name replaced by ``@kernel``."""
    text = str(kernel).replace(f"@{kernel.sym_name.data}(", "@kernel(", 1)
    return hashlib.sha256(text.encode()).hexdigest()


def dedupe_kernels(module: ModuleOp) -> tuple[dict[str, str], int]:
    """Merge identical kernels of a loop-level module in place.

    Returns (kernel name -> structural hash of the kernels kept, number of copies
    erased). Example: ``hashes, merged = dedupe_kernels(loops)``
    """
    first: dict[str, str] = {}  # hash -> kept kernel name
    renamed: dict[str, str] = {}  # erased kernel -> kept kernel
    kept: dict[str, str] = {}
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or KERNEL_ATTR not in op.attributes:
            continue
        key = kernel_hash(op)
        name = op.sym_name.data
        if key in first:
            renamed[name] = first[key]
            module.body.block.erase_op(op)
        else:
            first[key] = name
            kept[name] = key
    if renamed:
        for op in module.walk():
            if isinstance(op, func.CallOp) and op.callee.string_value() in renamed:
                op.callee = SymbolRefAttr(renamed[op.callee.string_value()])
    return kept, len(renamed)


__all__ = ["KERNEL_ATTR", "dedupe_kernels", "kernel_hash"]
