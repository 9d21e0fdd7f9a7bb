"""AutoTVM-style config spaces and tuners, without measuring: spaces index
deterministically, knob filters apply, bad declarations fail clearly, and every tuner
finds the optimum of a small synthetic space."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tensorkiln.tuning.cost_model import RidgeModel, make_model
from tensorkiln.tuning.space import ConfigSpace
from tensorkiln.tuning.tuners import TUNERS, knob_features, make_tuner


def synthetic_space() -> ConfigSpace:
    s = ConfigSpace()
    s.define_split("x", 64, policy="power2")
    s.define_split("y", 48, policy="factors", filter=lambda c: c[1] != 48)
    s.define_knob("unroll", [0, 1])
    s.define_reorder("order", ["a", "b"])
    s.define_annotate("ann", ["p", "q"], policy="try_unroll_vec")
    return s


def synthetic_cost(cfg) -> float:
    """A smooth bowl with one minimum: x=8, y=16, unroll, order [1, 0], ann [vec, unroll]."""
    return (
        1.0
        + (math.log2(cfg["x"][1]) - 3) ** 2
        + 0.5 * (math.log2(cfg["y"][1]) - 4) ** 2
        + 0.3 * (cfg["unroll"] == 0)
        + 0.2 * (cfg["order"] != [1, 0])
        + 0.1 * (cfg["ann"] != ["vec", "unroll"])
    )


def test_space_indexing_is_deterministic_and_round_trips() -> None:
    a, b = synthetic_space(), synthetic_space()
    assert len(a) == len(b) == 7 * 9 * 2 * 2 * 9
    for index in range(0, len(a), 7):
        cfg = a[index]
        assert cfg.values == b[index].values
        assert a.index_of(cfg.values) == index
        assert a.index_of_point(a.point(index)) == index
    # the first knob varies slowest
    assert a[0]["x"] == [-1, 1] and a[len(a) - 1]["x"] == [-1, 64]


def test_split_policies_and_filters() -> None:
    s = ConfigSpace()
    s.define_split("f", 12, policy="factors")
    s.define_split("three", 16, num_outputs=3, policy="power2", filter=lambda c: c[1] * c[2] <= 8)
    s.define_split("cand", 100, policy="candidate", candidates=[4, 16, 200])
    assert [c[1] for c in map(list, s.knobs["f"].choices)] == [1, 2, 3, 4, 6, 12]
    assert all(c[1] * c[2] <= 8 for c in s.knobs["three"].choices)
    assert [c[1] for c in s.knobs["cand"].choices] == [4, 16]  # 200 > extent


def test_y_filter_removed_a_choice() -> None:
    s = synthetic_space()
    assert [-1, 48] not in [list(c) for c in s.knobs["y"].choices]


@pytest.mark.parametrize(
    "declare, message",
    [
        (lambda s: s.define_split("t", 8, policy="bogus"), "unknown split policy 'bogus'"),
        (lambda s: s.define_reorder("r", ["a", "b"], policy="candidate", candidates=[[0, 0]]), "permutations"),
        (lambda s: s.define_annotate("a", ["x"], policy="nope"), "unknown annotate policy"),
        (lambda s: s.define_knob("k", [1, 2], filter=lambda v: False), "no choice left"),
        (lambda s: (s.define_knob("k", [1]), s.define_knob("k", [2])), "defined twice"),
    ],
)
def test_bad_declarations(declare, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        declare(ConfigSpace())


def test_bad_index_and_unknown_knob() -> None:
    s = synthetic_space()
    with pytest.raises(IndexError, match="out of range"):
        s[len(s)]
    with pytest.raises(KeyError, match="no knob 'nope'"):
        s[0]["nope"]
    with pytest.raises(KeyError, match="has no choice"):
        s.index_of({**s[0].values, "unroll": 7})


@pytest.mark.parametrize("name", list(TUNERS))
def test_every_tuner_finds_the_optimum(name: str) -> None:
    space = synthetic_space()
    costs = [synthetic_cost(space[i]) for i in range(len(space))]
    optimum = int(np.argmin(costs))
    budget = len(space) if name in ("grid", "random") else len(space) // 6
    for seed in range(3):
        tuner = make_tuner(name, space, seed)
        best, cost = tuner.tune(lambda batch: [costs[i] for i in batch], n_trial=budget, batch_size=8)
        assert best == optimum, f"{name} seed {seed}: found {space[best]} ({cost}), optimum {space[optimum]}"
        assert len({i for i, _ in tuner.history}) == len(tuner.history), "a config was measured twice"


def test_model_based_beats_random_on_the_synthetic_space() -> None:
    space = synthetic_space()
    costs = [synthetic_cost(space[i]) for i in range(len(space))]
    optimum = int(np.argmin(costs))

    def trials_to_optimum(name: str, seed: int) -> int:
        tuner = make_tuner(name, space, seed)
        while tuner.best_index != optimum:
            batch = tuner.next_batch(8)
            tuner.update(batch, [costs[i] for i in batch])
        return next(n for n, (i, _) in enumerate(tuner.history) if i == optimum)

    model = np.median([trials_to_optimum("xgb", s) for s in range(3)])
    random = np.median([trials_to_optimum("random", s) for s in range(3)])
    assert model < random / 3, (model, random)


def test_failed_configs_are_learned_as_bad() -> None:
    space = synthetic_space()
    tuner = make_tuner("ga", space, 0)
    tuner.update([0, 1], [math.inf, 2.0])
    assert tuner.best_index == 1 and tuner.tried[0] == math.inf


def test_knob_features_and_ridge_model() -> None:
    space = synthetic_space()
    features = knob_features(space, list(range(0, len(space), 5)))
    assert features.shape[0] == len(range(0, len(space), 5))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    y = np.exp(1.0 + x[:, 0] - 0.5 * x[:, 1] ** 2)
    model = RidgeModel(alpha=1e-3)
    model.fit(x, y)
    assert np.corrcoef(model.predict(x), np.log(y))[0, 1] > 0.99
    assert isinstance(make_model("ridge"), RidgeModel)
    with pytest.raises(ValueError, match="unknown cost model"):
        make_model("forest")


def test_knob_features_of_mixed_values_have_one_width() -> None:
    space = ConfigSpace()
    space.define_knob("vectors", [None, 1, 2])
    space.define_knob("pack", [None, [1, "outer"]])
    features = knob_features(space, list(range(len(space))))
    assert features.shape == (6, 2 + 3 + 2)
