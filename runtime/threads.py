"""How many threads ``parallel`` loops use.

Compiled parallel loops run on tensorkiln's own thread pool (``backends/llvm/
thread_pool.py``). At each launch the generated code reads the thread count from a
32-bit variable owned by this module (native symbol ``tk_num_threads``; the JIT binds
it, an exported library owns one the runtime keeps in step). Results do not depend on
the thread count.

- environment: ``TK_NUM_THREADS=2`` (read when this module is imported);
- API: ``set_num_threads(2)``, ``get_num_threads()``, or for a block of code
  ``with num_threads(1): ...``.

The count is process-wide: a change applies to the next parallel loop that starts, in
whichever thread calls the compiled code.

**The default backs off when the cores are busy.** Unless a count is set, it is the
cores this process may run on (its CPU affinity) minus those other processes keep busy:
once compiled parallel code is loaded, a watcher thread reads the machine's CPU time
(``/proc/stat``) and this process's own every :data:`WATCH_SECONDS` (a few
microseconds each time) and gives each core the others kept more than half busy to
them. On a 2-core machine with another process on the second core, a small model ran
2-50x slower on 2 threads than on 1 (every parallel loop waits for its slowest thread),
so the default is then 1; it comes back to 2 when the neighbour stops. A count set by
``TK_NUM_THREADS`` or ``set_num_threads`` is used as it is.

The thread pool's wait policy (how long idle workers spin before they sleep):
``TK_SPIN_US`` (``backends/llvm/thread_pool.py``). Old artifacts whose code calls the
OpenMP runtime (libgomp) still load: :func:`openmp_function` binds them to an instance
of libgomp of tensorkiln's own.

numpy-free and ctypes only, like the rest of the runtime.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

#: the native symbol of the thread-count variable (the name the generated code uses)
NUM_THREADS_SYMBOL = "tk_num_threads"

ENV_VARIABLE = "TK_NUM_THREADS"

#: seconds between two looks at how busy the machine is (and the first look's window)
WATCH_SECONDS = 0.5
FIRST_WATCH_SECONDS = 0.1
#: a core the other processes keep busier than this (a fraction of it) is left to them
BUSY_FRACTION = 0.5


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
            "the default); using the default",
            RuntimeWarning,
            stacklevel=2,
        )
        return 0
    return n


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity; else every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


#: the count set by the user (0: the default)
_chosen = _from_environment()
#: the default count, as the watcher last measured it
_default = available_cores()
# What the generated code reads: kept alive (and at the same address) for the life of
# the process; always the count in force (>= 1).
_requested = ctypes.c_int32(_chosen or _default)


def _apply() -> None:
    _requested.value = _chosen or _default


def native_address() -> int:
    """The address of the thread-count variable (what ``tk_num_threads`` must resolve
    to); also starts watching how busy the machine is (compiled code is about to run)."""
    _watcher.start()
    return ctypes.addressof(_requested)


def set_num_threads(n: int | None) -> None:
    """Run parallel loops on ``n`` threads from now on; ``None`` or 0: the default (see
    the module doc: every available core the other processes leave free).

    More threads than cores is allowed (they share the cores)."""
    global _chosen
    if n is None:
        n = 0
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > 4096:
        raise ValueError(f"set_num_threads: expected a thread count between 1 and 4096 (or 0/None), got {n!r}")
    _chosen = n
    _apply()


def default_num_threads() -> int:
    """The thread count used when none is set: the available cores the other processes
    leave free (at least 1)."""
    return _default


def get_num_threads() -> int:
    """The number of threads the next parallel loop will run on."""
    return _requested.value


@contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """``with num_threads(2): lib(x)``: the thread count inside the block, restored after."""
    global _chosen
    previous = _chosen
    set_num_threads(n)
    try:
        yield
    finally:
        _chosen = previous
        _apply()


# ---------------------------------------------------------------------------
# how busy the machine is


@dataclass(frozen=True)
class CpuSample:
    """The machine's busy and total CPU seconds (all cores, ``/proc/stat``) and this
    process's own CPU seconds, at ``wall`` (monotonic seconds)."""

    busy: float
    total: float
    own: float
    wall: float


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_sample() -> CpuSample | None:
    """Now's :class:`CpuSample`, or None where ``/proc/stat`` cannot be read (not Linux)."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
    total = sum(ticks)
    idle = ticks[3] + ticks[4]
    return CpuSample((total - idle) / _TICKS, total / _TICKS, time.process_time(), time.monotonic())


def others_busy_cores(before: CpuSample, after: CpuSample) -> float:
    """Cores' worth of CPU time other processes used between two samples (steal time
    included: a hypervisor's other guests take cores too)."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0
    others = (after.busy - before.busy) - (after.own - before.own)
    return max(0.0, others / wall)


