"""``transformers::grouped_mm_fallback``: the custom op Hugging Face transformers exports
its mixture-of-experts products as (registered by ``transformers.integrations.moe``
when float32 weights are exported), defined here with the same name, schema and
semantics when transformers has not registered it, so that tests need no transformers."""

from __future__ import annotations

import torch


def _grouped_mm_fallback(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    output = torch.zeros(input.size(0), weight.size(2), dtype=input.dtype)
    start = 0
    for expert, end in enumerate(offs.tolist()):
        output[start:end] = input[start:end] @ weight[expert]
        start = end
    return output


if not hasattr(torch.ops.transformers, "grouped_mm_fallback"):
    torch.library.custom_op(
        "transformers::grouped_mm_fallback",
        _grouped_mm_fallback,
        mutates_args=(),
        schema="(Tensor input, Tensor weight, Tensor offs) -> Tensor",
    )
    torch.library.register_fake(
        "transformers::grouped_mm_fallback",
        lambda input, weight, offs: input.new_empty(input.size(0), weight.size(2)),
    )

grouped_mm_fallback = torch.ops.transformers.grouped_mm_fallback
