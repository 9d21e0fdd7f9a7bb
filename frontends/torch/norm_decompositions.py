"""Instance norm for ``run_decompositions``, in a form that keeps the input's layout.

Torch's own decomposition of ``aten.instance_norm`` views ``(N, C, *spatial)`` as one batch
of ``N*C`` channels, ``(1, N*C, *spatial)``: a reshape of the activation that only the NCHW
layout allows (convert-layout then transposes around every instance norm). Instance norm
on the input's statistics is group norm with a group per channel: it becomes
``aten.group_norm``, which the importer keeps whole (``ops/normalization.py``). In eval()
with running statistics it is an affine map per channel. Training with running statistics
(their update) keeps torch's decomposition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    import torch

    channels = input.shape[1]
    if use_input_stats:
        if running_mean is not None or running_var is not None:
            return _instance_norm_updating_statistics(input, weight, bias, running_mean, running_var, momentum, eps)
        return torch.ops.aten.group_norm.default(input, channels, weight, bias, eps)
    per_channel = (1, channels) + (1,) * (input.dim() - 2)
    scale = torch.rsqrt(running_var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(per_channel) + shift.reshape(per_channel)


def _instance_norm_updating_statistics(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training with running statistics: torch's own composite (ATen's ``instance_norm``):
    batch norm over the ``(1, N*C, ...)`` view, each sample's copy of the running
    statistics updated, their mean over the batch written back."""
    import torch

    batch, channels = input.shape[:2]

    def repeated(t):
        return None if t is None else t.repeat(batch)

    mean, var = repeated(running_mean), repeated(running_var)
    view = input.contiguous().view(1, batch * channels, *input.shape[2:])
    out = torch.ops.aten.batch_norm.default(view, repeated(weight), repeated(bias), mean, var, True, momentum, eps, False)
    for stat, updated in ((running_mean, mean), (running_var, var)):
        if stat is not None:
            stat.copy_(updated.view(batch, channels).mean(0))
    return out.view(input.shape)


def norm_decompositions() -> dict[Any, Callable]:
    """op overload -> decomposition (see the module docstring)."""
    import torch

    return {torch.ops.aten.instance_norm.default: _instance_norm}


__all__ = ["norm_decompositions"]
