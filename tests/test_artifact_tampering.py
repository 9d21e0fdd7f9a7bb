"""Tampered artifacts are an ArtifactError, never a crash, a hang or a wrong answer
(issue #39): an edited graph.json, meta.json or weights file, a flipped byte in the
library's ELF header, a foreign library, a loader or path outside the artifact.

Each edit is tried twice where it makes sense: as it is (the manifest's SHA-256 names the
file) and with the manifest rewritten to match (the checks behind it must still catch it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.runtime import ArtifactError, load_module
from tensorkiln.runtime.elf_check import elf_problem
from tensorkiln.runtime.manifest import seal


def _chain(rng):
    """dense -> softmax -> dense -> tanh -> dense at a symbolic batch: several temporaries."""
    b = tk.GraphBuilder()
    h = x = b.input("x", ("n", 11))
    for k, width in enumerate((13, 9, 5)):
        h = b.dense(h, (rng.standard_normal((width, h.type.get_shape()[1])) / 4).astype("f4"))
        h = b.softmax(h, -1) if k % 2 == 0 else b.tanh(h)
    return b.finish(h)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One artifact of the chain, and the interpreter's answer on an input."""
    rng = np.random.default_rng(39)
    module = _chain(rng)
    root = tmp_path_factory.mktemp("art") / "model.tk"
    tk.build(module).export_library(root)
    x = rng.standard_normal((6, 11)).astype("f4")
    return root, x, tk.create_executor("interpreter", module).evaluate()(x)


@pytest.fixture
def art(built, tmp_path):
    """A fresh copy of the artifact for one test to damage."""
    root, _, _ = built
    copy = tmp_path / "model.tk"
    shutil.copytree(root, copy)
    return copy


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=1))


def _flip_byte(path: Path, offset: int) -> None:
    blob = bytearray(path.read_bytes())
    blob[offset] ^= 0x01
    path.write_bytes(bytes(blob))


def _temp_ids(art: Path) -> list[int]:
    program = json.loads((art / "graph.json").read_text())
    return [k for k, t in enumerate(program["tensors"]) if t["kind"] == "temp"]


def _static_dims_to_one(program):
    for t in program["tensors"]:
        if t["kind"] == "temp":
            t["shape"] = [1 if isinstance(d, int) else d for d in t["shape"]]


def _swap_two_nodes(program):
    nodes = program["nodes"]
    nodes[0], nodes[1] = nodes[1], nodes[0]


def _reshape_weight_and_its_spec(art: Path) -> None:
    """weight_specs and weights.npz edited to agree with each other (not with the code)."""
    with np.load(art / "weights.npz") as data:
        weights = {k: data[k] for k in data.files}
    weights["w0"] = np.ones((2, 11), "f4")
    np.savez(art / "weights.npz", **weights)
    _edit_json(art / "meta.json", lambda m: m["weight_specs"][0].update(shape=[2, 11]))


def test_the_intact_artifact_loads_and_is_right(built):
    root, x, expected = built
    for executor in ("aot", "graph"):
        np.testing.assert_allclose(load_module(root, executor=executor)(x), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "edit, file",
    [
        (lambda a: _edit_json(a / "graph.json", _static_dims_to_one), "graph.json"),
        (lambda a: _edit_json(a / "graph.json", _swap_two_nodes), "graph.json"),
        (lambda a: _edit_json(a / "meta.json", lambda m: m.update(entry_temporaries=False)), "meta.json"),
        (_reshape_weight_and_its_spec, "meta.json|weights.npz"),
        (lambda a: _flip_byte(a / "weights.npz", -30), "weights.npz"),
        (lambda a: _flip_byte(a / "graph.json", 200), "graph.json"),
    ],
    ids=["temp-dims-to-1", "two-nodes-swapped", "meta-entry-temporaries", "weight-and-spec-agree", "weights-byte", "graph-byte"],
)
def test_an_edited_file_is_named_by_the_manifest(art, built, edit, file):
    edit(art)
    with pytest.raises(ArtifactError, match=rf"({file}): corrupt, truncated or edited"):
        load_module(art)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda a: _edit_json(a / "graph.json", lambda p: p["nodes"].reverse()), "memory plan does not match the nodes"),
        (_reshape_weight_and_its_spec, r"but weight 'w0' is float32\[2, 11\]"),
        (
            lambda a: _edit_json(a / "graph.json", lambda p: p["tensors"][_temp_ids(a)[0]].update(dynamic_axes=[])),
            "dynamic axes",
        ),
        (
            lambda a: _edit_json(a / "graph.json", lambda p: p["tensors"][0].update(shape=["n", 12])),
            r"but input 'x' is float32\['n', 11\]",
        ),
        (
            lambda a: _edit_json(a / "graph.json", lambda p: p["tensors"][_temp_ids(a)[0]].update(shape=["q", 13], dynamic_axes=[0])),
            r"dims use \['q'\], which no input binds",
        ),
        (lambda a: _edit_json(a / "graph.json", lambda p: p["storages"].reverse()), "bad member|memory plan"),
        (lambda a: _edit_json(a / "graph.json", lambda p: p["nodes"][0].update(args=p["nodes"][0]["args"][:2])), "writes no temporary or output"),
    ],
    ids=["nodes-reversed", "weight-and-spec-agree", "dynamic-axes", "input-shape", "unbound-symbol", "storages", "node-writes-a-weight"],
)
def test_an_edit_behind_a_rewritten_manifest_is_caught_by_the_structural_checks(art, edit, message):
    edit(art)
    seal(art)
    with pytest.raises(ArtifactError, match=message):
        load_module(art)


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p["nodes"][3]["args"].__setitem__(1, 7),
        lambda p: p["nodes"].insert(0, p["nodes"].pop(1)),
        lambda p: p["nodes"].pop(),
        lambda p: p["tensors"][_first_temp(p)]["shape"].__setitem__(-1, 2**31),
    ],
    ids=["node-argument-rewired", "first-two-nodes-swapped", "last-node-dropped", "temp-dim-enlarged"],
)
def test_a_consistent_edit_behind_a_rewritten_manifest_is_caught_by_the_library(art, edit):
    """Edits the structural checks cannot see (before the binding: a segfault, a
    MemoryError at the call, wrong answers): the library records the SHA-256 of the
    graph.json and meta.json it was exported with."""
    _edit_json(art / "graph.json", edit)
    seal(art)
    with pytest.raises(ArtifactError, match="model.so was exported with another graph.json and meta.json"):
        load_module(art)


