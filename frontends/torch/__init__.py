"""The PyTorch frontend: ``torch.export`` programs to graph-dialect modules.

Example::

    import torch
    from tensorkiln.frontends.torch import from_exported_program

    ep = torch.export.export(model.eval(), (torch.randn(1, 3, 224, 224),))
    module = from_exported_program(ep)
"""

from .importer import TorchImportError, from_exported_program, unsupported_nodes

__all__ = ["TorchImportError", "from_exported_program", "unsupported_nodes"]
