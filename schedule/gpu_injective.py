"""A GPU template for elementwise and injective kernels (no reduction): a grid-stride
loop, so a capped grid of blocks covers any number of elements.

For output loops ``i0, i1, ...`` (0 by 1, bounds fixed for the kernel) whose innermost
body has no loop, :func:`grid_stride` rebuilds the nest, with the body's ops cloned, as::

    %total = i0.ub * i1.ub * ...
    %blocks = min(ceil(total / THREADS), MAX_BLOCKS)
    loop.for %b = 0 to %blocks blockIdx.x {
      loop.for %t = 0 to THREADS threadIdx.x {
        loop.for %e = b * THREADS + t to %total step blocks * THREADS {   // grid stride
          <i0, i1, ... from e (row-major)>; <body>
        }
      }
    }

Consecutive threads take consecutive elements (coalesced), and the grid never exceeds
``MAX_BLOCKS`` (enough to fill an H100/H200 several times over), so each thread
handles several elements of a large tensor.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.ir import Block

from ..dialects import loop
from .gpu_reduction import Emitter, decompose, output_nest
from .nest import ScheduleError, body_ops

THREADS = 256
MAX_BLOCKS = 4096

P = "grid_stride"


def grid_stride(schedule) -> None:
    """Rebuild an elementwise/injective kernel as a grid-stride loop (module docstring)."""
    kernel: func.FuncOp = schedule.kernel
    loops = output_nest(kernel)
    body = body_ops(loops[-1])
    if any(op.regions or isinstance(op, loop.AllocOp) for op in body):
        raise ScheduleError(P, "the element's code has loops or buffers (a reduction)")
    anchor = Block()
    e = Emitter(anchor)
    total = loops[0].ub
    for f in loops[1:]:
        total = e.add(arith.MuliOp(total, f.ub))
    threads, one, zero = e.const(THREADS), e.const(1), e.const(0)
    needed = e.add(arith.DivUIOp(e.add(arith.AddiOp(total, e.const(THREADS - 1))), threads))
    blocks = e.add(arith.MinSIOp(needed, e.const(MAX_BLOCKS)))
    block_body, b = e.loop(zero, blocks, one, "blockIdx.x", "blocks")
    be = Emitter(block_body)
    thread_body, t = be.loop(be.const(0), be.const(THREADS), be.const(1), "threadIdx.x", "threads")
    te = Emitter(thread_body)
    first = te.add(arith.AddiOp(te.add(arith.MuliOp(b, te.const(THREADS))), t))
    stride = te.add(arith.MuliOp(blocks, te.const(THREADS)))
    element_body, element = te.loop(first, total, stride, "serial", "elements")
    ee = Emitter(element_body)
    mapping = decompose(ee, element, loops)
    ee.clone(body, mapping)
    top = loops[0]
    for op in list(anchor.ops):
        op.detach()
        kernel.body.block.insert_op_before(op, top)
    top.detach()
    top.erase()


__all__ = ["MAX_BLOCKS", "THREADS", "grid_stride"]
