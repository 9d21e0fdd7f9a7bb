"""ONNX converters by op family; importing this package registers them all."""

from . import (  # noqa: F401
    activations,
    control_flow,
    conv,
    elementwise,
    indexing,
    linalg,
    normalization,
    pool,
    quantized,
    reduce,
    resize,
    rnn,
    shape,
)
