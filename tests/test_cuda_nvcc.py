"""The CUDA C we emit compiles: every default GPU strategy and every model of the torch
zoo, through ``nvcc --ptx -arch=sm_90`` (one nvcc call per test, every translation unit
at once). Skipped where nvcc is not installed; needs no GPU and no cupy."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
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


class _Recorder:
    """The CUDA runtime's stand-in for the host program: allocates with numpy, counts launches."""

    def __init__(self):
        self.launches = 0

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def launch(self, kernel, grid, block, buffers, dynamic):
        assert all(isinstance(g, int) and g >= 0 for g in grid) and 1 <= np.prod(block) <= 1024, (kernel, grid, block)
        for buf, dims in zip(buffers, dynamic):
            assert all(0 <= d < buf.ndim for d in dims), (kernel, buf.shape, dims)
        self.launches += 1


def _leaves(result) -> list:
    if result is None:
        return []
    if isinstance(result, list | tuple):
        return [leaf for r in result for leaf in _leaves(r)]
    return [result]


def test_torch_zoo_compiles(tmp_path):
    """Every zoo model: its kernels compile, and its host program (what the CUDA runtime
    runs to allocate buffers and launch kernels) runs on the example inputs' shapes."""
    from xdsl.dialects import func

    from tensorkiln.backends.cuda.host import print_host
    from tensorkiln.backends.cuda.pipeline import emit_cuda, lower_to_gpu
    from tensorkiln.build import weight_array
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.lowering.te_to_loop import entry_layout

    sources = {}
    for name, entry in ZOO.items():
        inputs = random_inputs(entry, seed=0)
        model = entry.build()
        module = from_exported_program(torch.export.export(model, inputs))
        gpu_level, _ = lower_to_gpu(module)
        sources[name] = emit_cuda(gpu_level)
        host = next(f for f in gpu_level.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
        namespace = {}
        exec(print_host(host), namespace)
        outputs = _leaves(model(*inputs))
        weights = [weight_array(w) for w in entry_layout(host)[2]]
        rt = _Recorder()
        arrays = [t.numpy() for t in inputs] + [o.detach().numpy() for o in outputs] + weights
        namespace["main"](rt, *arrays)
        assert rt.launches > 0, name
    compile_all(sources, tmp_path)
