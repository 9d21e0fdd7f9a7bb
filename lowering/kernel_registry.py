"""The kernel-rule registry: for each tensor-level op te-to-loop lowers (``te.compute``,
``graph.fused``, ``te.scan``, ``te.scatter``, ``te.sort``, ``te.dense_linalg``), how it
becomes kernels and the host's calls of them.

A rule receives the host function being built (a :class:`KernelHost`), the op, and the
buffer its result goes to; it makes its kernels and calls them through the host. A new
kind of kernel is one file that registers its rule (and one import line in
``te_to_loop.py``, which loads the rules)::

    @kernel_rule(te.ScanOp)
    def scan(host: KernelHost, op: te.ScanOp, target: SSAValue) -> None:
        kernel = scan_kernel(op, host.kernel_name(scan_tag(op)))
        host.call(kernel, [host.buffer(op.input), target])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue


class KernelHost(Protocol):
    """What a kernel rule may ask of the host function being built (te-to-loop's)."""

    #: row kernels store an expensive producer in the output row (``compute_kernel.py``)
    stash_rows: bool

    def kernel_name(self, tag: str) -> str:
        """A fresh kernel symbol for ``tag`` (``<tag>_<k>``)."""
        ...

    def buffer(self, value: SSAValue) -> SSAValue:
        """The buffer holding the tensor ``value`` (an input, a weight, an earlier result)."""
        ...

    def carriers(self, op: Operation) -> list[SSAValue]:
        """Inputs of the host function (tensors) a kernel of ``op`` is passed for their
        sizes only: one per symbol of a dim inside ``op`` that its own tensors do not give."""
        ...

    def temporary(self, t: TensorType) -> SSAValue:
        """A buffer of type ``t`` allocated here and freed at the end (a workspace)."""
        ...

    def call(self, kernel: func.FuncOp, arguments: Sequence[SSAValue]) -> None:
        """Add ``kernel`` to the module and call it here on ``arguments`` (buffers); what
        its tag says it computes is recorded on it (``kernel_anchor.py``)."""
        ...


KernelRule = Callable[[KernelHost, Operation, SSAValue], None]

#: op class -> its kernel rule
KERNEL_RULES: dict[type[Operation], KernelRule] = {}


def kernel_rule(*op_classes: type[Operation]) -> Callable[[KernelRule], KernelRule]:
    """Register the decorated function as the kernel rule of these ops."""

    def register(rule: KernelRule) -> KernelRule:
        for op_class in op_classes:
            if op_class in KERNEL_RULES:
                raise ValueError(f"{op_class.name} already has a kernel rule")
            KERNEL_RULES[op_class] = rule
        return rule

    return register


__all__ = ["KERNEL_RULES", "KernelHost", "KernelRule", "kernel_rule"]
