"""An ONNX ModelProto -> a graph-dialect module.

The model is read and checked (``loader.py``), every node's op is looked up before
anything is converted (one UnsupportedOperatorError lists all that are missing), then
the graph's inputs become function arguments, its initializers constants held by
reference (or arguments after the model's own, with ``keep_params_as_input``), and each
node is converted in order by the converter registered for its (domain, op, version)
(``registry.py``; the converters live in ``ops/``). An op without a converter that is a
function (the model's own, or one ONNX defines as a function of other ops) is converted
as its body (``functions.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from ...dialects.graph.types import Dim, format_shape, shape_of
from ...errors import UnsupportedOperatorError
from . import ops  # noqa: F401  (registers the converters)
from .context import FoldingBuilder, NotConverted, OnnxContext, OnnxImportError, OnnxNode, OnnxUnsupportedError
from .dtypes import UnsupportedDtypeError, numpy_dtype_of_onnx, onnx_of_numpy
from .functions import FunctionBody, bind_attributes, has_schema_function, local_body, local_functions, schema_body
from .loader import check_model, initializer_array, load_model, node_label
from .registry import canonical_domain, find_converter, schema_version

#: a node's opset per domain
Opsets = Mapping[str, int]


class Scope:
    """ONNX value names -> graph values; a subgraph's scope sees its parents' names."""

    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.values: dict[str, SSAValue] = {}

    def get(self, name: str) -> SSAValue | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return None


def symbol_of(name: str) -> str:
    """A ``dim_param`` as a symbol name (an identifier: ``batch size`` -> ``batch_size``)."""
    symbol = re.sub(r"\W", "_", name)
    return f"d_{symbol}" if not symbol or symbol[0].isdigit() else symbol


def _subgraphs(node: onnx.NodeProto) -> Iterable[onnx.GraphProto]:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            yield from attribute.graphs


def names_read(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """Every value name the nodes (and their subgraphs, which may read outer names) read."""
    read: set[str] = set()
    for node in nodes:
        read.update(n for n in node.input if n)
        for graph in _subgraphs(node):
            read |= names_read(graph.node)
            read.update(o.name for o in graph.output)
    return read


# ---------------------------------------------------------------------------
# ops without a converter


def unsupported_nodes(model: onnx.ModelProto) -> dict[tuple[str, str, int], list[str]]:
    """(domain, op type, opset) of every op with no converter (and no function body) ->
    the names of the nodes using it, over the main graph, subgraphs and the model's functions."""
    opsets = {canonical_domain(o.domain): o.version for o in model.opset_import}
    functions = local_functions(model)
    missing: dict[tuple[str, str, int], list[str]] = {}
    seen_functions: set[tuple[str, str]] = set()

    def visit(nodes: Sequence[onnx.NodeProto], opsets: Opsets) -> None:
        for index, node in enumerate(nodes):
            domain = canonical_domain(node.domain)
            key = (domain, node.op_type)
            if key in functions:
                if key not in seen_functions:
                    seen_functions.add(key)
                    body = local_body(functions[key])
                    visit(body.nodes, {**opsets, **body.opsets})
                continue
            opset = opsets.get(domain)
            known = opset is not None and (
                find_converter(domain, node.op_type, opset) is not None or has_schema_function(domain, node.op_type, opset)
            )
            if not known:
                name = node.name or f"#{index}"
                missing.setdefault((domain, node.op_type, opset or 0), []).append(name)
            for graph in _subgraphs(node):
                visit(graph.node, opsets)

    visit(model.graph.node, opsets)
    return missing


def _raise_unsupported(missing: dict[tuple[str, str, int], list[str]]) -> None:
    counts = Counter({key: len(names) for key, names in missing.items()})
    listed = "; ".join(
        f"{domain}.{op_type} (opset {opset}) x{n} ({', '.join(missing[key][:5])}{', ...' if n > 5 else ''})"
        for key, n in counts.most_common()
        for domain, op_type, opset in [key]
    )
    raise UnsupportedOperatorError(f"{len(missing)} unsupported ONNX operators ({sum(counts.values())} nodes): {listed}")


