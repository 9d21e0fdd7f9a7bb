"""The AOT entry's temporaries as arguments (lowering/hoist_temporaries.py) in storages of
the memory plan that the runtime keeps between calls (runtime/workspace.py): results stay
right across calls, sizes and threads; temporaries share storage; the entry's hoisted
arguments are not ``noalias``."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import tensorkiln as tk


def _deep_mlp(batch="n", width=96, depth=6, seed=0):
    rng = np.random.default_rng(seed)
    b = tk.GraphBuilder()
    h = x = b.input("x", (batch, 40))
    weights = []
    for k in range(depth):
        w = (rng.standard_normal((width, h.type.get_shape()[1])) / 8).astype(np.float32)
        weights.append(w)
        # softmax between the layers keeps every intermediate a kernel of its own (no fusion)
        h = b.softmax(b.dense(h, w), -1) if k % 2 else b.tanh(b.dense(h, w))
    return b.finish(h), weights, x


def _reference(module, x):
    return tk.create_executor("interpreter", module).evaluate()(x)


def test_temporaries_share_storages_and_results_stay_right(rng):
    module, _, _ = _deep_mlp()
    lib = tk.build(module)
    program = lib.graph_program
    temporaries = [t for t in program.tensors if t.kind == "temp"]
    assert len(temporaries) >= 4
    assert len(program.storages) < len(temporaries)  # liveness: storages are reused
    for batch in (3, 7, 3, 1, 11, 5, 2, 9, 3):  # more sizes than the pool keeps
        x = rng.standard_normal((batch, 40)).astype(np.float32)
        np.testing.assert_allclose(lib(x), _reference(module, x), rtol=2e-5, atol=1e-6)


def test_concurrent_calls_do_not_share_a_workspace(rng):
    module, _, _ = _deep_mlp(batch=64, width=256)
    lib = tk.build(module)
    inputs = [rng.standard_normal((64, 40)).astype(np.float32) for _ in range(4)]
    expected = [_reference(module, x) for x in inputs]
    errors: list[str] = []

    def run(k: int) -> None:
        for _ in range(30):
            got = lib(inputs[k])
            if not np.allclose(got, expected[k], rtol=2e-5, atol=1e-6):
                errors.append(f"thread {k}: wrong result")
                return

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_hoisted_temporaries_are_entry_arguments_that_may_alias():
    module, _, _ = _deep_mlp(batch=8)
    source = tk.emit_source(module, target="llvm")
    entry = re.search(r'define void @"?main"?\((.*?)\)', source).group(1)
    pointers = [a for a in entry.split(", ") if a.startswith("ptr")]
    n_temporaries = len(tk.build(module).graph_program.tensors) - 1 - 1 - 6  # input, output, 6 weights
    assert len(pointers) == 1 + 1 + 6 + n_temporaries
    assert all("noalias" in p for p in pointers[:8])
    assert not any("noalias" in p for p in pointers[8:])
    assert "aligned_alloc" not in source.split('define void @"main"')[-1].split("\n}\n")[0]


def test_an_exported_artifact_passes_its_temporaries(rng, tmp_path):
    from tensorkiln.runtime import load_module

    module, _, _ = _deep_mlp()
    lib = tk.build(module)
    lib.export_library(str(tmp_path / "model"))
    loaded = load_module(str(tmp_path / "model"))
    assert loaded.meta["entry_temporaries"] > 0
    for batch in (4, 13):
        x = rng.standard_normal((batch, 40)).astype(np.float32)
        np.testing.assert_allclose(loaded(x), _reference(module, x), rtol=2e-5, atol=1e-6)
