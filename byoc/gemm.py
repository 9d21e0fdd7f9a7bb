"""Matrix products with a bias and an activation epilogue: the patterns and the program
the GEMM-style backends (``example_npu``, ``blas``, ``cublas``) share.

A composite holds one product (``graph.dense``, ``graph.matmul``, ``graph.batch_matmul``),
optionally a bias (dense's own, or a ``graph.add`` of a vector of the output's last size)
and optionally an activation (``relu``, ``sigmoid``, ``tanh``). :func:`gemm_program`
turns a ``byoc.region`` of such composites into a :class:`GemmProgram`: plain data
(json + weights) that each backend executes its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from ..dialects.graph import ConstantOp
from ..dialects.graph.elementwise import AddOp, ReluOp, SigmoidOp, TanhOp
from ..dialects.graph.linalg import BatchMatMulOp, DenseOp, MatMulOp
from ..dialects.graph.types import shape_of
from ..dialects.byoc import CompositeOp, RegionOp, YieldOp
from .external import spec_of
from .gemm_program import GemmProgram, run_step_numpy, step_flops  # noqa: F401  (re-exported)
from .pattern import Match, Pattern, is_op, wildcard

PRODUCTS = {DenseOp: "dense", MatMulOp: "matmul", BatchMatMulOp: "batch_matmul"}
ACTIVATIONS = {ReluOp: "relu", SigmoidOp: "sigmoid", TanhOp: "tanh"}


@dataclass(frozen=True)
class GemmParts:
    """The ops of one product with its epilogue, as matched."""

    product: Operation
    bias: SSAValue | None
    add: Operation | None
    act: Operation | None

    @property
    def kind(self) -> str:
        return PRODUCTS[type(self.product)]

    @property
    def activation(self) -> str | None:
        return ACTIVATIONS[type(self.act)] if self.act is not None else None


def gemm_parts(ops: Sequence[Operation]) -> GemmParts | None:
    """``ops`` as product [+ bias] [+ activation] (float32 throughout), or None."""
    graph_ops = [op for op in ops if not isinstance(op, ConstantOp | YieldOp)]
    products = [op for op in graph_ops if type(op) in PRODUCTS]
    if len(products) != 1:
        return None
    product = products[0]
    rest = [op for op in graph_ops if op is not product]
    if any(spec_of(v.type).dtype != "<f4" for op in graph_ops for v in [*op.operands, *op.results]):
        return None
    bias = product.bias if isinstance(product, DenseOp) else None
    value, add, act = product.results[0], None, None
    n = shape_of(value.type)[-1]
    remaining = list(rest)
    while remaining:
        op = next((o for o in remaining if value in o.operands), None)
        if op is None:
            return None
        remaining.remove(op)
        if isinstance(op, AddOp) and add is None and act is None and bias is None and value in op.operands:
            other = op.rhs if op.lhs is value else op.lhs
            if other is value or shape_of(other.type) != (n,) or op.result.type != value.type:
                return None
            add, bias, value = op, other, op.result
        elif type(op) in ACTIVATIONS and act is None and op.operands[0] is value:
            act, value = op, op.results[0]
        else:
            return None
    return GemmParts(product, bias, add, act)


def _biased(product: Pattern) -> Pattern:
    return is_op(AddOp, product, wildcard()) | is_op(AddOp, wildcard(), product)


def _activated(inner: Pattern) -> Pattern:
    return is_op(ReluOp, inner) | is_op(SigmoidOp, inner) | is_op(TanhOp, inner)


def gemm_patterns(check: Callable[[GemmParts], bool] | None = None) -> list[tuple[str, Pattern, Any, int]]:
    """Pattern entries for register_patterns: per product, with bias and activation
    (priority 30), with activation (25), with bias (20), plain (10). ``check`` adds a
    backend's own condition on the parts."""

    def accept(match: Match) -> bool:
        parts = gemm_parts(match.ops)
        return parts is not None and (check is None or check(parts))

    entries = []
    for op, kind in PRODUCTS.items():
        plain = is_op(op, wildcard(), wildcard())
        biased = _biased(plain)
        if op is DenseOp:
            biased = is_op(op, wildcard(), wildcard(), wildcard()) | biased
        entries += [
            (f"{kind}_bias_act", _activated(biased), accept, 30),
            (f"{kind}_act", _activated(plain), accept, 25),
            (f"{kind}_bias", biased, accept, 20),
            (kind, plain, accept, 10),
        ]
    return entries


# ---------------------------------------------------------------------------
# the program of a region


def gemm_program(region: RegionOp, backend: str) -> GemmProgram:
    """The program of ``region``: one step per composite (raises ValueError naming a
    composite that is not a product with a bias/activation epilogue)."""
    program = GemmProgram()
    names: dict[SSAValue, str] = {}

    def name_of(value: SSAValue, stem: str) -> str:
        if value not in names:
            names[value] = f"{stem}{sum(1 for n in names.values() if n.startswith(stem))}"
            program.specs[names[value]] = spec_of(value.type)
        return names[value]

    for arg in region.body.block.args:
        program.inputs.append(name_of(arg, "in"))
    for composite in region.body.block.ops:
        if isinstance(composite, YieldOp):
            program.outputs = [names[v] for v in composite.values]
            continue
        assert isinstance(composite, CompositeOp)
        body = composite.body.block
        parts = gemm_parts(list(body.ops))
        if parts is None:
            raise ValueError(
                f"{backend} codegen: composite '{composite.pattern.data}' is not a float32 product with a "
                "bias/activation epilogue"
            )
        local: dict[SSAValue, str] = dict(zip(body.args, (names[v] for v in composite.inputs)))
        for op in body.ops:
            if isinstance(op, ConstantOp):
                local[op.result] = name_of(op.result, "w")
                program.weights[local[op.result]] = np.asarray(op.array(), order="C")
        product = parts.product
        program.steps.append(
            {
                "op": parts.kind,
                "composite": composite.pattern.data,
                "a": local[product.operands[0]],
                "b": local[product.operands[1]],
                "bias": local[parts.bias] if parts.bias is not None else None,
                "act": parts.activation,
                "out": name_of(composite.result, "t"),
            }
        )
    return program


__all__ = ["GemmParts", "GemmProgram", "gemm_parts", "gemm_patterns", "gemm_program", "run_step_numpy", "step_flops"]
