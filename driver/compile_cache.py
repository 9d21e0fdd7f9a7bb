"""The compile cache: each distinct kernel compiles once per build, and object code is
kept on disk between builds.

- **Per build**: kernels with the same structural hash are merged before code
  generation (:mod:`.dedupe_kernels`); ``cache_info().kernel_hits`` counts the copies
  that did not compile again.
- **On disk**: the object code of a lowered module is stored under a key made of the
  printed loop-level IR (kernels and host function), the target, and a fingerprint of
  the compiler (its source files, llvmlite's and LLVM's versions), so that a change
  anywhere in the compiler never reuses stale code. A second build of the same model
  skips loop-to-llvm, LLVM's optimiser and code generation.

Directory: ``TK_CACHE_DIR`` (environment), else ``~/.cache/tensorkiln``;
``set_cache_dir(path)`` overrides both, ``set_cache_dir(None)`` (or ``TK_CACHE=0``)
disables the disk cache. Writes are atomic (a temporary file in the same directory,
then ``os.replace``), so concurrent builds never read a half-written entry; an entry
that does not read back (truncated, foreign) counts as a miss and is rewritten.

Example::

    tk.set_cache_dir("/tmp/tkcache")
    tk.build(module); tk.build(module)
    print(tk.cache_info())   # CacheInfo(kernel_hits=..., disk_hits=1, disk_misses=1, ...)
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..backends.llvm.object_code import ObjectCode

ENV_DIR = "TK_CACHE_DIR"
ENV_ENABLE = "TK_CACHE"
MAGIC = b"TKCACHE1"

#: top-level folders of the checkout that do not change generated code
_NOT_COMPILER = ("tests", "benchmarks", "examples", "tools", "build", "dist")

_UNSET = object()
_directory: object = _UNSET
_lock = threading.Lock()


@dataclass
class CacheInfo:
    """Counters since the process started (or ``clear_cache_info()``)."""

    kernel_hits: int = 0
    kernel_misses: int = 0
    disk_hits: int = 0
    disk_misses: int = 0
    disk_writes: int = 0
    directory: str | None = None


_info = CacheInfo()


def cache_dir() -> Path | None:
    """The disk cache's directory, or None when the disk cache is off."""
    if _directory is not _UNSET:
        return None if _directory is None else Path(_directory)  # type: ignore[arg-type]
    if os.environ.get(ENV_ENABLE, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    configured = os.environ.get(ENV_DIR)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "tensorkiln"


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Use ``path`` for the disk cache from now on (None: no disk cache)."""
    global _directory
    _directory = None if path is None else Path(path)


def reset_cache_dir() -> None:
    """Back to the environment's choice (``TK_CACHE_DIR`` / ``TK_CACHE``)."""
    global _directory
    _directory = _UNSET


def cache_info() -> CacheInfo:
    """Hits and misses of the compile cache (a copy)."""
    directory = cache_dir()
    with _lock:
        return CacheInfo(**{**_info.__dict__, "directory": None if directory is None else str(directory)})


def clear_cache_info() -> None:
    with _lock:
        for name in ("kernel_hits", "kernel_misses", "disk_hits", "disk_misses", "disk_writes"):
            setattr(_info, name, 0)


def count(**increments: int) -> None:
    with _lock:
        for name, n in increments.items():
            setattr(_info, name, getattr(_info, name) + n)


@lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """A hash of the compiler's own source files and of llvmlite's and LLVM's versions."""
    import llvmlite
    import llvmlite.binding as llvm

    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"{llvmlite.__version__} {llvm.llvm_version_info}".encode())
    sources = []
    for directory, subdirs, files in os.walk(root):
        # prune what is not the compiler (and the virtual environment, which is large)
        subdirs[:] = [
            d for d in subdirs
            if not d.startswith((".", "__")) and not (directory == str(root) and d in _NOT_COMPILER)
        ]
        sources += [Path(directory) / f for f in files if f.endswith(".py")]
    for path in sorted(sources):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()



def module_key(parts: list[str]) -> str:
    """The disk key of a lowered module: its IR texts, the target and the compiler."""
    h = hashlib.sha256(compiler_fingerprint().encode())
    for part in parts:
        h.update(struct.pack("<Q", len(part)))
        h.update(part.encode())
    return h.hexdigest()


def _entry_path(directory: Path, key: str) -> Path:
    return directory / key[:2] / f"{key}.tkc"


def load(key: str) -> ObjectCode | None:
    """The object code stored under ``key``, or None (counted as a hit or a miss)."""
    directory = cache_dir()
    if directory is None:
        return None
    code = _read(_entry_path(directory, key))
    count(disk_hits=1) if code is not None else count(disk_misses=1)
    return code


def store(key: str, code: ObjectCode) -> None:
    """Write ``code`` under ``key`` atomically (a failure to write only skips caching)."""
    directory = cache_dir()
    if directory is None:
        return
    path = _entry_path(directory, key)
    header = json.dumps(
        {
            "functions": code.functions,
            "externals": code.externals,
            "reads_thread_count": code.reads_thread_count,
            "timings": code.timings,
        }
    ).encode()
    ir = (code.optimized_ir or "").encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as f:
            f.write(MAGIC + struct.pack("<QQQ", len(header), len(code.object), len(ir)))
            f.write(header + code.object + ir)
            temporary = f.name
        os.replace(temporary, path)
        count(disk_writes=1)
    except OSError:
        try:
            os.unlink(temporary)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


def _read(path: Path) -> ObjectCode | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    fixed = len(MAGIC) + 24
    if len(data) < fixed or not data.startswith(MAGIC):
        return None
    n_header, n_object, n_ir = struct.unpack("<QQQ", data[len(MAGIC) : fixed])
    if len(data) != fixed + n_header + n_object + n_ir:
        return None
    try:
        header = json.loads(data[fixed : fixed + n_header])
        ir = data[fixed + n_header + n_object :].decode()
        return ObjectCode(
            object=data[fixed + n_header : fixed + n_header + n_object],
            functions=list(header["functions"]),
            externals=list(header["externals"]),
            reads_thread_count=bool(header["reads_thread_count"]),
            optimized_ir=ir or None,
            timings=[tuple(t) for t in header.get("timings", [])],
        )
    except (ValueError, KeyError, TypeError):
        return None


__all__ = [
    "CacheInfo",
    "cache_dir",
    "cache_info",
    "clear_cache_info",
    "compiler_fingerprint",
    "load",
    "module_key",
    "reset_cache_dir",
    "set_cache_dir",
    "store",
]
