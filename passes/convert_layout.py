"""``convert-layout{layout=NHWC}``: run convolution chains in another data layout.

Every NCHW conv2d and pooling op is rebuilt in the target layout (conv weights
transposed OIHW -> HWIO: a constant transpose that ``fold-constants`` folds away), and
the target-layout form of a value then flows on through the ops that do not care about
layout (elementwise ops, concat, pad, slice, reductions), which are rebuilt in it too. A transpose
back to NCHW is made for every converted value, but only ops that need NCHW (reshape,
dense, anything else) keep using it; unused ones are erased. A value converted once is
never converted again, so a conv -> relu -> conv -> add chain costs one transpose in and
one out, and no opposite pair is ever created.

Example (``tensorkiln-opt -p convert-layout,fold-constants,dce``)::

    %c = graph.conv2d %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
    %r = graph.relu %c : tensor<1x4x6x6xf32>

becomes::

    %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : ... -> tensor<1x8x8x3xf32>
    %c = graph.conv2d %t, %w_hwio {layout = "NHWC"} : ... -> tensor<1x6x6x4xf32>
    %r = graph.relu %c : tensor<1x6x6x4xf32>
    %b = graph.transpose %r {perm = array<i64: 0, 3, 1, 2>} : ... -> tensor<1x4x6x6xf32>

How each op converts is registered per op class (:func:`layout_rule`), in this file: the
layout facet of an op, like its compute rule in ``lowering/graph_to_te``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.graph import elementwise, indexing, nn, reduce, shape
from ..dialects.graph.base import GraphOp, int_attr, ints, ints_attr
from ..dialects.graph.layout import KERNEL_LAYOUTS, LAYOUTS, check_layout
from ..dialects.graph.shape import ReshapeOp, TransposeOp
from ..dialects.graph.types import shape_of, tensor_type

#: NCHW -> layout: the permutation of a rank-4 tensor (a transpose's ``perm``)
Perm = tuple[int, ...]


def _inverse(perm: Perm) -> Perm:
    return tuple(perm.index(k) for k in range(len(perm)))


def _permuted(t: Attribute, perm: Perm) -> TensorType:
    dims = shape_of(t)
    return tensor_type([dims[p] for p in perm], t.element_type)


class LayoutConverter:
    """The state of one function's conversion: the target-layout twin of each value."""

    def __init__(self, block: Block, layout: str):
        self.block, self.layout, self.perm = block, layout, LAYOUTS[layout]
        self.twins: dict[SSAValue, SSAValue] = {}

    # -- values --------------------------------------------------------------------------

    def has_twin(self, value: SSAValue) -> bool:
        return value in self.twins

    def twin(self, value: SSAValue) -> SSAValue:
        """``value`` (NCHW, rank 4) in the target layout: its recorded twin, or a new
        transpose placed right after its definition (so it dominates every use)."""
        if value not in self.twins:
            transpose = TransposeOp(value, self.perm)
            self._insert_after_definition(value, [transpose])
            self.twins[value] = transpose.result
        return self.twins[value]

    def broadcast_twin(self, value: SSAValue, rank: int) -> SSAValue:
        """An operand of a rank-``rank`` elementwise op, made to broadcast against target-
        layout values: a twin for a full-rank value, else reshaped to rank 4 (leading 1s,
        numpy's broadcasting) and transposed. Rank-0 values broadcast as they are."""
        value_rank = len(shape_of(value.type))
        if value_rank == rank or value in self.twins:
            return self.twin(value)
        if value_rank == 0:
            return value
        dims = shape_of(value.type)
        reshape = ReshapeOp(value, (1,) * (rank - value_rank) + tuple(dims))
        transpose = TransposeOp(reshape, self.perm)
        self._insert_after_definition(value, [reshape, transpose])
        return transpose.result

    def _insert_after_definition(self, value: SSAValue, ops: Sequence[Operation]) -> None:
        owner = value.owner
        if isinstance(owner, Operation):
            Rewriter.insert_op(ops, InsertPoint.after(owner))
        else:
            Rewriter.insert_op(ops, InsertPoint.at_start(self.block))

    # -- ops -----------------------------------------------------------------------------

    def replace(self, op: Operation, new: Operation) -> None:
        """Put ``new`` (whose result is ``op``'s in the target layout) in place of ``op``;
        ``op``'s users read a transpose back to NCHW, the twin of which is ``new``."""
        back = TransposeOp(new.results[0], _inverse(self.perm))
        Rewriter.insert_op([new, back], InsertPoint.before(op))
        new.results[0].name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(back.result)
        back.result.name_hint = None
        Rewriter.erase_op(op)
        self.twins[back.result] = new.results[0]

    def rebuilt(
        self, op: Operation, operands: Sequence[SSAValue], result_type: Attribute | None = None, **properties: Attribute
    ) -> Operation:
        """A copy of ``op`` on ``operands``, with ``properties`` changed; its result type is
        ``result_type``, by default ``op``'s permuted to the target layout."""
        return type(op).create(
            operands=list(operands),
            result_types=[result_type or _permuted(op.results[0].type, self.perm)],
            properties={**op.properties, **properties},
            attributes=dict(op.attributes),
        )


#: op class -> rule(converter, op): rebuild ``op`` in the target layout, or leave it
LayoutRule = Callable[[LayoutConverter, Operation], None]
LAYOUT_RULES: dict[type[Operation], LayoutRule] = {}


def layout_rule(*op_types: type[Operation]) -> Callable[[LayoutRule], LayoutRule]:
    """Register how ``op_types`` (and their subclasses) convert to another layout."""

    def register(rule: LayoutRule) -> LayoutRule:
        for op_type in op_types:
            LAYOUT_RULES[op_type] = rule
        return rule

    return register


