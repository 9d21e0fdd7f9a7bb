"""Static dims of shaped types must fit in 64 bits (as MLIR's parser requires).

The graph dialect checks its own types (``graph.types.shape_of``); this check covers IR
of any dialect that the parser takes (``func.func`` signatures, ``memref``, ``tensor``
types of upstream ops), so that ``tk.parse_module`` and ``tensorkiln-opt`` refuse
``tensor<18446744073709551616xf32>`` wherever it is written::

    check_static_dims(module)   # VerifyException naming the type and the op
"""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, MemRefType, TensorType, VectorType
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException

from ..runtime.sizes import MAX_BYTES
from .walk import walk_ops

_SHAPED = (TensorType, MemRefType, VectorType)


def _types_in(attribute: Attribute) -> list[Attribute]:
    if isinstance(attribute, FunctionType):
        return [*attribute.inputs.data, *attribute.outputs.data]
    return [attribute]


def check_static_dims(root: Operation) -> None:
    """Raise a VerifyException at the first shaped type under ``root`` (results, block
    arguments, type-valued properties such as a function's type) with a dim past 2**63 - 1."""
    for op in walk_ops(root):
        types = [r.type for r in op.results]
        types += [a.type for region in op.regions for block in region.blocks for a in block.args]
        types += [t for value in op.properties.values() for t in _types_in(value)]
        for t in types:
            if isinstance(t, _SHAPED) and any(d > MAX_BYTES for d in t.get_shape()):
                raise VerifyException(f"{op.name}: {t}: a dim larger than 2**63 - 1 (sizes are 64-bit)")
