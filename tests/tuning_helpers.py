"""Shared by the tuning tests: small models, a runner that injects faulty kernels."""

from __future__ import annotations

import tensorkiln as tk
from tensorkiln.tuning.runner import Runner

#: a kernel storing far out of bounds (a segfault), with the 8x12 @ 12x10 matmul's signature
CRASHING = """builtin.module {
  func.func @kernel(%0: memref<8x12xf32>, %1: memref<12x10xf32>, %2: memref<8x10xf32>) attributes {tk.kernel = "matmul"} {
    %c = arith.constant 1099511627776 : index
    %z = arith.constant 0 : index
    %f = arith.constant 1.0 : f32
    loop.store %f, %2[%c, %z] : memref<8x10xf32>
    func.return
  }
}"""

#: a loop with step 0: never ends
HANGING = """builtin.module {
  func.func @kernel(%0: memref<8x12xf32>, %1: memref<12x10xf32>, %2: memref<8x10xf32>) attributes {tk.kernel = "matmul"} {
    %z = arith.constant 0 : index
    %n = arith.constant 10 : index
    %f = arith.constant 1.0 : f32
    loop.for %i = %z to %n step %z name("i0") {
      loop.store %f, %2[%z, %i] : memref<8x10xf32>
    }
    func.return
  }
}"""


def matmul_module(m: int = 8, k: int = 12, n: int = 10):
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("x", (m, k)), b.input("w", (k, n))))


def two_layer_module():
    """Two different matmul+relu kernels and a third like the first (weight 2)."""
    b = tk.GraphBuilder()
    x = b.input("x", (9, 13))
    w1, w2, w3 = b.input("w1", (13, 13)), b.input("w2", (13, 7)), b.input("w3", (13, 13))
    h = b.relu(b.matmul(x, w1))
    h = b.relu(b.matmul(h, w3))
    return b.finish(b.matmul(h, w2))


def split(factor: int, loop: str = "i0") -> list[dict]:
    return [{"primitive": "split", "args": {"loop": loop, "factor": factor}}]


class FaultyRunner(Runner):
    """Measures the module texts in ``faults`` (by the split factor of a one-step trace)
    instead of the scheduled kernel: how the tests make crashing/hanging/wrong code."""

    def __init__(self, faults: dict[int, str], **options):
        super().__init__(**options)
        self.faults = faults

    def instantiate(self, task, trace):
        factor = trace[0]["args"].get("factor") if len(trace) == 1 else None
        if factor in self.faults:
            text = self.faults[factor]
            return text(task) if callable(text) else text
        return super().instantiate(task, trace)


def wrong_kernel(task) -> str:
    """The unscheduled kernel with its accumulation subtracting instead of adding."""
    return task.kernel_text.replace("arith.addf", "arith.subf")
