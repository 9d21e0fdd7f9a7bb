"""AutoTVM-style configuration spaces: named knobs, each a list of choices.

A template declares knobs on a :class:`ConfigSpace`; the space is the product of the
knobs' choices, indexable in mixed radix (knob order = declaration order, the first
knob varying slowest), so ``space[i]`` is the same config in every process::

    space = ConfigSpace()
    space.define_split("tile_i", 64, num_outputs=2, policy="power2")  # [-1, 1], [-1, 2], ...
    space.define_reorder("order", ["i", "j"])                        # [0, 1], [1, 0]
    space.define_annotate("ann", ["j.inner"], policy="try_vec")      # ["none"], ["vec"]
    space.define_knob("unroll", [0, 1], filter=lambda v: True)
    cfg = space[5]
    cfg["tile_i"]            # e.g. [-1, 4]: inner loop of 4, outer covers the rest
    len(space), cfg.index, cfg.values

Every choice is JSON data, so a config is stored in a record as ``cfg.values``
and found again with ``space.from_values(values)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Choice = Any
Filter = Callable[[Choice], bool]


@dataclass(frozen=True)
class Knob:
    """One named decision: ``kind`` (split, reorder, annotate, other) and its choices."""

    name: str
    kind: str
    choices: tuple[Choice, ...]

    def index_of(self, choice: Choice) -> int:
        normalized = _freeze(choice)
        for k, c in enumerate(self.choices):
            if _freeze(c) == normalized:
                return k
        raise KeyError(f"knob '{self.name}' has no choice {choice!r} (choices: {list(self.choices)[:8]}...)")


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split_sizes(extent: int, policy: str, max_factor: int, candidates: Sequence[int] | None) -> list[int]:
    if policy == "candidate":
        if not candidates:
            raise ValueError("define_split(policy='candidate') needs candidates")
        return sorted({int(c) for c in candidates if 1 <= c <= max(1, extent)})
    if policy == "factors":
        return [d for d in _divisors(extent) if d <= max_factor]
    if policy == "power2":
        sizes = [1 << p for p in range(int(math.log2(max(1, extent))) + 1)]
        return [s for s in sizes if s <= max_factor]
    raise ValueError(f"unknown split policy {policy!r} (known: factors, power2, candidate)")


class Config(Mapping[str, Choice]):
    """One point of a space: ``cfg[knob]`` is the knob's choice (JSON data)."""

    def __init__(self, space: ConfigSpace, index: int, values: dict[str, Choice]):
        self.space = space
        self.index = index
        self.values = values

    def __getitem__(self, name: str) -> Choice:
        if name not in self.values:
            raise KeyError(f"no knob '{name}' in this config space (knobs: {', '.join(self.values)})")
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Config({self.index}, {self.values})"


