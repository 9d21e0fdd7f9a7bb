"""The ONNX frontend: ``.onnx`` models to graph-dialect modules.

Example::

    import tensorkiln as tk
    from tensorkiln.frontends.onnx import from_onnx

    module = from_onnx("model.onnx", shape={"batch": 1})
    lib = tk.build(module)

``tensorkiln.frontends.onnx.backend`` runs ONNX's backend test suite against tensorkiln
(``onnx.backend.base.Backend``). Needs the ``onnx`` package (the ``onnx`` extra); ONNX
Runtime is not needed.
"""

from .context import OnnxImportError, OnnxUnsupportedError
from .importer import from_onnx, unsupported_nodes

__all__ = ["OnnxImportError", "OnnxUnsupportedError", "from_onnx", "unsupported_nodes"]
