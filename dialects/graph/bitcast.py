"""Reinterpreting the bits of elements as another type of the same width (ONNX's ``BitCast``,
torch's ``Tensor.view(dtype)``).

``graph.bitcast`` takes 32- and 64-bit floats and integers: float32 <-> int32, float64 <->
int64 (and float <-> float, int <-> int of one width, where it is the identity on bits).

Example::

    %bits = graph.bitcast %x : tensor<4xf32> -> tensor<4xi32>
"""

from __future__ import annotations

import numpy as np
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from .elementwise import RetypeOp
from .types import numpy_dtype

#: the element widths graph.bitcast takes (16-bit floats are stored widened or as bits by
#: the lowering's own conventions, so their bits are not read here)
BITCAST_WIDTHS = (4, 8)


def bitcastable(dtype: np.dtype) -> bool:
    """Whether ``graph.bitcast`` takes elements of ``dtype`` (a 32/64-bit float or integer)."""
    return dtype.itemsize in BITCAST_WIDTHS and dtype.kind in "fiu"


@irdl_op_definition
class BitcastOp(RetypeOp):
    """Reinterpret each element's bits as another type of the same width.

    Example: ``%y = graph.bitcast %x : tensor<4xf32> -> tensor<4xi32>``
    """

    name = "graph.bitcast"

    def check_types(self, source: np.dtype, target: np.dtype) -> None:
        if not (bitcastable(source) and bitcastable(target)) or source.itemsize != target.itemsize:
            raise VerifyException(f"graph.bitcast: {source} -> {target}: both must be 32- or 64-bit floats or integers of one width")

    def reference(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x).view(numpy_dtype(self.result.type.element_type))
