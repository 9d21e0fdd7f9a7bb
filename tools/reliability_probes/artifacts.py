"""Tampered artifacts. Each edit is loaded and, if it loads, run and compared:

- a byte flipped anywhere in any file, the manifest left as it was: must be refused;
- with the manifest rewritten to match (what someone editing on purpose does): each byte
  of the library's ELF header flipped, bits of its program headers flipped, a number of graph.json or meta.json changed,
  nodes/tensors/storages reordered, paths and the external-module loader pointed out of
  the artifact: must be refused or still give the right answer.

(A flipped byte inside the machine code, resealed, is beyond any check: loading an
artifact runs its code, so load only artifacts you trust. docs/reliability.md says so.)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tensorkiln as tk
from tensorkiln.runtime import ArtifactError, load_module
from tensorkiln.runtime.manifest import seal

from . import Probe, same
from .models import FEATURES, chain, reference

ELF_HEADER = 64


def _flip(path: Path, offset: int, bit: int = 0) -> None:
    blob = bytearray(path.read_bytes())
    blob[offset % len(blob)] ^= 1 << bit
    path.write_bytes(bytes(blob))


def _numbers(data: Any, at: tuple = ()) -> list[tuple]:
    """Paths to every int in a JSON value (lists and dicts walked)."""
    if isinstance(data, bool):
        return []
    if isinstance(data, int):
        return [at]
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    return [p for key, value in items for p in _numbers(value, (*at, key))]


def _set(data: Any, at: tuple, value: Any) -> None:
    for key in at[:-1]:
        data = data[key]
    data[at[-1]] = value


def _edit_json(path: Path, edit: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


class _Artifact:
    """One exported model; ``probe(name, damage, reseal)`` damages a fresh copy of it."""

    def __init__(self, rng: np.random.Generator, workdir: Path):
        self.module = chain(rng, "n")
        self.root = workdir / "pristine.tk"
        tk.build(self.module).export_library(self.root)
        self.workdir = workdir
        self.x = rng.standard_normal((5, FEATURES)).astype("f4")
        self.expected = reference(self.module)(self.x)
        self.copies = 0

    def probe(self, name: str, damage: Callable[[Path], None], reseal: bool) -> Probe:
        def run() -> tuple[str, str]:
            self.copies += 1
            copy = self.workdir / f"copy{self.copies}.tk"
            shutil.copytree(self.root, copy)
            try:
                damage(copy)
                if reseal:
                    seal(copy)
                results = [load_module(copy, executor=e)(self.x) for e in ("aot", "graph")]
                return next((v for v in (same(r, self.expected) for r in results) if v[0] != "right"), ("right", "loaded"))
            finally:
                shutil.rmtree(copy, ignore_errors=True)

        return Probe(name, run, clear=(ArtifactError,))


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    art = _Artifact(rng, workdir)
    files = sorted(p.relative_to(art.root).as_posix() for p in art.root.rglob("*") if p.is_file())
    flips = 3 if quick else 12
    found = []
    for name in files:
        size = (art.root / name).stat().st_size
        for offset in rng.integers(0, size, flips):
            found.append(art.probe(f"{name}: byte {offset} flipped", lambda a, n=name, o=int(offset): _flip(a / n, o), False))
    for offset in range(0, ELF_HEADER, 4 if quick else 1):
        found.append(art.probe(f"model.so: ELF header byte {offset} flipped, resealed",
                               lambda a, o=offset: _flip(a / "model.so", o, 7), True))
    headers_end = ELF_HEADER + 56 * int.from_bytes((art.root / "model.so").read_bytes()[56:58], "little")
    for offset in rng.integers(ELF_HEADER, headers_end, 8 if quick else 80):
        bit = int(rng.choice([0, 3, 7]))
        found.append(art.probe(f"model.so: program header byte {offset} bit {bit} flipped, resealed",
                               lambda a, o=int(offset), b=bit: _flip(a / "model.so", o, b), True))
    for name in ("graph.json", "meta.json"):
        paths = _numbers(json.loads((art.root / name).read_text()))
        picks = rng.choice(len(paths), min(len(paths), 6 if quick else 40), replace=False)
        for k in picks:
            at, value = paths[k], int(rng.choice([0, 1, -1, 2**31, 2**63 - 1, 7]))
            found.append(art.probe(f"{name}: {'/'.join(map(str, at))} = {value}, resealed",
                                   lambda a, n=name, at=at, v=value: _edit_json(a / n, lambda d: _set(d, at, v)), True))
    reorder = {
        "graph.json: nodes reversed": lambda p: p["nodes"].reverse(),
        "graph.json: first two nodes swapped": lambda p: p["nodes"].insert(0, p["nodes"].pop(1)),
        "graph.json: storages reversed": lambda p: p["storages"].reverse(),
        "graph.json: tensors reversed": lambda p: p["tensors"].reverse(),
        "graph.json: a node dropped": lambda p: p["nodes"].pop(),
        "graph.json: a node doubled": lambda p: p["nodes"].append(p["nodes"][-1]),
    }
    for name, edit in reorder.items():
        found.append(art.probe(f"{name}, resealed", lambda a, e=edit: _edit_json(a / "graph.json", e), True))
    escapes = {
        "library=/lib/x86_64-linux-gnu/libc.so.6": {"library": "/lib/x86_64-linux-gnu/libc.so.6"},
        "library=../model.so": {"library": "../model.so"},
        "program=/etc/passwd": {"program": "/etc/passwd"},
        "weights=../../w.npz": {"weights": "../../w.npz"},
        "externals.loader=os:system": {"externals": {"loader": "os:system", "modules": []}},
        "externals.loader=builtins:exec": {"externals": {"loader": "builtins:exec", "modules": [{"file": "graph.json"}]}},
    }
    for name, entries in escapes.items():
        found.append(art.probe(f"meta.json: {name}, resealed", lambda a, e=entries: _edit_json(a / "meta.json", lambda m: m.update(e)), True))
    return found