def backed_off_threads(cores: int, machine_cores: int, others_busy: float) -> int:
    """The default thread count: the ``cores`` this process may use, less each core the
    other processes keep more than :data:`BUSY_FRACTION` busy (``others_busy`` cores'
    worth of time on a machine of ``machine_cores``), at least 1.

    >>> backed_off_threads(2, 2, 0.9)  # a neighbour busy on the second core
    1
    >>> backed_off_threads(2, 2, 0.3), backed_off_threads(16, 16, 3.7)
    (2, 12)
    """
    busy = int(others_busy + (1 - BUSY_FRACTION))  # cores kept more than half busy
    free = machine_cores - busy
    return max(1, min(cores, free))


class _Watcher:
    """A daemon thread updating the default thread count from :func:`cpu_sample`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def start(self) -> None:
        if self._thread is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is not None and self._pid == os.getpid():
                return
            self._pid = os.getpid()
            if cpu_sample() is None:
                self._thread = threading.current_thread()  # nothing to watch: do not try again
                return
            self._thread = threading.Thread(target=self._run, name="tensorkiln-threads", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        global _default
        before = cpu_sample()
        delay = FIRST_WATCH_SECONDS
        while True:
            time.sleep(delay)
            delay = WATCH_SECONDS
            after = cpu_sample()
            if before is None or after is None:
                return
            machine = os.cpu_count() or 1
            _default = backed_off_threads(available_cores(), machine, others_busy_cores(before, after))
            _apply()
            before = after


_watcher = _Watcher()


# ---------------------------------------------------------------------------
# libgomp, for artifacts exported before the thread pool

#: the wait policy of that libgomp unless the user sets OMP_WAIT_POLICY or GOMP_SPINCOUNT:
#: idle threads spin briefly, then sleep (a spinning master on a busy machine turned a
#: parallel loop's end barrier into a stall of milliseconds)
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
    """tensorkiln's own instance of libgomp (its pool and settings are not torch's):
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


#: the OpenMP runtime functions code compiled before the thread pool calls
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
    tensorkiln's libgomp: what such code's calls bind to."""
    gomp = _libgomp()
    if gomp is None:
        raise RuntimeError(
            "this code's parallel loops need the OpenMP runtime libgomp, which could not be loaded; "
            "install it (e.g. apt-get install libgomp1) or rebuild the model"
        )
    try:
        return ctypes.cast(getattr(gomp, name), ctypes.c_void_p).value
    except AttributeError:
        raise RuntimeError(f"the OpenMP runtime libgomp has no function {name} (too old?)") from None


__all__ = [
    "BUSY_FRACTION",
    "DEFAULT_SPIN",
    "ENV_VARIABLE",
    "NUM_THREADS_SYMBOL",
    "OPENMP_FUNCTIONS",
    "CpuSample",
    "available_cores",
    "backed_off_threads",
    "cpu_sample",
    "default_num_threads",
    "get_num_threads",
    "native_address",
    "num_threads",
    "openmp_function",
    "others_busy_cores",
    "set_num_threads",
]
