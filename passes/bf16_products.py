"""``bf16-products``: linear layers in bfloat16 products with float32 accumulation
(``graph.bf16_dense``: ``vdpbf16ps`` on AVX512_BF16).

* A dense layer of a bfloat16 model (operands bfloat16) becomes a ``bf16_dense`` reading
  them as stored (no float32 copy of the activations), its float32 result rounded back
  to bfloat16 once, as ``legalize-16bit-floats`` would (and torch does); a bfloat16 bias
  is widened (exactly) to float32.
* With ``autocast=true`` (``tk.build(..., precision="bf16")``), a float32 dense layer, or
  a matmul / batch matmul whose right operand is a constant matrix, also runs its
  products in bfloat16 as ``torch.autocast("cpu", torch.bfloat16)`` does: its input is
  cast to bfloat16 first (a cast the producer's kernel absorbs when fused), its constant
  weight rounded at compile time; the result stays float32 (torch's autocast rounds a
  linear layer's output to bfloat16; we keep the float32 sums).

Run it before ``legalize-16bit-floats`` (which would compute a bfloat16 dense in float32)
and before ``fold-constants`` folds the weights (a transpose of a matmul's weight is
folded after). Example (``-p 'bf16-products{autocast=true}'``)::

    %y = graph.dense %x, %w : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>

becomes::

    %c = graph.cast %x : tensor<8x64xf32> -> tensor<8x64xbf16>
    %y = graph.bf16_dense %c, %w : tensor<8x64xbf16>, tensor<32x64xf32> -> tensor<8x32xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, bf16, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph import ConstantOp
from ..dialects.graph.elementwise import CastOp
from ..dialects.graph.linalg import BatchMatMulOp, DenseOp, MatMulOp
from ..dialects.graph.quant_bf16 import BF16DenseOp
from ..dialects.graph.shape import ReshapeOp, TransposeOp


def _element(value: SSAValue):
    return value.type.element_type


def _from_constants(value: SSAValue) -> bool:
    """Whether ``value`` is computed from constants alone (folded later)."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return True
    return isinstance(owner, Operation) and bool(owner.operands) and all(_from_constants(v) for v in owner.operands)


class _Rewrite:
    def __init__(self, op: Operation):
        self.op = op

    def insert(self, new: Operation) -> SSAValue:
        Rewriter.insert_op(new, InsertPoint.before(self.op))
        return new.results[0]

    def cast(self, value: SSAValue, to) -> SSAValue:
        return value if _element(value) == to else self.insert(CastOp(value, to))

    def replace(self, result: SSAValue) -> None:
        want = _element(self.op.results[0])
        result = self.cast(result, want)
        self.op.results[0].replace_all_uses_with(result)
        Rewriter.erase_op(self.op)


def _dense(op: DenseOp, autocast: bool) -> None:
    types = {_element(v) for v in (op.input, op.weight)}
    if bf16 in types and types <= {bf16, f32}:
        r = _Rewrite(op)
        bias = r.cast(op.bias, f32) if op.bias is not None else None
        r.replace(r.insert(BF16DenseOp(op.input, op.weight, bias)))
    elif autocast and types == {f32} and _from_constants(op.weight):
        r = _Rewrite(op)
        r.replace(r.insert(BF16DenseOp(r.cast(op.input, bf16), op.weight, op.bias)))


def _matmul(op: MatMulOp | BatchMatMulOp) -> None:
    """``x @ W`` (W a constant matrix, or batches of one) as ``bf16_dense(x, W^T)``."""
    w_shape = op.rhs.type.get_shape()
    if _element(op.lhs) != f32 or _element(op.rhs) != f32 or not _from_constants(op.rhs):
        return
    if any(d != 1 for d in w_shape[:-2]) or len(op.lhs.type.get_shape()) < len(w_shape):
        return
    r = _Rewrite(op)
    weight = op.rhs
    if len(w_shape) > 2:
        weight = r.insert(ReshapeOp(weight, w_shape[-2:]))
    weight = r.insert(TransposeOp(weight, (1, 0)))
    r.replace(r.insert(BF16DenseOp(r.cast(op.lhs, bf16), weight)))


def bf16_products(module: ModuleOp, autocast: bool = False) -> None:
    """Rewrite ``module``'s linear layers in place (see the module doc)."""
    for op in list(module.walk()):
        if isinstance(op, DenseOp):
            _dense(op, autocast)
        elif autocast and isinstance(op, MatMulOp | BatchMatMulOp):
            _matmul(op)


@dataclass(frozen=True)
class BF16ProductsPass(ModulePass):
    """Linear layers as bfloat16 products with float32 sums (see the module doc)."""

    name = "bf16-products"

    autocast: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bf16_products(op, self.autocast)


__all__ = ["BF16ProductsPass", "bf16_products"]
