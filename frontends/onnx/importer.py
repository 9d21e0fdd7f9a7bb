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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.builder import Builder, InsertPoint
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ...dialects.graph import ConstantOp
from ...dialects.graph.control import RegionYieldOp
from ...dialects.graph.types import Dim, format_shape, shape_of
from ...errors import UnsupportedOperatorError
from . import ops  # noqa: F401  (registers the converters)
from .context import (
    FoldingBuilder,
    NeedsInputValues,
    NotConverted,
    OnnxContext,
    OnnxImportError,
    OnnxInputValuesNeeded,
    OnnxNode,
    OnnxUnsupportedError,
)
from .dtypes import UnsupportedDtypeError, numpy_dtype_of_onnx, onnx_of_numpy
from .held import after_node, check_inputs, held_type
from .functions import FunctionBody, bind_attributes, has_schema_function, local_body, local_functions, schema_body
from .loader import check_model, initializer_array, load_model, node_label
from .registry import canonical_domain, find_converter, schema_version
from .symbolic import propagate

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


def free_names(graph: onnx.GraphProto) -> set[str]:
    """The names a subgraph reads from enclosing scopes (read, but not defined in it)."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        defined.update(node.output)
    read = names_read(graph.node) | {o.name for o in graph.output}
    return read - defined - {""}


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
    def __init__(
        self, model: onnx.ModelProto, shapes: Mapping[str, Any], keep_params_as_input: bool, function_name: str, bind: Mapping[str, Any]
    ):
        self.model = model
        self.bind = dict(bind)
        self.opsets = {canonical_domain(o.domain): o.version for o in model.opset_import}
        self.functions = local_functions(model)
        self.shapes = dict(shapes)
        self.keep_params_as_input = keep_params_as_input
        self.builder = FoldingBuilder(function_name)
        self.ctx = OnnxContext(self.builder)
        self.ctx.subgraphs = self
        #: the scope of the node being converted (subgraphs read enclosing names through it)
        self.scope = Scope()
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
        unbound = set(self.bind) - {i.name for i in graph.input}
        if unbound:
            raise OnnxImportError(f"bind= names {sorted(unbound)}, which are not inputs of the model")
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
            held = held_type(value.type.tensor_type.elem_type)
            dtype = held.held if held else numpy_dtype_of_onnx(value.type.tensor_type.elem_type, f"input '{value.name}'")
            if value.name in self.bind:
                scope.values[value.name] = self.bound_input(value, dtype)
                continue
            arg = self.builder.input(_input_name(value.name), self.input_shape(value), dtype)
            self.ctx.input_names[arg] = value.name
            if held is not None:
                self.ctx.held[arg] = held
            scope.values[value.name] = arg
        for tensor in graph.initializer:
            scope.values[tensor.name] = self.initializer(tensor)

    def bound_input(self, value: onnx.ValueInfoProto, dtype: np.dtype) -> SSAValue:
        """A graph input given a value at import (``bind=``): a constant of it."""
        array = np.asarray(self.bind[value.name])
        if array.dtype != dtype and not np.can_cast(array.dtype, dtype, "same_kind"):
            raise OnnxImportError(f"bind= gives input '{value.name}' a {array.dtype} value; the model declares {dtype}")
        dims = value.type.tensor_type.shape.dim
        declared = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        if len(declared) != array.ndim or any(d is not None and d != s for d, s in zip(declared, array.shape)):
            raise OnnxImportError(f"bind= gives input '{value.name}' the shape {array.shape}; the model declares {declared}")
        return self.builder.constant(np.asarray(array, dtype=dtype, order="C"), value.name)

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
            value = self.builder.input(name, array.shape, array.dtype)
        else:
            value = self.builder.constant(array, tensor.name)
        held = held_type(tensor.data_type)
        if held is not None:
            self.ctx.held[value] = held
        return value

    # -- nodes ---------------------------------------------------------------------------

    def convert_nodes(self, nodes: Sequence[onnx.NodeProto], scope: Scope, opsets: Opsets, keep: Iterable[str]) -> None:
        """Convert ``nodes`` in order into ``scope``; ``keep``: names read after them."""
        read = names_read(nodes) | set(keep)
        for index, node in enumerate(nodes):
            self.convert_node(node, index, scope, opsets, read)

    def convert_node(self, node: onnx.NodeProto, index: int, scope: Scope, opsets: Opsets, read: set[str]) -> None:
        label = node_label(node, index)
        self.scope = scope
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
            followed = self.follow_symbolic(node, inputs, schema_version(domain, node.op_type, opset) or 1, used)
            if followed is not None:
                results = followed
            elif found is not None:
                check_inputs(self.ctx, node.op_type, inputs)
                onnx_node = OnnxNode(node, inputs, schema_version(domain, node.op_type, opset) or found.since, used)
                results = found.fn(self.ctx, onnx_node)
            elif key in self.functions:
                results = self.expand(node, local_body(self.functions[key]), inputs, opsets, used)
            else:
                body = schema_body(node, opset, [_type_proto(v) for v in inputs if v is not None])
                if body is None:
                    _raise_unsupported({(domain, node.op_type, opset): [node.name or f"#{index}"]})
                results = self.expand(node, body, inputs, opsets, used)
        except NeedsInputValues as e:
            raise OnnxInputValuesNeeded(f"{label}, opset {opset}: {e}", e.inputs) from None
        except NotConverted as e:
            raise OnnxUnsupportedError(f"{label}, opset {opset}: {e}") from None
        except UnsupportedDtypeError as e:
            raise UnsupportedDtypeError(str(e) if label in str(e) else f"{label}: {e}") from None
        except (UnsupportedOperatorError, OnnxImportError):
            raise
        except VerifyException as e:
            raise OnnxImportError(f"{label}: {e}") from e
        except Exception as e:  # a converter's own bug: still name the node
            raise OnnxImportError(f"{label}: internal error in the converter: {type(e).__name__}: {e}") from e
        results = list(results) if isinstance(results, list | tuple) else [results]
        results = after_node(self.ctx, OnnxNode(node, inputs, 1, used), results)
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

    def follow_symbolic(self, node: onnx.NodeProto, inputs: list[SSAValue | None], version: int, used: list[bool]) -> SSAValue | None:
        """The node's result when it computes on symbolic sizes and a rule follows it
        (``symbolic.py``); None otherwise (the converter runs)."""
        if not any(v in self.ctx.symbolic for v in inputs if v is not None):
            return None
        known = [self.ctx.known_elements(v) for v in inputs if v is not None]
        dims = propagate(OnnxNode(node, inputs, version, used), known)
        return None if dims is None else self.ctx.dims_value(dims)

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

    def convert_subgraph(self, graph: onnx.GraphProto, inputs: Sequence[SSAValue]) -> list[SSAValue]:
        """Convert a subgraph (an ``If`` branch, a ``Loop`` body) inline, at the builder's
        insertion point, its inputs bound to ``inputs``; returns its outputs."""
        inner = Scope(self.scope)
        return self._convert_graph(graph, inner, inputs)

    def _convert_graph(self, graph: onnx.GraphProto, inner: Scope, inputs: Sequence[SSAValue]) -> list[SSAValue]:
        for value_info, value in zip(graph.input, inputs):
            inner.values[value_info.name] = value
        for tensor in graph.initializer:
            inner.values[tensor.name] = self.builder.constant(initializer_array(tensor), tensor.name)
        saved = self.scope
        try:
            self.convert_nodes(graph.node, inner, self.opsets, [o.name for o in graph.output])
        finally:
            self.scope = saved
        outputs = [inner.get(o.name) for o in graph.output]
        missing = [o.name for o, v in zip(graph.output, outputs) if v is None]
        if missing:
            raise OnnxImportError(f"subgraph '{graph.name}' does not compute its outputs {missing}")
        return outputs

    def outer_values(self, graphs: Sequence[onnx.GraphProto]) -> list[SSAValue]:
        """The values of the enclosing scopes the subgraphs read that are not constants
        (a region is isolated: they come in as its arguments), in a fixed order."""
        found: list[SSAValue] = []
        for name in sorted(set().union(*(free_names(g) for g in graphs))):
            value = self.scope.get(name)
            if value is not None and not isinstance(value.owner, ConstantOp) and value not in found:
                found.append(value)
        return found

    def region(self, graph: onnx.GraphProto, args: Sequence[SSAValue], outer: Sequence[SSAValue], tail: Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]]) -> Region:
        """A region of ``graph``: its block takes values of the types of ``args`` (bound to
        the graph's inputs) and of ``outer`` (the enclosing values it reads); constants of
        the enclosing scopes are copied in. ``tail(block_args, outputs)`` gives what it yields."""
        block = Block(arg_types=[v.type for v in [*args, *outer]])
        inner = Scope()
        names = {value: name for name, value in self._visible().items()}
        for value, arg in zip(outer, block.args[len(args):]):
            if value in names:  # (an unnamed one, a loop's trip count, is only read by the caller's tail)
                inner.values[names[value]] = arg
        saved_builder = self.builder._builder  # noqa: SLF001  (the builder's insertion point)
        self.builder._builder = Builder(InsertPoint.at_end(block))  # noqa: SLF001
        try:
            for name, value in self._visible().items():  # constants of the enclosing scopes
                if isinstance(value.owner, ConstantOp) and name not in inner.values:
                    inner.values[name] = self.builder.constant(value.owner.array(), name)
            outputs = self._convert_graph(graph, inner, list(block.args[: len(args)]))
            self.builder._builder.insert(RegionYieldOp(tail(list(block.args), outputs)))  # noqa: SLF001
        finally:
            self.builder._builder = saved_builder  # noqa: SLF001
        return Region(block)

    def plain_region(self, types: Sequence[Any], build: Callable[..., list[SSAValue]]) -> Region:
        """A region whose block takes ``types`` and yields ``build(*block_args)`` (ops made
        with the builder inside ``build`` go into the block)."""
        block = Block(arg_types=list(types))
        saved_builder = self.builder._builder  # noqa: SLF001
        self.builder._builder = Builder(InsertPoint.at_end(block))  # noqa: SLF001
        try:
            self.builder._builder.insert(RegionYieldOp(build(*block.args)))  # noqa: SLF001
        finally:
            self.builder._builder = saved_builder  # noqa: SLF001
        return Region(block)

    def insert(self, op: Any) -> Any:
        """Insert an op built outside the builder (a control-flow op) at its insertion point."""
        return self.builder._builder.insert(op)  # noqa: SLF001

    def _visible(self) -> dict[str, SSAValue]:
        """Every name the current scope sees, inner scopes first."""
        visible: dict[str, SSAValue] = {}
        scope: Scope | None = self.scope
        while scope is not None:
            for name, value in scope.values.items():
                visible.setdefault(name, value)
            scope = scope.parent
        return visible

    # -- the whole graph ------------------------------------------------------------------

    def run(self) -> ModuleOp:
        missing = unsupported_nodes(self.model)
        if missing:
            _raise_unsupported(missing)
        scope = self.scope
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
        held = held_type(tensor_type.elem_type)
        declared = held.held if held else numpy_dtype_of_onnx(tensor_type.elem_type, f"output '{output.name}'")
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
    bind: Mapping[str, Any] | None = None,
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
        logits = lib(image)             # one output: an array (several: a tuple)

    ``bind``: values for graph inputs that the model uses as shapes, axes or sizes (a
    ``Reshape``'s target, ``ReduceSum``'s axes, ``Pad``'s pads given as inputs): they become
    constants, and the module is compiled for those values. Without it such a model raises
    OnnxInputValuesNeeded naming the inputs (``.inputs``).

    Raises UnsupportedOperatorError listing every unsupported (domain, op type, opset)
    with counts and node names before converting anything, OnnxUnsupportedError naming
    the node when a node uses a feature not converted (an attribute value, a dtype), and
    OnnxImportError for a malformed model (naming the node or initializer).
    """
    proto, path = load_model(model, base_dir)
    check_model(proto, path)
    importer = _Importer(proto, shape or {}, keep_params_as_input, function_name, bind or {})
    module = importer.run()
    return (module, importer.params) if keep_params_as_input else module


def from_onnx_with_values(model: Any, values: Mapping[str, Any], **kwargs: Any) -> tuple[ModuleOp, dict[str, Any]]:
    """:func:`from_onnx` binding, from ``values`` (the inputs of one call), the graph inputs the
    model uses as shapes, axes or sizes; returns the module and what was bound (the inputs
    to leave out of the call). The module is for those values only::

        module, bound = from_onnx_with_values(model, {"x": x, "axes": np.array([1])})
        lib = tk.build(module)
        y = lib(*(v for name, v in inputs.items() if name not in bound))
    """
    base_dir = kwargs.pop("base_dir", None)
    proto, path = load_model(model, base_dir)
    source = path if path is not None else proto  # (a path: a model over 2 GB is checked from its file)
    bound: dict[str, Any] = dict(kwargs.pop("bind", None) or {})
    while True:
        try:
            return from_onnx(source, bind=bound, base_dir=base_dir, **kwargs), bound
        except OnnxInputValuesNeeded as e:
            wanted = [n for n in e.inputs if n not in bound]
            if not wanted or any(n not in values for n in wanted):
                raise
            bound.update({n: values[n] for n in wanted})


__all__ = ["OnnxImportError", "OnnxInputValuesNeeded", "OnnxUnsupportedError", "from_onnx", "from_onnx_with_values", "unsupported_nodes"]
