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
then ``os.replace``), so concurrent builds never read a half-written entry. Every entry
carries a checksum and its own key: one that does not read back whole (truncated, a
flipped byte, another key's entry copied over it) counts as a miss and is rewritten;
temporary files left by a killed writer are removed.

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
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..backends.llvm.object_code import ObjectCode

ENV_DIR = "TK_CACHE_DIR"
ENV_ENABLE = "TK_CACHE"

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
    #: whole builds (``build_cache.py``): rebuilds that ran no pass, builds that did, entries written
    build_hits: int = 0
    build_misses: int = 0
    build_writes: int = 0
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
        for name in (
            "kernel_hits", "kernel_misses", "disk_hits", "disk_misses", "disk_writes",
            "build_hits", "build_misses", "build_writes",
        ):  # fmt: skip
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


#: a cache file: MAGIC, then ``<IQ``: the CRC-32 of everything after these 12 bytes and the
#: header's length, the header (JSON: the entry's key and kind, its blobs' lengths, the
#: kind's own fields), then the blobs
MAGIC = b"TKCACHE2"
_FIXED = struct.Struct("<IQ")

#: a ``.tmp-*`` file older than this was left by a writer that died (writes take well under
#: a second); the first write of a process to a directory removes them
ORPHAN_SECONDS = 600.0
_swept: set[Path] = set()


@dataclass
class Entry:
    """What a cache file holds: its header fields and its blobs (views on the file's bytes)."""

    header: dict
    blobs: list[memoryview]


def entry_path(directory: Path, key: str, suffix: str = ".tkc") -> Path:
    return directory / key[:2] / f"{key}{suffix}"


def write_entry(path: Path, key: str, kind: str, header: dict, blobs: Sequence[bytes | memoryview]) -> bool:
    """Write an entry atomically (a temporary file in the same directory, then
    ``os.replace``); False when it could not be written (a full disk only skips caching)."""
    head = json.dumps({"key": key, "kind": kind, "blobs": [len(b) for b in blobs], **header}).encode()
    crc = zlib.crc32(head)
    for blob in blobs:
        crc = zlib.crc32(blob, crc)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _sweep_orphans(path.parent.parent)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as f:
            temporary = f.name
            f.write(MAGIC + _FIXED.pack(crc, len(head)) + head)
            for blob in blobs:
                f.write(blob)
        os.replace(temporary, path)
        return True
    except OSError:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        return False


def read_entry(path: Path, key: str, kind: str) -> Entry | None:
    """The entry at ``path`` if it is whole and is ``kind``'s entry for ``key``; None for a
    missing, truncated, damaged (checksum) or foreign (another key's) entry."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = bytearray(size)
            if f.readinto(data) != size:
                return None
    except OSError:
        return None
    fixed = len(MAGIC) + _FIXED.size
    if size < fixed or not data.startswith(MAGIC):
        return None
    crc, n_header = _FIXED.unpack_from(data, len(MAGIC))
    view = memoryview(data)
    if n_header > size - fixed or zlib.crc32(view[fixed:]) != crc:
        return None
    try:
        header = json.loads(view[fixed : fixed + n_header].tobytes())
        lengths = [int(n) for n in header["blobs"]]
    except (ValueError, KeyError, TypeError):
        return None
    if header.get("key") != key or header.get("kind") != kind or fixed + n_header + sum(lengths) != size:
        return None
    blobs, offset = [], fixed + n_header
    for n in lengths:
        blobs.append(view[offset : offset + n])
        offset += n
    return Entry(header, blobs)


def _sweep_orphans(directory: Path) -> None:
    """Remove the temporary files of writers that were killed (once per process and directory)."""
    if directory in _swept:
        return
    _swept.add(directory)
    limit = time.time() - ORPHAN_SECONDS
    for orphan in directory.glob("*/.tmp-*"):
        try:
            if orphan.stat().st_mtime < limit:
                orphan.unlink()
        except OSError:
            pass


def load(key: str, counted: bool = True) -> ObjectCode | None:
    """The object code stored under ``key``, or None (``counted`` as a hit or a miss)."""
    directory = cache_dir()
    if directory is None:
        return None
    code = _read(entry_path(directory, key))
    if counted:
        count(disk_hits=1) if code is not None else count(disk_misses=1)
    return code


def store(key: str, code: ObjectCode) -> None:
    """Write ``code`` under ``key`` (a failure to write only skips caching)."""
    directory = cache_dir()
    if directory is None:
        return
    header = {
        "functions": code.functions,
        "externals": code.externals,
        "reads_thread_count": code.reads_thread_count,
        "timings": code.timings,
        "symbols": code.symbols,
    }
    ir = (code.optimized_ir or "").encode()
    if write_entry(entry_path(directory, key), key, "object", header, [ir, *code.objects]):
        count(disk_writes=1)


def _read(path: Path) -> ObjectCode | None:
    """The object code of the entry at ``path`` (its file name is its key), or None."""
    entry = read_entry(path, path.stem, "object")
    if entry is None or len(entry.blobs) < 2:
        return None
    header = entry.header
    try:
        return ObjectCode(
            objects=[blob.tobytes() for blob in entry.blobs[1:]],
            functions=list(header["functions"]),
            externals=list(header["externals"]),
            reads_thread_count=bool(header["reads_thread_count"]),
            optimized_ir=entry.blobs[0].tobytes().decode() or None,
            timings=[tuple(t) for t in header.get("timings", [])],
            symbols=[(list(defined), list(called)) for defined, called in header["symbols"]],
        )
    except (ValueError, KeyError, TypeError):
        return None


__all__ = [
    "CacheInfo",
    "Entry",
    "cache_dir",
    "cache_info",
    "clear_cache_info",
    "compiler_fingerprint",
    "load",
    "entry_path",
    "module_key",
    "read_entry",
    "reset_cache_dir",
    "set_cache_dir",
    "store",
    "write_entry",
]
