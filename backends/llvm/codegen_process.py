"""LLVM optimisation and code generation in a helper process that is replaced now and then.

llvmlite 0.50 leaks native memory on every run of its new pass manager (measured:
~0.16 MB of malloc'd memory per optimised module at -O2, never freed: its
``LLVMPY_CreatePassBuilder`` allocates the pass-instrumentation callbacks the pass builder
never deletes, and each run registers more into them). A service that compiles model after
model grew without bound (issue #39: 800 uncached builds, 138 -> 277 MB). Nothing in
llvmlite's API frees it, so the work that leaks runs in a helper process: it receives the
LLVM IR text, optimises it and emits the object code, and is replaced by a fresh one after
:data:`JOBS_PER_PROCESS` modules, which bounds what it can hold. The compiling process's
own memory stays flat. A helper that dies (an LLVM abort) is an error for that build, not
the end of the process, and the next build starts a new helper.

The first :data:`JOBS_IN_PROCESS` modules of a process are compiled in the process itself
(a helper costs ~0.4 s to start: a script or a test that builds a few models does not pay
it, and what leaks stays below ~10 MB); the helper takes over from there.

``TK_LLVM_IN_PROCESS=1`` does the work in this process instead (debugging; it leaks).

Protocol: length-prefixed pickles over the helper's stdin/stdout (the helper is this
module run as ``python -m``; it imports no user code).
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from typing import Any, BinaryIO

#: modules a helper compiles before it is replaced (its leak stays below ~40 MB)
JOBS_PER_PROCESS = 200

#: modules compiled in this process before the helper takes over
JOBS_IN_PROCESS = 50

IN_PROCESS_VARIABLE = "TK_LLVM_IN_PROCESS"

_HEADER = struct.Struct("<Q")


class CodegenCrashed(RuntimeError):
    """The helper process died while compiling a module (LLVM aborted)."""


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
    return pickle.loads(data)  # noqa: S301 (our own helper process's answer)


class _Helper:
    """One helper process and how many modules it has compiled."""

    def __init__(self) -> None:
        env = {**os.environ, IN_PROCESS_VARIABLE: "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.jobs = 0
        self.owner = os.getpid()  # a forked child must not share the pipes: it starts its own

    def run(self, request: tuple) -> Any:
        self.jobs += 1
        try:
            _send(self.process.stdin, request)
            return _receive(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.process.wait()
            raise CodegenCrashed(
                f"LLVM's code generation died (the helper process exited with status {code}) compiling this module"
            ) from None

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


_lock = threading.Lock()
_helper: _Helper | None = None
_jobs_here = 0


def _current_helper() -> _Helper:
    global _helper
    if _helper is not None and _helper.owner != os.getpid():
        _helper = None  # inherited through fork: the parent's helper, left to the parent
    if _helper is not None and (_helper.jobs >= JOBS_PER_PROCESS or _helper.process.poll() is not None):
        _helper.close()
        _helper = None
    if _helper is None:
        _helper = _Helper()
    return _helper


def shutdown() -> None:
    """End the helper process (it also ends when this process does)."""
    global _helper
    with _lock:
        if _helper is not None and _helper.owner == os.getpid():
            _helper.close()
        _helper = None


atexit.register(shutdown)


def in_helper(function: str, *args: Any) -> Any:
    """``function(*args)`` of :mod:`tensorkiln.backends.llvm.object_code` (by name), run in
    the helper process (or here, with ``TK_LLVM_IN_PROCESS=1``); its exception re-raised."""
    global _jobs_here, _helper
    with _lock:
        here = _jobs_here < JOBS_IN_PROCESS or os.environ.get(IN_PROCESS_VARIABLE, "") not in ("", "0")
        _jobs_here += here
    if here:
        return _call(function, args)
    with _lock:
        helper = _current_helper()
        try:
            ok, value = helper.run((function, args))
        except CodegenCrashed:
            _helper = None
            raise
    if not ok:
        kind, message = value
        raise (kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError)(message)
    return value


def _call(function: str, args: tuple) -> Any:
    from . import object_code

    return getattr(object_code, function)(*args)


def _serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """The helper's loop: answer each request until stdin closes."""
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
