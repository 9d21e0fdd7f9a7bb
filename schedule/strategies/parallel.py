"""Which loop of a kernel runs on several threads, on how many: a cost model.

A kernel whose serial run takes ``S`` ns, its parallel loop cut into ``trips``
iterations, takes on ``n`` threads of the thread pool (``backends/llvm/thread_pool_ir.py``)
about::

    T(1) = S                                   (one direct call: no synchronisation)
    T(n) = ceil(trips / n) * S / trips         (the busiest thread's share)
           + launch_ns                         (publishing the loop, waking, joining)
           + per_thread_ns * n                 (each thread's first take of a piece and
                                                its join, on one shared cache line)

:func:`best_thread_count` is the ``n`` minimising ``T(n)``: 1 means the kernel stays
serial (shorter than the fork/join cost), more is the loop's thread cap
(``loop.max_threads``): a loop worth 4 threads does not wake 16 on a bigger machine,
where each extra thread would cost more than its share saves. ``S`` is estimated from
the kernel's innermost iterations (``KernelInfo.work``) times a cost per iteration of
its kind (:data:`PRODUCT_NS`, :data:`ELEMENT_NS`, :data:`MATVEC_NS`: measured at one
thread on the Zen 4 box, CPU time per kernel of MobileNetV2, SqueezeNet and an MLP:
register-tiled products 0.018-0.045 ns per multiply-add, elementwise kernels and
reductions 0.09-0.17 ns per element, a matrix-vector product 0.15). Unknown sizes
count as large.

Which loop: the band's leading loops (batch, rows or pixel blocks, channel blocks, as
the strategy ordered them) are fused until the parallel loop has
:data:`PIECES_PER_THREAD` iterations for each thread the kernel is worth on this
machine's cores (the pool deals them out dynamically, so a thread slowed down by
another process takes fewer), and further while that balances the threads better
(:func:`fusion_depth`). The pool cuts the loop into pieces whose sizes differ by at
most one iteration, so the busiest thread runs ``ceil(trips / n)`` of them: the
``T(n)`` above.

The parameters (:data:`COSTS`) are this machine's order of magnitude (``benchmarks/
threads.py`` measures the pool's launch and the break-even work); they are a model's,
not a tuning result: a loop scaled on 2 cores stays scaled on 16, with the cap keeping
small loops from paying for threads they cannot use.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ...runtime.threads import available_cores
from ..schedule import Schedule
from .analysis import KernelInfo


@dataclass(frozen=True)
class ThreadCosts:
    """The fork/join costs of the model (see the module doc), in nanoseconds."""

    #: one parallel loop's launch and join, its workers awake (spinning)
    launch_ns: float = 1000.0
    #: each thread's share of it: its first take of a piece and its join
    per_thread_ns: float = 150.0


COSTS = ThreadCosts()
#: serial nanoseconds per innermost iteration: a register-tiled product's multiply-add,
#: an elementwise or reduction kernel's element, a matrix-vector product's multiply-add
#: (memory-bound: the weight streams from memory)
PRODUCT_NS = 0.025
ELEMENT_NS = 0.1
MATVEC_NS = 0.15
#: the most threads the model considers (the pool's own limit)
MAX_THREADS = 256
#: iterations of the parallel loop per thread, when fusing loops can give them
PIECES_PER_THREAD = 4


_ASSUMED_CORES: ContextVar[int | None] = ContextVar("assumed_cores", default=None)


@contextmanager
def assumed_cores(cores: int) -> Iterator[None]:
    """Schedule for a machine of ``cores`` cores inside the block (default: this one's),
    e.g. to build for a bigger machine or to test the model's decisions."""
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ValueError(f"assumed_cores: expected a core count >= 1, got {cores!r}")
    token = _ASSUMED_CORES.set(cores)
    try:
        yield
    finally:
        _ASSUMED_CORES.reset(token)


def target_cores() -> int:
    """The cores schedules are made for: :func:`assumed_cores`' inside its block, else
    those this process may run on."""
    return _ASSUMED_CORES.get() or available_cores()


def loop_time_ns(serial_ns: float, trips: int, threads: int, costs: ThreadCosts = COSTS) -> float:
    """The model's time of a loop of ``trips`` iterations and ``serial_ns`` of work on
    ``threads`` threads.

    >>> loop_time_ns(10_000, 16, 1), loop_time_ns(10_000, 16, 2)
    (10000, 6300.0)
    """
    if threads <= 1:
        return serial_ns
    busiest = math.ceil(trips / threads) * serial_ns / trips
    return busiest + costs.launch_ns + costs.per_thread_ns * threads


def best_thread_count(
    serial_ns: float | None, trips: int | None, costs: ThreadCosts = COSTS, most: int = MAX_THREADS
) -> int:
    """The thread count (1..``most``) at which the model's time is least (the fewest
    threads among equal times); unknown work or trips count as large.

    >>> best_thread_count(2_000, 64)  # shorter than what two threads cost
    1
    >>> best_thread_count(85_000, 16), best_thread_count(85_000, 16, most=2)
    (16, 2)
    """
    if serial_ns is None:
        return most
    if trips is None:
        trips = most * PIECES_PER_THREAD
    best, best_time = 1, float(serial_ns)
    for n in range(2, min(most, trips) + 1):
        t = loop_time_ns(serial_ns, trips, n, costs)
        if t < best_time:
            best, best_time = n, t
    return best


def break_even_work(ns_per_iteration: float, costs: ThreadCosts = COSTS) -> int:
    """The innermost iterations below which a kernel stays serial on any number of
    threads (many trips): ``T(n) = S / n + launch + per_thread * n`` is least at
    ``n = sqrt(S / per_thread)``, and below ``S = (sqrt(c) + sqrt(c + launch))^2``
    (``c``: per_thread) that least time is not below ``S``.

    >>> break_even_work(PRODUCT_NS), break_even_work(ELEMENT_NS)
    (85227, 21307)
    """
    c = costs.per_thread_ns
    return math.ceil((math.sqrt(c) + math.sqrt(c + costs.launch_ns)) ** 2 / ns_per_iteration)


#: the same for a register-tiled product's multiply-adds and an elementwise kernel's
#: elements (for strategies deciding without a loop band, e.g. the recurrent one)
PARALLEL_MIN_PRODUCT_WORK = break_even_work(PRODUCT_NS)
PARALLEL_MIN_WORK = break_even_work(ELEMENT_NS)


#: how much slower than the best balance a shallower fusion may be (its pieces are larger:
#: fewer launches of the inner loops, the copies made per piece shared by more of them)
BALANCE_SLACK = 0.03


def fusion_depth(
    extents: Sequence[int | None],
    serial_ns: float | None,
    threads: int,
    costs: ThreadCosts = COSTS,
    balance: bool = True,
) -> int:
    """How many of the leading loops (``extents``, outermost first) to fuse into the
    parallel loop for ``threads`` threads: at least until it has :data:`PIECES_PER_THREAD`
    iterations per thread (an unknown extent ends the fusion), and further while that
    balances the threads' shares better by more than :data:`BALANCE_SLACK` (the pool
    cuts a loop into pieces of even sizes, so the busiest thread has ``ceil(trips /
    threads)`` iterations): 9 image rows on 2 threads (5 and 4) take their 4 column
    blocks in (36 pieces, 18 each); 56 rows stay 56 (28 each); 14 rows on 4 threads
    (4 pieces of 14 are too few) take their 4 column blocks in. ``balance=False``: no
    further than enough pieces (a strategy that copies data per iteration of a loop).

    >>> fusion_depth([9, 4], 1e6, 2), fusion_depth([56, 10], 1e6, 2), fusion_depth([14, 4, 3], 1e6, 4)
    (2, 1, 2)
    """
    wanted = PIECES_PER_THREAD * threads
    times, trips = [], 1
    for extent in extents:
        if extent is None:
            break
        trips *= extent
        times.append(loop_time_ns(1e6 if serial_ns is None else serial_ns, trips, threads, costs))
    if not times:
        return 1
    enough = [d for d in range(1, len(times) + 1) if math.prod(extents[:d]) >= wanted]  # type: ignore[arg-type]
    if not enough:  # too few pieces in the known loops: an unknown one next counts as many
        return min(len(times) + 1, len(extents))
    if not balance:
        return enough[0]
    best = min(times[enough[0] - 1 :])
    return next(d for d in enough if times[d - 1] <= best * (1 + BALANCE_SLACK))


def parallelize_outer(
    s: Schedule,
    band: Sequence[str],
    info: KernelInfo,
    ns_per_iteration: float = ELEMENT_NS,
    *,
    work: int | None = -1,
    cores: int | None = None,
    costs: ThreadCosts = COSTS,
    balance: bool = True,
) -> str | None:
    """Mark the outermost loops of ``band`` (perfectly nested, outermost first) parallel
    when the cost model says the kernel is worth two threads or more: the leading loops
    fused until the parallel loop has :data:`PIECES_PER_THREAD` iterations per thread
    worth having on ``cores`` cores (default: :func:`target_cores`), its thread cap what the
    model gives for its trips. ``work``: the kernel's innermost iterations when
    ``info.work`` does not count them (None: unknown). ``balance``: fuse further loops
    when that balances the threads better (:func:`fusion_depth`). Returns the parallel
    loop's name, or None (serial)."""
    if not band:
        return None
    work = info.work if work == -1 else work
    serial = None if work is None else work * ns_per_iteration
    worth = best_thread_count(serial, None, costs)
    if worth < 2:
        return None
    cores = max(2, cores if cores is not None else target_cores())
    loops = list(band)
    while len(loops) > 1 and s.extent(loops[0]) == 1:
        loops.pop(0)  # (a loop of one iteration gives no parallelism)
    depth = fusion_depth([s.extent(name) for name in loops], serial, min(worth, cores), costs, balance)
    fused = loops[0]
    for name in loops[1:depth]:
        fused = s.fuse(fused, name)
    trips = s.extent(fused)
    if trips == 1:
        return None
    threads = best_thread_count(serial, trips, costs)
    if threads < 2:
        return None
    s.parallel(fused, max_threads=threads if threads < MAX_THREADS else 0)
    return fused


__all__ = [
    "COSTS",
    "ELEMENT_NS",
    "MATVEC_NS",
    "MAX_THREADS",
    "PIECES_PER_THREAD",
    "PRODUCT_NS",
    "PARALLEL_MIN_PRODUCT_WORK",
    "PARALLEL_MIN_WORK",
    "ThreadCosts",
    "assumed_cores",
    "best_thread_count",
    "break_even_work",
    "fusion_depth",
    "loop_time_ns",
    "parallelize_outer",
    "target_cores",
]
