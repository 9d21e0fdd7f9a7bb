"""A damaged compile cache (``driver/compile_cache.py``, #39 item 4): a byte flipped in
an entry, an entry truncated, another model's entry copied over one of this model's.
The next build must still be right (a damaged entry is a miss and is rewritten)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

import tensorkiln as tk

from . import Probe, same
from .models import FEATURES, chain, reference


def _entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".tmp-"))


class _Cache:
    """A cache directory filled by one build of a model (kept pristine; each probe
    damages a copy, then builds the model again from it)."""

    def __init__(self, rng: np.random.Generator, workdir: Path):
        self.module = chain(rng, "n")
        self.other = chain(rng, "n")  # same structure, other weights: entries of the same kinds
        self.pristine = workdir / "cache"
        self.foreign = workdir / "cache-other"
        self.live = workdir / "cache-live"
        self.x = rng.standard_normal((4, FEATURES)).astype("f4")
        self.expected = reference(self.module)(self.x)
        try:
            tk.set_cache_dir(self.pristine)
            tk.build(self.module)
            tk.set_cache_dir(self.foreign)
            tk.build(self.other)
        finally:
            tk.set_cache_dir(None)
        self.entries = [p.relative_to(self.pristine) for p in _entries(self.pristine)]
        self.foreign_entries = _entries(self.foreign)

    def probe(self, name: str, damage: Callable[[Path], None]) -> Probe:
        def run() -> tuple[str, str]:
            shutil.rmtree(self.live, ignore_errors=True)
            shutil.copytree(self.pristine, self.live)
            damage(self.live)
            try:
                tk.set_cache_dir(self.live)
                return same(tk.build(self.module)(self.x), self.expected)
            finally:
                tk.set_cache_dir(None)

        return Probe(name, run)


def _flip(path: Path, offset: int) -> None:
    blob = bytearray(path.read_bytes())
    blob[offset % len(blob)] ^= 0x10
    path.write_bytes(bytes(blob))


def _truncate(path: Path, keep: float) -> None:
    blob = path.read_bytes()
    path.write_bytes(blob[: int(len(blob) * keep)])


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    cache = _Cache(rng, workdir)
    flips = 2 if quick else 8
    found = []
    for entry in cache.entries:
        size = (cache.pristine / entry).stat().st_size
        for offset in rng.integers(0, size, flips):
            found.append(cache.probe(f"{entry}: byte {offset} flipped", lambda c, e=entry, o=int(offset): _flip(c / e, o)))
        for keep in (0.0, 0.5, 0.99):
            found.append(cache.probe(f"{entry}: truncated to {keep:.0%}", lambda c, e=entry, k=keep: _truncate(c / e, k)))
        for other in cache.foreign_entries[: 1 if quick else 3]:
            found.append(cache.probe(f"{entry}: replaced by another model's {other.name}",
                                     lambda c, e=entry, o=other: shutil.copy(o, c / e)))
    return found
