"""``simplify_indices``: fold the division and remainder of index arithmetic that the
loop bounds make trivial (TVM's arith analyzer, for the case that matters here).

Reshapes flatten an index and cut it up again: ``(row * 256 + j) % 256`` and
``(row * 256 + j) / 256`` with ``0 <= j < 256`` are ``j`` and ``row``. Left as they are,
the remainder of the vectorized loop's variable is not linear in it, so every load
becomes a per-lane gather. Each index value is read as an affine sum
``c0 + sum(c_k * atom_k)`` (atoms: loop variables and opaque values, each with a range
from the loop bounds); ``rem(A, C)`` / ``div(A, C)`` with ``A = C*M + R``, ``M >= 0`` and
``0 <= R < C`` become ``R`` and ``M``; a loop variable stepping by a multiple of ``C``
from a multiple of it (a split loop: ``co = 0, 24, 48...``) goes to ``M`` divided
(``(co + ci) / 24 = co / 24``). Every value keeps its value: a pure rewrite.
"""

from __future__ import annotations

from xdsl.builder import InsertPoint
from xdsl.dialects import arith, func
from xdsl.ir import Block, SSAValue

from ..dialects import loop
from ..dialects.walk import walk_ops
from .nest import IndexBuilder, static_trip_bound, static_value, transformation

Affine = dict[SSAValue | None, int]  # atom (None: the constant term) -> coefficient

_DIVISIONS = (arith.DivUIOp, arith.FloorDivSIOp, arith.DivSIOp)
_REMAINDERS = (arith.RemUIOp, arith.RemSIOp)


