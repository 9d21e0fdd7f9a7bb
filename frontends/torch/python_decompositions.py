"""Decompositions we hand torch's ``run_decompositions`` for ops it keeps whole: Python
functions of torch ops that torch traces into the graph (and decomposes further), so
the importer sees only ops it converts.

* ``torch_nn._linear_cross_entropy_batch_chunked`` (and ``..._no_reduction``): the op
  ``F.linear_cross_entropy`` exports (torch 2.13), computing the loss of a linear layer's
  logits batch chunk by batch chunk to save memory, and for training the gradients in
  the same pass. Here: ``F.linear`` then ``F.cross_entropy`` in the accumulation dtype;
  the gradients only where torch.export did not ask for them (inference: empty).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _linear_cross_entropy(
    input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing,
    batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph, compute_input_grad,
    compute_linear_weight_grad, compute_linear_bias_grad,
):  # fmt: skip
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        raise NotImplementedError(
            "linear_cross_entropy with its gradients (exported with requires_grad): export under torch.no_grad()"
        )
    loss = _loss(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing, acc_dtype)
    # the gradients not asked for: empty, in the shapes and dtype torch's op gives them
    return loss, input.new_empty((0, 0)), input.new_empty((0, 0)), input.new_empty((0,))


def _linear_cross_entropy_no_reduction(
    input, linear_weight, target, linear_bias, weight, ignore_index, batch_chunk_size, acc_policy, acc_dtype
):
    return _loss(input, linear_weight, target, linear_bias, weight, "none", ignore_index, 0.0, acc_dtype)


def _loss(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing, acc_dtype):
    import torch.nn.functional as F

    bias = None if linear_bias is None else linear_bias.to(acc_dtype)
    logits = F.linear(input.to(acc_dtype), linear_weight.to(acc_dtype), bias)
    weight = None if weight is None else weight.to(acc_dtype)
    loss = F.cross_entropy(
        logits, target, weight, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing
    )
    return loss.to(input.dtype)


def python_decompositions() -> dict[Any, Callable]:
    """op overload -> decomposition, for the ops of this torch build that have one."""
    import torch

    try:
        import torch.nn.modules.linear_cross_entropy  # noqa: F401  (registers the torch_nn ops)
    except ImportError:
        return {}
    namespace = torch.ops.torch_nn
    table = {}
    for name, fn in (
        ("_linear_cross_entropy_batch_chunked", _linear_cross_entropy),
        ("_linear_cross_entropy_batch_chunked_no_reduction", _linear_cross_entropy_no_reduction),
    ):
        if hasattr(namespace, name):
            table[getattr(namespace, name).default] = fn
    return table


__all__ = ["python_decompositions"]