def test_meta_edits_behind_a_rewritten_manifest_are_caught_by_the_library(art):
    _edit_json(art / "meta.json", lambda m: m.update(target="llvm -mcpu=other"))
    seal(art)
    with pytest.raises(ArtifactError, match="exported with another graph.json and meta.json"):
        load_module(art)


def _first_temp(program) -> int:
    return next(k for k, t in enumerate(program["tensors"]) if t["kind"] == "temp")


def test_a_flipped_byte_in_the_elf_machine_field_is_named(art):
    """glibc reports a wrong e_machine as 'No such file or directory': checked before dlopen."""
    blob = bytearray((art / "model.so").read_bytes())
    blob[18] ^= 0x80
    (art / "model.so").write_bytes(bytes(blob))
    seal(art)
    with pytest.raises(ArtifactError, match="built for another machine") as error:
        load_module(art)
    assert "No such file" not in str(error.value)


@pytest.mark.parametrize("offset", [4, 5, 6, 16, 18, 20, 52, 54, 58])
def test_every_checked_header_byte_flip_is_refused_before_dlopen(built, offset):
    blob = bytearray((built[0] / "model.so").read_bytes())
    assert elf_problem(bytes(blob)) is None
    blob[offset] ^= 0x01
    assert elf_problem(bytes(blob)) is not None


def test_a_foreign_library_with_a_matching_hash_is_an_artifact_error(art, built, rng, tmp_path):
    """Another model's model.so, and a system library, sealed as this artifact's."""
    other = tmp_path / "other.tk"
    b = tk.GraphBuilder()
    b_x = b.input("x", ("n", 11))
    tk.build(b.finish(b.relu(b_x))).export_library(other)
    shutil.copy(other / "model.so", art / "model.so")
    seal(art)
    with pytest.raises(ArtifactError, match="model.so was exported with another graph.json and meta.json"):
        load_module(art)
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6", "/lib64/libm.so.6") if os.path.exists(p)), None)
    if libm is not None:
        shutil.copy(libm, art / "model.so")
        _edit_json(art / "meta.json", lambda m: m.update(reads_thread_count=True))
        seal(art)
        with pytest.raises(ArtifactError, match="not this model's library|records no 'tk_artifact_sha256'"):
            load_module(art)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.update(library="/usr/lib/x86_64-linux-gnu/libc.so.6"), "not a path inside the artifact"),
        (lambda m: m.update(library="../model.so"), "not a path inside the artifact"),
        (lambda m: m.update(program="../../etc/passwd"), "not a path inside the artifact"),
        (lambda m: m.update(weights="/tmp/w.npz"), "not a path inside the artifact"),
    ],
)
def test_paths_outside_the_artifact_are_refused(art, edit, message):
    _edit_json(art / "meta.json", edit)
    seal(art)
    with pytest.raises(ArtifactError, match=message):
        load_module(art)


def test_a_link_leading_out_of_the_artifact_is_refused(art, tmp_path):
    outside = tmp_path / "elsewhere.so"
    shutil.move(art / "model.so", outside)
    (art / "model.so").symlink_to(outside)
    seal(art)
    with pytest.raises(ArtifactError, match="leads outside the artifact"):
        load_module(art)


def test_an_unregistered_external_loader_is_refused(art, tmp_path):
    """meta.json may not name any importable module:function (it would run at load)."""
    (tmp_path / "evil_loader.py").write_text("RAN = []\ndef load(cdll, blobs):\n    RAN.append(1)\n    return []\n")
    (art / "externals").mkdir()
    (art / "externals" / "0.bin").write_bytes(b"x")
    loader = {"loader": "evil_loader:load", "modules": [{"file": "externals/0.bin", "symbol": "s", "sha256": hashlib.sha256(b"x").hexdigest()}]}
    _edit_json(art / "meta.json", lambda m: m.update(externals=loader))
    seal(art)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ArtifactError, match="'evil_loader:load', which is not registered"):
            load_module(art)
        assert "evil_loader" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))


def test_a_file_added_to_the_artifact_is_not_read(art):
    """The meta may only name files the manifest lists."""
    shutil.copy(art / "weights.npz", art / "weights2.npz")
    _edit_json(art / "meta.json", lambda m: m.update(weights="weights2.npz"))
    with pytest.raises(ArtifactError, match=r"meta\.json: corrupt, truncated or edited"):
        load_module(art)