class IndexRanges:
    """Ranges and affine forms of index values, read off constants and loop bounds
    (cached in ``self.ranges``: clear it after rewriting values it may hold)."""

    def __init__(self) -> None:
        self.ranges: dict[SSAValue, tuple[int, int] | None] = {}

    def range(self, value: SSAValue) -> tuple[int, int] | None:
        """Inclusive bounds of an index value, if known."""
        if value in self.ranges:
            return self.ranges[value]
        self.ranges[value] = None
        result = self._range(value)
        self.ranges[value] = result
        return result

    def _range(self, value: SSAValue) -> tuple[int, int] | None:
        constant = static_value(value)
        if constant is not None:
            return constant, constant
        owner = value.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, loop.ForOp) and value is parent.induction_var:
                lb, step, trips = static_value(parent.lb), static_value(parent.step), static_trip_bound(parent)
                if lb is None or step is None or trips is None or trips == 0:
                    return None
                return lb, lb + (trips - 1) * step
            return None
        operands = [self.range(v) for v in owner.operands]
        if any(r is None for r in operands):
            return None
        if isinstance(owner, arith.AddiOp):
            (a, b), (c, d) = operands
            return a + c, b + d
        if isinstance(owner, arith.SubiOp):
            (a, b), (c, d) = operands
            return a - d, b - c
        if isinstance(owner, arith.MuliOp):
            (a, b), (c, d) = operands
            products = (a * c, a * d, b * c, b * d)
            return min(products), max(products)
        if isinstance(owner, (*_DIVISIONS, *_REMAINDERS)):
            (a, b), (c, d) = operands
            if a < 0 or c != d or c <= 0:
                return None
            return (a // c, b // c) if isinstance(owner, _DIVISIONS) else (0, min(b, c - 1))
        if isinstance(owner, arith.MinSIOp | arith.MaxSIOp):
            (a, b), (c, d) = operands
            pick = min if isinstance(owner, arith.MinSIOp) else max
            return pick(a, c), pick(b, d)
        return None

    def affine(self, value: SSAValue) -> Affine:
        """``value`` as an affine sum of atoms (itself an atom when not add/sub/mul)."""
        constant = static_value(value)
        if constant is not None:
            return {None: constant}
        owner = value.owner
        if isinstance(owner, arith.AddiOp | arith.SubiOp):
            left, right = self.affine(owner.lhs), self.affine(owner.rhs)
            sign = 1 if isinstance(owner, arith.AddiOp) else -1
            out = dict(left)
            for atom, coef in right.items():
                out[atom] = out.get(atom, 0) + sign * coef
            return {a: c for a, c in out.items() if c or a is None}
        if isinstance(owner, arith.MuliOp):
            for this, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
                factor = static_value(other)
                if factor is not None:
                    return {a: c * factor for a, c in self.affine(this).items() if c * factor or a is None}
        return {value: 1}

    def bounds(self, form: Affine) -> tuple[int, int] | None:
        low = high = 0
        for atom, coef in form.items():
            if atom is None:
                low, high = low + coef, high + coef
                continue
            r = self.range(atom)
            if r is None:
                return None
            a, b = r[0] * coef, r[1] * coef
            low, high = low + min(a, b), high + max(a, b)
        return low, high


def _build(builder: IndexBuilder, form: Affine) -> SSAValue:
    total = builder.const(form.get(None, 0))
    for atom, coef in form.items():
        if atom is not None:
            total = builder.add(total, builder.mul(atom, builder.const(coef)))
    return total


def _multiple_of(atom: SSAValue, divisor: int) -> bool:
    """``atom`` is a loop's induction variable that only takes non-negative multiples
    of ``divisor`` (a split loop stepping by the tile: ``co = 0, 24, 48, ...``)."""
    owner = atom.owner
    if not isinstance(owner, Block) or not isinstance(parent := owner.parent_op(), loop.ForOp):
        return False
    lb, step = static_value(parent.lb), static_value(parent.step)
    return atom is parent.induction_var and lb is not None and step is not None and lb >= 0 and lb % divisor == 0 and step % divisor == 0


def _split(analysis: IndexRanges, form: Affine, divisor: int) -> tuple[Affine, Affine, Affine] | None:
    """(quotient, divided, remainder) forms of ``form`` by ``divisor`` when the bounds
    prove them; ``divided``: atoms that are multiples of the divisor, each to divide."""
    quotient: Affine = {}
    divided: Affine = {}
    rest: Affine = {}
    for atom, coef in form.items():
        if atom is None:
            quotient[None], rest[None] = coef // divisor, coef % divisor
        elif coef % divisor == 0:
            quotient[atom] = coef // divisor
        elif coef > 0 and _multiple_of(atom, divisor):
            divided[atom] = coef
        else:
            rest[atom] = coef
    rest_bounds, quotient_bounds = analysis.bounds(rest), analysis.bounds(quotient)
    if rest_bounds is None or quotient_bounds is None:
        return None
    if rest_bounds[0] < 0 or rest_bounds[1] >= divisor or quotient_bounds[0] < 0:
        return None
    return quotient, divided, rest


@transformation("simplify_indices")
def simplify_indices(kernel: func.FuncOp) -> int:
    """Fold the index divisions and remainders the loop bounds make trivial; returns
    how many were folded."""
    analysis = IndexRanges()
    folded = 0
    for op in walk_ops(kernel):
        if not isinstance(op, (*_DIVISIONS, *_REMAINDERS)):
            continue
        divisor = static_value(op.rhs)
        if divisor is None or divisor <= 0:
            continue
        parts = _split(analysis, analysis.affine(op.lhs), divisor)
        if parts is None:
            continue
        quotient, divided, rest = parts
        builder = IndexBuilder(kernel, InsertPoint.before(op))
        if isinstance(op, _DIVISIONS):
            value = _build(builder, quotient)
            for atom, coef in divided.items():
                value = builder.add(value, builder.mul(builder.divui(atom, builder.const(divisor)), builder.const(coef)))
        else:
            value = _build(builder, rest)
        op.result.replace_all_uses_with(value)
        analysis.ranges.clear()
        folded += 1
    return folded


__all__ = ["Affine", "IndexRanges", "simplify_indices"]
