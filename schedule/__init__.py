"""Schedules: how a kernel's loops run (TVM/Halide schedule primitives on the loop dialect).

Computation (te) says what a kernel computes; a schedule transforms its loop nest:
``split``, ``reorder``, ``fuse``, ``tile``, ``parallel``, ``vectorize``, ``unroll``,
``bind``, ``cache_write``, ``cache_read``, ``compute_at``, ``compute_inline``,
``tensorize``, ``transform_layout``, ``overcompute``, ``simplify_indices``. :class:`Schedule` applies them by loop name and records a JSON trace
that :meth:`Schedule.replay` re-applies (what a tuner searches over and stores)::

    from tensorkiln.build import lower_to_loops
    from tensorkiln.schedule import Schedule, kernels

    loops = lower_to_loops(module)
    s = Schedule(kernels(loops)[0])
    s.tile("i0", "i1", 4, 16)
    s.cache_write("i1.outer")
    s.vectorize("i1.inner")
    print(s.loops(), s.to_json())

The primitives are also plain functions on a kernel (``tensorkiln.schedule.loops``,
``.cache``, ``.tensorize``); each raises :class:`ScheduleError` and leaves the kernel
unchanged when a loop is missing or the transformation is illegal.
"""

from .cache import cache_read, cache_write, compute_at, compute_inline
from .denormals import flush_denormals
from .loops import bind, fuse, parallel, reorder, split, tile, unroll, vectorize
from .layout import transform_layout
from .overcompute import overcompute
from .nest import ScheduleError
from .schedule import PRIMITIVES, Schedule, kernels, trace_from_json, trace_to_json
from .simplify import simplify_indices
from .tensorize import tensorize

__all__ = [
    "PRIMITIVES",
    "Schedule",
    "ScheduleError",
    "bind",
    "cache_read",
    "cache_write",
    "compute_at",
    "compute_inline",
    "flush_denormals",
    "fuse",
    "kernels",
    "parallel",
    "reorder",
    "simplify_indices",
    "split",
    "tensorize",
    "tile",
    "trace_from_json",
    "trace_to_json",
    "transform_layout",
    "overcompute",
    "unroll",
    "vectorize",
]