class ConfigSpace:
    """The product of named knobs; see the module docstring."""

    def __init__(self) -> None:
        self.knobs: dict[str, Knob] = {}

    # -- declaring knobs ----------------------------------------------------------------

    def _add(self, name: str, kind: str, choices: Sequence[Choice], filter: Filter | None) -> None:
        if name in self.knobs:
            raise ValueError(f"knob '{name}' is defined twice")
        kept = [c for c in choices if filter is None or filter(_thaw(_freeze(c)))]
        if not kept:
            raise ValueError(f"knob '{name}' has no choice left after its filter")
        self.knobs[name] = Knob(name, kind, tuple(_freeze(c) for c in kept))

    def define_split(
        self,
        name: str,
        extent: int,
        num_outputs: int = 2,
        policy: str = "factors",
        max_factor: int = 1 << 30,
        candidates: Sequence[int] | None = None,
        filter: Filter | None = None,
    ) -> None:
        """Split a loop of ``extent`` iterations into ``num_outputs`` loops. A choice is
        ``[-1, s1, ..., s_{n-1}]``: the inner loop sizes (innermost last); -1 = the outer
        loop covers the rest. ``policy``: ``factors`` (exact divisors), ``power2``,
        ``candidate`` (the given sizes). Inner sizes multiply to at most ``extent``."""
        sizes = _split_sizes(extent, policy, max_factor, candidates)
        choices = []
        for inner in itertools.product(sizes, repeat=num_outputs - 1):
            if math.prod(inner) <= max(1, extent) and (policy != "factors" or extent % math.prod(inner) == 0):
                choices.append([-1, *inner])
        self._add(name, "split", choices, filter)

    def define_reorder(
        self, name: str, axes: Sequence[str], policy: str = "all", candidates: Sequence[Sequence[int]] | None = None,
        filter: Filter | None = None,
    ) -> None:
        """An order of ``axes``: a choice is a permutation of their positions.
        ``policy``: ``all`` permutations, ``identity``, or ``candidate``."""
        n = len(axes)
        if policy == "all":
            choices = [list(p) for p in itertools.permutations(range(n))]
        elif policy == "identity":
            choices = [list(range(n))]
        elif policy == "candidate":
            choices = [list(c) for c in candidates or []]
            if any(sorted(c) != list(range(n)) for c in choices):
                raise ValueError(f"define_reorder('{name}'): candidates must be permutations of 0..{n - 1}")
        else:
            raise ValueError(f"unknown reorder policy {policy!r} (known: all, identity, candidate)")
        self._add(name, "reorder", choices, filter)

    def define_annotate(self, name: str, axes: Sequence[str], policy: str = "try_unroll", filter: Filter | None = None) -> None:
        """An annotation per axis: ``none``, ``unroll`` and/or ``vec``, by ``policy``
        (``try_unroll``, ``try_vec``, ``try_unroll_vec``)."""
        options = {
            "try_unroll": ["none", "unroll"],
            "try_vec": ["none", "vec"],
            "try_unroll_vec": ["none", "unroll", "vec"],
        }
        if policy not in options:
            raise ValueError(f"unknown annotate policy {policy!r} (known: {', '.join(options)})")
        choices = [list(c) for c in itertools.product(options[policy], repeat=len(axes))]
        self._add(name, "annotate", choices, filter)

    def define_knob(self, name: str, values: Sequence[Choice], filter: Filter | None = None) -> None:
        """Any other decision: one of ``values``."""
        self._add(name, "other", list(values), filter)

    # -- indexing -----------------------------------------------------------------------

    def __len__(self) -> int:
        return math.prod(len(k.choices) for k in self.knobs.values())

    def dims(self) -> list[int]:
        return [len(k.choices) for k in self.knobs.values()]

    def get(self, index: int) -> Config:
        size = len(self)
        if not 0 <= index < size:
            raise IndexError(f"config index {index} out of range (the space has {size} configs)")
        values: dict[str, Choice] = {}
        rest = index
        for knob in reversed(list(self.knobs.values())):
            rest, k = divmod(rest, len(knob.choices))
            values[knob.name] = _thaw(knob.choices[k])
        return Config(self, index, {name: values[name] for name in self.knobs})

    __getitem__ = get

    def index_of(self, values: Mapping[str, Choice]) -> int:
        index = 0
        for knob in self.knobs.values():
            if knob.name not in values:
                raise KeyError(f"config lacks knob '{knob.name}'")
            index = index * len(knob.choices) + knob.index_of(values[knob.name])
        return index

    def from_values(self, values: Mapping[str, Choice]) -> Config:
        return self.get(self.index_of(values))

    def point(self, index: int) -> list[int]:
        """The choice index of each knob (mixed-radix digits of ``index``)."""
        digits = []
        for n in reversed(self.dims()):
            index, k = divmod(index, n)
            digits.append(k)
        return digits[::-1]

    def index_of_point(self, digits: Sequence[int]) -> int:
        index = 0
        for d, n in zip(digits, self.dims()):
            index = index * n + d
        return index

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k.name}:{len(k.choices)}" for k in self.knobs.values())
        return f"ConfigSpace({len(self)} configs; {knobs})"
