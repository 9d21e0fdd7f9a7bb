"""Scalar code for the dense linear algebra kernels: serial loops, local scalars, loads
and stores of one matrix of a batch, and the registry of routines (one per graph op).

A kernel runs its routine on each matrix of the batch, the batch loops outermost (named
``i0, i1, ...`` as te-to-loop's output loops, so the CPU default schedule may run them in
parallel and the GPU's ``one_thread_per_element`` gives each matrix a thread). The loop
dialect has no branches: a step that must not run gets a loop of no iterations (the trip
count a ``select``), a value that must not change is selected back.

The loops of a routine's main ``O(n^3)`` nest are named ``scan0, scan1, ...`` (the
schedule's serial loops per output line: ``schedule/strategies/analysis.py`` counts them
as work, so large batches go parallel). A loop over ``[start, stop)`` runs ``t`` from 0 to
``min(n, stop - start)`` (``n`` the largest static matrix size): the schedule reads its
most iterations, ``n``, from that bound, as from the inner loop of a split.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerType, MemRefType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ...dialects import loop, te
from ...dialects.graph.types import numpy_dtype
from ..line_nest import index_const


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
    """Scalar code at one insertion point of the kernel."""

    b: Builder
    element: Attribute
    names: LoopNames
    #: the largest static matrix size (None when symbolic)
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
        """A serial loop over ``[start, stop)`` (``start`` None: 0); its index and the code
        inside. ``within_matrix``: it runs at most ``n`` times (the module docstring)."""
        zero, one = self.index(0), self.index(1)
        trips = stop if start is None else self.ins(arith.SubiOp(stop, start))
        if within_matrix and self.n is not None and not (start is None and isinstance(stop.owner, arith.ConstantOp)):
            trips = self.ins(arith.MinSIOp(self.index(self.n), trips))
        body = Block(arg_types=[IndexType()])
        self.b.insert(loop.ForOp(zero, trips, one, body, kind="serial", name=self.names(prefix)))
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
        self.b.insert(loop.ForOp(self.index(0), trips, self.index(1), body, kind="serial", name=self.names(prefix)))
        body.add_op(loop.YieldOp())
        return ScalarCode(Builder(InsertPoint.before(body.last_op)), self.element, self.names, self.n)

    def local(self, t: Attribute) -> SSAValue:
        return self.ins(loop.AllocOp(MemRefType(t, []), scope="local"))

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


@dataclass(frozen=True)
class MatrixAt:
    """One matrix (or vector) of a buffer: the batch indices, then the element's."""

    buffer: SSAValue
    batch: tuple[SSAValue, ...]

    def load(self, c: ScalarCode, *at: SSAValue) -> SSAValue:
        return c.load(self.buffer, [*self.batch, *at])

    def store(self, c: ScalarCode, value: SSAValue, *at: SSAValue) -> None:
        c.store(value, self.buffer, [*self.batch, *at])


@dataclass
class KernelArgs:
    """What a routine's code works on, inside the batch loops."""

    c: ScalarCode
    op: te.DenseLinalgOp
    #: each input's matrix (or vector) of this batch element, and its core dims
    inputs: list[MatrixAt]
    sizes: list[list[SSAValue]]
    out: MatrixAt
    out_sizes: list[SSAValue]
    #: one ``n x n`` matrix of the host's workspace, where the routine asked for one
    workspace: MatrixAt | None


@dataclass(frozen=True)
class Routine:
    emit: Callable[[KernelArgs], None]
    #: whether the kernel needs an ``n x n`` workspace per matrix (``n`` the first input's columns)
    workspace: bool


#: te.dense_linalg routine name -> its code (filled by ``routine``)
ROUTINES: dict[str, Routine] = {}


def routine(name: str, workspace: bool = False) -> Callable[[Callable[[KernelArgs], None]], Callable[[KernelArgs], None]]:
    """Register the code of the routine ``name`` (one of te's ``DENSE_LINALG_ROUTINES``)."""

    def register(emit: Callable[[KernelArgs], None]) -> Callable[[KernelArgs], None]:
        assert name in te.DENSE_LINALG_ROUTINES, name
        ROUTINES[name] = Routine(emit, workspace)
        return emit

    return register


def copy_matrix(c: ScalarCode, source: MatrixAt, target: MatrixAt, rows: SSAValue, columns: SSAValue) -> None:
    r, row = c.range(None, rows, "copy")
    k, cell = row.range(None, columns, "copy")
    target.store(cell, source.load(cell, r, k), r, k)


def swap(c: ScalarCode, m: MatrixAt, at: Sequence[SSAValue], other: Sequence[SSAValue]) -> None:
    """Swap two elements of ``m`` (the same element: nothing changes)."""
    x, y = m.load(c, *at), m.load(c, *other)
    m.store(c, y, *at)
    m.store(c, x, *other)


@dataclass(frozen=True)
class BestSoFar:
    """Two local scalars for a search: the best key so far and its index."""

    key: SSAValue
    index: SSAValue

    @staticmethod
    def allocate(c: ScalarCode) -> BestSoFar:
        return BestSoFar(c.local(c.element), c.local(IntegerType(64)))

    def first_best(
        self, c: ScalarCode, start: SSAValue, stop: SSAValue, key: Callable[[ScalarCode, SSAValue], SSAValue],
        predicate: str, prefix: str,
    ) -> SSAValue:  # fmt: skip
        """The first index in ``[start, stop)`` whose ``key(code, index)`` is best: a later
        one replaces the best so far only where ``predicate`` (``ogt``: larger, ``olt``:
        smaller) holds. ``start < stop``."""
        c.store(key(c, start), self.key)
        store_index(c, start, self.index)
        i, search = c.range(c.next(start), stop, prefix)
        v = key(search, i)
        so_far = search.load(self.key)
        take = search.compare(v, so_far, predicate)
        search.store(search.select(take, v, so_far), self.key)
        here = search.ins(arith.IndexCastOp(i, IntegerType(64)))
        search.store(search.select(take, here, search.load(self.index)), self.index)
        return index_of_local(c, self.index)


def index_of_local(c: ScalarCode, local: SSAValue) -> SSAValue:
    """The index held in an ``i64`` local."""
    return c.ins(arith.IndexCastOp(c.load(local), IndexType()))


def store_index(c: ScalarCode, i: SSAValue, local: SSAValue) -> None:
    c.store(c.ins(arith.IndexCastOp(i, IntegerType(64))), local)


__all__ = ["KernelArgs", "LoopNames", "MatrixAt", "ROUTINES", "Routine", "ScalarCode", "copy_matrix", "routine"]
