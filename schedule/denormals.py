"""``flush_denormals``: mark a kernel to run with denormal floats flushed to zero.

A GEMM-shaped kernel fed denormal operands (softmax weights of masked attention, decayed
weights) runs about 90x slower on x86; the mark makes ``loop-to-llvm`` set the FTZ and
DAZ bits while the kernel runs (``lowering/denormals.py`` says what that changes).
"""

from __future__ import annotations

from xdsl.dialects import func

from ..dialects import loop
from .nest import transformation


@transformation("flush_denormals")
def flush_denormals(kernel: func.FuncOp) -> None:
    """Mark ``kernel`` (``tk.flush_denormals``): denormal operands read as zero and
    denormal results become zero while it runs, on CPUs with that mode (x86)."""
    loop.mark_flush_denormals(kernel)


__all__ = ["flush_denormals"]