def rule_for(op: Operation) -> LayoutRule | None:
    for cls in type(op).__mro__:
        if cls in LAYOUT_RULES:
            return LAYOUT_RULES[cls]
    return None


def _is_nchw_image(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and len(value.type.get_shape()) == 4


# ---------------------------------------------------------------------------
# layout-sensitive ops: always converted


@layout_rule(nn.Conv2dOp)
def _conv2d(c: LayoutConverter, op: nn.Conv2dOp) -> None:
    if op.data_layout() != "NCHW":
        return
    weight = TransposeOp(op.weight, KERNEL_LAYOUTS[c.layout][1])
    Rewriter.insert_op(weight, InsertPoint.before(op))
    operands = [c.twin(op.input), weight.result] + ([op.bias] if op.bias is not None else [])
    c.replace(op, c.rebuilt(op, operands, layout=StringAttr(c.layout)))


@layout_rule(nn.MaxPool2dOp, nn.AvgPool2dOp, nn.AdaptiveAvgPool2dOp, nn.AdaptiveMaxPool2dOp)
def _pool(c: LayoutConverter, op: nn._Pool2dOp | nn._AdaptivePool2dOp | nn.Resize2dOp) -> None:
    if op.data_layout() != "NCHW":
        return
    c.replace(op, c.rebuilt(op, [c.twin(op.input)], layout=StringAttr(c.layout)))


@layout_rule(nn.Resize2dOp)
def _resize(c: LayoutConverter, op: nn.Resize2dOp) -> None:
    """Resizing moves pixels, never channels: converted when its input already has a twin
    (a UNet's upsampling between convolutions), left in NCHW otherwise."""
    if c.has_twin(op.input):
        _pool(c, op)


# ---------------------------------------------------------------------------
# layout-agnostic ops: converted when an operand already has a twin


@layout_rule(elementwise.UnaryOp, elementwise.BinaryOp, elementwise.WhereOp, elementwise.CastOp)
def _elementwise(c: LayoutConverter, op: GraphOp) -> None:
    if not _is_nchw_image(op.results[0]) or not any(c.has_twin(v) for v in op.operands):
        return
    c.replace(op, c.rebuilt(op, [c.broadcast_twin(v, 4) for v in op.operands]))


@layout_rule(shape.ConcatOp)
def _concat(c: LayoutConverter, op: shape.ConcatOp) -> None:
    if not _is_nchw_image(op.result) or not any(c.has_twin(v) for v in op.operands):
        return
    axis = c.perm.index(op.axis.value.data)
    c.replace(op, c.rebuilt(op, [c.twin(v) for v in op.operands], axis=int_attr(axis)))


@layout_rule(indexing.PadOp)
def _pad(c: LayoutConverter, op: indexing.PadOp) -> None:
    if not _is_nchw_image(op.input) or not c.has_twin(op.input):
        return
    low, high = ints(op.low), ints(op.high)
    c.replace(
        op,
        c.rebuilt(op, [c.twin(op.input)], low=ints_attr([low[a] for a in c.perm]), high=ints_attr([high[a] for a in c.perm])),
    )


@layout_rule(shape.SliceOp)
def _slice(c: LayoutConverter, op: shape.SliceOp) -> None:
    if not _is_nchw_image(op.input) or not c.has_twin(op.input):
        return
    # the same slices, listed in the target's (increasing) axis order
    entries = sorted(zip([c.perm.index(a) for a in ints(op.axes)], ints(op.starts), ints(op.ends), ints(op.steps)))
    fields = ("axes", "starts", "ends", "steps")
    properties = {name: ints_attr([entry[k] for entry in entries]) for k, name in enumerate(fields)}
    c.replace(op, c.rebuilt(op, [c.twin(op.input)], **properties))


@layout_rule(reduce.ReduceOp)
def _reduce(c: LayoutConverter, op: reduce.ReduceOp) -> None:
    """Reduced axes are renamed. Without keepdims the result keeps the unreduced axes in
    target order: used directly where that order is NCHW's (global pooling: (N, C)),
    else the op is left as it is."""
    if not _is_nchw_image(op.input) or not c.has_twin(op.input):
        return
    axes = ints(op.axes) or tuple(range(4))
    new_axes = ints_attr(sorted(c.perm.index(a) for a in axes))
    if op.keepdims.value.data:
        c.replace(op, c.rebuilt(op, [c.twin(op.input)], axes=new_axes))
        return
    kept = [a for a in c.perm if a not in axes]
    if kept != sorted(kept):
        return
    Rewriter.replace_op(op, c.rebuilt(op, [c.twin(op.input)], op.result.type, axes=new_axes))


# ---------------------------------------------------------------------------


def convert_function(function: func.FuncOp, layout: str) -> None:
    """Convert the ops of ``function``'s body (top level) to ``layout``."""
    block = function.body.block
    converter = LayoutConverter(block, layout)
    for op in list(block.ops):
        rule = rule_for(op)
        if rule is not None:
            rule(converter, op)


@dataclass(frozen=True)
class ConvertLayoutPass(ModulePass):
    """Convert convolution/pooling chains to ``layout`` (``NHWC``; ``NCHW``: no change).
    Follow it with ``fold-constants`` (weight transposes), ``simplify`` and ``dce``
    (unused transposes back)."""

    name = "convert-layout"

    layout: str = "NHWC"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_layout(self.layout)
        if self.layout == "NCHW":
            return
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                convert_function(function, self.layout)


__all__ = ["LAYOUT_RULES", "ConvertLayoutPass", "layout_rule"]

# the quantized ops' rules (their own file, registered into this table)
from . import quant_layout  # noqa: E402,F401
