"""A graph program (:mod:`tensorkiln.runtime.graph_program`) from a lowered host function.

After ``te-to-loop`` the host function ``main`` holds only buffer bookkeeping and kernel
calls::

    %0 = loop.dim %x, 0 : memref<?x8xf32>
    %1 = loop.alloc(%0) {scope = "global"} : memref<?x6xf32>
    func.call @dense_0(%x, %w0, %1) : (...) -> ()
    func.call @relu_0(%1, %out0) : (...) -> ()
    loop.free %1 : memref<?x6xf32>

so the graph executor's program is read off it: every buffer becomes a tensor (its
symbolic dims traced back to the input dims they came from), every call a node. The
memory plan then gives the temporaries shared storages.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import SSAValue

from ..dialects import loop
from ..dialects.graph.types import numpy_dtype
from ..lowering.symbol_sizes import SymbolSizes
from ..runtime.graph_program import GraphNode, GraphProgram, GraphTensor
from ..runtime.memory_plan import plan_memory
from ..runtime.signature import Dim, Signature


def _spelling(operator: str) -> str:
    """How a dim expression writes ``operator`` (``runtime/dim_expr.py``), as a format string."""
    return f"{operator.capitalize()}({{}}, {{}})" if operator.isalpha() else f"({{}} {operator} {{}})"


#: the index arithmetic te-to-loop emits for dim expressions (``4*n``) -> its spelling
_DIM_ARITHMETIC = {make: _spelling(operator) for operator, make in SymbolSizes.OPS.items()}


class HostProgramError(ValueError):
    """The host function holds something the graph executor cannot run."""


def graph_program(host: func.FuncOp, signature: Signature, plan: bool = True) -> GraphProgram:
    """The graph program of a lowered host function (``tk.entry``), memory planned.

    Example: ``program = graph_program(find_function(loops, "main"), signature)``
    """
    n_in, n_out, weights = loop.entry_layout(host)
    args = list(host.body.block.args)
    if len(args) != n_in + n_out + len(weights):
        raise HostProgramError(f"host function '{host.sym_name.data}': {len(args)} arguments, expected "
                               f"{n_in} inputs + {n_out} outputs + {len(weights)} weights")
    tensors: list[GraphTensor] = []
    ids: dict[SSAValue, int] = {}
    shapes: dict[SSAValue, tuple[Dim, ...]] = {}
    index_values: dict[SSAValue, Dim] = {}

    def add(value: SSAValue, name: str, kind: str, shape: tuple[Dim, ...], index: int = -1) -> None:
        t = value.type
        if not isinstance(t, MemRefType):
            raise HostProgramError(f"host function argument '{name}' is a {t}, not a buffer")
        dynamic = tuple(k for k, d in enumerate(t.get_shape()) if d < 0)
        ids[value] = len(tensors)
        shapes[value] = shape
        tensors.append(GraphTensor(name, kind, shape, numpy_dtype(t.element_type), dynamic, index))

    specs = list(signature.inputs) + list(signature.entry_outputs)
    for k, (value, spec) in enumerate(zip(args[: n_in + n_out], specs)):
        kind, index = ("input", k) if k < n_in else ("output", k - n_in)
        add(value, spec.name, kind, tuple(spec.shape), index)
    for k, value in enumerate(args[n_in + n_out :]):
        add(value, f"w{k}", "weight", tuple(value.type.get_shape()), k)

    nodes: list[GraphNode] = []
    for op in host.body.block.ops:
        match op:
            case loop.DimOp():
                index_values[op.result] = shapes[op.buffer][op.axis.value.data]
            case arith.ConstantOp() if isinstance(op.value, IntegerAttr):
                index_values[op.result] = op.value.value.data
            case _ if type(op) in _DIM_ARITHMETIC and all(v in index_values for v in op.operands):
                index_values[op.result] = _DIM_ARITHMETIC[type(op)].format(*(index_values[v] for v in op.operands))
            case loop.AllocOp():
                sizes = iter(op.dynamic_sizes)
                shape = []
                for d in op.result.type.get_shape():
                    if d >= 0:
                        shape.append(d)
                        continue
                    size = next(sizes)
                    if size not in index_values:
                        raise HostProgramError(f"buffer size {size} is not an input dim or a constant")
                    shape.append(index_values[size])
                add(op.result, f"t{len(tensors)}", "temp", tuple(shape))
            case func.CallOp():
                for a in op.arguments:
                    if a not in ids:
                        raise HostProgramError(f"call to @{op.callee.string_value()}: argument {a} is not a buffer")
                nodes.append(GraphNode(op.callee.string_value(), tuple(ids[a] for a in op.arguments)))
            case loop.FreeOp() | func.ReturnOp():
                pass
            case _:
                raise HostProgramError(f"the graph executor cannot run '{op.name}' in the host function")
    program = GraphProgram(signature, tensors, nodes)
    if plan:
        plan_memory(program)
    return program


__all__ = ["HostProgramError", "graph_program"]
