"""What the dense linear algebra kernels share beyond scalar code (``lowering/scalar_code.py``):
loads and stores of one matrix of a batch, a routine's arguments, and the registry of
routines (one per graph op).

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
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from ...dialects import te
from ..scalar_code import LoopNames, ScalarCode


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
    #: this matrix's part of the host's workspace, where the routine asked for one
    workspace: MatrixAt | None


#: the core shape of a routine's workspace per matrix, from its op
WorkspaceShape = Callable[[te.DenseLinalgOp], tuple[int, ...]]


def square_workspace(op: te.DenseLinalgOp) -> tuple[int, ...]:
    """``n x n``, ``n`` the first input's columns."""
    n = op.inputs[0].type.get_shape()[-1]
    return (n, n)


@dataclass(frozen=True)
class Routine:
    emit: Callable[[KernelArgs], None]
    #: the workspace the kernel needs per matrix, or None
    workspace: WorkspaceShape | None


#: te.dense_linalg routine name -> its code (filled by ``routine``)
ROUTINES: dict[str, Routine] = {}


def routine(
    name: str, workspace: WorkspaceShape | None = None
) -> Callable[[Callable[[KernelArgs], None]], Callable[[KernelArgs], None]]:
    """Register the code of the routine ``name`` (one of te's ``DENSE_LINALG_ROUTINES``),
    with the core shape of its workspace per matrix where it needs one."""

    if workspace is not None and not callable(workspace):
        raise TypeError(f"routine {name!r}: workspace must give the workspace's core shape from the op, got {workspace!r}")

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
        c.put_index(start, self.index)
        i, search = c.range(c.next(start), stop, prefix)
        v = key(search, i)
        so_far = search.load(self.key)
        take = search.compare(v, so_far, predicate)
        search.store(search.select(take, v, so_far), self.key)
        here = search.ins(arith.IndexCastOp(i, IntegerType(64)))
        search.store(search.select(take, here, search.load(self.index)), self.index)
        return c.get_index(self.index)


__all__ = [
    "KernelArgs", "LoopNames", "MatrixAt", "ROUTINES", "Routine", "ScalarCode", "copy_matrix", "routine", "square_workspace",
]  # fmt: skip
