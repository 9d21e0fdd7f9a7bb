"""ONNX element types <-> numpy dtypes, and a clear refusal for the ones we do not compile."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...dialects.graph.types import bfloat16_dtype
from ...errors import UnsupportedOperatorError

#: ONNX element types a graph tensor can hold, as numpy dtypes
_NUMPY_OF_ONNX = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16,
    TensorProto.BOOL: np.bool_,
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
    TensorProto.INT16: np.int16,
    TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64,
}


class UnsupportedDtypeError(UnsupportedOperatorError):
    """A tensor of an ONNX element type tensorkiln does not compile (string, float8, int4, ...)."""


def onnx_type_name(elem_type: int) -> str:
    """``TensorProto.FLOAT8E4M3FN`` -> ``"float8e4m3fn"``."""
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


def supported_type_names() -> str:
    return ", ".join(["bfloat16", *(onnx_type_name(t) for t in _NUMPY_OF_ONNX)])


def numpy_dtype_of_onnx(elem_type: int, where: str) -> np.dtype:
    """The numpy dtype of an ONNX element type, or UnsupportedDtypeError naming ``where``
    (the input, initializer or node that has it)."""
    if elem_type == TensorProto.BFLOAT16:
        return bfloat16_dtype()
    if elem_type in _NUMPY_OF_ONNX:
        return np.dtype(_NUMPY_OF_ONNX[elem_type])
    raise UnsupportedDtypeError(
        f"{where}: element type {onnx_type_name(elem_type)} is not supported (supported: {supported_type_names()})"
    )


def onnx_of_numpy(dtype: np.dtype) -> int:
    """The ONNX element type of a numpy dtype we compile."""
    if dtype == bfloat16_dtype():
        return TensorProto.BFLOAT16
    for elem_type, numpy in _NUMPY_OF_ONNX.items():
        if np.dtype(numpy) == dtype:
            return elem_type
    raise ValueError(f"dtype {dtype} has no ONNX element type here")
