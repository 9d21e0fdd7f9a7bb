"""tensorkiln as an ONNX backend, at the path ONNX users look for it::

    import onnx.backend.test
    import tensorkiln.frontends.onnx.backend as tk_backend

    globals().update(onnx.backend.test.BackendTest(tk_backend, __name__).test_cases)

The implementation is :mod:`tensorkiln.tools.onnx_backend` (it compiles models, so it sits
at the top of the layers; this module belongs to that layer too, and nothing in
``frontends/`` imports it).
"""

from ...tools.onnx_backend import TensorkilnBackend, TensorkilnRep, prepare, run_model, run_node, supports_device

__all__ = ["TensorkilnBackend", "TensorkilnRep", "prepare", "run_model", "run_node", "supports_device"]
