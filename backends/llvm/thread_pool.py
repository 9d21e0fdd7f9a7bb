"""tensorkiln's thread pool for parallel loops: its native code compiled once per process.

Generated code runs a parallel loop by calling ``tk_parallel_for`` (``lowering/
parallel_to_llvm.py``); the pool's code is LLVM IR written out in ``thread_pool_ir.py``
(its protocol is documented there). In this process it is compiled by MCJIT on first
need and kept for the life of the process (its workers run its code until the process
exits); :func:`pool_addresses` gives the native addresses to bind generated code to.
An exported library links its own copy (:func:`pool_object`).

Why not libgomp: its join waits for every thread of the team, so a worker that is
asleep or shares its core with another process stalls every parallel loop; here the
calling thread takes the pieces no worker has taken and waits only for pieces being run
(measured: ``benchmarks/threads.py``).

The workers' wait policy follows the environment as libgomp's does: after a loop they
spin ``TK_SPIN_US`` microseconds (default :data:`DEFAULT_SPIN_US`) for the next one, then
sleep; ``OMP_WAIT_POLICY=passive`` makes them sleep at once, ``active`` spin ~forever.
(An exported library's own pool spins the default time.)
"""

from __future__ import annotations

import ctypes
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache

import llvmlite.binding as llvm

from .thread_pool_ir import COUNTERS, DEFAULT_SPIN_US, POOL_FUNCTIONS, pool_ir

#: what ``OMP_WAIT_POLICY=active`` means here: spin for ten seconds
ACTIVE_SPIN_US = 10_000_000

SPIN_VARIABLE = "TK_SPIN_US"


def spin_microseconds() -> int:
    """The workers' spin before sleeping, from ``TK_SPIN_US`` or ``OMP_WAIT_POLICY``."""
    text = os.environ.get(SPIN_VARIABLE, "").strip()
    if text:
        try:
            value = int(text)
            if value >= 0:
                return value
        except ValueError:
            pass
        warnings.warn(f"{SPIN_VARIABLE}={text!r} is not a number of microseconds >= 0; using "
                      f"{DEFAULT_SPIN_US}", RuntimeWarning, stacklevel=2)  # fmt: skip
        return DEFAULT_SPIN_US
    policy = os.environ.get("OMP_WAIT_POLICY", "").strip().lower()
    return {"passive": 0, "active": ACTIVE_SPIN_US}.get(policy, DEFAULT_SPIN_US)


@dataclass
class ThreadPool:
    """The pool compiled in this process: its functions' addresses and its counters."""

    engine: llvm.ExecutionEngine
    addresses: dict[str, int]

    def counters(self) -> dict[str, int]:
        """``launches`` (parallel loops started), ``parallel_launches`` (those run on more
        than one thread), ``worker_pieces`` (pieces run by workers, not the caller),
        ``wakes`` (times sleeping workers were woken), ``workers`` (threads created)."""
        out = (ctypes.c_int64 * len(COUNTERS))()
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.addresses["tk_pool_read_counters"])(ctypes.addressof(out))
        return dict(zip(COUNTERS, out))

    def set_spin(self, microseconds: int) -> None:
        """How long idle workers spin before they sleep, from now on."""
        ctypes.CFUNCTYPE(None, ctypes.c_int64)(self.addresses["tk_pool_set_spin"])(int(microseconds) * 1000)


def _host_target_machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(opt=2, codemodel="large")


@lru_cache(maxsize=1)
def thread_pool() -> ThreadPool:
    """The process's pool (compiled on first call, ~30 ms; never freed)."""
    module = llvm.parse_assembly(pool_ir(llvm.get_process_triple()))
    module.verify()
    engine = llvm.create_mcjit_compiler(module, _host_target_machine())
    engine.finalize_object()
    pool = ThreadPool(engine, {name: engine.get_function_address(name) for name in POOL_FUNCTIONS})
    # the workers run this code until the process exits: never free it, not even when
    # the interpreter tears its objects down
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))
    pool.set_spin(spin_microseconds())
    after_fork = ctypes.CFUNCTYPE(None)(pool.addresses["tk_pool_after_fork"])
    os.register_at_fork(after_in_child=after_fork)  # the child has no workers
    return pool


def pool_addresses() -> dict[str, int]:
    """Name -> native address of the pool's functions in this process."""
    return dict(thread_pool().addresses)


def pool_object(triple: str | None = None) -> bytes:
    """The pool as position-independent object code (for this machine unless ``triple``),
    for a shared library that carries its own copy (``export_library``): its functions
    are hidden there."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = triple or llvm.get_process_triple()
    module = llvm.parse_assembly(pool_ir(triple, hidden=True))
    module.verify()
    machine = llvm.Target.from_triple(triple).create_target_machine(opt=2, reloc="pic")
    return machine.emit_object(module)


def calls_pool(function_names) -> bool:
    """Whether code declaring ``function_names`` (its external functions) calls the pool."""
    return any(name in POOL_FUNCTIONS for name in function_names)


__all__ = [
    "ACTIVE_SPIN_US",
    "DEFAULT_SPIN_US",
    "POOL_FUNCTIONS",
    "SPIN_VARIABLE",
    "ThreadPool",
    "calls_pool",
    "pool_addresses",
    "pool_object",
    "spin_microseconds",
    "thread_pool",
]
