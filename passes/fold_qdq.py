"""``fold-qdq``: dequantize -> product -> quantize islands become quantized products.

A quantized model in QDQ form (what ONNX Runtime's quantizer and torch's PT2E flow
write, and what ``tk.quantize`` makes) computes every product in float32 between a
``dequantize`` of its operands and a ``quantize`` of its result. Where that island is
a dense layer, a matmul with a constant right operand or a conv2d, it is exactly an int8
product with a requantize epilogue (TensorRT and ONNX Runtime read QDQ graphs the same
way)::

    %xf = graph.dequantize %xq, %xs, %xz            (per tensor)
    %wf = graph.dequantize %wq, %ws, %wz {axis = 0}  (constant int8, per tensor or per output channel)
    %y  = graph.conv2d %xf, %wf, %bf                 (bias: float constant, or a dequantized int32)
    %r  = graph.relu %y                              (optional)
    %q  = graph.quantize %r, %ys, %yz                (per tensor, the only user)

becomes ``graph.qconv2d %xq, %wq, %bq quant(%xs, %xz, %ws, %wz, %ys, %yz) {relu = ...}``
with the bias quantized to int32 at scale ``xs * ws`` (rounded half to even). A matmul's
constant right operand becomes a qdense weight (transposed; ``fold-constants`` folds it).

Products with dequantized operands that do not fit stay in float32, visibly: the op gets
the attribute ``tk.qdq = "<why>"`` and the reason is logged on ``tensorkiln.passes`` at
info level (the weight is not a constant, a per-channel scale runs along the wrong axis,
the result is not quantized, ...). Run it before ``fold-constants``, which would fold the
weights' dequantize into float32 constants.

Then ops that only pick or move elements between a dequantize and a quantize at one
scale and zero point (a max pool, a reshape, a transpose) run on the quantized values
(``fold_qdq_selections.py``), and a quantized sum of two dequantized bytes multiplies by
the reciprocal of its scale where that is exact for every input (``fold_qdq_reciprocal.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph import ConstantOp, GraphOp
from ..dialects.graph.elementwise import ReluOp
from ..dialects.graph.linalg import BatchMatMulOp, DenseOp, MatMulOp
from ..dialects.graph.nn import Conv2dOp
from ..dialects.graph.quant import DequantizeOp, QConv2dOp, QDenseOp, QuantizeOp
from ..dialects.graph.shape import ReshapeOp, TransposeOp
from ..dialects.graph.types import numpy_dtype
from .fold_qdq_reciprocal import quantize_by_reciprocal
from .fold_qdq_selections import fold_selection

log = logging.getLogger("tensorkiln.passes")

#: the attribute on a product left in float32, saying why
SKIPPED_ATTR = "tk.qdq"

#: the float products this pass turns into quantized ones
PRODUCTS = (DenseOp, MatMulOp, BatchMatMulOp, Conv2dOp)


class NotFolded(Exception):
    """Why an island stays in float32 (its message is the reason)."""


def _dequantized(value: SSAValue, what: str) -> DequantizeOp:
    owner = value.owner
    if not isinstance(owner, DequantizeOp):
        raise NotFolded(f"the {what} is not dequantized")
    return owner


def _constant(value: SSAValue) -> np.ndarray | None:
    return value.owner.array() if isinstance(value.owner, ConstantOp) else None


#: the most ops of a constant computation evaluated here (a weight quantized by the graph)
_MAX_CONSTANT_CHAIN = 4


def _as_constant(value: SSAValue, depth: int = 0) -> SSAValue | None:
    """``value`` as a ``graph.constant`` when a short chain of ops on constants computes it
    (a quantizer that quantizes a shared weight in the graph: ``quantize(constant)``),
    evaluated now with the ops' references; None when it depends on inputs. fold-qdq
    runs before fold-constants (which would fold the dequantize of a weight too)."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return value
    if not isinstance(owner, GraphOp) or owner.regions or not owner.operands or depth >= _MAX_CONSTANT_CHAIN:
        return None
    sources = [_as_constant(v, depth + 1) for v in owner.operands]
    if any(s is None for s in sources):
        return None
    array = np.asarray(owner.reference(*(s.owner.array() for s in sources)))
    constant = ConstantOp.from_array(np.ascontiguousarray(array.astype(numpy_dtype(value.type.element_type))), "weight.q")
    Rewriter.insert_op(constant, InsertPoint.before(owner))
    return constant.result


def _per_tensor(dq: DequantizeOp | QuantizeOp, what: str) -> None:
    if dq.scale.type.get_shape() not in ((), (1,)):
        raise NotFolded(f"the {what} is quantized per channel (only weights may be)")


def _matrix_weight(value: SSAValue) -> SSAValue:
    """A batch matmul's right operand without the reshape that only adds leading 1s (how
    ONNX's MatMul of a (B, S, K) activation by a (K, N) weight arrives)."""
    owner = value.owner
    if isinstance(owner, ReshapeOp):
        shape, source = value.type.get_shape(), owner.input.type.get_shape()
        if len(source) == 2 and all(d == 1 for d in shape[:-2]) and tuple(shape[-2:]) == tuple(source):
            return owner.input
    return value


def _weight_axis(op: Operation) -> int:
    """The output-channel axis of the product's float weight."""
    if isinstance(op, MatMulOp | BatchMatMulOp):
        return 1
    if isinstance(op, Conv2dOp):
        return 0 if op.data_layout() == "NCHW" else 3
    return 0


