"""Ops defined as functions of other ops: model-local functions, and ONNX's own function ops.

A model may define functions (``ModelProto.functions``, keyed by domain and name) and
call them as nodes. ONNX itself defines many operators as functions of simpler ones
(``LayerNormalization``, ``Celu``, ``SoftmaxCrossEntropyLoss``, ...): some by a fixed
body, some by a body built for the node's attributes and input types (a *context
dependent* function). Where no converter is registered for such an op, its body is
converted in its place: the node's inputs bound to the function's inputs, its attributes
substituted for the body's attribute references, the body's outputs bound to the node's.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from .registry import DEFAULT_DOMAIN, canonical_domain


@dataclass(frozen=True)
class FunctionBody:
    """What a function node expands to: the body's nodes, their opsets, and the names of
    the function's inputs, outputs and attributes (with defaults)."""

    nodes: tuple[onnx.NodeProto, ...]
    opsets: dict[str, int]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attribute_defaults: dict[str, onnx.AttributeProto]


def _body(function: onnx.FunctionProto, defaults: dict[str, onnx.AttributeProto]) -> FunctionBody:
    opsets = {canonical_domain(o.domain): o.version for o in function.opset_import}
    defaults = dict(defaults)
    for attribute in function.attribute_proto:  # a model-local function's own defaults
        defaults[attribute.name] = attribute
    return FunctionBody(tuple(function.node), opsets, tuple(function.input), tuple(function.output), defaults)


def local_functions(model: onnx.ModelProto) -> dict[tuple[str, str], onnx.FunctionProto]:
    """The model's own functions by (domain, name)."""
    return {(canonical_domain(f.domain), f.name): f for f in model.functions}


def local_body(function: onnx.FunctionProto) -> FunctionBody:
    return _body(function, {})


def _schema(domain: str, op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, opset, "" if canonical_domain(domain) == DEFAULT_DOMAIN else domain)
    except onnx.defs.SchemaError:
        return None


def has_schema_function(domain: str, op_type: str, opset: int) -> bool:
    """Whether ONNX defines ``op_type`` (at ``opset``) as a function of other ops."""
    schema = _schema(domain, op_type, opset)
    return schema is not None and bool(schema.has_function or schema.has_context_dependent_function)


def schema_body(node: onnx.NodeProto, opset: int, input_types: list[onnx.TypeProto]) -> FunctionBody | None:
    """The body ONNX defines for ``node`` under ``opset`` (the newest function version
    not above it), or None when the op is not a function."""
    schema = _schema(node.domain, node.op_type, opset)
    if schema is None:
        return None
    defaults = {name: a.default_value for name, a in schema.attributes.items() if a.default_value.name}
    usable = [v for v in schema.function_opset_versions if v <= opset]
    function = onnx.FunctionProto()
    if usable:
        function.ParseFromString(schema.get_function_with_opset_version(max(usable)))
        return _body(function, defaults)
    usable = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if not usable:
        return None
    with_defaults = onnx.NodeProto()
    with_defaults.CopyFrom(node)
    given = {a.name for a in node.attribute}
    with_defaults.attribute.extend(a for name, a in defaults.items() if name not in given)
    serialized = schema.get_context_dependent_function_with_opset_version(
        max(usable), with_defaults.SerializeToString(), [t.SerializeToString() for t in input_types]
    )
    if not serialized:
        return None
    function.ParseFromString(serialized)
    return _body(function, defaults)


def bind_attributes(body_node: onnx.NodeProto, caller: onnx.NodeProto, defaults: dict[str, onnx.AttributeProto]) -> onnx.NodeProto:
    """``body_node`` with each attribute that refers to a function attribute
    (``ref_attr_name``) replaced by the caller's value, or the default; dropped when neither."""
    if not any(a.ref_attr_name for a in body_node.attribute):
        return body_node
    given = {a.name: a for a in caller.attribute}
    bound = onnx.NodeProto()
    bound.CopyFrom(body_node)
    del bound.attribute[:]
    for attribute in body_node.attribute:
        if not attribute.ref_attr_name:
            bound.attribute.append(attribute)
            continue
        source = given.get(attribute.ref_attr_name) or defaults.get(attribute.ref_attr_name)
        if source is None:
            continue
        value = onnx.AttributeProto()
        value.CopyFrom(source)
        value.name = attribute.name
        bound.attribute.append(value)
    return bound
