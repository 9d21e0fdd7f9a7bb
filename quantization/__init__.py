"""Post-training quantization of float32 graphs (``tk.quantize``): calibration on sample
inputs, then a QDQ graph that ``fold-qdq`` turns into int8 kernels (see :mod:`.quantize`)."""

from .calibrate import METHODS, Range, calibrate
from .quantize import int8_weight, quantize, uint8_params

__all__ = ["METHODS", "Range", "calibrate", "int8_weight", "quantize", "uint8_params"]
