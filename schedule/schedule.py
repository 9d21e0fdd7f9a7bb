"""``Schedule``: apply primitives to a kernel by loop name and record a replayable trace.

A schedule is data: the list of primitives applied, with their arguments, in order::

    s = Schedule(kernel)                       # a func.func with tk.kernel, in its module
    s.tile("i0", "i1", 4, 16)                  # -> i0.outer, i1.outer, i0.inner, i1.inner
    s.cache_write("i1.outer")
    s.vectorize("i1.inner")
    s.parallel("i0.outer")
    text = s.to_json()   # [{"args":{"loop":"i0",...},"primitive":"tile"}, ...]

    Schedule.replay(other_kernel, text)        # the same transformations, same IR text

Each method applies the transformation at once (see ``loops.py``, ``cache.py``,
``tensorize.py``) and appends ``{"primitive": name, "args": {...}}`` to ``trace``
only if it succeeded; a failing primitive raises :class:`ScheduleError` and leaves
the kernel and the trace as they were. Replaying is deterministic: the same trace on
the same kernel gives the same IR, so a tuner can store traces and re-apply the best.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.dialects import func

from ..dialects import loop
from .cache import cache_read, cache_write, compute_at, compute_inline
from .denormals import flush_denormals
from .loops import bind, fuse, parallel, reorder, split, tile, unroll, vectorize
from .nest import (
    ScheduleError,
    all_loops,
    deferred_verification,
    find_loop,
    normalize,
    static_trip_bound,
    throwaway_kernel,
)
from .layout import transform_layout
from .overcompute import overcompute
from .simplify import simplify_indices
from .tensorize import tensorize

#: primitive name -> function(kernel, **args); the vocabulary of a trace
PRIMITIVES: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (
        split,
        reorder,
        fuse,
        tile,
        parallel,
        vectorize,
        unroll,
        bind,
        cache_write,
        cache_read,
        compute_at,
        compute_inline,
        tensorize,
        transform_layout,
        overcompute,
        simplify_indices,
        flush_denormals,
    )
}

# (the names tuning imports from here until it reads them from dialects/loop.py)
KERNEL_ATTR, kernels = loop.KERNEL_ATTR, loop.kernels


def trace_to_json(trace: Sequence[Mapping[str, Any]], indent: int | None = None) -> str:
    """A trace as JSON text (keys sorted, so equal traces give equal text)."""
    return json.dumps([dict(step) for step in trace], sort_keys=True, indent=indent)


def trace_from_json(text: str) -> list[dict[str, Any]]:
    """The trace in JSON text, checked for shape (a list of {primitive, args})."""
    try:
        trace = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScheduleError("replay", f"the trace is not JSON: {error}") from error
    return _checked_trace(trace)


def _checked_trace(trace: object) -> list[dict[str, Any]]:
    if not isinstance(trace, list | tuple):
        raise ScheduleError("replay", f"a trace is a list of steps, got {type(trace).__name__}")
    steps = []
    for k, step in enumerate(trace):
        if not isinstance(step, Mapping) or set(step) != {"primitive", "args"} or not isinstance(step["args"], Mapping):
            raise ScheduleError("replay", f"step {k} is not {{'primitive': name, 'args': {{...}}}}: {step!r}")
        if step["primitive"] not in PRIMITIVES:
            raise ScheduleError(
                "replay", f"step {k}: unknown primitive {step['primitive']!r} (known: {', '.join(PRIMITIVES)})"
            )
        steps.append({"primitive": step["primitive"], "args": dict(step["args"])})
    return steps


class Schedule:
    """The schedule of one kernel: primitives applied in place, recorded in ``trace``.

    Creating a Schedule normalizes the kernel (every ``arith.constant`` moves to the
    top, one per value), as every primitive does before and after it runs.
    """

    def __init__(self, kernel: func.FuncOp):
        if not isinstance(kernel, func.FuncOp):
            raise TypeError(f"Schedule: expected a func.func kernel, got {type(kernel).__name__}")
        self.kernel = kernel
        self.trace: list[dict[str, Any]] = []
        normalize(kernel)

    # -- inspection -------------------------------------------------------------------

    def loops(self) -> list[str]:
        """Loop names in nest order (pre-order: a loop before the loops inside it)."""
        return [f.loop_name.data for f in all_loops(self.kernel)]

    def extent(self, loop_name: str) -> int | None:
        """The most iterations the loop runs, if known at compile time."""
        return static_trip_bound(find_loop(self.kernel, loop_name, "extent"))

    def kind(self, loop_name: str) -> str:
        """``serial``, ``parallel``, ``vectorized``, ``unrolled`` or a GPU binding."""
        return find_loop(self.kernel, loop_name, "kind").kind.data

    def to_json(self, indent: int | None = None) -> str:
        return trace_to_json(self.trace, indent)

    def __str__(self) -> str:
        return str(self.kernel)

    # -- replay -------------------------------------------------------------------------

    def apply(self, primitive: str, args: Mapping[str, Any]) -> Any:
        """Apply one trace step; the methods below are shorthands for this."""
        if primitive not in PRIMITIVES:
            raise ScheduleError(primitive, f"unknown primitive (known: {', '.join(PRIMITIVES)})")
        args = dict(args)
        function = PRIMITIVES[primitive]
        try:
            inspect.signature(function).bind(self.kernel, **args)
        except TypeError as error:
            raise ScheduleError(primitive, f"bad arguments {args!r}: {error}") from error
        result = function(self.kernel, **args)
        self.trace.append({"primitive": primitive, "args": args})
        return result

    @classmethod
    def replay(cls, kernel: func.FuncOp, trace: str | Sequence[Mapping[str, Any]]) -> Schedule:
        """Apply a trace (a list of steps, or its JSON text) to ``kernel``."""
        steps = trace_from_json(trace) if isinstance(trace, str) else _checked_trace(trace)
        schedule = cls(kernel)
        for k, step in enumerate(steps):
            try:
                schedule.apply(step["primitive"], step["args"])
            except ScheduleError as error:
                raise ScheduleError(error.primitive, f"(replaying step {k}) {error}") from error
        return schedule

    # -- primitives ---------------------------------------------------------------------

    def split(self, loop: str, factor: int, tail: str = "guard") -> tuple[str, str]:
        """``loop`` -> ``loop.outer``, ``loop.inner`` (at most ``factor`` iterations;
        ``tail="shift"``: exactly ``factor``, the last tile shifted back)."""
        args = {"loop": loop, "factor": factor} | ({"tail": tail} if tail != "guard" else {})
        return self.apply("split", args)

    def reorder(self, *loops: str) -> None:
        """Permute perfectly nested loops into the given order."""
        return self.apply("reorder", {"loops": list(loops)})

    def fuse(self, outer: str, inner: str) -> str:
        """Two directly nested loops -> one ``outer.inner.fused`` loop."""
        return self.apply("fuse", {"outer": outer, "inner": inner})

    def tile(self, x: str, y: str, x_factor: int, y_factor: int) -> tuple[str, str, str, str]:
        """split x, split y, reorder to (x.outer, y.outer, x.inner, y.inner)."""
        return self.apply("tile", {"x": x, "y": y, "x_factor": x_factor, "y_factor": y_factor})

    def parallel(self, loop: str, max_threads: int = 0) -> None:
        """Run ``loop`` on several threads, at most ``max_threads`` (0: no cap)."""
        arguments = {"loop": loop, "max_threads": max_threads} if max_threads else {"loop": loop}
        return self.apply("parallel", arguments)

    def vectorize(self, loop: str) -> None:
        return self.apply("vectorize", {"loop": loop})

    def unroll(self, loop: str) -> None:
        return self.apply("unroll", {"loop": loop})

    def bind(self, loop: str, thread_axis: str) -> None:
        return self.apply("bind", {"loop": loop, "thread_axis": thread_axis})

    def cache_write(self, at_loop: str) -> None:
        """Accumulate the output tile of the loops inside ``at_loop`` in a local buffer."""
        return self.apply("cache_write", {"at_loop": at_loop})

    def cache_read(self, buffer: int, at_loop: str, pad: bool = False) -> str:
        """Copy what the loops inside ``at_loop`` read of kernel argument ``buffer``
        into a local buffer first; returns the stage name ``arg<buffer>.local``.
        ``pad=True``: the reads are bounds-checked window taps (a padded conv's input);
        the copy holds the padded box and the reads lose their checks."""
        args = {"buffer": buffer, "at_loop": at_loop} | ({"pad": True} if pad else {})
        return self.apply("cache_read", args)

    def compute_at(self, stage: str, at_loop: str) -> None:
        """Move a cache_read stage to ``at_loop``."""
        return self.apply("compute_at", {"stage": stage, "at_loop": at_loop})

    def compute_inline(self, stage: str) -> None:
        """Remove a cache_read stage (reads go back to the buffer)."""
        return self.apply("compute_inline", {"stage": stage})

    def transform_layout(self, buffer: int, permutation: Sequence[int], block: Sequence[int] | None = None) -> None:
        """Permute the dims of kernel argument ``buffer``, after splitting dim ``block[0]``
        into blocks of ``block[1]`` if given (its callers pass it re-laid out; see ``layout.py``)."""
        args: dict[str, Any] = {"buffer": buffer, "permutation": list(permutation)}
        if block is not None:
            args["block"] = list(block)
        return self.apply("transform_layout", args)

    def overcompute(self, loop: str) -> None:
        """Run a split's guarded inner loop for its whole tile (it must only write a
        local tile; see ``overcompute.py``)."""
        return self.apply("overcompute", {"loop": loop})

    def simplify_indices(self) -> int:
        """Fold index divisions/remainders the loop bounds make trivial (see ``simplify.py``)."""
        return self.apply("simplify_indices", {})

    def flush_denormals(self) -> None:
        """Run the kernel with denormal floats flushed to zero (see ``denormals.py``)."""
        return self.apply("flush_denormals", {})

    def tensorize(self, loop: str, microkernel: str) -> list[str]:
        """Replace the nest ``loop`` by a call to ``@microkernel``; returns its argument types."""
        return self.apply("tensorize", {"loop": loop, "microkernel": microkernel})


def schedule_on_clone(kernel: func.FuncOp, strategy: Callable[[Schedule], Any]) -> func.FuncOp:
    """A copy of ``kernel`` scheduled by ``strategy(Schedule(copy))`` and verified once
    at the end rather than after every primitive (that took half of a model's GPU
    lowering: EfficientNet 21 -> 15.6 s under the profiler); raises :class:`ScheduleError` when a
    primitive fails or the result does not verify. ``kernel`` is left untouched.

    Example::

        trial = schedule_on_clone(kernel, lambda s: s.vectorize("i1"))
    """
    trial = kernel.clone()
    with deferred_verification(), throwaway_kernel():
        strategy(Schedule(trial))
    try:
        trial.verify()
    except Exception as error:  # a strategy that builds invalid IR does not fit
        raise ScheduleError("verify", f"kernel '{kernel.sym_name.data}' does not verify after scheduling: {error}") from error
    return trial


__all__ = ["PRIMITIVES", "Schedule", "kernels", "schedule_on_clone", "trace_from_json", "trace_to_json"]
