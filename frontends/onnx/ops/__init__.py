"""ONNX converters by op family; importing this package registers them all."""

from . import elementwise, reduce, shape  # noqa: F401
