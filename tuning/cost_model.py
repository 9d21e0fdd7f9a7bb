"""Learned cost models: predict a candidate's throughput from its features, to rank
candidates before measuring them (AutoTVM's XGBTuner, Ansor's cost model).

:class:`RidgeModel` (numpy only) fits ``log(throughput)`` with ridge regression on
standardized features plus their squares; :class:`XGBModel` uses gradient-boosted trees
when the optional ``xgboost`` package is installed (``pip install tensorkiln[tuning]``).
Both answer higher = better; failed candidates train as a low score. ``make_model``
picks XGBoost when available unless told otherwise::

    model = make_model("auto")
    model.fit(features, throughputs)    # arrays: (n, d) and (n,)
    scores = model.predict(other_features)
"""

from __future__ import annotations

import numpy as np


class CostModel:
    """Fit on (features, throughput) pairs; predict a score (higher = faster)."""

    name = "base"

    def fit(self, features: np.ndarray, throughputs: np.ndarray) -> None:
        raise NotImplementedError

    def predict(self, features: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def _targets(throughputs: np.ndarray) -> np.ndarray:
    """log throughput, failures (0 or inf cost) one unit below the worst success."""
    t = np.asarray(throughputs, dtype=np.float64)
    ok = t > 0
    y = np.zeros_like(t)
    if ok.any():
        y[ok] = np.log(t[ok])
        y[~ok] = y[ok].min() - 1.0
    return y


class RidgeModel(CostModel):
    """Ridge regression on standardized features and their squares (numpy)."""

    name = "ridge"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha
        self._w: np.ndarray | None = None

    def _expand(self, x: np.ndarray) -> np.ndarray:
        z = (x - self._mean) / self._std
        return np.hstack([z, z * z, np.ones((len(z), 1))])

    def fit(self, features: np.ndarray, throughputs: np.ndarray) -> None:
        x = np.asarray(features, dtype=np.float64)
        y = _targets(throughputs)
        self._mean = x.mean(axis=0)
        self._std = x.std(axis=0) + 1e-9
        a = self._expand(x)
        reg = self.alpha * np.eye(a.shape[1])
        reg[-1, -1] = 0.0
        self._w = np.linalg.solve(a.T @ a + reg, a.T @ y)

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self._w is None:
            return np.zeros(len(features))
        return self._expand(np.asarray(features, dtype=np.float64)) @ self._w


class XGBModel(CostModel):
    """Gradient-boosted trees (xgboost, optional) on log throughput."""

    name = "xgb"

    def __init__(self, rounds: int = 60, seed: int = 0):
        import xgboost  # noqa: F401 - fails early when not installed

        self.rounds = rounds
        self.seed = seed
        self._booster = None

    def fit(self, features: np.ndarray, throughputs: np.ndarray) -> None:
        import xgboost

        dtrain = xgboost.DMatrix(np.asarray(features, dtype=np.float32), label=_targets(throughputs))
        params = {"max_depth": 6, "eta": 0.3, "subsample": 1.0, "objective": "reg:squarederror", "seed": self.seed,
                  "nthread": 1, "verbosity": 0}
        self._booster = xgboost.train(params, dtrain, self.rounds)

    def predict(self, features: np.ndarray) -> np.ndarray:
        import xgboost

        if self._booster is None:
            return np.zeros(len(features))
        return self._booster.predict(xgboost.DMatrix(np.asarray(features, dtype=np.float32)))


def xgboost_available() -> bool:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return False
    return True


def make_model(kind: str = "auto", seed: int = 0) -> CostModel:
    """``ridge``, ``xgb``, or ``auto`` (xgb when installed, else ridge)."""
    if kind == "ridge" or (kind == "auto" and not xgboost_available()):
        return RidgeModel()
    if kind in ("xgb", "auto"):
        return XGBModel(seed=seed)
    raise ValueError(f"unknown cost model {kind!r} (known: auto, ridge, xgb)")
