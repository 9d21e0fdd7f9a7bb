"""``legalize-16bit-floats``: float16 and bfloat16 tensors are stored in 16 bits and
computed in float32.

As torch's CPU kernels do (their "opmath" type) and TVM's BF16 legalization, every op
that computes on element values runs in float32 and rounds its result to the 16-bit
type once (round to nearest even)::

    %y = graph.exp %x : tensor<4xbf16> -> tensor<4xbf16>

becomes::

    %x32 = graph.cast %x : tensor<4xbf16> -> tensor<4xf32>
    %y32 = graph.exp %x32 : tensor<4xf32> -> tensor<4xf32>
    %y = graph.cast %y32 : tensor<4xf32> -> tensor<4xbf16>

So a reduction or a matmul accumulates in float32, not in 16 bits (a float16 sum of
a few hundred terms loses most of its digits). No CPU we target computes in bfloat16
at all, and LLVM's bfloat16 conversions call runtime functions the JIT cannot resolve.

Ops that only move, select or fill elements (:attr:`GraphOp.MOVES_DATA`: reshape,
transpose, slice, concat, gather, where, ...) stay in 16 bits, and so do constants:
``fold-constants`` turns a cast weight into a float32 constant at compile time. A cast
between bfloat16 and any type but float32 goes through float32, as torch converts (a
float64 is rounded to float32 first, then to bfloat16).

Afterwards bfloat16 appears only in casts to and from float32 and in ops that move
data, all that ``lowering/bf16_storage.py`` supports. Running it twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, bf16, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph.base import GraphOp
from ..dialects.graph.elementwise import CastOp

#: the element types stored in 16 bits and computed in float32
SIXTEEN_BIT_FLOATS = (bf16, f16)


def is_16bit_float(t: Attribute) -> bool:
    """Whether ``t`` is a float16 or bfloat16 tensor type."""
    return isinstance(t, TensorType) and t.element_type in SIXTEEN_BIT_FLOATS


def _to_f32(value: SSAValue, before: Operation) -> SSAValue:
    cast = CastOp(value, f32)
    Rewriter.insert_op(cast, InsertPoint.before(before))
    return cast.result


def _route_cast(op: CastOp) -> None:
    """A cast between bfloat16 and a type other than float32 goes through float32."""
    frm, to = op.input.type.element_type, op.result.type.element_type
    if bf16 in (frm, to) and f32 not in (frm, to) and frm != to:
        op.operands[0] = _to_f32(op.input, op)


def replace_with_widened(op: GraphOp, widened: GraphOp, is_narrow: Callable[[Attribute], bool], pass_name: str) -> None:
    """Replace ``op`` by ``widened`` (the same op on its narrow operands cast wider, not
    yet inserted), whose result is cast back to ``op``'s type where that is narrow."""
    if is_narrow(widened.results[0].type):
        raise NotImplementedError(f"{pass_name}: '{op.name}' has no wider form")
    Rewriter.insert_op(widened, InsertPoint.before(op))
    result = widened.results[0]
    if is_narrow(op.results[0].type):
        back = CastOp(result, op.results[0].type.element_type)
        Rewriter.insert_op(back, InsertPoint.before(op))
        result = back.result
    op.results[0].replace_all_uses_with(result)
    Rewriter.erase_op(op)


def _compute_in_f32(op: GraphOp) -> None:
    operands = [_to_f32(v, op) if is_16bit_float(v.type) else v for v in op.operands]
    replace_with_widened(op, op.in_float32(operands), is_16bit_float, "legalize-16bit-floats")


def uses_16bit_floats(op: Operation) -> bool:
    """Whether ``op`` or an op inside it has a float16 or bfloat16 tensor operand or result."""
    return any(is_16bit_float(v.type) for o in op.walk() for v in (*o.operands, *o.results))


def legalize_16bit_floats(module: ModuleOp) -> None:
    """Rewrite ``module`` in place so that 16-bit floats are stored, never computed."""
    for op in list(module.walk()):
        if isinstance(op, CastOp):
            _route_cast(op)
        elif isinstance(op, GraphOp) and not op.MOVES_DATA:
            if any(is_16bit_float(v.type) for v in (*op.operands, *op.results)):
                _compute_in_f32(op)


@dataclass(frozen=True)
class Legalize16BitFloatsPass(ModulePass):
    """Compute float16/bfloat16 ops in float32, rounding each result (see the module doc)."""

    name = "legalize-16bit-floats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        legalize_16bit_floats(op)
