"""Random-number ops: tensorkiln vs torch eager (and torch.compile), 1 and 2 threads,
interleaved; build, first run and steady state apart. Writes its table to BENCHMARKS.md
(section ``random-ops``).

    .venv/bin/python benchmarks/random_ops.py [--repeat 30] [--no-compile]

The values cannot be compared with torch's (each has its own generator): the last
columns give the mean and standard deviation of both outputs, which must agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from peers import WORKLOAD_COLUMNS, load_average, run_workloads  # noqa: E402
from kernels import Fn  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402


ROWS, COLUMNS = 1024, 4096  # 4M elements


def rand():
    return "rand 1024x4096 f32", Fn(lambda x: torch.rand(ROWS, COLUMNS) + x), (torch.zeros(1),)


def randn():
    return "randn 1024x4096 f32", Fn(lambda x: torch.randn(ROWS, COLUMNS) + x), (torch.zeros(1),)


def dropout():
    return "dropout p=0.1 (training) 1024x4096", Fn(lambda x: torch.nn.functional.dropout(x, 0.1, training=True)), (
        torch.randn(ROWS, COLUMNS),
    )


def randint():
    return "randint [0, 1000) 4M int64", Fn(lambda x: torch.randint(0, 1000, (ROWS * COLUMNS,)) + x.long()), (torch.zeros(1),)


class Reparameterise(torch.nn.Module):
    """A VAE's middle: encoder to (mu, logvar), z = mu + exp(logvar / 2) * eps, decoder."""

    def __init__(self):
        super().__init__()
        self.enc, self.dec = torch.nn.Linear(512, 2 * 128), torch.nn.Linear(128, 512)

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        return self.dec(mu + torch.exp(0.5 * logvar) * torch.randn_like(mu))


def vae():
    torch.manual_seed(0)
    return "VAE reparameterisation, batch 256", Reparameterise().eval(), (torch.randn(256, 512),)


def multinomial():
    probs = torch.softmax(torch.randn(64, 1000), -1)
    return "multinomial 64x1000, 16 with replacement", Fn(lambda p: torch.multinomial(p, 16, replacement=True)), (probs,)


CASES = [rand, randn, dropout, randint, vae, multinomial]


def _moments(values) -> str:
    a = np.asarray(values, dtype=np.float64)
    return f"{a.mean():.4f} / {a.std():.4f}"


def main() -> None:
    rows, repeat = run_workloads(CASES, lambda got, expected: [_moments(got), _moments(expected)])
    body = [
        "## Random numbers: rand, randn, dropout in training, randint, a VAE, multinomial",
        "",
        f"`benchmarks/random_ops.py` on {machine()}; build = one cold `tk.build` (s), first run = its first call,",
        f"steady state = medians of {repeat} calls per thread count, tensorkiln, torch eager and torch.compile",
        "called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower. Our draws: a",
        "counter-based generator (SplitMix64's mixer on each element's indices, `dialects/graph/random.py`),",
        "computed inside the fused kernel that uses them; torch eager: its Mersenne Twister, one op at a time;",
        "torch.compile: Philox in the generated kernel. Mean / std of the outputs must agree (not the values).",
        f"Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "mean / std (tk)", "mean / std (torch)"], rows),
    ]
    write_section("random-ops", "\n".join(body))


if __name__ == "__main__":
    main()
