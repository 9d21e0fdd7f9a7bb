"""partition-loops: cut a loop where a comparison of its variable changes value
(TVM's LoopPartition), then fold what the pieces' bounds decide.

A concatenation along ``c`` computes ``select(c < 7, a[c'], select(c < 39, b[c''], d[c''']))``
with every read clamped into its input, so each element loads every input: a 25-way
concatenation in a DenseNet block made 25 loads and 24 selects per element. Cut at 7
and 39, the loop becomes three loops; in each, every comparison of ``c`` with a
constant is a constant, the selects keep one operand, the clamps of the read that
stays are identities (``max(c - 7, 0)`` with ``c >= 7``), and the other reads are dead.
The same cut takes the border tests out of a padding kernel's interior.

A cut point comes from an ``arith.cmpi`` (signed order predicates) of two index values
whose difference is ``a * iv + rest`` for the loop's own variable, a constant ``a`` and
``rest`` of known range (a constant, or values such as a split's inner loop variable:
then only where the comparison is decided on both sides for whole iterations, see
:func:`cut_points`); loops with constant bounds and a constant step (a stepping loop
is cut at one of its iterations). The pieces run in the original order, so
any loop may be cut (parallel and vectorized loops stay so, piece by piece). The code
grows with the pieces: at most ``MAX_PIECES`` per loop and ``MAX_GROWTH`` copied ops
per kernel; beyond that a loop is left whole.

Folding (``fold_decided``, also useful alone): comparisons whose outcome the ranges of
their operands decide, ``min``/``max`` that the ranges decide, selects on constants,
``and``/``or`` with a constant. Every value keeps its value: a pure rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import loop
from ..dialects.walk import walk_ops
from .nest import deferred_verification, erase_dead_code, index_constant, static_value, transformation
from .schedule import kernels
from .simplify import Affine, IndexRanges

#: the most pieces a loop is cut into
MAX_PIECES = 64
#: the most ops partitioning may copy in one kernel (before folding shrinks the pieces)
MAX_GROWTH = 50_000

_ORDER_PREDICATES = ("slt", "sle", "sgt", "sge")


def _predicate(op: arith.CmpiOp) -> str:
    return arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]


def _difference(ranges: IndexRanges, op: arith.CmpiOp) -> Affine:
    """``lhs - rhs`` of a comparison as an affine form."""
    out = dict(ranges.affine(op.lhs))
    for atom, coef in ranges.affine(op.rhs).items():
        out[atom] = out.get(atom, 0) - coef
    return {a: c for a, c in out.items() if c or a is None}


def _as_less_than_zero(predicate: str, form: Affine) -> Affine:
    """``form <pred> 0`` rewritten as ``form' < 0`` over the integers."""
    sign = -1 if predicate in ("sgt", "sge") else 1
    out = {atom: sign * coef for atom, coef in form.items()}
    out[None] = out.get(None, 0) - (predicate in ("sle", "sge"))
    return out


