"""Ops with data-dependent result sizes and run-time checks: tensorkiln (the VM reading
each size between compiled functions) vs torch eager (and torch.compile), 1 and 2
threads, interleaved; build, first run and steady state apart. Long sorts too (topk
over a vocabulary, argsort of 256K values). Writes its table to
BENCHMARKS.md (section ``data-dependent``).

    .venv/bin/python benchmarks/data_dependent.py [--repeat 30] [--no-compile]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from kernels import Fn  # noqa: E402
from peers import WORKLOAD_COLUMNS, load_average, run_workloads  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROWS, COLUMNS = 1024, 1024  # 1M elements


def _data():
    torch.manual_seed(0)
    return torch.randn(ROWS, COLUMNS)


def nonzero():
    return "nonzero(x > 0) 1024x1024", Fn(lambda x: torch.nonzero(x > 0)), (_data(),)


def boolean_select():
    return "x[x > 0.5] * 2 1024x1024", Fn(lambda x: x[x > 0.5] * 2), (_data(),)


def boolean_assign():
    def assign(x):
        y = x.clone()
        y[x < 0] = x[x < 0] * 0.1  # a leaky ReLU by assignment
        return y

    return "y[x < 0] = x[x < 0] * 0.1 1024x1024", Fn(assign), (_data(),)


def unique_counts():
    torch.manual_seed(0)
    ids = torch.randint(0, 5000, (1 << 18,))
    return "unique(ids, return_counts) 256K ids < 5000", Fn(lambda i: torch.unique(i, return_counts=True)[1]), (ids,)


def detections():
    """Post-processing of a detector: the boxes whose best class score passes a threshold."""
    torch.manual_seed(0)
    scores, boxes = torch.rand(20000, 80), torch.randn(20000, 4)

    def keep(s, b):
        best = s.max(1).values
        return torch.cat([b[best > 0.99], best[best > 0.99, None]], 1)

    return "keep boxes with score > 0.99, 20000x80", Fn(keep), (scores, boxes)


def image_tokens():
    """A vision-language model's input step: check that image tokens and features match
    (transformers' check), then put the features in place of the tokens."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 700))
    ids[0, 50:626] = 1000
    embeds, features = torch.randn(1, 700, 1024), torch.randn(576, 1024)

    def place(ids, embeds, features):
        is_image = ids == 1000
        torch._check(is_image.sum().item() == features.shape[0])
        return embeds.masked_scatter(is_image.unsqueeze(-1), features)

    return "image-token check + masked_scatter 700x1024", Fn(place), (ids, embeds, features)


def top_k_sampling():
    """A language model's sampling filter: the 50 best logits of each row of a 50257 vocab."""
    torch.manual_seed(0)
    return "topk(logits, 50).indices 4x50257", Fn(lambda x: torch.topk(x, 50).indices), (torch.randn(4, 50257),)


def long_sort():
    torch.manual_seed(0)
    return "argsort(x, stable) 256K f32", Fn(lambda x: torch.argsort(x, stable=True)), (torch.randn(1 << 18),)


CASES = [nonzero, boolean_select, boolean_assign, unique_counts, detections, image_tokens, top_k_sampling, long_sort]


def _same(got, expected) -> list[str]:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return [f"shape {got.shape} vs {expected.shape}"]
    return ["equal" if np.allclose(got, expected, rtol=1e-5, atol=1e-6) else "DIFFERENT"]


def main() -> None:
    rows, repeat = run_workloads(CASES, _same)
    body = [
        "## Data-dependent sizes: nonzero, boolean masks, unique, a detector's filter, an input check; long sorts",
        "",
        f"`benchmarks/data_dependent.py` on {machine()}; build = one cold `tk.build` (s), first run = its first call,",
        f"steady state = medians of {repeat} calls per thread count, tensorkiln, torch eager and torch.compile",
        "called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower. Ours: a VM",
        "program, the counts computed by one compiled function, read between functions (`graph.data_size`),",
        "the rows placed by a scatter at `cumsum(mask) - 1`; run-time checks (`graph.check`) are results of",
        "the function they are computed in. Sorts of axes longer than 128 (`unique`, `topk`, `argsort`) are a merge",
        f"sort per line (`te.sort`, `lowering/sort_kernel.py`). Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "vs torch"], rows),
    ]
    write_section("data-dependent", "\n".join(body))


if __name__ == "__main__":
    main()
