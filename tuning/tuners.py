"""Tuners over a :class:`~tensorkiln.tuning.space.ConfigSpace` (AutoTVM's): each
proposes config indices to measure and learns from their costs.

* :class:`GridTuner`: every index in order;
* :class:`RandomTuner`: a random order without repeats;
* :class:`GATuner`: a genetic algorithm (elitism, tournament selection, uniform
  crossover of knob choices, mutation);
* :class:`ModelBasedTuner`: a learned cost model (``cost_model.py``) over the knobs'
  features ranks candidates; simulated annealing over the space proposes the batch,
  plus an epsilon share of random picks so the model sees what it does not expect.

The loop is the same for all, with any ``measure(indices) -> costs`` (seconds; ``inf``
for a failed candidate)::

    tuner = GATuner(space, seed=0)
    best_index, best_cost = tuner.tune(measure, n_trial=64, batch_size=8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .cost_model import CostModel, make_model
from .space import ConfigSpace

Measure = Callable[[list[int]], Sequence[float]]


class Tuner:
    """Base: keeps what was tried and the best so far."""

    name = "base"

    def __init__(self, space: ConfigSpace, seed: int = 0):
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.tried: dict[int, float] = {}
        self.best_index: int | None = None
        self.best_cost = math.inf
        self.history: list[tuple[int, float]] = []

    def has_next(self) -> bool:
        return len(self.tried) < len(self.space)

    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        for index, cost in zip(indices, costs):
            cost = float(cost) if cost is not None and math.isfinite(cost) else math.inf
            self.tried[index] = cost
            self.history.append((index, cost))
            if cost < self.best_cost:
                self.best_index, self.best_cost = index, cost

    def tune(self, measure: Measure, n_trial: int, batch_size: int = 8) -> tuple[int | None, float]:
        """Measure up to ``n_trial`` configs, ``batch_size`` at a time; the best found."""
        done = 0
        while done < n_trial and self.has_next():
            batch = self.next_batch(min(batch_size, n_trial - done))
            if not batch:
                break
            self.update(batch, measure(batch))
            done += len(batch)
        return self.best_index, self.best_cost

    def _random_untried(self, n: int, exclude: set[int] = frozenset()) -> list[int]:
        size = len(self.space)
        picks: list[int] = []
        if size - len(self.tried) <= 4 * n or size <= 10_000:
            pool = [i for i in range(size) if i not in self.tried and i not in exclude]
            if pool:
                picks = [int(i) for i in self.rng.choice(pool, size=min(n, len(pool)), replace=False)]
            return picks
        seen = set(exclude)
        attempts = 0
        while len(picks) < n and attempts < 100 * n:
            i = int(self.rng.integers(size))
            attempts += 1
            if i not in self.tried and i not in seen:
                seen.add(i)
                picks.append(i)
        return picks


class GridTuner(Tuner):
    """Every config in index order."""

    name = "grid"

    def __init__(self, space: ConfigSpace, seed: int = 0):
        super().__init__(space, seed)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        batch = []
        while len(batch) < n and self._next < len(self.space):
            if self._next not in self.tried:
                batch.append(self._next)
            self._next += 1
        return batch


class RandomTuner(Tuner):
    """Configs in a random order, none twice."""

    name = "random"

    def next_batch(self, n: int) -> list[int]:
        return self._random_untried(n)


class GATuner(Tuner):
    """Genetic algorithm over knob choices: the ``elite`` best survive, parents are
    chosen by tournament, children take each knob from either parent and mutate each
    knob with probability ``mutation``."""

    name = "ga"

    def __init__(self, space: ConfigSpace, seed: int = 0, pop_size: int = 16, elite: int = 4, mutation: float = 0.15):
        super().__init__(space, seed)
        self.pop_size = pop_size
        self.elite = elite
        self.mutation = mutation

    def _child(self, a: list[int], b: list[int], dims: list[int]) -> int:
        genes = [x if self.rng.random() < 0.5 else y for x, y in zip(a, b)]
        for k, n in enumerate(dims):
            if self.rng.random() < self.mutation:
                genes[k] = int(self.rng.integers(n))
        return self.space.index_of_point(genes)

    def next_batch(self, n: int) -> list[int]:
        scored = sorted((c, i) for i, c in self.tried.items() if math.isfinite(c))
        if len(scored) < max(2, self.elite):
            return self._random_untried(n)
        population = [i for _, i in scored[: self.pop_size]]
        fitness = {i: 1.0 / c for c, i in scored[: self.pop_size]}
        dims = self.space.dims()
        batch: list[int] = []
        attempts = 0
        while len(batch) < n and attempts < 50 * n:
            attempts += 1
            a, b = (max(self.rng.choice(population, 2), key=lambda i: fitness[int(i)]) for _ in range(2))
            child = self._child(self.space.point(int(a)), self.space.point(int(b)), dims)
            if child not in self.tried and child not in batch:
                batch.append(child)
        if len(batch) < n:
            batch += self._random_untried(n - len(batch), set(batch))
        return batch


def knob_features(space: ConfigSpace, indices: Sequence[int]) -> np.ndarray:
    """Features of configs from their knobs alone: per knob the choice's numbers
    (log2 of split sizes, permutation positions, annotation codes, numeric values) and
    a one-hot of the choice."""
    rows = []
    codes = {"none": 0.0, "unroll": 1.0, "vec": 2.0}
    for index in indices:
        cfg = space[index]
        row: list[float] = []
        for knob, digit in zip(space.knobs.values(), space.point(index)):
            value = cfg[knob.name]
            if knob.kind == "split":
                row += [math.log2(max(1, v)) for v in value[1:]]
            elif knob.kind == "reorder":
                row += [float(v) for v in value]
            elif knob.kind == "annotate":
                row += [codes.get(v, 0.0) for v in value]
            else:  # a number as itself; anything else (None, a list, a name) by its one-hot only
                row.append(float(value) if isinstance(value, bool | int | float) else 0.0)
            one_hot = [0.0] * len(knob.choices)
            one_hot[digit] = 1.0
            row += one_hot
        rows.append(row)
    return np.asarray(rows, dtype=np.float64)


class ModelBasedTuner(Tuner):
    """A cost model ranks configs; simulated annealing proposes the next batch.

    ``features(indices) -> array`` describes configs (default: :func:`knob_features`;
    the real tuner passes loop-IR features of the scheduled kernels). The model is
    retrained on every measurement before each batch; ``epsilon`` of each batch is
    random.
    """

    name = "xgb"

    def __init__(
        self,
        space: ConfigSpace,
        seed: int = 0,
        model: CostModel | str = "auto",
        features: Callable[[Sequence[int]], np.ndarray] | None = None,
        epsilon: float = 0.1,
        sa_steps: int = 40,
        sa_walkers: int = 64,
        warmup: int = 8,
    ):
        super().__init__(space, seed)
        self.model = make_model(model, seed) if isinstance(model, str) else model
        self._describe = features or (lambda idx: knob_features(space, idx))
        self._cache: dict[int, np.ndarray] = {}
        self.epsilon = epsilon
        self.sa_steps = sa_steps
        self.sa_walkers = sa_walkers
        self.warmup = warmup

    def features(self, indices: Sequence[int]) -> np.ndarray:
        """Feature rows of ``indices`` (each computed once)."""
        missing = [i for i in dict.fromkeys(indices) if i not in self._cache]
        if missing:
            for i, row in zip(missing, self._describe(missing)):
                self._cache[i] = row
        return np.array([self._cache[i] for i in indices])

    def _fit(self) -> None:
        indices = list(self.tried)
        throughputs = np.array([1.0 / c if math.isfinite(c) and c > 0 else 0.0 for c in self.tried.values()])
        if (throughputs > 0).sum() >= 2:
            self.model.fit(self.features(indices), throughputs)

    def _score(self, indices: Sequence[int]) -> np.ndarray:
        return self.model.predict(self.features(list(indices)))

    def _neighbour(self, index: int) -> int:
        digits = self.space.point(index)
        dims = self.space.dims()
        k = int(self.rng.integers(len(dims)))
        if dims[k] > 1:
            digits[k] = int(self.rng.integers(dims[k]))
        return self.space.index_of_point(digits)

    def _anneal(self, n: int) -> list[int]:
        """The ``n`` best-scored untried configs seen by annealing walkers."""
        size = len(self.space)
        if size <= 4096:  # small space: score everything
            pool = [i for i in range(size) if i not in self.tried]
            scores = self._score(pool)
            order = np.argsort(-scores, kind="stable")
            return [pool[k] for k in order[:n]]
        walkers = [int(i) for i in self.rng.integers(size, size=self.sa_walkers)]
        scores = self._score(walkers)
        seen: dict[int, float] = dict(zip(walkers, scores))
        temperature = 1.0
        for step in range(self.sa_steps):
            proposals = [self._neighbour(w) for w in walkers]
            new_scores = self._score(proposals)
            for k, (p, s) in enumerate(zip(proposals, new_scores)):
                seen[p] = float(s)
                if s > scores[k] or self.rng.random() < math.exp((s - scores[k]) / max(temperature, 1e-3)):
                    walkers[k], scores[k] = p, s
            temperature = 1.0 - (step + 1) / self.sa_steps
        ranked = sorted((s, i) for i, s in seen.items() if i not in self.tried)
        return [i for _, i in reversed(ranked)][:n]

    def next_batch(self, n: int) -> list[int]:
        if len(self.tried) < self.warmup:
            return self._random_untried(n)
        self._fit()
        n_random = int(round(self.epsilon * n))
        batch = self._anneal(n - n_random)
        batch += self._random_untried(n - len(batch), set(batch))
        return batch


TUNERS: dict[str, type[Tuner]] = {t.name: t for t in (GridTuner, RandomTuner, GATuner, ModelBasedTuner)}


def make_tuner(name: str, space: ConfigSpace, seed: int = 0) -> Tuner:
    """A tuner by name: ``grid``, ``random``, ``ga``, ``xgb`` (model-based)."""
    if name not in TUNERS:
        raise ValueError(f"unknown tuner {name!r} (known: {', '.join(TUNERS)})")
    return TUNERS[name](space, seed=seed)
