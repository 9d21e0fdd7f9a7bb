"""A ``concurrent.futures`` executor whose workers are separate processes, with a
timeout per call: a call that crashes its process (a segfault in generated code) or
runs too long ends as an exception on its future, the worker is replaced, and the other
calls go on. The stdlib ``ProcessPoolExecutor`` cannot do either (a dead worker breaks
the whole pool; a running call cannot be stopped)::

    with IsolatedProcessPool(max_workers=2, timeout=10) as pool:
        future = pool.submit(measure_candidate, request)
        future.result()   # or WorkerCrashed / TimeoutError

Functions and arguments travel by pickle (functions by reference: they must be
importable in the worker, which gets this process's ``sys.path``). Each worker runs
``python -m tensorkiln.tuning.worker``; its stdout is the reply channel, so anything the
code prints goes to stderr instead.
"""

from __future__ import annotations

import os
import pickle
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import Executor, Future
from typing import Any

_HEADER = struct.Struct("<Q")

#: seconds a new worker may take to import the compiler
STARTUP_TIMEOUT = 300.0


class WorkerCrashed(RuntimeError):
    """The worker process died while running a call (e.g. a segfault)."""


class CallTimeout(TimeoutError):
    """The call ran past the executor's timeout; its worker was killed."""


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "unknown status"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, env: dict[str, str] | None):
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        environment.update(env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tensorkiln.tuning.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
        )
        # the worker imports the compiler first and says when it is ready: start-up (seconds
        # on a loaded machine) does not count against the first call's timeout
        if self._read(1, time.monotonic() + STARTUP_TIMEOUT, what="start-up") != b"R":
            self.kill()
            raise WorkerCrashed("worker sent a bad ready signal")

    def call(self, payload: bytes, timeout: float | None) -> Any:
        """Send one pickled call and wait for the reply (raises on crash/timeout)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(_HEADER.pack(len(payload)) + payload)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.process.wait()
            raise WorkerCrashed(f"worker died ({_signal_name(self.process.returncode)})") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        header = self._read(_HEADER.size, deadline)
        (size,) = _HEADER.unpack(header)
        ok, value = pickle.loads(self._read(size, deadline))
        if ok:
            return value
        raise value

    def _read(self, size: int, deadline: float | None, what: str = "call") -> bytes:
        out = self.process.stdout
        fd = out.fileno()
        chunks, have = [], 0
        while have < size:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.kill()
                raise CallTimeout(f"the {what} ran past the timeout; its worker was killed")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, min(size - have, 1 << 20))
            if not chunk:
                self.process.wait()
                raise WorkerCrashed(f"worker died ({_signal_name(self.process.returncode)})")
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            self.kill()


class IsolatedProcessPool(Executor):
    """``max_workers`` long-lived worker processes; each call gets ``timeout`` seconds.

    ``env`` adds environment variables to the workers (e.g. ``{"TK_NUM_THREADS": "1"}``).
    """

    def __init__(self, max_workers: int = 1, timeout: float | None = None, env: dict[str, str] | None = None):
        if max_workers < 1:
            raise ValueError(f"IsolatedProcessPool: max_workers must be at least 1, got {max_workers}")
        self.timeout = timeout
        self._env = env
        self._jobs: queue.Queue = queue.Queue()
        self._shutdown = False
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(max_workers)]
        for t in self._threads:
            t.start()

    def submit(self, fn, /, *args: Any, **kwargs: Any) -> Future:
        return self.submit_with_timeout(self.timeout, fn, *args, **kwargs)

    def submit_with_timeout(self, timeout: float | None, fn, /, *args: Any, **kwargs: Any) -> Future:
        """``submit`` with this call's own timeout (seconds; None: no limit)."""
        if self._shutdown:
            raise RuntimeError("cannot submit to an IsolatedProcessPool after shutdown")
        future: Future = Future()
        self._jobs.put((future, timeout, pickle.dumps((fn, args, kwargs))))
        return future

    def _serve(self) -> None:
        worker: _Worker | None = None
        while True:
            job = self._jobs.get()
            if job is None:
                break
            future, timeout, payload = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if worker is None or not worker.alive():
                    worker = _Worker(self._env)
                future.set_result(worker.call(payload, timeout))
            except BaseException as error:  # noqa: BLE001 - every failure goes to the future
                future.set_exception(error)
        if worker is not None:
            worker.close()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for t in self._threads:
                t.join()


def run_isolated(fn, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
    """Run one call in a fresh worker process (for executors that do not isolate, e.g.
    a Dask cluster's): a crash or a hang becomes an exception here."""
    with IsolatedProcessPool(1, timeout=timeout) as pool:
        return pool.submit(fn, *args, **kwargs).result()