# ---------------------------------------------------------------------------
# the importer


class _Importer:
    def __init__(self, model: onnx.ModelProto, shapes: Mapping[str, Any], keep_params_as_input: bool, function_name: str):
        self.model = model
        self.opsets = {canonical_domain(o.domain): o.version for o in model.opset_import}
        self.functions = local_functions(model)
        self.shapes = dict(shapes)
        self.keep_params_as_input = keep_params_as_input
        self.builder = FoldingBuilder(function_name)
        self.ctx = OnnxContext(self.builder)
        self.ctx.convert_subgraph = self.convert_subgraph
        self.params: dict[str, np.ndarray] = {}
        self._unknown_dims = 0

    # -- inputs ------------------------------------------------------------------------

    def input_shape(self, value: onnx.ValueInfoProto) -> tuple[Dim, ...]:
        """The shape of a graph input: ``shape=`` for it, else its dims (``dim_param`` ->
        symbol, pinned where ``shape=`` names that dim_param; an unnamed unknown dim gets
        a fresh symbol)."""
        dims = value.type.tensor_type.shape.dim if value.type.tensor_type.HasField("shape") else None
        if value.name in self.shapes:
            given = tuple(d if isinstance(d, str) else int(d) for d in self.shapes[value.name])
            if dims is not None and len(given) != len(dims):
                raise OnnxImportError(
                    f"shape= gives input '{value.name}' the shape {format_shape(given)}, but the model's input has rank {len(dims)}"
                )
            return tuple(symbol_of(d) if isinstance(d, str) else d for d in given)
        if dims is None:
            raise OnnxImportError(f"input '{value.name}' has no shape in the model: give it one with shape={{'{value.name}': (...)}}")
        shape: list[Dim] = []
        for d in dims:
            if d.HasField("dim_value"):
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                pinned = self.shapes.get(d.dim_param)
                shape.append(int(pinned) if pinned is not None else symbol_of(d.dim_param))
            else:
                self._unknown_dims += 1
                shape.append(f"unk{self._unknown_dims}")
        return tuple(shape)

    def inputs(self, scope: Scope) -> None:
        graph = self.model.graph
        initializers = {t.name: t for t in graph.initializer}
        unknown = set(self.shapes) - {i.name for i in graph.input} - self._dim_params()
        if unknown:
            raise OnnxImportError(
                f"shape= names {sorted(unknown)}: neither inputs of the model nor dim_params of its inputs "
                f"(inputs: {[i.name for i in graph.input if i.name not in initializers]})"
            )
        for value in graph.input:
            if value.name in initializers:
                continue  # (IR < 4 lists initializers as inputs too: they are the weights)
            kind = value.type.WhichOneof("value")
            if kind != "tensor_type":
                raise OnnxUnsupportedError(f"input '{value.name}' is of {kind.replace('_type', '')} type: only tensor inputs are supported")
            dtype = numpy_dtype_of_onnx(value.type.tensor_type.elem_type, f"input '{value.name}'")
            scope.values[value.name] = self.builder.input(_input_name(value.name), self.input_shape(value), dtype)
        for tensor in graph.initializer:
            scope.values[tensor.name] = self.initializer(tensor)

    def _dim_params(self) -> set[str]:
        return {
            d.dim_param
            for value in self.model.graph.input
            if value.type.HasField("tensor_type")
            for d in value.type.tensor_type.shape.dim
            if d.HasField("dim_param")
        }

    def initializer(self, tensor: onnx.TensorProto) -> SSAValue:
        array = initializer_array(tensor)
        if self.keep_params_as_input:
            name = _input_name(tensor.name)
            self.params[name] = array
            return self.builder.input(name, array.shape, array.dtype)
        return self.builder.constant(array, tensor.name)

    # -- nodes ---------------------------------------------------------------------------

    def convert_nodes(self, nodes: Sequence[onnx.NodeProto], scope: Scope, opsets: Opsets, keep: Iterable[str]) -> None:
        """Convert ``nodes`` in order into ``scope``; ``keep``: names read after them."""
        read = names_read(nodes) | set(keep)
        for index, node in enumerate(nodes):
            self.convert_node(node, index, scope, opsets, read)

    def convert_node(self, node: onnx.NodeProto, index: int, scope: Scope, opsets: Opsets, read: set[str]) -> None:
        label = node_label(node, index)
        domain = canonical_domain(node.domain)
        opset = opsets.get(domain)
        if opset is None:
            raise OnnxImportError(f"{label} uses the domain '{domain}', which the model does not import (opset_import)")
        inputs = [scope.get(name) if name else None for name in node.input]
        used = [bool(name) and name in read for name in node.output]
        key = (domain, node.op_type)
        block = self.builder._builder.insertion_point.block  # noqa: SLF001  (where this node's ops go)
        before = block.last_op
        try:
            found = find_converter(domain, node.op_type, opset)
            if found is not None:
                onnx_node = OnnxNode(node, inputs, schema_version(domain, node.op_type, opset) or found.since, used)
                results = found.fn(self.ctx, onnx_node)
            elif key in self.functions:
                results = self.expand(node, local_body(self.functions[key]), inputs, opsets, used)
            else:
                body = schema_body(node, opset, [_type_proto(v) for v in inputs if v is not None])
                if body is None:
                    _raise_unsupported({(domain, node.op_type, opset): [node.name or f"#{index}"]})
                results = self.expand(node, body, inputs, opsets, used)
        except NotConverted as e:
            raise OnnxUnsupportedError(f"{label}, opset {opset}: {e}") from None
        except UnsupportedDtypeError as e:
            raise UnsupportedDtypeError(str(e) if label in str(e) else f"{label}: {e}") from None
        except (UnsupportedOperatorError, OnnxImportError):
            raise
        except VerifyException as e:
            raise OnnxImportError(f"{label}: {e}") from e
        results = list(results) if isinstance(results, list | tuple) else [results]
        for k, name in enumerate(node.output):
            value = results[k] if k < len(results) else None
            if value is None:
                if used[k]:
                    raise OnnxUnsupportedError(f"{label}: output {k} ('{name}') is read, but tensorkiln does not compute it")
                continue
            if name:
                scope.values[name] = value
        location = NameLoc(StringAttr(node.name or (node.output[0] if node.output else node.op_type)), NoneAttr())
        op = before.next_op if before is not None else block.first_op
        while op is not None:
            op.location = location
            op = op.next_op

    def expand(
        self, node: onnx.NodeProto, body: FunctionBody, inputs: list[SSAValue | None], opsets: Opsets, used: list[bool]
    ) -> list[SSAValue | None]:
        """Convert a function's body in place of ``node`` (``functions.py``)."""
        inner = Scope()
        for name, value in zip(body.inputs, inputs):
            if value is not None and name:
                inner.values[name] = value
        nodes = [bind_attributes(n, node, body.attribute_defaults) for n in body.nodes]
        self.convert_nodes(nodes, inner, {**opsets, **body.opsets}, body.outputs)
        return [inner.values.get(name) for name in body.outputs]

    def convert_subgraph(self, graph: onnx.GraphProto, scope: Scope, inputs: Sequence[SSAValue]) -> list[SSAValue]:
        """Convert a subgraph (an ``If`` branch, a ``Loop`` body) at the builder's insertion
        point, its inputs bound to ``inputs``; returns its outputs."""
        inner = Scope(scope)
        for value_info, value in zip(graph.input, inputs):
            inner.values[value_info.name] = value
        for tensor in graph.initializer:
            inner.values[tensor.name] = self.builder.constant(initializer_array(tensor), tensor.name)
        self.convert_nodes(graph.node, inner, self.opsets, [o.name for o in graph.output])
        return [inner.get(o.name) for o in graph.output]

    # -- the whole graph ------------------------------------------------------------------

    def run(self) -> ModuleOp:
        missing = unsupported_nodes(self.model)
        if missing:
            _raise_unsupported(missing)
        scope = Scope()
        self.inputs(scope)
        graph = self.model.graph
        self.convert_nodes(graph.node, scope, self.opsets, [o.name for o in graph.output])
        outputs = []
        for output in graph.output:
            value = scope.get(output.name)
            if value is None:
                raise OnnxImportError(f"graph output '{output.name}' is not computed")
            _check_declared(output, value)
            outputs.append(value)
        return self.builder.finish(*outputs)


