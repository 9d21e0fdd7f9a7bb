"""One model through tensorkiln against torch eager: export, import, build, run, compare.

The shared step of the model-registry surveys (``tv_sweep``, ``timm_sweep``)::

    status, detail = check_model(model, (torch.randn(1, 3, 224, 224),))

``status`` is ``ok`` (every output within a relative L2 error of 1e-4), ``mismatch``,
``export_fail`` (torch.export itself failed: not ours) or ``error`` (the stage and the
message).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np


def output_tensors(value: Any) -> list[Any]:
    """The tensors of a model output (ModelOutput, dict, tuple, tensor), in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, dict):
        value = tuple(value.values())
    if isinstance(value, tuple | list):
        return [t for v in value for t in output_tensors(v)]
    return []


def survey(checks: Iterable[tuple[str, Callable[[], tuple[str, str]]]]) -> None:
    """Run each ``(label, check)``, printing ``label STATUS detail (seconds)`` as it ends,
    then a summary by status."""
    counts: Counter[str] = Counter()
    for label, check in checks:
        start = time.perf_counter()
        status, detail = check()
        counts[status] += 1
        print(f"{label} {status} {detail} ({time.perf_counter() - start:.1f} s)", flush=True)
    print("summary:", ", ".join(f"{status} {n}" for status, n in counts.most_common()))


def randomize_zeros(model: Any, seed: int = 0) -> Any:
    """Redraw the parameters a library initialises to zero (a classifier head, a residual
    branch's last norm scale), so that every output depends on every layer."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() and not p.abs().max():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.05)
    return model


def check_model(model: Any, inputs: tuple[Any, ...]) -> tuple[str, str]:
    """(status, detail) of ``model(*inputs)`` compiled by tensorkiln (see the module doc)."""
    import torch

    import tensorkiln as tk
    from tensorkiln.frontends.torch import from_exported_program

    stage = "export"
    try:
        try:
            program = torch.export.export(model, inputs)
        except Exception as error:  # torch's failure, not ours
            return "export_fail", f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        stage = "import"
        module = from_exported_program(program)
        stage = "build"
        start = time.perf_counter()
        lib = tk.build(module)
        build_s = time.perf_counter() - start
        stage = "run"
        with torch.no_grad():
            want = [t.numpy() for t in output_tensors(model(*inputs))]
        got = lib(*(t.numpy() for t in inputs))
        got = list(got) if isinstance(got, tuple) else [got]
        if not want:
            return "error", "run: no tensor found in torch's output"
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            return "mismatch", f"outputs {[g.shape for g in got]}, torch {[w.shape for w in want]}"
        errors = [float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)]
    except Exception as error:
        return "error", f"{stage}: {type(error).__name__}: {' | '.join(str(error).splitlines()[:3])[:300]}"
    status = "ok" if max(errors) < 1e-4 else "mismatch"
    return status, f"build {build_s:.1f} s, rel. L2 error {max(errors):.1e} ({len(errors)} outputs)"


__all__ = ["check_model", "output_tensors", "randomize_zeros", "survey"]
