"""``fold-batch-norm``: fold a per-channel constant scale and shift into the conv/dense before it.

Inference batch norm is an affine map per channel; the torch frontend imports it as
``y * scale + shift`` (``graph.mul`` then ``graph.add`` with constants of shape
``(1, C, 1, 1)`` once ``fold-constants`` has run). When ``y`` comes from ``graph.conv2d``
or ``graph.dense`` with constant weights, the map moves into them::

    conv(x, W, b) * s + t   ==   conv(x, W * s[:, None, None, None], b * s + t)
    dense(x, W, b) * s + t  ==   dense(x, W * s[:, None], b * s + t)

so the normalisation costs nothing at run time. The pass rewrites one op at a time:
``graph.mul`` by a per-channel constant (either operand order) scales the weights and
the bias; ``graph.add`` (either order) or ``graph.sub`` (``y - t``) of a per-channel
constant moves into the bias, which is created if the conv/dense had none. A chain
``* s + t`` (batch norm) thus folds completely, as do a lone scale or shift.

"Per channel" means: the constant broadcasts along every axis but the channel axis
(1 for conv2d's NCHW result, 3 for NHWC, the last for dense), where it has the channel count or 1,
and the op's result has exactly the conv/dense's type (no broadcasting to a larger shape).
Accepted scale/shift shapes for a conv: ``(1, C, 1, 1)``, ``(C, 1, 1)``, ``()``, ``(1,)``, ...;
for a dense with ``N`` features: ``(N,)``, ``(1, N)``, ``()``.

Not folded: when the conv/dense result has other users (they need the unscaled value),
when its weight or bias is not a constant (weights given as function inputs), on
integer tensors, through ops in between (``relu`` breaks the chain), ``graph.matmul``
(no bias operand), and divisions by a constant. Folding changes the rounding (the
scale is applied to the weights before the sum instead of after), as in every framework.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from ..dialects.graph import ConstantOp
from ..dialects.graph.base import ints
from ..dialects.graph.elementwise import AddOp, MulOp, SubOp
from ..dialects.graph.linalg import DenseOp
from ..dialects.graph.layout import channel_axis, weight_from_oihw
from ..dialects.graph.nn import Conv2dOp
from ..dialects.graph.types import WeightAttr, is_float
from .fold_constants import constant_array


def per_channel(value: np.ndarray, rank: int, axis: int, channels: int) -> np.ndarray | None:
    """``value`` as a vector of ``channels`` entries if it varies only along ``axis`` of a
    rank-``rank`` result (numpy broadcasting), else None."""
    if value.ndim > rank:
        return None
    aligned = value.reshape((1,) * (rank - value.ndim) + value.shape)
    if any(d != 1 for i, d in enumerate(aligned.shape) if i != axis):
        return None
    if aligned.shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(aligned.reshape(aligned.shape[axis]), (channels,))


def _name(value: SSAValue | None, fallback: str) -> str:
    """``<name of value's weight>.folded``, or ``<fallback>.folded`` for other constants."""
    owner = value.owner if value is not None else None
    if isinstance(owner, ConstantOp) and isinstance(owner.value, WeightAttr):
        name = owner.value.data.name
    else:
        name = fallback
    return name if name.endswith(".folded") else f"{name}.folded"


def _rebuild(producer: Conv2dOp | DenseOp, weight: SSAValue, bias: SSAValue | None) -> Operation:
    """``producer`` with new weight and bias operands (same properties and attributes)."""
    if isinstance(producer, Conv2dOp):
        new = Conv2dOp(
            producer.input,
            weight,
            bias,
            strides=ints(producer.strides),
            padding=ints(producer.padding),
            dilation=ints(producer.dilation),
            groups=producer.groups.value.data,
            layout=producer.data_layout(),
        )
    else:
        new = DenseOp(producer.input, weight, bias)
    new.attributes |= producer.attributes
    return new


def _channel_axes(producer: Conv2dOp | DenseOp, rank: int) -> tuple[int, int]:
    """(channel axis of the producer's result, output-channel axis of its weight)."""
    if isinstance(producer, DenseOp):
        return rank - 1, 0
    layout = producer.data_layout()
    return channel_axis(layout), weight_from_oihw(range(4), layout).index(0)


class FoldAffineIntoProducer(RewritePattern):
    """``conv/dense(x, W, b) {*, +, -} per-channel constant`` -> ``conv/dense(x, W', b')``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, MulOp | AddOp):
            candidates = ((op.lhs, op.rhs), (op.rhs, op.lhs))
        elif isinstance(op, SubOp):
            candidates = ((op.lhs, op.rhs),)
        else:
            return
        for y, other in candidates:
            producer = y.owner
            if not isinstance(producer, Conv2dOp | DenseOp):
                continue
            if op.results[0].type != y.type or not is_float(y.type.element_type):
                continue
            if not y.has_one_use():  # other users need the unscaled value
                continue
            c = constant_array(other)
            w = constant_array(producer.weight)
            b = constant_array(producer.bias) if producer.bias is not None else None
            if c is None or w is None or (producer.bias is not None and b is None):
                continue
            rank = len(y.type.get_shape())
            axis, weight_axis = _channel_axes(producer, rank)
            vector = per_channel(c, rank, axis, w.shape[weight_axis])
            if vector is None:
                continue
            self._fold(op, producer, w, weight_axis, b, vector.astype(np.float64), rewriter)
            return

    @staticmethod
    def _fold(
        op: Operation,
        producer: Conv2dOp | DenseOp,
        w: np.ndarray,
        weight_axis: int,
        b: np.ndarray | None,
        vector: np.ndarray,
        rewriter: PatternRewriter,
    ) -> None:
        dtype = w.dtype
        new_w = None
        if isinstance(op, MulOp):
            scale = np.expand_dims(vector, [k for k in range(w.ndim) if k != weight_axis])
            new_w = (w.astype(np.float64) * scale).astype(dtype)
            new_b = (b.astype(np.float64) * vector).astype(dtype) if b is not None else None
        else:
            shift = vector if isinstance(op, AddOp) else -vector
            base = b.astype(np.float64) if b is not None else np.zeros_like(shift)
            new_b = (base + shift).astype(dtype)
        new_ops: list[Operation] = []
        weight = producer.weight
        short = producer.name.removeprefix("graph.")
        if new_w is not None:
            w_op = ConstantOp.from_array(new_w, _name(producer.weight, f"{short}.weight"))
            new_ops.append(w_op)
            weight = w_op.result
        bias = None
        if new_b is not None:
            b_op = ConstantOp.from_array(new_b, _name(producer.bias, f"{short}.bias"))
            new_ops.append(b_op)
            bias = b_op.result
        new = _rebuild(producer, weight, bias)
        new_ops.append(new)
        rewriter.insert(new_ops, InsertPoint.before(producer))
        rewriter.replace(op, [], [new.results[0]])
        rewriter.erase(producer)


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold per-channel constant scales and shifts into the conv2d/dense before them
    (inference batch norm; see the module docstring)."""

    name = "fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldAffineIntoProducer()], dce_enabled=False),
            apply_recursively=True,
        ).rewrite_module(op)
