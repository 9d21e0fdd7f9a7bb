"""Mixture-of-experts feed-forward blocks (Mixtral / Qwen-MoE / OLMoE style, computed as
Hugging Face transformers computes them: rows sorted by expert, grouped products):
tensorkiln vs torch eager (``F.grouped_mm``) and torch.compile, 1 and 2 threads,
interleaved; build, first run and steady state apart. Writes its table to BENCHMARKS.md
(section ``moe``).

    .venv/bin/python benchmarks/moe.py [--repeat 30] [--no-compile]

The block is ``tests/moe_ops.py``'s (no transformers needed): float32, exported with
transformers' ``grouped_mm_fallback`` op as transformers exports it, which tensorkiln
compiles to ``graph.grouped_matmul`` (each row times its expert's matrix, the weights
read in place).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the MoE block and transformers' op
from peers import WORKLOAD_COLUMNS, load_average, relative_error, run_workloads  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import torch  # noqa: E402
from moe_ops import MixtureOfExperts  # noqa: E402



def _block(name: str, tokens: int, hidden: int, intermediate: int, experts: int, top_k: int):
    def make():
        torch.manual_seed(0)
        model = MixtureOfExperts(hidden, intermediate, experts, top_k, transformers_op=False).eval()
        return name, model, (torch.randn(tokens, hidden),)

    make.__name__ = name
    return make


CASES = [
    _block("Mixtral-like: 8 experts top-2, d 512, ffn 1024, 256 tokens (prefill)", 256, 512, 1024, 8, 2),
    _block("Mixtral-like: 8 experts top-2, d 512, ffn 1024, 4 tokens (decode)", 4, 512, 1024, 8, 2),
    _block("OLMoE-like: 64 experts top-8, d 512, ffn 256, 128 tokens", 128, 512, 256, 64, 8),
]


def main() -> None:
    rows, repeat = run_workloads(CASES, relative_error)
    body = [
        "## Mixture-of-experts blocks: grouped products",
        "",
        f"`benchmarks/moe.py` on {machine()}; the block of `tests/moe_ops.py` in float32 (router, top-k,",
        "rows sorted by expert, gated up projection and down projection as grouped products, weighted sum",
        "per token); torch eager runs `F.grouped_mm`, torch.compile and torch.export take transformers'",
        "`grouped_mm_fallback` op (a loop over experts), as transformers does. build = one cold `tk.build`",
        f"(s), first run = its first call, steady state = medians of {repeat} calls per thread count, the",
        "peers called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower.",
        f"Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "rel. L2 err"], rows),
    ]
    write_section("moe", "\n".join(body))


if __name__ == "__main__":
    main()
