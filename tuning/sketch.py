"""Ansor-style search without templates: sketches generated from the loop structure,
random annotation, evolutionary search guided by a cost model over loop-IR features.

**Sketches** (structure) come from rules on the unscheduled kernel's loops:

* multi-level tiling of two output axes (SSRSRS on CPU): tile loops outside, the
  reduction split into an outer part and an inner part that runs around the inner row
  loop and the vectorized register tile
  (``a.o b.o | k.o a.i.o k.i a.i.i b.i``), when the kernel has reductions;
* cache_write at a tile level (the accumulator tile in registers; the fused elementwise
  consumer -- the kernel's epilogue -- then runs once per tile in the ``.write`` nest):
  always with a reduction, since our kernels have no cache stage;
* packing an input panel (cache_read) at the outer tile loop, or not;
* for a padded input (a conv's window taps), copying its padded window (cache_read
  pad=True) at the outermost loop or a tile loop, or keeping the bounds checks;
* elementwise kernels (no reduction): tile and vectorize the innermost axis only.

(Elementwise producers are already inlined into their consumers at the te level by
fuse-ops, and rfactor is not a primitive here, so those two Ansor rules have no
counterpart.)

**Annotation** samples the decisions: tile sizes per level, the reduction's inner
size, loop order of the outer tiles, unrolling of the inner rows, parallel outer loop.

**Evolutionary search**: a population of annotated sketches, scored by the cost model
(ridge regression or xgboost over :mod:`.features`, retrained on every measured batch),
evolves by mutation (a tile size, the reduction split, the order, unroll, parallel,
the cache_write level, packing) and crossover within a sketch; the best-scored unmeasured
ones form the batch, plus an epsilon share of random ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.utils.exceptions import VerifyException

from ..schedule import Schedule, ScheduleError
from ..schedule.nest import deferred_verification
from .cost_model import make_model
from .defaults import default_trace, lanes_of
from .features import kernel_features
from .policy import SearchPolicy, trace_key
from .record import Record
from .runner import Candidate
from .task import Task
from .templates import LoopInfo, _parallel_outermost, _tile_axes, tile_full

ROWS = (1, 2, 3, 4, 6, 8)
K_INNER = (0, 2, 4, 8, 16, 32, 64)
ROW_GROUPS = (0, 2)
#: where a padded input's window is copied (None: the taps keep their bounds checks)
PAD_AT = (None, "top", "outer", "inner")


def generate_sketches(info: LoopInfo) -> list[dict[str, Any]]:
    """The structural variants of a kernel (see the module docstring)."""
    sketches: list[dict[str, Any]] = []
    rank = len(info.outputs)
    if rank == 0:
        return [{"kind": "plain"}]
    if not info.reductions or rank == 1:
        return [{"kind": "elementwise"}]
    for axes in _tile_axes(info):
        for pack in [None] + [b for b in range(min(2, info.n_inputs))]:
            sketches.append({"kind": "tiled", "axes": axes, "pack": pack})
    return sketches


def sample_annotation(sketch: dict[str, Any], info: LoopInfo, lanes: int, rng: np.random.Generator) -> dict[str, Any]:
    """Random decisions for a sketch."""
    cols = [lanes * m for m in (1, 2, 3, 4, 6, 8)]
    d: dict[str, Any] = {"parallel": bool(rng.random() < 0.3)}
    if sketch["kind"] == "elementwise":
        d["cols"] = int(rng.choice([lanes * m for m in (1, 2, 4, 8, 16, 64)]))
        d["vectorize"] = bool(rng.random() < 0.9)
    elif sketch["kind"] == "tiled":
        d.update(
            rows=int(rng.choice(ROWS)),
            cols=int(rng.choice(cols)),
            k_inner=int(rng.choice(K_INNER)),
            row_groups=int(rng.choice(ROW_GROUPS)),
            order=str(rng.choice(["rows_outer", "cols_outer"])),
            unroll=bool(rng.random() < 0.7),
            write_at=str(rng.choice(["inner", "outer"])),
            pack_at=str(rng.choice(["outer", "inner"])),
        )
        if info.padded:
            d["pad_at"] = PAD_AT[int(rng.integers(len(PAD_AT)))]
    return d


def _vectorize_all(s: Schedule, names: list[str]) -> None:
    for name in names:
        if name in s.loops():
            try:
                s.vectorize(name)
            except ScheduleError:
                pass


def apply_sketch(s: Schedule, sketch: dict[str, Any], d: dict[str, Any], info: LoopInfo) -> None:
    """Apply an annotated sketch to the kernel of ``s`` (raises ScheduleError if illegal)."""
    kind = sketch["kind"]
    if kind == "elementwise":
        x = info.outputs[-1]
        s.split(x, d["cols"])
        if d["vectorize"]:
            _vectorize_all(s, [f"{x}.inner"])
    elif kind == "tiled":
        a, b = (info.outputs[k] for k in sketch["axes"])
        tile_full(s, a, b, d["rows"], d["cols"])
        first, second = f"{a}.outer", f"{b}.outer"
        if d["order"] == "cols_outer":
            first, second = second, first
            s.reorder(first, second)
        if sketch["pack"] is not None:
            s.cache_read(sketch["pack"], first if d["pack_at"] == "outer" else second)
        if d.get("pad_at"):
            at = {"top": s.loops()[0], "outer": first, "inner": second}[d["pad_at"]]
            for buffer in info.padded:
                s.cache_read(buffer, at, pad=True)
        # the accumulator tile at the inner tile loop (registers) or the outer one
        s.cache_write(second if d["write_at"] == "inner" else first)
        k = info.reductions[-1]
        inner_rows = f"{a}.inner"
        if d["k_inner"] and (info.extents.get(k) or 0) > d["k_inner"]:
            ko, ki = s.split(k, d["k_inner"])
            if d["row_groups"] and d["rows"] > d["row_groups"]:
                # SSRSRS: k.outer, a.inner.outer, k.inner, a.inner.inner, b.inner
                ro, ri = s.split(inner_rows, d["row_groups"])
                s.reorder(ro, ki)
                inner_rows = ri
        if d["unroll"]:
            try:
                s.unroll(inner_rows)
            except ScheduleError:
                pass
        _vectorize_all(s, [f"{b}.inner", f"{b}.inner.init", f"{b}.inner.write"])
    if d.get("parallel"):
        _parallel_outermost(s)


MUTABLE = ("rows", "cols", "k_inner", "row_groups", "order", "unroll", "write_at", "pack_at", "pad_at", "parallel",
           "vectorize")


class SketchPolicy(SearchPolicy):
    """Evolutionary search over annotated sketches (see the module docstring)."""

    name = "evolutionary"

    def __init__(self, task: Task, seed: int = 0, population: int = 64, generations: int = 3, epsilon: float = 0.15,
                 model: str = "auto"):
        super().__init__(task, seed)
        self.info = LoopInfo.of(task)
        self.lanes = lanes_of(task.target)
        self.sketches = generate_sketches(self.info)
        self.rng = np.random.default_rng(seed)
        self.population_size = population
        self.generations = generations
        self.epsilon = epsilon
        self.model = make_model(model, seed)
        self._default = default_trace(task)
        self._features: dict[str, np.ndarray] = {}
        self._traces: dict[str, list | None] = {}
        self._data: list[tuple[np.ndarray, float]] = []
        self._measured_points: list[tuple[dict, float]] = []

    # -- instantiation ------------------------------------------------------------------

    def _point_key(self, point: dict[str, Any]) -> str:
        import json

        return json.dumps(point, sort_keys=True)

    def _instantiate(self, point: dict[str, Any]) -> list | None:
        key = self._point_key(point)
        if key not in self._traces:
            try:
                s = Schedule(self.task.kernel())
                with deferred_verification():  # a point that fails is dropped: verify once, at the end
                    apply_sketch(s, self.sketches[point["sketch"]], point["decisions"], self.info)
                s.kernel.verify()
                self._traces[key] = s.trace
                self._features[key] = kernel_features(s.kernel)
            except (ScheduleError, VerifyException, ValueError, KeyError, TypeError):
                self._traces[key] = None
        return self._traces[key]

    def _random_point(self) -> dict[str, Any]:
        k = int(self.rng.integers(len(self.sketches)))
        return {"sketch": k, "decisions": sample_annotation(self.sketches[k], self.info, self.lanes, self.rng)}

    def _mutate(self, point: dict[str, Any]) -> dict[str, Any]:
        fresh = sample_annotation(self.sketches[point["sketch"]], self.info, self.lanes, self.rng)
        decisions = dict(point["decisions"])
        keys = [k for k in MUTABLE if k in decisions]
        for _ in range(1 + int(self.rng.random() < 0.3)):
            if keys:
                name = keys[int(self.rng.integers(len(keys)))]
                decisions[name] = fresh[name]
        sketch = point["sketch"]
        if self.rng.random() < 0.1:  # change the structure (e.g. packing) now and then
            sketch = int(self.rng.integers(len(self.sketches)))
            decisions = {**sample_annotation(self.sketches[sketch], self.info, self.lanes, self.rng),
                         **{k: v for k, v in decisions.items() if k in MUTABLE}}
        return {"sketch": sketch, "decisions": decisions}

    def _crossover(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["sketch"] != b["sketch"]:
            return dict(a)
        decisions = {k: (v if self.rng.random() < 0.5 else b["decisions"].get(k, v)) for k, v in a["decisions"].items()}
        return {"sketch": a["sketch"], "decisions": decisions}

    # -- search -------------------------------------------------------------------------

    def _scores(self, points: list[dict[str, Any]]) -> np.ndarray:
        features = np.array([self._features[self._point_key(p)] for p in points])
        return self.model.predict(features)

    def _valid(self, point: dict[str, Any]) -> bool:
        trace = self._instantiate(point)
        return trace is not None

    def propose(self, n: int) -> list[Candidate]:
        batch: list[Candidate] = []
        if trace_key(self._default) not in self.measured:
            batch.append(Candidate(self._default, {"sketch": "default", "values": None}))
        # population: the best measured points, filled up with random ones
        elite = [p for p, c in sorted(self._measured_points, key=lambda pc: pc[1]) if math.isfinite(c)][:16]
        population = list(elite)
        tries = 0
        while len(population) < self.population_size and tries < 4 * self.population_size:
            tries += 1
            p = self._random_point()
            if self._valid(p):
                population.append(p)
        trained = len([1 for _, c in self._data if math.isfinite(c)]) >= 4
        if trained:
            for _ in range(self.generations):
                children = []
                for _ in range(self.population_size):
                    a, b = (population[int(self.rng.integers(len(population)))] for _ in range(2))
                    child = self._mutate(self._crossover(a, b))
                    if self._valid(child):
                        children.append(child)
                pool = population + children
                scores = self._scores(pool)
                order = np.argsort(-scores, kind="stable")
                population = [pool[k] for k in order[: self.population_size]]
        else:
            self.rng.shuffle(population)
        n_random = max(0, int(round(self.epsilon * n))) if trained else 0
        chosen_keys = set()
        for p in population:
            if len(batch) >= n - n_random:
                break
            trace = self._instantiate(p)
            key = trace_key(trace)
            if key in self.measured or key in chosen_keys:
                continue
            chosen_keys.add(key)
            batch.append(Candidate(trace, {"sketch": p["sketch"], "values": p}))
        tries = 0
        while len(batch) < n and tries < 20 * n:
            tries += 1
            p = self._random_point()
            trace = self._instantiate(p)
            if trace is None:
                continue
            key = trace_key(trace)
            if key in self.measured or key in chosen_keys:
                continue
            chosen_keys.add(key)
            batch.append(Candidate(trace, {"sketch": p["sketch"], "values": p}))
        return batch

    def feed(self, records: list[Record]) -> None:
        super().feed(records)
        for r in records:
            point = (r.config or {}).get("values")
            if not isinstance(point, dict) or "sketch" not in point:
                continue
            if self._instantiate(point) is None:
                continue
            self._measured_points.append((point, r.cost))
            self._data.append((self._features[self._point_key(point)], r.cost))
        ok = [(f, c) for f, c in self._data if math.isfinite(c)]
        if len(ok) >= 4:
            features = np.array([f for f, _ in self._data])
            throughputs = np.array([1.0 / c if math.isfinite(c) else 0.0 for _, c in self._data])
            self.model.fit(features, throughputs)
