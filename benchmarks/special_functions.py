"""torch.special's functions beyond the elementwise basics -- the orthogonal polynomials of
a per-element degree and the incomplete gamma function (one kernel each: a recurrence or
series per element, as many steps as the element needs) and the composed special
functions (digamma, the Hurwitz zeta, Bessel functions: graph ops fused into few kernels):
tensorkiln vs torch eager and torch.compile, 1 and 2 threads, interleaved; build (these
are the models with the most ops per output), first run and steady state apart. Writes
its table to BENCHMARKS.md (section ``special-functions``).

    .venv/bin/python benchmarks/special_functions.py [--repeat 30] [--no-compile]
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

SIZE = 1 << 16


def _uniform(low: float, high: float, *shape: int) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.rand(*shape) * (high - low) + low


def _degrees(high: int) -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randint(0, high + 1, (SIZE,)).float()


def legendre():
    fn = Fn(lambda x, n: torch.special.legendre_polynomial_p(x, n))
    return f"legendre_polynomial_p {SIZE}, n in 0..20", fn, (_uniform(-1, 1, SIZE), _degrees(20))


def chebyshev():
    """Degrees above 6 take torch's closed form cos(n acos x) inside [-1, 1]."""
    fn = Fn(lambda x, n: torch.special.chebyshev_polynomial_t(x, n))
    return f"chebyshev_polynomial_t {SIZE}, n in 0..30", fn, (_uniform(-1.2, 1.2, SIZE), _degrees(30))


def hermite_features():
    """A feature expansion: H_0..H_7 of each input (a scalar degree per output)."""

    def features(x):
        return torch.stack([torch.special.hermite_polynomial_he(x, k) for k in range(8)], -1)

    return "hermite_polynomial_he 8192 x degrees 0..7 (stacked)", Fn(features), (_uniform(-3, 3, 8192),)


def gamma_cdf():
    """The cdf of Gamma distributions of shapes 0.1 to 50 (torch.special.gammainc)."""
    fn = Fn(lambda a, x: torch.special.gammainc(a, x))
    return f"gammainc(a, x) {SIZE}, a in 0.1..50", fn, (_uniform(0.1, 50, SIZE), _uniform(0.0, 60, SIZE))


def digamma():
    return f"digamma {SIZE}", Fn(lambda x: torch.special.digamma(x)), (_uniform(-5, 30, SIZE),)


def zeta():
    return f"zeta(x, q) {SIZE}", Fn(lambda x, q: torch.special.zeta(x, q)), (_uniform(1.5, 8, SIZE), _uniform(0.5, 20, SIZE))


def bessel_k1():
    return f"modified_bessel_k1 {SIZE}", Fn(lambda x: torch.special.modified_bessel_k1(x)), (_uniform(0.01, 20, SIZE),)


CASES = [legendre, chebyshev, hermite_features, gamma_cdf, digamma, zeta, bessel_k1]


def _same(got, expected) -> list[str]:
    g, e = np.asarray(got), np.asarray(expected)
    if g.shape != e.shape:
        return [f"shape {g.shape} vs {e.shape}"]
    scale = np.maximum(np.abs(e), 1.0)
    return [f"{float(np.nanmax(np.abs(g - e) / scale)):.0e}"]


def main() -> None:
    rows, repeat = run_workloads(CASES, _same)
    body = [
        "## Special functions: orthogonal polynomials, incomplete gamma, digamma, zeta, Bessel",
        "",
        f"`benchmarks/special_functions.py` on {machine()}, float32; build = one cold `tk.build` (s), first run = its",
        f"first call, steady state = medians of {repeat} calls per thread count, tensorkiln, torch eager and",
        "torch.compile called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower.",
        "Polynomials, gammainc: one kernel running each element's recurrence or series (its own number of steps);",
        "digamma, zeta, k1: torch's algorithms composed from graph ops and fused into one kernel each. `max diff` is relative to max(|torch's value|, 1).",
        f"Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "max diff"], rows),
    ]
    write_section("special-functions", "\n".join(body))


if __name__ == "__main__":
    main()
