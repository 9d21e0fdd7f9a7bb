"""Whole builds in the disk cache (driver/build_cache.py, issue #36): a rebuild of an
unchanged model runs no pass and gives the same module; a changed weight, option, target
or compiler misses."""

from __future__ import annotations

import numpy as np
import pytest
import tensorkiln as tk
from tensorkiln.driver import build_cache, compile_cache
from tensorkiln.runtime import load_module


def _conv_model(weights: dict[str, np.ndarray]):
    """Conv (its weights packed into the kernels' layout by the build), mean, dense; a
    symbolic batch."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 3, 9, 11))
    h = b.relu(b.conv2d(x, b.constant(weights["conv"], "conv.w"), padding=(1, 1, 1, 1)))
    h = b.reduce_mean(h, (2, 3))
    return b.finish(b.dense(h, b.constant(weights["fc"], "fc.w")))


def _weights(rng):
    return {
        "conv": rng.standard_normal((5, 3, 3, 3)).astype("f4"),
        "fc": rng.standard_normal((7, 5)).astype("f4"),
    }


def _build_hit(module, **options) -> tuple[bool, object]:
    """Whether building ``module`` came from a build entry (an object-code hit alone
    still runs the passes), and the build."""
    before = tk.cache_info().build_hits
    lib = tk.build(module, **options)
    return tk.cache_info().build_hits > before, lib


def _uncached(module, **options):
    directory = compile_cache.cache_dir()
    compile_cache.set_cache_dir(None)
    try:
        return tk.build(module, **options)
    finally:
        compile_cache.set_cache_dir(directory)


def test_a_rebuild_runs_no_pass_and_is_the_same_module(cache_dir, rng):
    weights = _weights(rng)
    cold = tk.build(_conv_model(weights))
    assert not cold.cache_hit and tk.cache_info().build_writes == 1
    warm = tk.build(_conv_model(weights))  # imported again: other weight names, same data
    assert warm.cache_hit and tk.cache_info().build_hits == 1
    assert [name for name, _ in warm.pass_timings] == ["build-cache", "load-object"]
    reference = _uncached(_conv_model(weights))
    for n in (1, 4):
        x = rng.standard_normal((n, 3, 9, 11)).astype("f4")
        expected = reference(x)
        np.testing.assert_array_equal(warm(x), expected)
        np.testing.assert_array_equal(warm.graph_executor()(x), expected)
    assert warm.signature == cold.signature
    assert [n.kernel for n in warm.graph_program.nodes] == [n.kernel for n in cold.graph_program.nodes]


def test_a_cached_build_exports_and_loads(cache_dir, rng, tmp_path):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    warm = tk.build(_conv_model(weights))
    assert warm.cache_hit
    warm.export_library(tmp_path / "artifact")
    loaded = load_module(tmp_path / "artifact")
    x = rng.standard_normal((2, 3, 9, 11)).astype("f4")
    np.testing.assert_array_equal(loaded(x), warm(x))


def test_a_changed_weight_misses(cache_dir, rng):
    weights = _weights(rng)
    module = _conv_model(weights)
    tk.build(module)
    x = rng.standard_normal((2, 3, 9, 11)).astype("f4")
    other = {**weights, "fc": weights["fc"] + 1}
    hit, lib = _build_hit(_conv_model(other))
    assert not hit  # (its object code is the same: weights are passed by pointer)
    np.testing.assert_array_equal(lib(x), _uncached(_conv_model(other))(x))
    weights["conv"][0, 0, 0, 0] += 1  # one element changed in place, in the module's own array
    hit, lib = _build_hit(module)
    assert not hit
    np.testing.assert_array_equal(lib(x), _uncached(module)(x))


@pytest.mark.parametrize(
    "options",
    [
        {"opt_level": 0},
        {"target": "llvm -mattr=-avx512f"},
        {"target": "llvm -layout=NCHW"},
        {"precision": "bf16"},
    ],
    ids=["opt-level", "target-features", "target-layout", "precision"],
)
def test_a_changed_option_or_target_misses(cache_dir, rng, options):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    hit, lib = _build_hit(_conv_model(weights), **options)
    assert not hit
    x = rng.standard_normal((2, 3, 9, 11)).astype("f4")
    np.testing.assert_array_equal(lib(x), _uncached(_conv_model(weights), **options)(x))
    assert _build_hit(_conv_model(weights), **options)[0]  # its own entry now


def test_disabled_passes_and_pass_config_are_in_the_key(cache_dir, rng):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    with tk.PassContext(disabled_passes=("fuse-ops",)):
        assert not _build_hit(_conv_model(weights))[0]
    with tk.PassContext(config={"fold-constants": {"inline_limit": 3}}):
        assert not _build_hit(_conv_model(weights))[0]
    assert _build_hit(_conv_model(weights))[0]


def test_another_compiler_version_misses(cache_dir, rng, monkeypatch):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    monkeypatch.setattr(compile_cache, "compiler_fingerprint", lambda: "another tensorkiln")
    hit, lib = _build_hit(_conv_model(weights))
    assert not hit and not lib.cache_hit


def test_a_damaged_build_entry_is_a_miss_and_rewritten(cache_dir, rng):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    (entry,) = cache_dir.rglob(f"*{build_cache.SUFFIX}")
    data = bytearray(entry.read_bytes())
    data[-3] ^= 1  # in the last weight
    entry.write_bytes(bytes(data))
    hit, lib = _build_hit(_conv_model(weights))
    assert not hit and tk.cache_info().build_misses == 2
    x = rng.standard_normal((2, 3, 9, 11)).astype("f4")
    np.testing.assert_array_equal(lib(x), _uncached(_conv_model(weights))(x))
    assert _build_hit(_conv_model(weights))[0]


def test_a_damaged_object_entry_under_a_build_entry_rebuilds(cache_dir, rng):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    (objects,) = cache_dir.rglob("*.tkc")
    objects.write_bytes(objects.read_bytes()[:-5])
    hit, lib = _build_hit(_conv_model(weights))
    assert not hit and not lib.cache_hit
    x = rng.standard_normal((2, 3, 9, 11)).astype("f4")
    np.testing.assert_array_equal(lib(x), _uncached(_conv_model(weights))(x))


def test_dumps_bypass_the_build_cache(cache_dir, rng, tmp_path):
    weights = _weights(rng)
    tk.build(_conv_model(weights))
    hit, lib = _build_hit(_conv_model(weights), dump_ir=str(tmp_path / "dumps"))
    assert not hit and not lib.cache_hit and any((tmp_path / "dumps").iterdir())


def test_a_cached_model_with_random_ops_keeps_one_state(cache_dir, rng):
    """The module and its graph executor draw from one state (the signature's), as after a
    cold build."""

    def draws():
        b = tk.GraphBuilder()
        x = b.input("x", (3, 5))
        return b.finish(b.add(x, b.draw("uniform", (3, 5))))

    tk.build(draws())
    hit, lib = _build_hit(draws())
    assert hit
    x = rng.standard_normal((3, 5)).astype("f4")
    lib.manual_seed(7)
    a = lib(x)
    assert not np.array_equal(lib(x), a)  # the next call draws new numbers
    lib.manual_seed(7)
    np.testing.assert_array_equal(lib.graph_executor()(x), a)
