"""Every executor and every way to load a model, called from 4 threads at once, each
call on its own input (a result that leaked from another thread's call is wrong)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

import tensorkiln as tk
from tensorkiln.driver import build_vm
from tensorkiln.runtime import load_module

from . import RIGHT, WRONG, Probe
from .models import FEATURES, branching, chain, reference

THREADS = 4


def _hammer(run, expected_of, inputs: list[list[np.ndarray]]) -> tuple[str, str]:
    expected = [[expected_of(x) for x in per_thread] for per_thread in inputs]
    wrong: list[str] = []
    start = threading.Barrier(len(inputs))

    def worker(t: int) -> None:
        start.wait()
        for c, x in enumerate(inputs[t]):
            try:
                got = run(x)
            except Exception as e:  # noqa: BLE001 (a call that fails under load is wrong)
                wrong.append(f"{type(e).__name__}: {e}")
                continue
            if got.shape != expected[t][c].shape or not np.allclose(got, expected[t][c], rtol=1e-4, atol=1e-5):
                wrong.append("wrong result")

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(len(inputs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    total = sum(len(x) for x in inputs)
    if wrong:
        return WRONG, f"{len(wrong)} of {total} concurrent calls wrong ({wrong[0]})"
    return RIGHT, f"{total} concurrent calls"


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    calls = 60 if quick else 250
    symbolic, static = chain(rng, "n"), chain(rng, 6)
    control = branching(rng)
    tk.build(symbolic).export_library(workdir / "chain.tk")
    vm = build_vm(control)
    vm.export_library(workdir / "branching.tk")
    runners = {
        "create_executor('graph')": (lambda: tk.create_executor("graph", symbolic).evaluate(), symbolic, True),
        "create_executor('aot')": (lambda: tk.create_executor("aot", symbolic).evaluate(), symbolic, True),
        "create_executor('vm')": (lambda: tk.create_executor("vm", symbolic).evaluate(), symbolic, True),
        "create_executor('interpreter')": (lambda: tk.create_executor("interpreter", symbolic).evaluate(), symbolic, True),
        "lib.graph_executor() (static)": (lambda: tk.build(static).graph_executor(), static, False),
        "load_module(executor='aot')": (lambda: load_module(workdir / "chain.tk", executor="aot"), symbolic, True),
        "load_module(executor='graph')": (lambda: load_module(workdir / "chain.tk", executor="graph"), symbolic, True),
        "VM with graph.if": (lambda: vm, control, True),
        "load_module(VM artifact)": (lambda: load_module(workdir / "branching.tk"), control, True),
    }
    found = []
    for name, (make, module, dynamic) in runners.items():
        sizes = [5, 3, 8, 1] if dynamic else [6]
        inputs = [[rng.standard_normal((sizes[(t + c) % len(sizes)], FEATURES)).astype("f4") for c in range(calls)]
                  for t in range(THREADS)]
        found.append(Probe(name, lambda make=make, module=module, inputs=inputs: _hammer(make(), reference(module), inputs),
                           calls=THREADS * calls))
    return found
