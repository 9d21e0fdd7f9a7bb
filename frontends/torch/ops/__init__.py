"""ATen converters by family; importing this package registers them all."""

from . import activations, attention, control_flow, creation, elementwise, indexing, linalg, math, nn, reduce, shape, volumetric  # noqa: F401
