"""The compile cache: identical kernels compile once per build, a second build of the
same model comes from the disk cache (and is faster), entries are written atomically
and a damaged entry is a miss; concurrent builds share a directory safely."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.driver import compile_cache


def _repeated_blocks(rng, blocks=4, width=21):
    """Blocks of the same shapes (different weights): their kernels are identical."""
    b = tk.GraphBuilder()
    x = b.input("x", (3, width))
    h = x
    for _ in range(blocks):
        h = b.tanh(b.add(b.dense(h, rng.standard_normal((width, width)).astype("f4") * 0.2), h))
    return b.finish(h)


def test_identical_kernels_compile_once_per_build(cache_dir, rng):
    module = _repeated_blocks(rng)
    lib = tk.build(module)
    info = tk.cache_info()
    assert info.kernel_hits >= 3, info  # three of the four blocks reuse the first block's kernel
    assert len(lib.graph_program.kernels) < len(lib.graph_program.nodes)
    x = rng.standard_normal((3, 21)).astype("f4")
    reference = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(lib(x), reference, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lib.graph_executor()(x), reference, rtol=1e-5, atol=1e-6)


def test_second_build_is_a_disk_cache_hit(cache_dir, rng):
    module = _repeated_blocks(rng, blocks=2)
    cold = tk.build(module)
    assert not cold.cache_hit
    assert tk.cache_info().disk_misses == 1 and tk.cache_info().disk_writes == 1
    assert tk.cache_info().directory == str(cache_dir)
    warm = tk.build(module)
    assert warm.cache_hit and tk.cache_info().disk_hits == 1
    names = [name for name, _ in warm.pass_timings]
    assert "llvm-opt" not in names and "llvm-codegen" not in names  # LLVM did not run again
    x = rng.standard_normal((3, 21)).astype("f4")
    np.testing.assert_array_equal(warm(x), cold(x))
    assert "vfmadd" in warm.assembly() or "mul" in warm.assembly()  # the IR is kept too
    assert len(list(cache_dir.rglob("*.tkc"))) == 1


def test_the_key_covers_target_and_code(cache_dir, rng):
    module = _repeated_blocks(rng, blocks=1)
    tk.build(module)
    tk.build(module, target="llvm -mattr=-avx512f")  # another target: another entry
    tk.build(module, opt_level=0)  # other graph optimizations: other loop IR
    assert tk.cache_info().disk_hits == 0 and tk.cache_info().disk_misses == 3


def test_a_damaged_entry_is_a_miss_and_rewritten(cache_dir, rng):
    module = _repeated_blocks(rng, blocks=1)
    tk.build(module)
    (entry,) = cache_dir.rglob("*.tkc")
    entry.write_bytes(entry.read_bytes()[:100])
    lib = tk.build(module)
    assert not lib.cache_hit and tk.cache_info().disk_misses == 2
    assert tk.build(module).cache_hit
    x = rng.standard_normal((3, 21)).astype("f4")
    np.testing.assert_allclose(lib(x), tk.create_executor("interpreter", module).evaluate()(x), rtol=1e-5, atol=1e-6)


def test_disabled_disk_cache_writes_nothing(tmp_path, rng):
    compile_cache.set_cache_dir(None)
    try:
        compile_cache.clear_cache_info()
        tk.build(_repeated_blocks(rng, blocks=1))
        info = tk.cache_info()
        assert info.directory is None and info.disk_hits == info.disk_misses == info.disk_writes == 0
    finally:
        compile_cache.reset_cache_dir()


def test_environment_chooses_the_directory(monkeypatch, tmp_path):
    compile_cache.reset_cache_dir()
    monkeypatch.setenv("TK_CACHE_DIR", str(tmp_path / "env"))
    assert compile_cache.cache_dir() == tmp_path / "env"
    monkeypatch.setenv("TK_CACHE", "0")
    assert compile_cache.cache_dir() is None
    monkeypatch.delenv("TK_CACHE")
    monkeypatch.delenv("TK_CACHE_DIR")
    assert compile_cache.cache_dir() == Path.home() / ".cache" / "tensorkiln"


BUILDER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorkiln as tk
    tk.set_cache_dir(sys.argv[1])
    rng = np.random.default_rng(7)
    b = tk.GraphBuilder()
    x = b.input("x", (3, 21))
    h = x
    for _ in range(3):
        h = b.tanh(b.add(b.dense(h, rng.standard_normal((21, 21)).astype("f4") * 0.2), h))
    lib = tk.build(b.finish(h))
    print(float(lib(np.ones((3, 21), "f4")).sum()))
    """
)


def test_concurrent_builds_share_the_directory_safely(tmp_path):
    directory = tmp_path / "shared"
    runs = [
        subprocess.Popen([sys.executable, "-c", BUILDER, str(directory)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    results = [r.communicate(timeout=300) for r in runs]
    for r, (out, err) in zip(runs, results):
        assert r.returncode == 0, err
    assert len({out for out, _ in results}) == 1
    entries = list(directory.rglob("*.tkc"))
    assert len(entries) == 1 and not list(directory.rglob(".tmp-*"))
    compile_cache.set_cache_dir(directory)
    try:
        assert compile_cache._read(entries[0]) is not None  # noqa: SLF001 (a whole entry)
    finally:
        compile_cache.reset_cache_dir()
    assert os.path.getsize(entries[0]) > 100
