"""ONNX converters by op family; importing this package registers them all."""

from . import (  # noqa: F401
    activations,
    assorted,
    control_flow,
    conv,
    detection,
    elementwise,
    grid_sample,
    indexing,
    linalg,
    normalization,
    optional,
    pool,
    quantized,
    reduce,
    resize,
    rnn,
    shape,
    signal,
    training,
    unique,
)
