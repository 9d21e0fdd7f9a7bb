"""The ONNX frontend: ``.onnx`` models to graph-dialect modules.

Example::

    import tensorkiln as tk
    from tensorkiln.frontends.onnx import from_onnx

    module = from_onnx("model.onnx", shape={"batch": 1})
    lib = tk.build(module)

``tensorkiln.tools.onnx_backend`` is tensorkiln as an ``onnx.backend.base.Backend`` (ONNX's
backend test runner runs against it). Needs the ``onnx`` package (the ``onnx`` extra); ONNX
Runtime is not needed.
"""

from .context import OnnxImportError, OnnxInputValuesNeeded, OnnxUnsupportedError
from .importer import from_onnx, from_onnx_with_values, unsupported_nodes

__all__ = ["OnnxImportError", "OnnxInputValuesNeeded", "OnnxUnsupportedError", "from_onnx", "from_onnx_with_values", "unsupported_nodes"]