def _cut_points_of(predicate: str, form: Affine, iv: SSAValue, ranges: IndexRanges) -> tuple[int, int] | None:
    """For ``form <pred> 0`` with ``form = a*iv + rest`` (``a != 0``, ``rest`` in a known
    range): the first ``iv`` where it stops being true whatever ``rest`` is, and the
    first where it stops being possibly true (for ``a < 0``: where it starts being
    surely true, and stops being surely false). Between them it depends on ``rest``."""
    form = _as_less_than_zero(predicate, form)
    a = form.pop(iv)
    bounds = ranges.bounds(form)
    if bounds is None:
        return None
    low, high = bounds  # a*iv + high < 0: surely true; a*iv + low >= 0: surely false
    if a > 0:
        return -(high // a), -(low // a)
    return low // -a + 1, high // -a + 1


def cut_points(for_op: loop.ForOp, ranges: IndexRanges) -> list[int]:
    """Where the comparisons inside ``for_op`` change value along its variable, strictly
    inside its constant range: the first iterations of the pieces, sorted.

    A comparison may also involve other values of known range (the inner loop of a
    split: ``co + ci < 256`` with ``co`` stepping by 16 and ``0 <= ci < 16``); it cuts
    only where it is decided on both sides for all of them. Where a band of iterations
    depends on them (a convolution's padded border: ``0 <= oh + kh - 1``) nothing is
    cut: TVM cuts such nests into border and inside copies; measured here, 15-25%
    faster depthwise convolutions for 2-6x their compile time, not taken."""
    lb, ub, step = static_value(for_op.lb), static_value(for_op.ub), static_value(for_op.step)
    if lb is None or ub is None or step is None or step <= 0:
        return []
    iv = for_op.induction_var
    points: set[int] = set()
    for op in for_op.body.walk():
        if not isinstance(op, arith.CmpiOp) or not isinstance(op.lhs.type, IndexType):
            continue
        predicate = _predicate(op)
        if predicate not in _ORDER_PREDICATES:
            continue
        form = _difference(ranges, op)
        if not form.get(iv):
            continue
        cuts = _cut_points_of(predicate, form, iv, ranges)
        if cuts is None:
            continue
        # the first iteration at or after each point (a stepping loop's iterations are lb + k*step)
        first, second = (lb - (lb - point) // step * step for point in cuts)
        if first == second and lb < first < ub:
            points.add(first)
    return sorted(points)


def _size(op: Operation) -> int:
    return sum(1 for _ in op.walk())


def _halve(kernel: func.FuncOp, for_op: loop.ForOp, point: int) -> list[loop.ForOp]:
    """Cut ``for_op`` at iteration ``point``: a copy runs the iterations before it,
    ``for_op`` itself the rest."""
    first = for_op.clone()
    first.operands = [first.lb, index_constant(kernel, point), first.step]
    for_op.parent_block().insert_op_before(first, for_op)
    for_op.operands = [index_constant(kernel, point), for_op.ub, for_op.step]
    return [first, for_op]


def _decided_comparison(ranges: IndexRanges, op: arith.CmpiOp) -> bool | None:
    predicate = _predicate(op)
    if predicate not in _ORDER_PREDICATES + ("eq", "ne"):
        return None
    bounds = ranges.bounds(_difference(ranges, op))
    if bounds is None:
        return None
    low, high = bounds
    outcomes = {
        "slt": (high < 0, low >= 0),
        "sle": (high <= 0, low > 0),
        "sgt": (low > 0, high <= 0),
        "sge": (low >= 0, high < 0),
        "eq": (low == high == 0, low > 0 or high < 0),
        "ne": (low > 0 or high < 0, low == high == 0),
    }
    always, never = outcomes[predicate]
    return True if always else False if never else None


def _decided_min_max(ranges: IndexRanges, op: arith.MinSIOp | arith.MaxSIOp) -> SSAValue | None:
    """The operand a signed ``min``/``max`` always takes, when the ranges say."""
    left, right = ranges.range(op.lhs), ranges.range(op.rhs)
    if left is None or right is None:
        return None
    below = left[1] <= right[0]  # lhs <= rhs everywhere
    above = left[0] >= right[1]
    if isinstance(op, arith.MinSIOp):
        return op.lhs if below else op.rhs if above else None
    return op.lhs if above else op.rhs if below else None


def _folded(ranges: IndexRanges, kernel: func.FuncOp, op: Operation) -> SSAValue | None:
    """What ``op``'s result always equals, if something simpler."""
    if isinstance(op, arith.CmpiOp) and isinstance(op.lhs.type, IndexType):
        outcome = _decided_comparison(ranges, op)
        if outcome is not None:
            constant = arith.ConstantOp(IntegerAttr(-1 if outcome else 0, i1))
            kernel.body.block.insert_op_before(constant, kernel.body.block.first_op)
            return constant.result
    if isinstance(op, arith.MinSIOp | arith.MaxSIOp) and isinstance(op.lhs.type, IndexType):
        return _decided_min_max(ranges, op)
    if isinstance(op, arith.SelectOp):
        condition = static_value(op.cond)
        if condition is not None:
            return op.lhs if condition else op.rhs
    if isinstance(op, arith.AndIOp | arith.OrIOp) and op.result.type == i1:
        for this, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = static_value(this)
            if value is None:
                continue
            absorbing = (value == 0) if isinstance(op, arith.AndIOp) else (value != 0)
            return this if absorbing else other
    return None


def fold_decided(kernel: func.FuncOp, root: Operation | None = None) -> int:
    """Fold the comparisons, ``min``/``max``, selects and boolean ``and``/``or`` that the
    loop bounds decide, in ``root`` (default: all of ``kernel``); returns how many were
    folded (dead operands stay for DCE)."""
    ranges = IndexRanges()
    folded = 0
    for op in walk_ops(root or kernel):
        if op.parent is None or len(op.results) != 1:
            continue
        value = _folded(ranges, kernel, op)
        if value is None:
            continue
        op.results[0].replace_all_uses_with(value)  # (same value: the cached ranges stay true)
        folded += 1
    return folded


@transformation("partition_loops")
def partition_loops(kernel: func.FuncOp) -> int:
    """Cut the loops of ``kernel`` at the points where comparisons of their variables
    change value (outer loops first, then the copies' inner loops), folding what the
    pieces decide; returns how many cuts were made.

    A loop is cut in two at its middle point, each half folded and its dead code
    erased before it is cut again: a 25-way concatenation copies ~25 log 25 ops of its
    body, not 25 x 25."""
    ranges = IndexRanges()
    growth = 0
    cuts = 0
    pending = _loops_in(kernel.body.block)
    checked: set[loop.ForOp] = set()  # (the halves of a loop already within the limits)
    while pending:
        for_op = pending.pop(0)
        points = cut_points(for_op, ranges)
        size = _size(for_op)
        if points and (for_op in checked or len(points) < MAX_PIECES) and growth + size <= MAX_GROWTH:
            growth += size
            cuts += 1
            halves = _halve(kernel, for_op, points[len(points) // 2])
            for half in halves:
                fold_decided(kernel, half)
                erase_dead_code(half)
            ranges.ranges.clear()
            checked.update(halves)
            pending = halves + pending
        else:
            pending = _loops_in(for_op.body.block) + pending
    return cuts


def _loops_in(block: Block) -> list[loop.ForOp]:
    """The loops directly in ``block`` (a kernel's or a loop's body), in order."""
    return [op for op in block.ops if isinstance(op, loop.ForOp)]


@dataclass(frozen=True)
class PartitionLoopsPass(ModulePass):
    """Cut loops where comparisons of their variables change value, in every kernel
    (``tk.kernel`` functions), and fold the comparisons, selects and clamps that the
    pieces decide.

    Example (``tensorkiln-opt kernel.mlir -p partition-loops``): a concatenation of a
    7- and a 32-channel input, ``loop.for %c = 0 to 39`` reading both inputs through
    clamped indices and a select on ``%c < 7``, becomes ``loop.for %c = 0 to 7``
    reading the first and ``loop.for %c = 7 to 39`` reading the second.
    """

    name = "partition-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with deferred_verification():  # (pipelines verify the module after each pass)
            for kernel in kernels(op):
                if _has_cut_points(kernel):
                    partition_loops(kernel)


def _has_cut_points(kernel: func.FuncOp) -> bool:
    """Some loop of ``kernel`` would be cut (checked first: most kernels have none, and
    a transformation copies and verifies the kernel)."""
    ranges = IndexRanges()
    return any(cut_points(op, ranges) for op in kernel.walk() if isinstance(op, loop.ForOp))


__all__ = ["MAX_GROWTH", "MAX_PIECES", "PartitionLoopsPass", "cut_points", "fold_decided", "partition_loops"]
