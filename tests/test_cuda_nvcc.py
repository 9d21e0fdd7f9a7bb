"""The CUDA C we emit compiles: every default GPU strategy and every model of the torch
zoo, through ``nvcc --ptx -arch=sm_90`` (one nvcc call per test, every translation unit
at once). Skipped where nvcc is not installed; needs no GPU and no cupy."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the models are written in torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from gpu_models import CASES  # noqa: E402

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed (CUDA toolkit); nothing to compile with")


def compile_all(sources: dict[str, str], tmp_path: Path) -> None:
    """``nvcc --ptx`` on every source in one call; fails with nvcc's errors and the file."""
    files = []
    for name, text in sources.items():
        path = tmp_path / f"{name}.cu"
        path.write_text(text)
        files.append(str(path))
    out = tmp_path / "ptx"
    out.mkdir()
    # two nvcc processes (the machines have two cores), each on half of the files
    command = [NVCC, "--ptx", "-arch=sm_90", "-diag-suppress", "177", "-odir", str(out)]
    jobs = [subprocess.Popen([*command, *files[k::2]], stderr=subprocess.PIPE, text=True) for k in range(2) if files[k::2]]
    for job in jobs:
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0, stderr[-4000:]
    for name in sources:
        ptx = (out / f"{name}.ptx").read_text()
        assert ".entry" in ptx, f"{name}: no kernel in the PTX"


def test_default_strategies_compile(tmp_path):
    sources = {}
    for name, (make, shapes) in CASES.items():
        torch.manual_seed(0)
        inputs = tuple(torch.randn(*s) for s in shapes)
        module = from_exported_program(torch.export.export(make().eval(), inputs))
        sources[name] = tk.emit_source(module, target="cuda -arch=sm_90")
    compile_all(sources, tmp_path)


def test_torch_zoo_compiles(tmp_path):
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs

    sources = {}
    for name, entry in ZOO.items():
        inputs = random_inputs(entry, seed=0)
        module = from_exported_program(torch.export.export(entry.build(), inputs))
        sources[name] = tk.emit_source(module, target="cuda")
    compile_all(sources, tmp_path)
