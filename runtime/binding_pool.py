"""Per-call state kept between calls, one copy per concurrent caller.

An executor prepares, per set of symbol values (a *binding*), things a call writes into:
the memory plan's storages, argument arrays whose pointers it patches. Two threads
calling at once must never share one, so a call *takes* an idle copy for its symbol
values (a new one is made when every copy is busy) and gives it back when it has
finished: a model called at one size from one thread allocates nothing after the first
call, and N threads at once hold N copies. Copies of the last ``MAX_BINDINGS`` sets of
symbol values are kept.

Example::

    pool = BindingPool(lambda symbols: make_storages(symbols))
    with pool.using(symbols) as storages:
        run(storages)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

#: how many sets of symbol values keep their idle copies
MAX_BINDINGS = 4

T = TypeVar("T")

Key = tuple[tuple[str, int], ...]


class BindingPool(Generic[T]):
    """Idle copies of per-call state, by symbol values (see the module docstring)."""

    def __init__(self, make: Callable[[dict[str, int]], T]):
        self._make = make
        self._idle: OrderedDict[Key, list[T]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, symbols: dict[str, int]) -> tuple[Key, T]:
        """An idle copy for ``symbols`` (made if none is idle) and its key, for :meth:`give_back`."""
        key = tuple(sorted(symbols.items()))
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return key, idle.pop()
        return key, self._make(symbols)

    def give_back(self, key: Key, item: T) -> None:
        """Return a copy taken with :meth:`take` once its call has finished."""
        with self._lock:
            self._idle.setdefault(key, []).append(item)
            self._idle.move_to_end(key)
            while len(self._idle) > MAX_BINDINGS:
                self._idle.popitem(last=False)

    @contextmanager
    def using(self, symbols: dict[str, int]) -> Iterator[T]:
        """``with pool.using(symbols) as item:``: take, then give back however the block ends."""
        key, item = self.take(symbols)
        try:
            yield item
        finally:
            self.give_back(key, item)


__all__ = ["MAX_BINDINGS", "BindingPool"]
