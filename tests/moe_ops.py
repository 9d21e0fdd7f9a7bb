"""A mixture-of-experts block computed as Hugging Face transformers computes it, for tests
and ``benchmarks/moe.py`` without transformers: ``transformers::grouped_mm_fallback``
(the custom op transformers exports its float32 expert products as, registered by
``transformers.integrations.moe``; here with the same name, schema and semantics when
transformers has not registered it) and :class:`MixtureOfExperts`."""

from __future__ import annotations

import torch

F = torch.nn.functional


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


class MixtureOfExperts(torch.nn.Module):
    """A sparse MoE feed-forward block as Hugging Face transformers (Mixtral, Qwen-MoE)
    computes it: top-k experts per token, the (token, expert) pairs sorted by expert,
    rows per expert counted (histc) and summed into offsets, a gated up projection and
    a down projection as grouped products, weighted, unsorted and summed per token.
    The products: transformers' op with ``transformers_op``, else ``F.grouped_mm``
    (torch exports it in bfloat16 only: float32 ones take transformers' op when
    exported or compiled, as transformers does)."""

    def __init__(self, hidden: int, intermediate: int, experts: int, top_k: int, transformers_op: bool):
        super().__init__()
        self.router = torch.nn.Linear(hidden, experts, bias=False)
        self.gate_up = torch.nn.Parameter(torch.randn(experts, hidden, 2 * intermediate) / hidden**0.5)
        self.down = torch.nn.Parameter(torch.randn(experts, intermediate, hidden) / intermediate**0.5)
        self.experts, self.top_k, self.transformers_op = experts, top_k, transformers_op

    def product(self, rows, weights, offsets):
        if self.transformers_op or (weights.dtype == torch.float32 and torch.compiler.is_compiling()):
            return grouped_mm_fallback(rows, weights, offs=offsets)
        return F.grouped_mm(rows, weights, offs=offsets)

    def forward(self, x):
        tokens = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
        # routed in float32: bfloat16 probabilities tie often, and ties may pick either expert
        weights, experts = torch.topk(F.linear(x.float(), self.router.weight.float()).softmax(-1), self.top_k)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        order_experts, order = torch.sort(experts.reshape(-1))
        rows = x[order // self.top_k]
        counts = torch.histc(order_experts.float(), bins=self.experts, min=0, max=self.experts - 1)
        offsets = torch.cumsum(counts, 0, dtype=torch.int32)
        gate, up = self.product(rows, self.gate_up, offsets).chunk(2, -1)
        out = self.product(F.silu(gate) * up, self.down, offsets) * weights.reshape(-1)[order, None]
        unsorted = torch.empty_like(order)
        unsorted[order] = torch.arange(order.shape[0])
        return out[unsorted].reshape(*tokens, self.top_k, -1).sum(-2)
