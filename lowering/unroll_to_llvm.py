"""``unrolled`` loops -> straight-line LLVM code: the body once per iteration, the
induction variable a constant (a loop ``convert_unrolled`` declines is lowered serially;
LLVM may still unroll it)."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.ir import Block

from ..dialects import loop
from . import llvm_ops
from .llvm_converter import FunctionConverter, constant_int, loop_converter, static_upper_bound
from .scalar_to_llvm import int_constant

#: an ``unrolled`` loop with more iterations than this is lowered as a serial loop
MAX_UNROLL = 64


@loop_converter("unrolled")
def convert_unrolled(conv: FunctionConverter, op: loop.ForOp) -> bool:
    """The body once per iteration, the induction variable a constant, when the
    lower bound and step are constants and the trip count is at most ``MAX_UNROLL``.

    With a constant upper bound the copies are straight-line code; with an upper
    bound only bounded at compile time (``arith.minsi %c4, %rest``: the inner loop
    of a split), each copy is guarded by ``iv < ub`` and the first failing guard
    leaves. Otherwise it declines: the loop is lowered serially."""
    lb, step = constant_int(op.lb), constant_int(op.step)
    bound = static_upper_bound(op.ub)
    if lb is None or step is None or step <= 0 or bound is None:
        return False
    iterations = range(lb, bound, step)
    if len(iterations) > MAX_UNROLL:
        return False
    guarded = constant_int(op.ub) is None
    exit_block = Block()
    for k in iterations:
        iv = int_constant(conv.b, k)
        if guarded:
            copy = Block()
            conv.region.add_block(copy)
            runs = conv.emit(llvm_ops.make(llvm.ICmpOp, iv, conv.values[op.ub], llvm_ops.icmp_predicate("slt")))
            conv.emit(llvm_ops.cond_br(runs, copy, exit_block))
            conv.block = copy
        conv.values[op.induction_var] = iv
        conv.convert_block_ops(op.body.block)
    if guarded:
        conv.emit(llvm_ops.br(exit_block))
        conv.region.add_block(exit_block)
        conv.block = exit_block
    return True


__all__ = ["MAX_UNROLL", "convert_unrolled"]
