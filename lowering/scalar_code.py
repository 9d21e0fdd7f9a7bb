"""Scalar code at one insertion point of a hand-written loop kernel (the dense linear
algebra routines, the elementwise iterations, sort and top-k): constants, serial loops,
local scalars, loads and stores, and the float arithmetic the kernels use.

The loop dialect has no branches: a step that must not run gets a loop of no iterations
(the trip count a ``select``, :meth:`ScalarCode.when`), a loop that ends on a condition is
split into blocks whose counts drop to 0 (:meth:`ScalarCode.range_until`), a value that
must not change is selected back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, MemRefType, i1
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from ..dialects.graph.types import numpy_dtype
from .line_nest import index_const


#: the prefix of a loop walking a line in order, each step using the last (its role is
#: ``scan``: the schedules count its iterations as the kernel's work); the other loops
#: of scalar code have no role
SCAN = "scan"


def _role(prefix: str) -> str | None:
    return "scan" if prefix == SCAN else None


@dataclass
class LoopNames:
    """Unique loop names within one kernel."""

    counts: dict[str, int] = field(default_factory=dict)

    def __call__(self, prefix: str) -> str:
        k = self.counts.get(prefix, 0)
        self.counts[prefix] = k + 1
        return f"{prefix}{k}"


@dataclass
class ScalarCode:
    """Scalar code at one insertion point of a kernel."""

    b: Builder
    #: the float type of :meth:`float` constants
    element: Attribute
    names: LoopNames
    #: the largest static size of a matrix kernel's loops (None: symbolic or no matrix): a
    #: :meth:`range` ``within_matrix`` runs at most ``n`` times, which the schedule reads as
    #: its most iterations (as from the inner loop of a split)
    n: int | None

    def ins(self, op: Operation) -> SSAValue:
        return self.b.insert(op).results[0]

    def index(self, k: int) -> SSAValue:
        return index_const(self.b, k)

    def float(self, x: float) -> SSAValue:
        return self.ins(arith.ConstantOp(FloatAttr(x, self.element)))

    @property
    def eps(self) -> float:
        """The element type's machine epsilon."""
        return float(np.finfo(numpy_dtype(self.element)).eps)

    def range(
        self, start: SSAValue | None, stop: SSAValue, prefix: str, within_matrix: bool = True
    ) -> tuple[SSAValue, ScalarCode]:
        """A serial loop over ``[start, stop)`` (``start`` None: 0) named ``prefix<k>``, its
        counter from 0; its index and the code inside. ``within_matrix``: at most ``n`` times."""
        zero, one = self.index(0), self.index(1)
        trips = stop if start is None else self.ins(arith.SubiOp(stop, start))
        if within_matrix and self.n is not None and not (start is None and isinstance(stop.owner, arith.ConstantOp)):
            trips = self.ins(arith.MinSIOp(self.index(self.n), trips))
        body = Block(arg_types=[IndexType()])
        self.b.insert(loop.ForOp(zero, trips, one, body, kind="serial", name=self.names(prefix), role=_role(prefix)))
        body.add_op(loop.YieldOp())
        inner = ScalarCode(Builder(InsertPoint.before(body.last_op)), self.element, self.names, self.n)
        t = body.args[0]
        return (t if start is None else inner.ins(arith.AddiOp(start, t))), inner

    def range_until(
        self, trips: SSAValue, stop: Callable[[ScalarCode], SSAValue], prefix: str, block_bits: int, levels: int
    ) -> tuple[SSAValue, ScalarCode]:
        """A serial loop over ``[0, trips)`` (``trips < 2**(block_bits * levels)``) that ends
        early once ``stop(code)`` holds, as a ``while`` would: the loop dialect has no
        ``while``, so the range is split into ``levels`` nested loops of at most
        ``2**block_bits`` iterations each (blocks of ``2**(block_bits * (levels - 1))``
        steps, ..., then steps), and a level entered after ``stop`` holds runs no
        iterations. After the stop, the current innermost block still runs (the code must
        make those steps change nothing) and the outer levels finish their counts empty."""
        code, done = self, None
        for level in reversed(range(levels)):
            shift = block_bits * level
            remaining = trips if done is None else code.ins(arith.SubiOp(trips, done))
            blocks = remaining
            if shift:  # ceil(remaining / size)
                size = code.index(1 << shift)
                partial = code.ins(arith.CmpiOp(code.ins(arith.RemUIOp(remaining, size)), code.index(0), "ne"))
                blocks = code.ins(arith.DivUIOp(remaining, size))
                blocks = code.ins(arith.AddiOp(blocks, code.select(partial, code.index(1), code.index(0))))
            count = code.ins(arith.MinUIOp(blocks, code.index(1 << block_bits)))
            count = code.select(stop(code), code.index(0), count)
            t, code = code.range(None, count, prefix, within_matrix=False)
            step = code.ins(arith.MuliOp(t, size)) if shift else t
            done = step if done is None else code.ins(arith.AddiOp(done, step))
        return done, code

    def when(self, condition: SSAValue, prefix: str) -> ScalarCode:
        """Code that runs only where ``condition`` holds: a loop of one iteration or none."""
        trips = self.ins(arith.SelectOp(condition, self.index(1), self.index(0)))
        body = Block(arg_types=[IndexType()])
        self.b.insert(
            loop.ForOp(self.index(0), trips, self.index(1), body, kind="serial", name=self.names(prefix), role=_role(prefix))
        )
        body.add_op(loop.YieldOp())
        return ScalarCode(Builder(InsertPoint.before(body.last_op)), self.element, self.names, self.n)

    def loop(
        self, lb: SSAValue, ub: SSAValue, step: SSAValue, name: str, kind: str = "serial", role: str | None = None
    ) -> tuple[SSAValue, ScalarCode]:
        """A loop ``for i = lb to ub step step`` named ``name`` (serial, or another of the
        loop dialect's kinds: ``vectorized`` for a straight-line body) with ``role``; its
        index and the code inside."""
        body = Block(arg_types=[IndexType()])
        self.b.insert(loop.ForOp(lb, ub, step, body, kind=kind, name=name, role=role))
        body.add_op(loop.YieldOp())
        return body.args[0], ScalarCode(Builder(InsertPoint.before(body.last_op)), self.element, self.names, self.n)

    def local(self, t: Attribute) -> SSAValue:
        return self.ins(loop.AllocOp(MemRefType(t, []), scope="local"))

    def local_index(self, init: SSAValue) -> SSAValue:
        """A local scalar holding the index ``init`` (as an ``i64``: LLVM has no index type)."""
        cell = self.local(IntegerType(64))
        self.put_index(init, cell)
        return cell

    def get_index(self, cell: SSAValue) -> SSAValue:
        """The index held in an ``i64`` local."""
        return self.ins(arith.IndexCastOp(self.load(cell), IndexType()))

    def put_index(self, value: SSAValue, cell: SSAValue) -> None:
        """Store the index ``value`` in an ``i64`` local."""
        self.store(self.ins(arith.IndexCastOp(value, IntegerType(64))), cell)

    def local_vector(self, length: int) -> SSAValue:
        """A local array of ``length`` elements of the kernel's element type."""
        return self.ins(loop.AllocOp(MemRefType(self.element, [length]), scope="local"))

    def load(self, buffer: SSAValue, indices: Sequence[SSAValue] = ()) -> SSAValue:
        return self.ins(loop.LoadOp(buffer, list(indices)))

    def store(self, value: SSAValue, buffer: SSAValue, indices: Sequence[SSAValue] = ()) -> None:
        self.b.insert(loop.StoreOp(value, buffer, list(indices)))

    def add(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.AddfOp(x, y))

    def sub(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.SubfOp(x, y))

    def mul(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.MulfOp(x, y))

    def div(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.DivfOp(x, y))

    def sqrt(self, x: SSAValue) -> SSAValue:
        return self.ins(math.SqrtOp(x))

    def abs(self, x: SSAValue) -> SSAValue:
        return self.ins(math.AbsFOp(x))

    def select(self, condition: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.ins(arith.SelectOp(condition, x, y))

    def compare(self, x: SSAValue, y: SSAValue, predicate: str) -> SSAValue:
        return self.ins(arith.CmpfOp(x, y, predicate))

    def negation(self, flag: SSAValue) -> SSAValue:
        """``not flag`` (an ``i1``)."""
        return self.ins(arith.XOrIOp(flag, self.ins(arith.ConstantOp(IntegerAttr(1, i1)))))

    def sub_product(self, x: SSAValue, y: SSAValue, z: SSAValue) -> SSAValue:
        """``x - y * z`` (no fast-math flags: the numpy reference's roundings)."""
        return self.sub(x, self.mul(y, z))

    def accumulate(self, acc: SSAValue, value: SSAValue) -> None:
        """``acc += value`` for a local scalar ``acc``."""
        self.store(self.add(self.load(acc), value), acc)

    def next(self, i: SSAValue) -> SSAValue:
        return self.ins(arith.AddiOp(i, self.index(1)))

    def last(self, n: SSAValue) -> SSAValue:
        """``n - 1``."""
        return self.ins(arith.SubiOp(n, self.index(1)))


__all__ = ["LoopNames", "ScalarCode"]
