"""Matrix decompositions (LU, QR, eigh, SVD, pinv) and matrix_exp on the batches of small matrices models
use them on, and on one larger matrix: tensorkiln (one kernel per factorization, the batch
in parallel) vs torch eager (LAPACK) and torch.compile, 1 and 2 threads, interleaved;
build, first run and steady state apart. Eigen- and singular vectors are compared through
sign-free products (``V diag(w) V^T``, ``U V^T``). Writes its table to BENCHMARKS.md
(section ``decompositions``).

    .venv/bin/python benchmarks/decompositions.py [--repeat 30] [--no-compile]
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


def _random(*shape: int) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(*shape)


def _symmetric(*shape: int) -> torch.Tensor:
    x = _random(*shape)
    return x @ x.mT / shape[-1]


def lu_factor():
    return "lu_factor 512 x 8x8", Fn(lambda a: torch.linalg.lu_factor(a).LU), (_random(512, 8, 8),)


def lu_solve():
    def solve(a, b):
        packed, pivots = torch.linalg.lu_factor(a)
        return torch.linalg.lu_solve(packed, pivots, b)

    return "lu_factor + lu_solve 512 x 8x8, 8x4", Fn(solve), (_random(512, 8, 8) + 3 * torch.eye(8), _random(512, 8, 4))


def qr():
    return "qr (reduced) 256x64: [Q; R]", Fn(lambda a: torch.cat(torch.linalg.qr(a))), (_random(256, 64),)


def eigh_batch():
    def reconstruct(a):
        values, vectors = torch.linalg.eigh(a)
        return (vectors * values[..., None, :]) @ vectors.mT

    return "eigh 256 x 16x16 (V diag(w) V^T)", Fn(reconstruct), (_symmetric(256, 16, 16),)


def eigvalsh_large():
    return "eigvalsh 96x96", Fn(lambda a: torch.linalg.eigvalsh(a)), (_symmetric(96, 96),)


def kabsch():
    """The rotations aligning point sets (pose estimation, protein structure): U V^T of
    the SVD of each 3x3 cross-covariance."""

    def rotations(h):
        u, _, vh = torch.linalg.svd(h)
        return u @ vh

    return "svd 4096 x 3x3 (Kabsch U Vh)", Fn(rotations), (_random(4096, 3, 3),)


def svdvals():
    return "svdvals 128x48", Fn(lambda a: torch.linalg.svdvals(a)), (_random(128, 48),)


def pinv():
    return "pinv 64 x 12x6", Fn(lambda a: torch.linalg.pinv(a)), (_random(64, 12, 6),)


def rotations_from_axis_angle():
    """Rotation matrices from axis-angle vectors (robotics, 3-d vision): matrix_exp of the
    skew-symmetric matrix of each vector."""
    torch.manual_seed(0)
    w = torch.randn(1024, 3)
    zero = torch.zeros(1024)
    skew = torch.stack([zero, -w[:, 2], w[:, 1], w[:, 2], zero, -w[:, 0], -w[:, 1], w[:, 0], zero], 1).reshape(1024, 3, 3)
    return "matrix_exp 1024 x 3x3 skew (rotations)", Fn(lambda a: torch.linalg.matrix_exp(a)), (skew,)


CASES = [lu_factor, lu_solve, qr, eigh_batch, eigvalsh_large, kabsch, svdvals, pinv, rotations_from_axis_angle]


def _same(got, expected) -> list[str]:
    as_list = lambda r: list(r) if isinstance(r, tuple | list) else [r]  # noqa: E731
    got, expected = as_list(got), as_list(expected)
    worst = 0.0
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            return [f"shape {g.shape} vs {e.shape}"]
        worst = max(worst, float(np.abs(g - e).max() / max(np.abs(e).max(), 1e-30)))
    return [f"{worst:.0e}"]


def main() -> None:
    rows, repeat = run_workloads(CASES, _same)
    body = [
        "## Matrix decompositions: LU, QR, eigh, SVD, pinv, matrix_exp",
        "",
        f"`benchmarks/decompositions.py` on {machine()}, float32; build = one cold `tk.build` (s), first run = its",
        f"first call, steady state = medians of {repeat} calls per thread count, tensorkiln, torch eager (LAPACK)",
        "and torch.compile called in turn, thread counts alternating in 3 blocks. tk/x > 1: tensorkiln is slower.",
        "Ours: one kernel per factorization running LAPACK's unblocked steps (LU, Householder QR) or Jacobi",
        "sweeps (eigh; SVD: a QR, one-sided Jacobi on its R, a QR of `R V` for U) per matrix, the matrices of",
        "a batch in parallel; matrix_exp: Pade [13/13] from graph ops, then one kernel squaring each matrix",
        "its own number of times. Vectors are compared through sign-free products; `max rel diff` is relative to the",
        f"largest |value| of torch's result. Load average at the end: {load_average()}.",
        "",
        table([*WORKLOAD_COLUMNS, "max rel diff"], rows),
    ]
    write_section("decompositions", "\n".join(body))


if __name__ == "__main__":
    main()
