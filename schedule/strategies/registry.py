"""The strategy registry: several schedules per op kind, each with a priority (TVM's
``plevel``) and a check of the kernel's shape; the highest-priority strategy that
applies (and whose primitives all succeed) wins, else the kernel keeps its plain loops.

A strategy is a plain function over the Schedule API whose tunable decisions are
keyword parameters with defaults (tile sizes, vector counts...), registered with the
op kinds it serves::

    @register_strategy("dense_packed", ops=("dense",), plevel=20, applies=has_constant_weight,
                       decisions={"rows": (1, 2, 4, 6), "vectors": (1, 2, 3, 4)})
    def dense_packed(s: Schedule, info: KernelInfo, rows: int = 4, vectors: int | None = None):
        ...

An op kind is a graph op name (``"matmul"``, ``"conv2d"``: the kernel's anchor op,
see :class:`KernelInfo`) or a structural family: ``"injective"`` (one loop nest
storing each output element once), ``"reduce"`` (output loops around an accumulator
and reduction loops) or ``"any"``. A tuner reads ``strategies_for(info)`` and each
strategy's ``decisions`` to build its search space, and calls ``strategy.schedule``
with chosen values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .analysis import KernelInfo


def _always(info: KernelInfo) -> bool:
    return True


@dataclass(frozen=True)
class Strategy:
    """One way to schedule a kind of kernel."""

    name: str
    #: op names / families it serves (see the module docstring)
    ops: tuple[str, ...]
    #: priority: among the strategies that apply to a kernel, the highest runs
    plevel: int
    #: ``schedule(s, info, **decisions)``: applies primitives to ``s`` (raises ScheduleError if it cannot)
    schedule: Callable[..., None]
    #: whether it fits the kernel (shape, target, constant operands)
    applies: Callable[[KernelInfo], bool] = _always
    #: tunable decisions: keyword parameter of ``schedule`` -> candidate values
    decisions: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def serves(self, info: KernelInfo) -> bool:
        return bool(set(self.ops) & info.kinds)


#: name -> strategy, in registration order
STRATEGIES: dict[str, Strategy] = {}


def register_strategy(
    name: str,
    *,
    ops: Sequence[str],
    plevel: int,
    applies: Callable[[KernelInfo], bool] = _always,
    decisions: Mapping[str, tuple[Any, ...]] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorator: register ``fn(s, info, **decisions)`` as strategy ``name``.

    Registering a name again replaces the strategy (e.g. a better conv2d schedule)."""
    if not ops:
        raise ValueError(f"register_strategy({name!r}): give at least one op kind")

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        STRATEGIES[name] = Strategy(name, tuple(ops), plevel, fn, applies, dict(decisions or {}))
        return fn

    return register


def strategies_for(info: KernelInfo) -> list[Strategy]:
    """The strategies serving ``info``'s kinds that apply to it, highest plevel first
    (registration order among equals)."""
    found = [s for s in STRATEGIES.values() if s.serves(info) and s.applies(info)]
    return sorted(found, key=lambda s: -s.plevel)


__all__ = ["STRATEGIES", "Strategy", "register_strategy", "strategies_for"]
