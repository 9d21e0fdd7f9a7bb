"""``simplify``: algebraic identities that are exact in IEEE floating point.

Each rewrite removes an op (or merges two) only when the result is bit-for-bit the same
for every input, NaN, infinities and signed zeros included:

=====================================  =========================================================
``x * 1``, ``1 * x``                   x (also for -0.0, inf, NaN)
``x / 1``                              x
``x + (-0.0)``, ``(-0.0) + x``         x; **not** ``x + 0.0``: ``-0.0 + 0.0`` is ``+0.0``
``x - 0.0``                            x; **not** ``x - (-0.0)`` (that is ``x + 0.0``)
``x + 0``, ``x - 0`` on integers       x (no signed zero in integers)
``neg(neg(x))``                        x
``transpose(transpose(x, p), q)``      ``transpose(x, p∘q)``, or x when the composition is identity
``transpose(x)`` with identity perm    x
``transpose(x)`` moving 1-sized axes   ``reshape(x)`` (same element order)
``reshape(reshape(x))``                one reshape; x when the shapes are equal
``reshape(x)`` to x's own shape        x
``cast(x)`` to x's own type            x
``broadcast_to(x)`` to x's own shape   x
``slice(x)`` of the whole tensor       x
=====================================  =========================================================

A constant operand is recognised when it is a ``graph.constant`` whose elements are all
equal (a splat, by reference or ``dense<...>``); the rewrite applies only when the
result type is exactly ``x``'s type, so an identity that broadcasts ``x`` to a larger
shape (``x(4) * ones(3, 4)``) or changes it is kept.

Never rewritten (not exact): ``x * 0 -> 0`` (NaN * 0 is NaN, -1 * 0 is -0),
``x + 0.0 -> x``, ``0 - x -> neg(x)`` (``0 - 0`` is +0, ``neg(0)`` is -0), ``x / c -> x * (1/c)``,
cast chains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ..dialects.graph.base import ints
from ..dialects.graph.elementwise import AddOp, CastOp, DivOp, MulOp, NegOp, SubOp
from ..dialects.graph.shape import BroadcastToOp, ReshapeOp, SliceOp, TransposeOp
from ..dialects.graph.types import is_float, is_float_dtype, shape_of
from .fold_constants import constant_array

# ---------------------------------------------------------------------------
# recognising splat constants


def splat_value(value: SSAValue) -> np.generic | None:
    """The single element value of a splat constant (all elements equal, bitwise for
    signed zeros), or None when ``value`` is not such a constant."""
    array = constant_array(value)
    if array is None or array.size == 0:
        return None
    flat = array.reshape(-1)
    first = flat[0]
    if not np.all(flat == first):
        return None
    if is_float_dtype(array.dtype) and not np.all(np.signbit(flat) == np.signbit(first)):
        return None  # +0.0 and -0.0 compare equal but are different splats
    return first


def is_splat(value: SSAValue, expected: float, *, negative_zero: bool | None = None) -> bool:
    """``value`` is a constant splat equal to ``expected`` (never for NaN); for zero,
    ``negative_zero`` says which signed zero a float splat must be (None: either)."""
    v = splat_value(value)
    if v is None or v != expected:
        return False
    if negative_zero is not None and isinstance(v, np.floating):
        return bool(np.signbit(v)) == negative_zero
    return True


def _forward(rewriter: PatternRewriter, op, value: SSAValue) -> None:
    """Replace ``op``'s result by ``value`` (their types are equal) and erase ``op``."""
    rewriter.replace(op, [], [value])


def _identity_operand(op, x: SSAValue, other: SSAValue, neutral: float, negative_zero: bool | None) -> bool:
    """``op(x, other)`` is ``x`` when ``other`` is the splat ``neutral`` and the op does not
    broadcast ``x`` to another type."""
    return op.result.type == x.type and is_splat(other, neutral, negative_zero=negative_zero)


# ---------------------------------------------------------------------------
# arithmetic identities


