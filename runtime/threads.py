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

tensorkiln loads its own instance of libgomp (by path: not the copy torch ships), so
its pool and settings are its own, and its idle threads spin only briefly, then sleep (``GOMP_SPINCOUNT=1000``
unless ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is set): on a machine whose other cores
are busy, spinning threads turn a parallel loop's end barrier into a stall of
milliseconds. Parallel loops hand out chunks dynamically, so a thread that starts late
takes fewer of them.

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


#: the wait policy of tensorkiln's OpenMP threads unless the user sets OMP_WAIT_POLICY or
#: GOMP_SPINCOUNT: idle threads spin briefly (1000 rounds, microseconds), then sleep.
#: Measured on the 2-core box: libgomp's default long spin, with the other core busy, made
#: a 256^3 GEMM at 2 threads take 11-22 ms (a spinning master keeps the late worker off
#: its core) vs 0.40 ms passive; but fully passive threads must be woken for every
#: parallel loop, which on a quiet machine made small models 10-20x slower at 2 threads
#: than at 1 (squeezenet 0.039 -> 0.51 ms); with the short spin they run back-to-back
#: kernels awake: 0.023 ms at 1 thread, 0.028 ms at 2, and a conv block still scales
#: (4.43 -> 2.33 ms).
DEFAULT_SPIN = {"GOMP_SPINCOUNT": "1000"}

_LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib")


def _library_path(soname: str) -> str:
    """A full path to ``soname`` (so that dlopen loads this file even when another
    libgomp, e.g. torch's own copy, is already loaded under the same name)."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d] + list(_LIBRARY_DIRS)
    for directory in dirs:
        candidate = os.path.join(directory, soname)
        if os.path.exists(candidate):
            return candidate
    return soname


@lru_cache(maxsize=1)
def _libgomp() -> ctypes.CDLL | None:
    """tensorkiln's own instance of libgomp (its thread pool and settings are not torch's):
    loaded by path, with :data:`DEFAULT_SPIN` in the environment while it initializes
    unless the user chose a policy."""
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ.update(DEFAULT_SPIN)
    try:
        return ctypes.CDLL(_library_path(name), mode=ctypes.RTLD_LOCAL)
    except OSError:
        return None
    finally:
        if not chosen:
            for key in DEFAULT_SPIN:
                del os.environ[key]


#: the OpenMP runtime functions generated code may call (parallel loops; the first three
#: by code from before dynamic scheduling, e.g. in a disk cache)
OPENMP_FUNCTIONS = (
    "GOMP_parallel",
    "omp_get_thread_num",
    "omp_get_num_threads",
    "GOMP_parallel_loop_nonmonotonic_dynamic",
    "GOMP_loop_nonmonotonic_dynamic_next",
    "GOMP_loop_end_nowait",
    "omp_get_max_threads",
)


def openmp_function(name: str) -> int:
    """The address of OpenMP runtime function ``name`` (``GOMP_parallel``...) in
    tensorkiln's libgomp: what the generated code's calls bind to."""
    gomp = _libgomp()
    if gomp is None:
        raise RuntimeError(
            "parallel loops need the OpenMP runtime libgomp, which could not be loaded; "
            "install it (e.g. apt-get install libgomp1) or schedule the loops serial"
        )
    try:
        return ctypes.cast(getattr(gomp, name), ctypes.c_void_p).value
    except AttributeError:
        raise RuntimeError(f"the OpenMP runtime libgomp has no function {name} (too old?)") from None


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
    "DEFAULT_SPIN",
    "ENV_VARIABLE",
    "NUM_THREADS_SYMBOL",
    "OPENMP_FUNCTIONS",
    "default_num_threads",
    "get_num_threads",
    "native_address",
    "num_threads",
    "openmp_function",
    "set_num_threads",
]
