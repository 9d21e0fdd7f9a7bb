"""The ``graph`` dialect: whole-model tensor programs (the Relax/Relay level).

Ops are grouped by family, one file each; this module assembles the dialect.
"""

from xdsl.ir import Dialect

from . import (
    bitcast,
    constant,
    dense_linalg,
    elementwise,
    factorizations,
    fourier,
    incomplete_gamma,
    indexing,
    linalg,
    nn,
    polynomials,
    quant,
    quant_bf16,
    random,
    recurrent,
    reduce,
    shape,
    spectral,
)
from .base import GraphOp, OpPatternKind
from .constant import ConstantOp
from .control import IfOp, RegionYieldOp, WhileOp
from .host import CheckOp, DataSizeOp
from .fusion import FusedOp, YieldOp
from .types import DimNamesAttr, WeightAttr

_FAMILIES = (
    constant, elementwise, linalg, nn, shape, reduce, indexing, dense_linalg, factorizations, spectral, fourier, polynomials,
    incomplete_gamma, random, quant, quant_bf16, recurrent, bitcast,
)  # fmt: skip


def _ops_of(module) -> list[type[GraphOp]]:
    return [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, GraphOp) and getattr(v, "name", "").startswith("graph.")
        and v.__module__ == module.__name__
    ]


GRAPH_OPS: tuple[type[GraphOp], ...] = tuple(op for family in _FAMILIES for op in _ops_of(family))

# graph.fused / graph.yield structure a graph (fusion groups); they are not GraphOps.
# graph.if / graph.while / graph.region_yield: control flow (run by the VM), not GraphOps either;
# nor graph.data_size / graph.check (host ops, also run by the VM).
Graph = Dialect("graph", [*GRAPH_OPS, FusedOp, YieldOp, IfOp, WhileOp, RegionYieldOp, DataSizeOp, CheckOp], [DimNamesAttr, WeightAttr])

__all__ = ["GRAPH_OPS", "ConstantOp", "FusedOp", "Graph", "GraphOp", "OpPatternKind", "YieldOp"]
