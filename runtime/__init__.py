"""What runs compiled models: numpy, ctypes and the stdlib only (never the compiler).

``load_module(path)`` loads a model written by ``lib.export_library(path)`` in a
process that has neither torch nor xDSL nor llvmlite.
"""

from .artifact import ArtifactError, load_module, replace_weights

__all__ = ["ArtifactError", "load_module", "replace_weights"]
