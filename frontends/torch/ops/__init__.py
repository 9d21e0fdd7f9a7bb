"""ATen converters by family; importing this package registers them all."""

from . import (  # noqa: F401
    activations,
    antialias,
    attention,
    complex_ops,
    control_flow,
    creation,
    dense_linalg,
    elementwise,
    grid_sample,
    grouped,
    indexing,
    linalg,
    math,
    nn,
    order,
    random,
    reduce,
    shape,
    special,
    volumetric,
)