class MulByOne(RewritePattern):
    """``x * 1 -> x``, ``1 * x -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        for x, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if _identity_operand(op, x, other, 1, None):
                return _forward(rewriter, op, x)


class DivByOne(RewritePattern):
    """``x / 1 -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter) -> None:
        if _identity_operand(op, op.lhs, op.rhs, 1, None):
            _forward(rewriter, op, op.lhs)


class AddZero(RewritePattern):
    """``x + (-0.0) -> x`` (either side); ``x + 0 -> x`` for integers only."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        negative_zero = True if is_float(op.result.type.element_type) else None
        for x, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if _identity_operand(op, x, other, 0, negative_zero):
                return _forward(rewriter, op, x)


class SubZero(RewritePattern):
    """``x - 0.0 -> x`` (+0.0 only); ``x - 0 -> x`` for integers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter) -> None:
        negative_zero = False if is_float(op.result.type.element_type) else None
        if _identity_operand(op, op.lhs, op.rhs, 0, negative_zero):
            _forward(rewriter, op, op.lhs)


class DoubleNeg(RewritePattern):
    """``neg(neg(x)) -> x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, NegOp):
            _forward(rewriter, op, inner.input)


# ---------------------------------------------------------------------------
# shape identities


class ComposeTransposes(RewritePattern):
    """``transpose(transpose(x, p), q) -> transpose(x, [p[i] for i in q])``; an identity
    permutation (composed or not) is removed."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        perm = ints(op.perm)
        if list(perm) == list(range(len(perm))):
            return _forward(rewriter, op, op.input)
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        inner_perm = ints(inner.perm)
        composed = [inner_perm[p] for p in perm]
        if composed == list(range(len(composed))):
            return _forward(rewriter, op, inner.input)
        rewriter.replace(op, TransposeOp(inner.input, composed))


class UnitTransposeToReshape(RewritePattern):
    """A transpose that moves only size-1 axes keeps the element order: a reshape
    (``(N, 1, 1, C) -> (N, C, 1, 1)``), which composes with reshapes around it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        dims = shape_of(op.input.type)
        moved = [p for p in ints(op.perm) if dims[p] != 1]
        if moved == sorted(moved):
            rewriter.replace(op, ReshapeOp(op.input, shape_of(op.result.type)))


class ComposeReshapes(RewritePattern):
    """``reshape(reshape(x)) -> reshape(x)``; a reshape to the input's own type is removed."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.result.type == op.input.type:
            return _forward(rewriter, op, op.input)
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        if op.result.type == inner.input.type:
            return _forward(rewriter, op, inner.input)
        rewriter.replace(op, ReshapeOp(inner.input, op.target_shape()))


class NoOpCast(RewritePattern):
    """``cast(x)`` to x's own type -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter) -> None:
        if op.result.type == op.input.type:
            _forward(rewriter, op, op.input)


class NoOpBroadcast(RewritePattern):
    """``broadcast_to(x)`` to x's own shape -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastToOp, rewriter: PatternRewriter) -> None:
        if op.result.type == op.input.type:
            _forward(rewriter, op, op.input)


class WholeSlice(RewritePattern):
    """``slice(x)`` keeping every element -> x.

    A result with x's own shape can only come from start 0, end = dim, step 1 on each
    sliced axis (or a step over an axis of size <= 1), so the type comparison suffices.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        if op.result.type == op.input.type:
            _forward(rewriter, op, op.input)


SIMPLIFY_PATTERNS: tuple[type[RewritePattern], ...] = (
    MulByOne,
    DivByOne,
    AddZero,
    SubZero,
    DoubleNeg,
    ComposeTransposes,
    UnitTransposeToReshape,
    ComposeReshapes,
    NoOpCast,
    NoOpBroadcast,
    WholeSlice,
)


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    """Apply the exact algebraic identities of this module (see its docstring).

    Ops left without users (the inner op of a composed pair, a constant ``1``) stay:
    ``dce`` removes them.
    """

    name = "simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([p() for p in SIMPLIFY_PATTERNS], dce_enabled=False),
            apply_recursively=True,
        ).rewrite_module(op)
