"""Bundled example models: ``models`` (the Python builder API, no torch needed) and
``torch_zoo`` (plain torch.nn models of the families the torch frontend covers)."""
