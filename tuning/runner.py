"""Measuring candidates: schedule here, build and time in isolated workers.

A candidate is a schedule trace for one task's kernel. The runner applies it to a copy
of the kernel in this process (a trace that does not apply is an
``INSTANTIATION_ERROR``, never sent), prints the scheduled kernel, and sends it to an
executor whose workers JIT it alone, check it against the unscheduled kernel on seeded
random inputs and time it (``tuning/measure.py``). Any ``concurrent.futures``
executor works: the default is a local :class:`IsolatedProcessPool`; an executor that
does not isolate calls itself (``isolate=True``, e.g. a Dask cluster's, see
``tuning/distributed.py``) gets each call wrapped in a fresh process on its worker::

    runner = Runner(timeout=20)
    records = runner.measure(task, [trace_a, trace_b])
    runner.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, Future, TimeoutError as FuturesTimeout
from dataclasses import dataclass
from typing import Any

from ..schedule import Schedule, ScheduleError
from .executor import CallTimeout, IsolatedProcessPool, WorkerCrashed, run_isolated
from .measure import measure_candidate, reference_outputs
from .record import ErrorCode, Record
from .task import Task, parse_kernel_module


@dataclass
class Candidate:
    """A trace to measure, and the template config that made it (if any)."""

    trace: list[dict[str, Any]]
    config: dict[str, Any] | None = None


def instantiate(task: Task, trace: Sequence[dict[str, Any]]) -> str:
    """The text of a module holding ``task``'s kernel scheduled by ``trace`` (and any
    micro-kernel the trace outlines). Raises ScheduleError when it does not apply."""
    module, kernel = parse_kernel_module(task.kernel_text)
    Schedule.replay(kernel, list(trace))
    return str(module)


def _thread_count() -> int:
    from ..runtime.threads import get_num_threads

    return get_num_threads()


class Runner:
    """Measures candidates of tasks on an executor.

    ``number``/``repeat``/``min_repeat_ms``/``warmup``: each candidate runs ``warmup``
    times, then ``repeat`` timed rounds of ``number`` calls (``number=0``: enough calls
    for ``min_repeat_ms`` per round); its cost is the median round. ``timeout``: seconds
    for one candidate's build + check + timing. ``check``: compare outputs with the
    unscheduled kernel's. ``n_parallel``: candidates in flight at once (default: the
    pool's workers; keep it 1 when timing on a machine with few cores).
    ``slow_factor``: a candidate whose warm-up call is this many times slower than the
    task's best so far is timed by that one call only.
    """

    def __init__(
        self,
        executor: Executor | None = None,
        *,
        isolate: bool | None = None,
        timeout: float = 30.0,
        number: int = 0,
        repeat: int = 3,
        min_repeat_ms: float = 40.0,
        warmup: int = 1,
        flush_cache: bool = False,
        check: bool = True,
        n_parallel: int = 1,
        seed: int = 0,
        reference_timeout: float = 300.0,
        slow_factor: float = 20.0,
    ):
        self._own_executor = executor is None
        if executor is None:  # workers run at this process's thread count (set_num_threads does not cross processes)
            from ..runtime.threads import ENV_VARIABLE

            executor = IsolatedProcessPool(n_parallel, timeout=timeout, env={ENV_VARIABLE: str(_thread_count())})
        self.executor = executor
        self.isolate = (not isinstance(self.executor, IsolatedProcessPool)) if isolate is None else isolate
        self.timeout = timeout
        self.options = {
            "number": number,
            "repeat": repeat,
            "min_repeat_ms": min_repeat_ms,
            "warmup": warmup,
            "flush_cache": flush_cache,
        }
        self.check = check
        self.seed = seed
        self.reference_timeout = reference_timeout
        self._references: dict[str, list | None] = {}
        self.slow_factor = slow_factor
        self._best: dict[str, float] = {}  # task key -> best seconds per call measured here

    # -- requests -----------------------------------------------------------------------

    def _request(self, task: Task, module_text: str, expected) -> dict[str, Any]:
        best = self._best.get(task.key)
        return {
            "max_call_s": None if best is None else max(self.slow_factor * best, 0.05),
            "module": module_text,
            "target": task.target,
            "args": [[list(s), d] for s, d in task.arg_shapes],
            "outputs": list(task.outputs),
            "seed": self.seed,
            "expected": expected,
            **self.options,
        }

    def _submit(self, fn, request: dict[str, Any], timeout: float) -> Future:
        if self.isolate:
            return self.executor.submit(run_isolated, fn, request, timeout=timeout)
        if isinstance(self.executor, IsolatedProcessPool):
            return self.executor.submit_with_timeout(timeout, fn, request)
        return self.executor.submit(fn, request)

    def reference(self, task: Task) -> list | None:
        """The unscheduled kernel's outputs on the seeded inputs (computed once per task,
        in a worker; None when ``check`` is off)."""
        if not self.check:
            return None
        if task.key not in self._references:
            request = self._request(task, task.kernel_text, None)
            self._references[task.key] = self._submit(reference_outputs, request, self.reference_timeout).result()
        return self._references[task.key]

    # -- measuring ----------------------------------------------------------------------

    def instantiate(self, task: Task, trace: Sequence[dict[str, Any]]) -> str:
        """The module text measured for ``trace`` (:func:`instantiate`; a hook for tests
        that inject faulty code)."""
        return instantiate(task, trace)

    def measure(self, task: Task, candidates: Sequence[Candidate | Sequence[dict]], tuner: str = "") -> list[Record]:
        """One record per candidate, in order (failures included, with their error)."""
        expected = self.reference(task)
        threads = _thread_count()
        records: list[Record | None] = [None] * len(candidates)
        pending: list[tuple[int, Future, Candidate]] = []
        for k, c in enumerate(candidates):
            cand = c if isinstance(c, Candidate) else Candidate(list(c))
            base = dict(key=task.key, target=task.target, trace=list(cand.trace), config=cand.config,
                        task=task.name, tuner=tuner, flops=task.flops, threads=threads)
            try:
                text = self.instantiate(task, cand.trace)
            except (ScheduleError, ValueError, TypeError, KeyError) as error:
                records[k] = Record(**base, error=ErrorCode.INSTANTIATION_ERROR.value, message=str(error)[:500])
                continue
            pending.append((k, self._submit(measure_candidate, self._request(task, text, expected), self.timeout), cand))
            records[k] = Record(**base)
        for k, future, _ in pending:
            record = records[k]
            assert record is not None
            try:
                answer = future.result()
                record.error, record.message = answer["error"], answer["message"]
                record.costs, record.compile_s = list(answer["costs"]), float(answer["compile_s"])
                if record.ok:
                    self._best[task.key] = min(self._best.get(task.key, record.cost), record.cost)
            except (CallTimeout, FuturesTimeout, TimeoutError) as error:
                record.error, record.message = ErrorCode.TIMEOUT.value, str(error) or "timeout"
            except WorkerCrashed as error:
                record.error, record.message = ErrorCode.RUNTIME_ERROR.value, str(error)
            except Exception as error:  # noqa: BLE001 - a remote failure is this candidate's error
                record.error, record.message = ErrorCode.UNKNOWN_ERROR.value, f"{type(error).__name__}: {error}"[:500]
        return [r for r in records if r is not None]

    def close(self) -> None:
        if self._own_executor:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
