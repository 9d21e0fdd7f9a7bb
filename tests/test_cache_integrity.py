"""Compile-cache entries are checked when read (issue #39 item 4): a flipped byte, another
model's entry under the key, or a truncated file is a miss, rebuilt and rewritten, never
a crash or a wrong model; temporary files left by a killed writer are removed."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.driver import compile_cache


def _model(rng, width: int):
    b = tk.GraphBuilder()
    x = b.input("x", (3, width))
    return b.finish(b.tanh(b.dense(x, rng.standard_normal((width + 2, width)).astype("f4"))))


def _reference(module, x):
    return tk.create_executor("interpreter", module).evaluate()(x)


def _object_entries(cache_dir):
    return sorted(cache_dir.rglob("*.tkc"))


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_a_flipped_byte_is_a_miss_and_rewritten(cache_dir, rng, where):
    module = _model(rng, 13)
    tk.build(module)
    (entry,) = _object_entries(cache_dir)
    data = bytearray(entry.read_bytes())
    data[int(len(data) * where)] ^= 0x10  # in the header, the object code or the IR
    entry.write_bytes(bytes(data))
    assert compile_cache._read(entry) is None  # noqa: SLF001
    compile_cache.set_cache_dir(cache_dir)  # (a fresh process would see the same files)
    x = rng.standard_normal((3, 13)).astype("f4")
    lib = tk.build(module)
    assert not lib.cache_hit
    np.testing.assert_allclose(lib(x), _reference(module, x), rtol=1e-5, atol=1e-6)
    assert compile_cache._read(entry) is not None  # rewritten whole  # noqa: SLF001


def test_another_models_entry_under_the_key_is_a_miss(cache_dir, rng):
    first, second = _model(rng, 13), _model(rng, 17)
    tk.build(first)
    (first_entry,) = _object_entries(cache_dir)
    tk.build(second)
    (second_entry,) = [e for e in _object_entries(cache_dir) if e != first_entry]
    # the second model's (valid) entry copied over the first's key
    first_entry.write_bytes(second_entry.read_bytes())
    x = rng.standard_normal((3, 13)).astype("f4")
    lib = tk.build(first)
    assert not lib.cache_hit
    np.testing.assert_allclose(lib(x), _reference(first, x), rtol=1e-5, atol=1e-6)
    assert tk.build(first).cache_hit  # rewritten: the next build hits


def test_entries_of_the_old_format_and_truncated_ones_are_misses(cache_dir, rng):
    module = _model(rng, 11)
    tk.build(module)
    (entry,) = _object_entries(cache_dir)
    whole = entry.read_bytes()
    for damaged in (b"TKCACHE1" + whole[8:], whole[:-1], whole + b"\0", b""):
        entry.write_bytes(damaged)
        assert compile_cache._read(entry) is None  # noqa: SLF001
    assert not tk.build(module).cache_hit


def test_orphaned_temporary_files_are_removed(cache_dir, rng):
    shard = cache_dir / "ab"
    shard.mkdir(parents=True)
    orphan, fresh = shard / ".tmp-killed-writer", shard / ".tmp-writing-now"
    orphan.write_bytes(b"half an entry")
    fresh.write_bytes(b"a concurrent writer's")
    old = time.time() - compile_cache.ORPHAN_SECONDS - 60
    os.utime(orphan, (old, old))
    tk.build(_model(rng, 9))  # the first write of this process to the directory sweeps
    assert not orphan.exists()
    assert fresh.exists()  # (another build may be writing it right now)
    assert len(_object_entries(cache_dir)) == 1


def test_an_unwritable_directory_only_skips_caching(tmp_path, rng):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    compile_cache.set_cache_dir(blocker / "cache")
    try:
        compile_cache.clear_cache_info()
        module = _model(rng, 7)
        x = rng.standard_normal((3, 7)).astype("f4")
        np.testing.assert_allclose(tk.build(module)(x), _reference(module, x), rtol=1e-5, atol=1e-6)
        assert tk.cache_info().disk_writes == 0
    finally:
        compile_cache.reset_cache_dir()
