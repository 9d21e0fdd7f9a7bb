"""Sizes past 64 bits from small inputs: k inputs of length L, each on its own axis,
broadcast to an L**k-element temporary (the issue's case: four of 2**16 make 2**64
elements, whose byte count wrapped to a one-byte buffer). Every executor and loaded
artifact must refuse such a call (``TensorTooLargeError``, or ``MemoryError`` for a size
that fits 64 bits but not in memory) before allocating, and stay right on small sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tensorkiln as tk
from tensorkiln.runtime import load_module

from . import WRONG, Probe, same
from .models import outer_inputs, outer_sum, reference

#: (inputs, length): the temporary has length**inputs float32 elements, past 2**63 bytes
#: (the inputs themselves at most 16 MB)
HUGE = [(4, 2**16), (4, 2**17 + 3), (3, 2**21), (3, 2**22), (5, 2**13), (5, 3**9)]
#: fits 64 bits, not memory: 2**40 to 2**48 elements
UNALLOCATABLE = [(2, 2**20), (4, 2**11), (3, 2**16), (5, 2**9)]
SMALL = [(2, 5), (3, 1), (4, 3), (5, 2)]


def _must_refuse(run, args: list[np.ndarray]) -> tuple[str, str]:
    run(*args)
    return WRONG, "returned a result for a tensor that cannot exist"


def _executors(module, workdir: Path, name: str) -> dict[str, object]:
    root = workdir / f"{name}.tk"
    tk.build(module).export_library(root)
    return {
        "graph": tk.create_executor("graph", module).evaluate(),
        "aot": tk.create_executor("aot", module).evaluate(),
        "vm": tk.create_executor("vm", module).evaluate(),
        "loaded aot": load_module(root, executor="aot"),
        "loaded graph": load_module(root, executor="graph"),
    }


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    found = []
    for inputs in (2, 3, 4, 5):
        module = outer_sum(inputs)
        runners = _executors(module, workdir, f"outer{inputs}")
        if quick:
            runners = {k: runners[k] for k in ("graph", "loaded aot")}
        expected = reference(module)
        for kind, run in runners.items():
            for n, length in [c for c in HUGE + UNALLOCATABLE if c[0] == inputs]:
                args = outer_inputs(n, length)
                found.append(Probe(f"{kind}: {n} inputs of {length}", lambda run=run, args=args: _must_refuse(run, args),
                                   clear=(MemoryError,)))
            for n, length in [c for c in SMALL if c[0] == inputs]:
                args = outer_inputs(n, length)
                found.append(Probe(f"{kind}: {n} inputs of {length} (fits)",
                                   lambda run=run, args=args, expected=expected: same(run(*args), expected(*args))))
    return found
