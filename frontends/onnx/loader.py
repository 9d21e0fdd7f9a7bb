"""Reading an ONNX model (a path, bytes or a ModelProto) and checking that it is well formed.

``onnx.checker`` catches most malformed models; this adds what it lets through or
reports without naming a node: a node input that no graph input, initializer or
earlier node defines (a dangling edge), and an initializer whose data does not hold
as many elements as its dims say.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

from .context import OnnxImportError
from .dtypes import UnsupportedDtypeError, numpy_dtype_of_onnx
from .held import held_type, to_held

#: models above this size cannot be checked as one protobuf message: ``onnx.checker`` reads the file
_PROTOBUF_LIMIT = 2**31 - 1


def load_model(model: Any, base_dir: str | os.PathLike | None = None) -> tuple[onnx.ModelProto, str | None]:
    """The model as a ModelProto with its external data loaded, and the path it came from.

    ``model``: a path to a ``.onnx`` file (external data files beside it load), the
    serialized bytes, or a ``ModelProto`` (its external data is read from ``base_dir``).
    """
    if isinstance(model, onnx.ModelProto):
        if base_dir is not None:
            external_data_helper.load_external_data_for_model(model, str(base_dir))
        return model, None
    if isinstance(model, bytes | bytearray | memoryview):
        try:
            proto = onnx.load_model_from_string(bytes(model))
        except Exception as e:  # protobuf's DecodeError
            raise OnnxImportError(f"the bytes given are not a readable ONNX model: {e}") from None
        if base_dir is not None:
            external_data_helper.load_external_data_for_model(proto, str(base_dir))
        return proto, None
    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(f"no ONNX model at {path}")
        try:
            proto = onnx.load(str(path), load_external_data=False)
            external_data_helper.load_external_data_for_model(proto, str(base_dir or path.parent))
        except FileNotFoundError as e:
            raise OnnxImportError(f"{path}: an external data file is missing: {e}") from None
        except Exception as e:  # protobuf's DecodeError and friends
            raise OnnxImportError(f"{path} is not a readable ONNX model: {e}") from None
        return proto, str(path)
    raise TypeError(f"from_onnx takes a path, bytes or an onnx.ModelProto, got {type(model).__name__}")


def check_model(model: onnx.ModelProto, path: str | None) -> None:
    """``onnx.checker`` on the model, then the checks it leaves out (module docstring)."""
    try:
        if path is not None and model.ByteSize() > _PROTOBUF_LIMIT:
            onnx.checker.check_model(path)
        else:
            onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"the model is malformed (onnx.checker): {_first_lines(str(e))}") from None
    _check_graph(model.graph, outer=set())


def _first_lines(text: str, n: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:n])


def node_label(node: onnx.NodeProto, index: int) -> str:
    """``'conv1' (Conv)``, or the node's position and first output when it has no name."""
    name = node.name or f"#{index} -> {node.output[0] if node.output else '?'}"
    return f"node '{name}' ({node.op_type})"


def _check_graph(graph: onnx.GraphProto, outer: set[str]) -> None:
    defined = set(outer) | {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.name for t in graph.sparse_initializer}
    for tensor in graph.initializer:
        check_initializer(tensor)
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name not in defined:
                raise OnnxImportError(
                    f"{node_label(node, index)} reads '{name}', which no graph input, initializer or earlier node defines"
                )
        for attribute in node.attribute:
            for sub in _subgraphs(attribute):
                _check_graph(sub, defined)
        defined |= {name for name in node.output if name}
    for output in graph.output:
        if output.name not in defined:
            raise OnnxImportError(f"graph output '{output.name}' is not computed by any node")


def _subgraphs(attribute: onnx.AttributeProto) -> Iterable[onnx.GraphProto]:
    if attribute.type == onnx.AttributeProto.GRAPH:
        yield attribute.g
    elif attribute.type == onnx.AttributeProto.GRAPHS:
        yield from attribute.graphs


def check_initializer(tensor: onnx.TensorProto) -> None:
    """An initializer's data holds as many elements as its dims say (a clear error, naming it)."""
    expected = int(np.prod(tensor.dims, dtype=np.int64))
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return  # (loaded data is checked when it is read: initializer_array)
    if held_type(tensor.data_type) is not None:
        return  # (packed narrow types: numpy_helper checks their size when it reads them)
    try:
        itemsize = numpy_dtype_of_onnx(tensor.data_type, f"initializer '{tensor.name}'").itemsize
    except UnsupportedDtypeError:
        return  # refused by name where it is used
    if tensor.HasField("raw_data"):
        found = len(tensor.raw_data) / itemsize
    else:
        found = len(getattr(tensor, onnx.helper.tensor_dtype_to_field(tensor.data_type)))
    if found != expected:
        raise OnnxImportError(
            f"initializer '{tensor.name}' has dims {list(tensor.dims)} ({expected} elements) but its data holds "
            f"{found:g} elements"
        )


def initializer_array(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer's data as a numpy array (its own memory: the IR references it); one of
    a held type (``held.py``) as its holding values."""
    held = held_type(tensor.data_type)
    if held is None:
        numpy_dtype_of_onnx(tensor.data_type, f"initializer '{tensor.name}'")  # refuse unsupported types by name
    try:
        array = numpy_helper.to_array(tensor)
        if held is not None:
            array = to_held(array, held, tensor.name)
    except Exception as e:
        raise OnnxImportError(f"initializer '{tensor.name}' cannot be read: {e}") from None
    return np.asarray(array, order="C")  # (not ascontiguousarray: it makes a 0-d array 1-d)
