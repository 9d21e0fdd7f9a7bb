"""The docs stay true: the site builds with ``mkdocs build --strict`` and every Python block
of every page and of the README runs.

A page's blocks run in order in one namespace (a page is a story: later blocks use what
earlier ones made), in a fresh directory holding a link to the repository's
``examples/``, in a subprocess of its own. A block that needs an optional package or a
GPU says so on the line before it, ``<!-- requires: torch -->`` (several: comma
separated), and is skipped, with the reason, where that is missing. ``--8<-- "path"``
lines (snippets) are replaced by the file, as the site shows it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]

FENCE = re.compile(r"^```python\s*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
REQUIRES = re.compile(r"<!--\s*requires:\s*([\w,\s-]+?)\s*-->\s*$")
SNIPPET = re.compile(r'^--8<-- "([^"]+)"\s*$', re.MULTILINE)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    requires: tuple[str, ...]


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = REQUIRES.search(before)
        requires = tuple(r.strip() for r in marker[1].split(",")) if marker else ()
        code = SNIPPET.sub(lambda m: (ROOT / m[1]).read_text(), match[1])
        found.append(Block(str(page.relative_to(ROOT)), text[: match.start()].count("\n") + 2, code, requires))
    return found


def _gpu_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no driver, no device: no GPU
        return False


#: what a ``requires`` name needs, and why it may be missing
REQUIREMENTS = {
    "torch": lambda: importlib.util.find_spec("torch") is not None,
    "onnx": lambda: importlib.util.find_spec("onnx") is not None and _frontend("onnx"),
    "scipy": lambda: importlib.util.find_spec("scipy") is not None,
    "matplotlib": lambda: importlib.util.find_spec("matplotlib") is not None,
    "gpu": _gpu_available,
}


def _frontend(name: str) -> bool:
    return (ROOT / "frontends" / name / "__init__.py").exists()


def missing(block: Block) -> list[str]:
    unknown = [r for r in block.requires if r not in REQUIREMENTS]
    assert not unknown, f"{block.page}:{block.line}: unknown requirement(s) {unknown} (known: {', '.join(REQUIREMENTS)})"
    return [r for r in block.requires if not REQUIREMENTS[r]()]


def _small_cnn_onnx(path: Path) -> None:
    """The README's ``model.onnx``: a small CNN on (batch, 3, 32, 32) images, batch symbolic
    (Conv, Relu, MaxPool, Conv, Relu, GlobalAveragePool, Flatten, Gemm: 10 logits)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
    ]
    weights = [weight("w1", 8, 3, 3, 3), weight("b1", 8), weight("w2", 16, 8, 3, 3), weight("b2", 16), weight("fc", 10, 16), weight("fb", 10)]
    graph = helper.make_graph(
        nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], initializer=weights,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


#: files a page's blocks read as if they were the user's own, made before the page runs
FIXTURES = {"README.md": {"model.onnx": _small_cnn_onnx}}


RUNNER = textwrap.dedent(
    """
    import json, sys
    namespace = {"__name__": "__docs__"}
    for block in json.load(open(sys.argv[1])):
        exec(compile(block["code"], f"{block['page']}:{block['line']}", "exec"), namespace)
    """
)


@pytest.mark.parametrize("page", [p for p in PAGES if blocks_of(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    runnable, skipped = [], []
    for block in blocks_of(page):
        absent = missing(block)
        (skipped if absent else runnable).append((block, absent))
    if not runnable:
        pytest.skip("; ".join(f"line {b.line} needs {', '.join(a)}" for b, a in skipped))
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for name, make in FIXTURES.get(str(page.relative_to(ROOT)), {}).items():
        if any("onnx" in b.requires for b, _ in runnable) or not name.endswith(".onnx"):
            make(tmp_path / name)
    (tmp_path / "blocks.json").write_text(json.dumps([{"page": b.page, "line": b.line, "code": b.code} for b, _ in runnable]))
    (tmp_path / "run.py").write_text(RUNNER)
    done = subprocess.run(
        [sys.executable, "run.py", "blocks.json"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert done.returncode == 0, f"a block of {page.name} failed:\n{done.stderr[-4000:]}"


def test_blocks_are_found_and_marked():
    """The extraction itself: blocks counted, torch blocks marked, snippets expanded."""
    pytorch = blocks_of(ROOT / "docs" / "pytorch.md")
    assert pytorch and all("torch" in b.requires for b in pytorch if "import torch" in b.code)
    passes = blocks_of(ROOT / "docs" / "passes.md")
    assert any("class CancelDoubleNegPass" in b.code for b in passes)  # the snippet, expanded
    for page in PAGES:
        for block in blocks_of(page):
            if "import torch" in block.code or "torch." in block.code:
                assert "torch" in block.requires, f"{block.page}:{block.line} uses torch without <!-- requires: torch -->"


def test_site_builds_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        pytest.skip("mkdocs, mkdocs-material or mkdocstrings is not installed (pip install -e '.[docs]'; CI installs it)")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    page = (tmp_path / "site" / "pytorch-ops" / "index.html").read_text()
    assert "aten.conv2d.default" in page or "aten.convolution.default" in page  # the generated table is there
    api = (tmp_path / "site" / "api" / "tensorkiln" / "index.html").read_text()
    assert "create_executor" in api and "visualize" in api
