"""graph -> te: replace every graph op by the ``te.compute`` ops its compute rule emits.

An op whose rule emits row stages and their consumer (softmax: row maximum, row sum,
normalization) gets them grouped in one ``graph.fused`` (:func:`group_row_stages`):
one kernel per row instead of one kernel per compute.

Constants stay graph ops: they are data, bound to buffers by ``te-to-loop``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ...dialects.byoc import CallOp as ExternalCallOp  # lowered by te-to-loop to a call of its symbol
from ...dialects import te
from ...dialects.graph import ConstantOp, FusedOp, GraphOp, YieldOp
from ...dialects.graph.fusion import fused_body
from ...dialects.graph.types import is_float
from ..row_stages import reduces, row_stages
from ..te_builder import TEBuilder
from . import bf16_products, bitcast, dense_linalg, elementwise, indexing, linalg, nn, quant, quant_products, random, recurrent, reduce, shape  # noqa: F401  (register their rules)
from .registry import COMPUTE_RULES, compute_rule, tag_of

__all__ = ["COMPUTE_RULES", "GraphToTEPass", "compute_rule", "unsupported_ops"]


def unsupported_ops(module: ModuleOp) -> dict[str, int]:
    """Ops in ``module``'s functions that cannot be lowered (graph ops without a compute
    rule, and ops of other dialects), with their counts."""
    missing: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, ModuleOp | func.FuncOp | func.ReturnOp | FusedOp | YieldOp | ConstantOp | ExternalCallOp):
            continue
        if not isinstance(op, GraphOp) or type(op) not in COMPUTE_RULES:
            missing[op.name] = missing.get(op.name, 0) + 1
    return missing


@dataclass(frozen=True)
class GraphToTEPass(ModulePass):
    """Lower graph ops to tensor expressions (``te.compute``) by their compute rules."""

    name = "graph-to-te"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        missing = unsupported_ops(op)
        if missing:
            listed = ", ".join(f"{name} (x{n})" for name, n in sorted(missing.items()))
            raise PassFailedException(f"graph-to-te: no compute rule for {listed}")
        for graph_op in [o for o in op.walk() if isinstance(o, GraphOp) and not isinstance(o, ConstantOp)]:
            builder = Builder(InsertPoint.before(graph_op))
            first, top_level = graph_op.prev_op, not isinstance(graph_op.parent_op(), FusedOp)
            value = COMPUTE_RULES[type(graph_op)](TEBuilder(builder), graph_op)
            graph_op.results[0].replace_all_uses_with(value)
            emitted = _ops_between(first, graph_op)
            graph_op.detach()
            graph_op.erase()
            if top_level:
                group_row_stages(emitted, tag_of(graph_op))
        inline_scalar_constants(op)


def _ops_between(first: Operation | None, last: Operation) -> list[Operation]:
    """The ops after ``first`` (from the block's start when None) and before ``last``."""
    ops, op = [], last.prev_op
    while op is not None and op is not first:
        ops.append(op)
        op = op.prev_op
    return ops[::-1]


def group_row_stages(computes: list[Operation], tag: str) -> FusedOp | None:
    """The computes one op's rule emitted (the last is its result) as ONE ``graph.fused``
    group named ``tag`` when every other compute is a row stage of the last (softmax's
    row maximum and sum: ``lowering/row_stages.py``) or an elementwise producer the
    kernel computes where it is read (softmax's ``exp(x - max)``), so te-to-loop emits one
    kernel per row instead of one kernel per compute. Otherwise the computes stay as they are."""
    if len(computes) < 2 or not all(isinstance(c, te.ComputeOp) for c in computes):
        return None
    *producers, root = computes
    rows = row_stages(root, producers)
    if rows is None or any(p not in rows.stages and reduces(p) for p in producers):
        return None
    members = set(computes)
    inputs: list[SSAValue] = []
    for c in computes:
        inputs += [v for v in c.inputs if v.owner not in members and v not in inputs]
    body = fused_body([v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    fused = FusedOp(tag, inputs, root.result.type, Region(body))
    Rewriter.insert_op(fused, InsertPoint.before(root))
    root.result.replace_all_uses_with(fused.result)
    for c in computes:
        c.detach()
        c.operands = [mapping.get(v, v) for v in c.operands]
        body.add_op(c)
    body.add_op(YieldOp(root.result))
    return fused


def _scalar_literal(constant: ConstantOp) -> Attribute:
    value = constant.array().reshape(()).item()
    t = constant.result.type.element_type
    return FloatAttr(value, t) if is_float(t) else IntegerAttr(int(value), t)


def inline_scalar_constants(module: ModuleOp) -> None:
    """Single-element constants read by a te.compute become ``arith.constant`` literals
    in its body (so LLVM sees the number: x*2.0, pow(x, 3)); constants left unused are
    removed."""
    for compute in [o for o in module.walk() if isinstance(o, te.ComputeOp)]:
        keep = []
        for value, arg in zip(list(compute.inputs), compute.input_args):
            owner = value.owner
            scalar = isinstance(owner, ConstantOp) and owner.array().size == 1
            if not scalar or any(not isinstance(use.operation, te.ReadOp) for use in arg.uses):
                keep.append(value)
                continue
            for use in list(arg.uses):
                read = use.operation
                literal = arith.ConstantOp(_scalar_literal(owner))
                Rewriter.replace_op(read, literal)
            compute.body.block.erase_arg(arg)
        if len(keep) != len(compute.inputs):
            compute.operands = keep
    for constant in [o for o in module.walk() if isinstance(o, ConstantOp)]:
        if not constant.result.uses:
            constant.detach()
            constant.erase()