def _input_name(name: str) -> str:
    """An ONNX value name as a function argument's name (an identifier)."""
    return symbol_of(name) if name else "input"


def _type_proto(value: SSAValue) -> onnx.TypeProto:
    """The ONNX type of a graph value (for the bodies ONNX builds per input type)."""
    dtype = OnnxContext.dtype(value)
    shape = [d if isinstance(d, int) else None for d in shape_of(value.type)]
    return onnx.helper.make_tensor_type_proto(onnx_of_numpy(dtype), shape)


def _check_declared(output: onnx.ValueInfoProto, value: SSAValue) -> None:
    """A graph output has the element type and the static dims the model declares."""
    tensor_type = output.type.tensor_type
    if not output.type.HasField("tensor_type"):
        return
    ours = shape_of(value.type)
    if tensor_type.elem_type:
        declared = numpy_dtype_of_onnx(tensor_type.elem_type, f"output '{output.name}'")
        if declared != OnnxContext.dtype(value):
            raise OnnxImportError(
                f"output '{output.name}' is {OnnxContext.dtype(value)} here, but the model declares {declared}"
            )
    if tensor_type.HasField("shape"):
        dims = tensor_type.shape.dim
        static = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        mismatch = len(static) != len(ours) or any(
            s is not None and isinstance(o, int) and s != o for s, o in zip(static, ours)
        )
        if mismatch:
            declared_shape = tuple(s if s is not None else "?" for s in static)
            raise OnnxImportError(
                f"output '{output.name}' has shape {format_shape(ours)} here, but the model declares {format_shape(declared_shape)}"
            )


