"""The generator state of a compiled model that draws random numbers.

A model with random ops (``torch.rand``, dropout in training, ...) takes a hidden last
input, ``rng_state = [seed, call]`` (``dialects/graph/random.py``). Callers leave it
out: every call gets the next state, so calls draw new numbers; ``manual_seed``
restarts the sequence, like ``torch.manual_seed`` for one model::

    lib.manual_seed(0); a = lib(x)
    lib.manual_seed(0); b = lib(x)      # a == b
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

#: the seed of a freshly built or loaded model (a fixed default, as torch's generator has)
DEFAULT_SEED = 0x5EED_7E45_0A11_C0DE


class RandomState:
    """``[seed, call]`` for each call, the call number counting up from 0."""

    def __init__(self, seed: int = DEFAULT_SEED):
        self._lock = threading.Lock()
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        """Restart the sequence from ``seed`` (any int; taken mod 2**64)."""
        seed &= (1 << 64) - 1
        with self._lock:
            self._seed = seed - (1 << 64) if seed >= 1 << 63 else seed
            self._calls = itertools.count()

    def next_state(self) -> np.ndarray:
        """The state of the next call (int64 ``[seed, call]``)."""
        with self._lock:
            return np.array([self._seed, next(self._calls)], dtype=np.int64)


class Seedable:
    """``manual_seed`` for the compiled forms of a model (their ``signature`` holds the state)."""

    signature: Any

    def manual_seed(self, seed: int) -> None:
        """Restart the random numbers the model draws (models with random ops: rand,
        dropout in training, ...) from ``seed``: calls after it repeat the same numbers.

        Example: ``lib.manual_seed(0); a = lib(x); lib.manual_seed(0); assert (lib(x) == a).all()``
        """
        self.signature.manual_seed(seed)
