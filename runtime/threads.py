"""How many threads ``parallel`` loops use.

Compiled parallel loops run on the OpenMP runtime (libgomp). Before each launch the
generated code reads the thread count from a 32-bit variable owned by this module
(native symbol ``tk_num_threads``; the JIT binds it): 0 means libgomp's default,
``OMP_NUM_THREADS`` when set, else every core available to the process.

The count is process-wide: a change applies to the next parallel loop that starts, in
whichever thread calls the compiled code (unlike ``omp_set_num_threads``, which sets a
per-thread value). Results do not depend on the thread count.

- environment: ``TK_NUM_THREADS=2`` (read when this module is imported);
- API: ``set_num_threads(2)``, ``get_num_threads()``, or for a block of code
  ``with num_threads(1): ...``.

numpy-free and ctypes only, like the rest of the runtime.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

#: the native symbol of the thread-count variable (the name the generated code uses)
NUM_THREADS_SYMBOL = "tk_num_threads"

ENV_VARIABLE = "TK_NUM_THREADS"


def _from_environment() -> int:
    text = os.environ.get(ENV_VARIABLE, "").strip()
    if not text:
        return 0
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        warnings.warn(
            f"{ENV_VARIABLE}={text!r} is not a thread count (expected an integer >= 1, or 0 for "
            "the OpenMP default); using the default",
            RuntimeWarning,
            stacklevel=2,
        )
        return 0
    return n


# Kept alive (and at the same address) for the life of the process.
_requested = ctypes.c_int32(_from_environment())


def native_address() -> int:
    """The address of the thread-count variable (what ``tk_num_threads`` must resolve to)."""
    return ctypes.addressof(_requested)


def set_num_threads(n: int | None) -> None:
    """Run parallel loops on ``n`` threads from now on; ``None`` or 0: the OpenMP default.

    More threads than cores is allowed (they share the cores)."""
    if n is None:
        n = 0
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > 4096:
        raise ValueError(f"set_num_threads: expected a thread count between 1 and 4096 (or 0/None), got {n!r}")
    _requested.value = n


@lru_cache(maxsize=1)
def _libgomp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None


def default_num_threads() -> int:
    """The thread count used when none is set: libgomp's default for this thread."""
    gomp = _libgomp()
    if gomp is not None:
        return int(gomp.omp_get_max_threads())
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def get_num_threads() -> int:
    """The number of threads the next parallel loop will run on."""
    return _requested.value or default_num_threads()


@contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """``with num_threads(2): lib(x)``: the thread count inside the block, restored after."""
    previous = _requested.value
    set_num_threads(n)
    try:
        yield
    finally:
        _requested.value = previous


__all__ = [
    "ENV_VARIABLE",
    "NUM_THREADS_SYMBOL",
    "default_num_threads",
    "get_num_threads",
    "native_address",
    "num_threads",
    "set_num_threads",
]
