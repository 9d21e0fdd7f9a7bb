"""How ``convert-layout`` converts the quantized ops (``dialects/graph/quant.py``): the
layout facet of each, registered in ``passes/convert_layout.py``'s table.

* ``qconv2d`` always converts, as ``conv2d``: its weight transposed OIHW -> HWIO (an int8
  constant transpose that ``fold-constants`` folds), per-channel scales unchanged (they
  run along the output channels wherever those are);
* ``quantize`` / ``dequantize`` are elementwise: converted when their input already has
  a target-layout twin, a per-channel ``axis`` renamed to where that axis went. So a
  chain ``qconv2d -> dequantize -> add -> relu -> quantize -> qconv2d`` stays channels-last.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph.base import int_attr
from ..dialects.graph.layout import KERNEL_LAYOUTS
from ..dialects.graph.quant import DequantizeOp, QConv2dOp, QuantizeOp
from ..dialects.graph.shape import TransposeOp
from .convert_layout import LayoutConverter, layout_rule


@layout_rule(QConv2dOp)
def _qconv2d(c: LayoutConverter, op: QConv2dOp) -> None:
    if op.layout.data != "NCHW":
        return
    weight = TransposeOp(op.weight, KERNEL_LAYOUTS[c.layout][1])
    Rewriter.insert_op(weight, InsertPoint.before(op))
    operands = list(op.operands)
    operands[0], operands[1] = c.twin(op.input), weight.result
    c.replace(op, c.rebuilt(op, operands, layout=StringAttr(c.layout)))


@layout_rule(QuantizeOp, DequantizeOp)
def _quantize(c: LayoutConverter, op: QuantizeOp | DequantizeOp) -> None:
    shape = op.input.type.get_shape()
    if len(shape) != 4 or not c.has_twin(op.input):
        return
    axis = op.channel_axis(shape)
    properties = {} if axis is None else {"axis": int_attr(c.perm.index(axis))}
    c.replace(op, c.rebuilt(op, [c.twin(op.input), op.scale, op.zero_point], **properties))