def from_onnx(
    model: Any,
    shape: Mapping[str, Any] | None = None,
    keep_params_as_input: bool = False,
    *,
    base_dir: str | None = None,
    function_name: str = "main",
) -> ModuleOp | tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model as a graph-dialect module.

    ``model``: a path to a ``.onnx`` file (external data files beside it load), the
    serialized bytes, or an ``onnx.ModelProto`` (external data from ``base_dir``).
    ``shape``: pins input shapes (``{"input": (1, 3, 224, 224)}``) or ``dim_param``s
    (``{"batch": 8}``); a ``dim_param`` left free is a named symbolic dim, compiled once
    for every size. Initializers become constants held by reference, or, with
    ``keep_params_as_input=True``, function inputs after the model's own (then the
    params are returned too, to bind at call time)::

        import tensorkiln as tk
        from tensorkiln.frontends.onnx import from_onnx

        module = from_onnx("resnet50.onnx", shape={"batch": 1})
        lib = tk.build(module)
        (logits,) = lib(image)

    Raises UnsupportedOperatorError listing every unsupported (domain, op type, opset)
    with counts and node names before converting anything, OnnxUnsupportedError naming
    the node when a node uses a feature not converted (an attribute value, a dtype), and
    OnnxImportError for a malformed model (naming the node or initializer).
    """
    proto, path = load_model(model, base_dir)
    check_model(proto, path)
    importer = _Importer(proto, shape or {}, keep_params_as_input, function_name)
    module = importer.run()
    return (module, importer.params) if keep_params_as_input else module


__all__ = ["OnnxImportError", "OnnxUnsupportedError", "from_onnx", "unsupported_nodes"]
