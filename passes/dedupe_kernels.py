"""``dedupe-kernels``: compile each distinct kernel once per build: structurally
identical kernels are merged.

Kernels (``func.func`` with a ``tk.kernel`` tag, after ``te-to-loop``) are keyed by a
structural hash: the SHA-256 of their printed IR with their own name normalised away
(TVM's TECompiler cache key is the primitive function the same way). ResNet-style
models repeat blocks of the same shapes, so their kernels repeat too: every call is
redirected to the first kernel of each key and the copies are erased. Each kernel kept
records its hash (``tk.structural_hash``), which the disk cache's key uses instead of
printing the kernel again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.passes import ModulePass

from ..dialects.loop import KERNEL_ATTR, is_kernel

#: a kept kernel's structural hash (set by ``dedupe-kernels``)
HASH_ATTR = "tk.structural_hash"


def kernel_hash(kernel: func.FuncOp) -> str:
    """The structural hash of a kernel: its printed IR, its name replaced by ``@kernel``
    (the hash ``dedupe-kernels`` recorded, if it ran)."""
    recorded = kernel.attributes.get(HASH_ATTR)
    if isinstance(recorded, StringAttr):
        return recorded.data
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
        if not is_kernel(op):
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


@dataclass(frozen=True)
class DedupeKernelsPass(ModulePass):
    """Merge identical kernels, each kept one recording its structural hash (``tk.structural_hash``)."""

    name = "dedupe-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kept, _ = dedupe_kernels(op)
        for kernel in op.ops:
            if isinstance(kernel, func.FuncOp) and kernel.sym_name.data in kept:
                kernel.attributes[HASH_ATTR] = StringAttr(kept[kernel.sym_name.data])


__all__ = ["HASH_ATTR", "KERNEL_ATTR", "DedupeKernelsPass", "dedupe_kernels", "kernel_hash"]
