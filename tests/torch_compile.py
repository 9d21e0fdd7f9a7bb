"""Test helper: compile a torch function of tensors with tensorkiln (export, import, build)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

import tensorkiln as tk
from tensorkiln.frontends.torch import from_exported_program
from tensorkiln.runtime.module import CompiledModule


def compile_torch_fn(fn, *inputs, **export_kwargs) -> CompiledModule:
    """``fn(*tensors)`` exported on ``inputs`` (numpy arrays; ``export_kwargs`` go to
    ``torch.export.export``, e.g. ``dynamic_shapes``), imported and built."""

    class Model(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(Model(), tuple(torch.from_numpy(np.asarray(x)) for x in inputs), **export_kwargs)
    return tk.build(from_exported_program(program))