def _quantized_result(op: Operation) -> tuple[QuantizeOp, ReluOp | None]:
    """The quantize reading the product (through one relu), each the only user."""
    value, relu = op.results[0], None
    users = [use.operation for use in value.uses]
    if len(users) == 1 and isinstance(users[0], ReluOp):
        relu = users[0]
        value = relu.result
        users = [use.operation for use in value.uses]
    if len(users) != 1 or not isinstance(users[0], QuantizeOp):
        raise NotFolded("the result is not quantized (its only user must be a quantize, after at most a relu)")
    quantize = users[0]
    _per_tensor(quantize, "result")
    return quantize, relu


def _bias(bias: SSAValue | None, x: DequantizeOp, w: DequantizeOp, before: Operation) -> SSAValue | None:
    """The float bias as int32 at scale ``x_scale * w_scale`` (a new constant)."""
    if bias is None:
        return None
    scales = [_constant(v) for v in (x.scale, w.scale)]
    if any(s is None for s in scales):
        raise NotFolded("the bias needs constant input and weight scales to be quantized")
    owner = bias.owner
    if isinstance(owner, DequantizeOp) and all(_constant(v) is not None for v in owner.operands):
        values = owner.reference(*(_constant(v) for v in owner.operands))
    elif (values := _constant(bias)) is None:
        raise NotFolded("the bias is not a constant")
    scale = (np.float32(scales[0].reshape(-1)[0]) * scales[1].astype(np.float32)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        quantized = np.rint(values.astype(np.float64) / scale.astype(np.float64))
    quantized = np.where(np.isfinite(quantized), quantized, 0)
    limit = 2**31 - 1
    constant = ConstantOp.from_array(np.clip(quantized, -limit, limit).astype(np.int32), "bias.q")
    Rewriter.insert_op(constant, InsertPoint.before(before))
    return constant.result


def _fold(op: Operation) -> None:
    """Replace the island around the float product ``op`` (raise NotFolded if it is not one)."""
    if isinstance(op, MatMulOp | BatchMatMulOp):
        data, weight, bias = op.lhs, _matrix_weight(op.rhs), None
        if len(weight.type.get_shape()) != 2:
            raise NotFolded("the right operand is not a matrix (both operands are run-time activations: computed in float32)")
    else:
        data, weight, bias = op.operands[0], op.operands[1], getattr(op, "bias", None)
    x = _dequantized(data, "input")
    w = _dequantized(weight, "weight")
    _per_tensor(x, "input")
    weight_q = _as_constant(w.input)
    if weight_q is None:
        raise NotFolded("the weight is not a constant")
    axis = _weight_axis(op)
    if w.scale.type.get_shape() not in ((), (1,)) and w.channel_axis(w.input.type.get_shape()) != axis:
        raise NotFolded(f"the weight's per-channel axis is not its output-channel axis {axis}")
    if x.dtype.data == "i32" or w.dtype.data == "i32":
        raise NotFolded("int32 operands are not int8 products")
    quantize, relu = _quantized_result(op)
    bias_q = _bias(bias, x, w, op)
    params = [x.scale, x.zero_point, w.scale, w.zero_point, quantize.scale, quantize.zero_point]
    relu_flag = relu is not None
    if isinstance(op, Conv2dOp):
        strides, padding, dilation = (tuple(a.get_values()) for a in (op.strides, op.padding, op.dilation))
        new = QConv2dOp(x.input, weight_q, bias_q, params, strides, padding, dilation, op.groups.value.data, op.data_layout(), relu_flag)
        ops: list[Operation] = [new]
    else:
        w_int = weight_q
        ops = []
        if isinstance(op, MatMulOp | BatchMatMulOp):  # (K, N) -> qdense's (N, K)
            transpose = TransposeOp(w_int, (1, 0))
            ops.append(transpose)
            w_int = transpose.result
        new = QDenseOp(x.input, w_int, bias_q, params, relu_flag)
        ops.append(new)
    Rewriter.insert_op(ops, InsertPoint.before(quantize))
    quantize.result.replace_all_uses_with(new.result)
    for dead in (quantize, relu, op):
        if dead is not None:
            Rewriter.erase_op(dead)


def _has_dequantized_operand(op: Operation) -> bool:
    return any(isinstance(v.owner, DequantizeOp) for v in op.operands)


def fold_qdq(module: ModuleOp) -> list[tuple[str, str]]:
    """Fold every QDQ island of ``module`` in place; returns (op name, reason) for the
    products with dequantized operands left in float32."""
    skipped = []
    for op in [o for o in module.walk() if isinstance(o, PRODUCTS) and _has_dequantized_operand(o)]:
        try:
            _fold(op)
        except NotFolded as why:
            op.attributes[SKIPPED_ATTR] = StringAttr(str(why))
            skipped.append((op.name, str(why)))
            log.info("fold-qdq: %s stays in float32: %s", op.name, why)
    for quantize in [o for o in module.walk() if isinstance(o, QuantizeOp)]:
        fold_selection(quantize)
    for quantize in [o for o in module.walk() if isinstance(o, QuantizeOp)]:
        quantize_by_reciprocal(quantize)
    return skipped


@dataclass(frozen=True)
class FoldQDQPass(ModulePass):
    """dequantize -> dense/matmul/conv2d -> quantize islands as int8 products (see the module doc)."""

    name = "fold-qdq"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_qdq(op)


__all__ = ["SKIPPED_ATTR", "FoldQDQPass", "fold_qdq"]
