"""Reliability probes: what a hostile but ordinary user tries, counted (issue #39).

Each *family* (a module of this package) makes a list of probes: concurrent calls into
every executor, sizes past 64 bits, tampered artifacts, a damaged compile cache, NaN and
inf through the order ops (against torch), and bad input (binary or deeply nested IR,
wrong call arguments). Every probe ends in one of:

- ``right``: the right answer;
- ``refused``: a clear error of a kind the probe allows (``ArtifactError``, a
  ``ValueError`` naming the argument, ``TensorTooLargeError``...);
- ``wrong``: a silent wrong answer;
- ``unclear``: another exception (a ``KeyError`` or ``RecursionError`` from inside the
  compiler instead of an error that says what is wrong);
- ``crash`` / ``hang``: the process died, or the probe ran past its time limit.

The goal is 0 wrong, 0 unclear, 0 crashes, 0 hangs. Probes run in worker processes
(``runner.py``), so a crash or hang is counted and the next probe goes on::

    python -m tensorkiln.tools.reliability_probes                 # every family, a table
    python -m tensorkiln.tools.reliability_probes --quick --only artifacts,bad-input

docs/reliability.md ("Probes") has the last counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

RIGHT, REFUSED, WRONG, UNCLEAR, CRASH, HANG = "right", "refused", "wrong", "unclear", "crash", "hang"
#: verdicts that are failures of tensorkiln (the goal is none of them)
FAILURES = (WRONG, UNCLEAR, CRASH, HANG)


@dataclass(frozen=True)
class Probe:
    """One thing to try. ``run()`` returns ``(RIGHT | WRONG, detail)`` or raises; an
    exception of a type in ``clear`` is a clear refusal, any other is ``unclear``.
    ``calls``: how many calls into tensorkiln it makes (concurrency probes make many)."""

    name: str
    run: Callable[[], tuple[str, str]]
    clear: tuple[type[BaseException], ...] = ()
    calls: int = 1


def verdict_of(probe: Probe) -> tuple[str, str]:
    """Run ``probe`` in this process: its verdict and a one-line detail."""
    try:
        return probe.run()
    except probe.clear as error:
        return REFUSED, _one_line(error)
    except Exception as error:  # noqa: BLE001 (every other exception is the finding)
        return UNCLEAR, _one_line(error)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in f"{type(error).__name__}: {error}".splitlines() if line.strip()]
    return " / ".join(lines[:3])[:300]


def same(got, expected, rtol: float = 1e-4, atol: float = 1e-5) -> tuple[str, str]:
    """RIGHT when ``got`` matches ``expected`` (arrays, or tuples of them), else WRONG."""
    got_all = got if isinstance(got, tuple | list) else (got,)
    want_all = expected if isinstance(expected, tuple | list) else (expected,)
    if len(got_all) != len(want_all):
        return WRONG, f"{len(got_all)} outputs, expected {len(want_all)}"
    for k, (g, w) in enumerate(zip(got_all, want_all)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return WRONG, f"output {k}: shape {g.shape}, expected {w.shape}"
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return WRONG, f"output {k}: largest difference {np.nanmax(np.abs(g.astype('f8') - w)):.3g}"
    return RIGHT, ""


__all__ = ["CRASH", "FAILURES", "HANG", "REFUSED", "RIGHT", "UNCLEAR", "WRONG", "Probe", "same", "verdict_of"]
