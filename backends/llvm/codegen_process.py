"""LLVM optimisation and code generation in worker processes: in parallel, and with
bounded memory.

- **Parallel**: llvmlite holds the GIL while LLVM works, so threads cannot share the
  work; a build splits its kernels into groups, one LLVM module each, and a pool of
  worker processes (one per core: ``TK_LLVM_WORKERS`` overrides) optimises and emits
  them at once while the build prints the next group's IR (``object_code.py``).
- **Bounded memory**: llvmlite 0.50 leaks native memory on every run of its new pass
  manager (~0.16 MB per optimised module, never freed: ``LLVMPY_CreatePassBuilder``
  allocates pass-instrumentation callbacks that are never deleted). A service that
  compiled model after model grew without bound (issue #39: 800 uncached builds, 138 ->
  277 MB). A worker is replaced by a fresh one after :data:`JOBS_PER_PROCESS` modules,
  which bounds what it can hold; the building process's own memory stays flat.

A worker that dies (an LLVM abort) is a :class:`CodegenCrashed` error for the build
whose module it was compiling, not the end of the process; the next job starts a new
worker. A small build compiles in this process (a pool costs ~0.1-0.3 s to start), but
only its first :data:`JOBS_IN_PROCESS` modules: what leaks here stays below ~10 MB.
``TK_LLVM_IN_PROCESS=1`` does all the work in this process (debugging; it leaks).

Protocol: length-prefixed pickles over a worker's stdin/stdout; a worker is this module
run as ``python -m`` and imports llvmlite and ``codegen.py`` only (no xDSL, no user code).
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

from . import codegen

#: modules a worker compiles before it is replaced (its leak stays below ~40 MB)
JOBS_PER_PROCESS = 200

#: modules compiled in this process (small builds) before the pool takes over for good
JOBS_IN_PROCESS = 50

IN_PROCESS_VARIABLE = "TK_LLVM_IN_PROCESS"
WORKERS_VARIABLE = "TK_LLVM_WORKERS"

_HEADER = struct.Struct("<Q")


class CodegenCrashed(RuntimeError):
    """A worker process died while compiling a module (LLVM aborted)."""


def _send(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # noqa: S301 (our own worker's answer)


class _Worker:
    """One worker process and how many modules it has compiled."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, IN_PROCESS_VARIABLE: "1"},
        )
        self.jobs = 0

    @property
    def worn_out(self) -> bool:
        return self.jobs >= JOBS_PER_PROCESS or self.process.poll() is not None

    def run(self, request: tuple) -> Any:
        self.jobs += 1
        try:
            _send(self.process.stdin, request)
            return _receive(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.process.wait()
            raise CodegenCrashed(
                f"LLVM's code generation died (its worker process exited with status {code}) compiling this module"
            ) from None

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


class CodegenPool:
    """``size`` worker processes (started now, so that they load llvmlite while the
    build runs its passes) and a thread per worker that feeds it."""

    def __init__(self, size: int):
        self.size = size
        self.owner = os.getpid()  # a forked child must not share the pipes: it makes its own
        self._idle: queue.SimpleQueue[_Worker | None] = queue.SimpleQueue()
        self._workers: list[_Worker] = []
        for _ in range(size):
            self._idle.put(self._new_worker())
        self._feeders = ThreadPoolExecutor(size, thread_name_prefix="tk-llvm")

    def _new_worker(self) -> _Worker:
        worker = _Worker()
        self._workers.append(worker)
        return worker

    def submit(self, function: str, *args: Any) -> Future:
        """``function(*args)`` of ``codegen.py`` in a worker; its exception re-raised."""
        return self._feeders.submit(self._run, (function, args))

    def _run(self, request: tuple) -> Any:
        worker = self._idle.get()
        try:
            if worker is None or worker.worn_out:
                if worker is not None:
                    worker.close()
                    self._workers.remove(worker)
                worker = self._new_worker()
            ok, value = worker.run(request)
        except CodegenCrashed:
            self._workers.remove(worker)
            worker = None
            raise
        finally:
            self._idle.put(worker)
        if not ok:
            kind, message = value
            raise (kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError)(message)
        return value

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids (tests)."""
        return [w.process.pid for w in self._workers]

    def close(self) -> None:
        self._feeders.shutdown(wait=True)
        for worker in self._workers:
            worker.close()
        self._workers = []


_lock = threading.Lock()
_pool: CodegenPool | None = None
_jobs_here = 0


def worker_count() -> int:
    """How many worker processes the pool has: ``TK_LLVM_WORKERS``, else this process's cores."""
    configured = os.environ.get(WORKERS_VARIABLE, "").strip()
    if configured:
        return max(1, int(configured))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not Linux)
        return max(1, os.cpu_count() or 1)


def in_process_only() -> bool:
    return os.environ.get(IN_PROCESS_VARIABLE, "") not in ("", "0")


def pool() -> CodegenPool:
    """The process's pool, started on first use."""
    global _pool
    with _lock:
        if _pool is not None and _pool.owner != os.getpid():
            _pool = None  # inherited through fork: the parent's, left to the parent
        if _pool is None:
            _pool = CodegenPool(worker_count())
        return _pool


def pool_started() -> bool:
    return _pool is not None and _pool.owner == os.getpid()


def start_pool() -> None:
    """Start the workers now (a large build calls this first: they load while it runs
    its passes); nothing with ``TK_LLVM_IN_PROCESS=1``."""
    if not in_process_only():
        pool()


def use_workers(large: bool) -> bool:
    """Whether a build's LLVM modules go to the workers: a ``large`` build's (one worth
    starting the pool for), and every build's once the pool runs or this process has
    compiled :data:`JOBS_IN_PROCESS` modules itself; never with ``TK_LLVM_IN_PROCESS=1``."""
    if in_process_only():
        return False
    return large or pool_started() or _jobs_here >= JOBS_IN_PROCESS


def count_jobs_here(modules: int) -> None:
    """Count modules compiled in this process (what leaks here)."""
    global _jobs_here
    with _lock:
        _jobs_here += modules


def shutdown() -> None:
    """End the worker processes (they also end when this process does)."""
    global _pool
    with _lock:
        if _pool is not None and _pool.owner == os.getpid():
            _pool.close()
        _pool = None


atexit.register(shutdown)


def _call(function: str, args: tuple) -> Any:
    return getattr(codegen, function)(*args)


def _serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """A worker's loop: answer each request until stdin closes."""
    while True:
        try:
            function, args = _receive(requests)
        except EOFError:
            return
        try:
            answer = (True, _call(function, args))
        except Exception as error:  # noqa: BLE001 (sent back and raised in the caller)
            message = "\n".join([str(error), *getattr(error, "__notes__", ())])
            answer = (False, (type(error) if type(error).__module__ == "builtins" else RuntimeError, message))
        _send(answers, answer)


if __name__ == "__main__":
    # answers go to a private copy of stdout; anything printed (LLVM, warnings) to stderr
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _serve(sys.stdin.buffer, answers)
