"""The CUDA C we emit compiles: every default GPU strategy and every model of the torch
zoo, through ``nvcc --ptx -arch=sm_90`` (one nvcc call per test, every translation unit
at once). Skipped where nvcc is not installed; needs no GPU and no cupy."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models are written in torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from gpu_models import CASES  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO  # noqa: E402
from nvcc import NVCC, PTX_FLAGS  # noqa: E402

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
    command = [NVCC, *PTX_FLAGS, "-odir", str(out)]
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


@pytest.mark.parametrize("name", list(ZOO))
def test_torch_zoo_compiles(name, tmp_path):
    """Every zoo model (one test each, so that the workers share them): its kernels
    compile, and its host program (what the CUDA runtime runs to allocate buffers and
    launch kernels) runs on the example inputs' shapes."""
    from xdsl.dialects import func

    from tensorkiln.backends.cuda.host import print_host
    from tensorkiln.backends.cuda.codegen import emit_cuda
    from tensorkiln.driver.cuda import lower_to_gpu
    from tensorkiln.driver.native_build import weight_array
    from tensorkiln.examples.torch_zoo import random_inputs
    from tensorkiln.dialects.loop import entry_layout

    entry = ZOO[name]
    inputs = random_inputs(entry, seed=0)
    model = entry.build()
    module = from_exported_program(torch.export.export(model, inputs))
    gpu_level, _ = lower_to_gpu(module)
    host = next(f for f in gpu_level.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    namespace = {}
    exec(print_host(host), namespace)
    outputs = [o.detach().numpy() for o in _leaves(model(*inputs))]
    _, n_out, weight_data = entry_layout(host)
    outputs += [np.ones((), bool)] * (n_out - len(outputs))  # the predicates of the index checks
    weights = [weight_array(w) for w in weight_data]
    rt = _Recorder()
    arrays = [t.numpy() for t in inputs] + outputs + weights
    namespace["main"](rt, *arrays)
    assert rt.launches > 0, name
    compile_all({name: emit_cuda(gpu_level)}, tmp_path)


SHUFFLE_TYPES = """
builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<32xf16>, memref<32xi8>, memref<32xi16>, memref<32xi1>, memref<32xf64>) -> (), kernel}> ({
    ^bb0(%h: memref<32xf16>, %b: memref<32xi8>, %s: memref<32xi16>, %p: memref<32xi1>, %d: memref<32xf64>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %h0 = memref.load %h[%t] : memref<32xf16>
      %h1 = loop.shuffle_xor %h0, 16, 32 : f16
      memref.store %h1, %h[%t] : memref<32xf16>
      %b0 = memref.load %b[%t] : memref<32xi8>
      %b1 = loop.shuffle_xor %b0, 1, 2 : i8
      memref.store %b1, %b[%t] : memref<32xi8>
      %s0 = memref.load %s[%t] : memref<32xi16>
      %s1 = loop.shuffle_xor %s0, 4, 8 : i16
      memref.store %s1, %s[%t] : memref<32xi16>
      %p0 = memref.load %p[%t] : memref<32xi1>
      %p1 = loop.shuffle_xor %p0, 8, 16 : i1
      memref.store %p1, %p[%t] : memref<32xi1>
      %d0 = memref.load %d[%t] : memref<32xf64>
      %d1 = loop.shuffle_xor %d0, 2, 32 : f64
      memref.store %d1, %d[%t] : memref<32xf64>
      "gpu.return"() : () -> ()
    }) {sym_name = "shuffles", gpu.known_block_size = array<i32: 32, 1, 1>} : () -> ()
  }) : () -> ()
}
"""


def test_warp_shuffles_compile(tmp_path):
    """Block reductions of every accumulator type (their shuffles), a hand-written two-level
    warp reduction, and shuffles of the types without an int-sized CUDA overload (widened)."""
    from tensorkiln.backends.cuda.printer import print_cuda
    from tensorkiln.lowering.loop_to_gpu import gpu_module_of
    from tensorkiln.passes.pipeline import PassContext, run_pipeline

    sources = {}
    for dtype in ("float32", "float64", "int32", "int64"):
        b = tk.GraphBuilder()
        x = b.input("x", ("n", 1000), dtype)
        sources[f"reduce_{dtype}"] = tk.emit_source(b.finish(b.reduce_sum(x, (1,)), b.reduce_max(x, (1,))), target="cuda")
        assert sources[f"reduce_{dtype}"].count("__shfl_xor_sync(0xffffffffu") == 2 * (5 + 3)
        assert sources[f"reduce_{dtype}"].count("__syncthreads();") == 2 * 2
    warpsum = tk.parse_module((Path(__file__).parent / "filecheck" / "gpu" / "warp-shuffle.mlir").read_text())
    run_pipeline(warpsum, ("loop-to-gpu",), PassContext(opt_level=0, dump_ir=False))
    sources["warp_shuffle"] = print_cuda(gpu_module_of(warpsum))
    text = print_cuda(gpu_module_of(tk.parse_module(SHUFFLE_TYPES)))
    assert "(signed char)__shfl_xor_sync(0xffffffffu, (int)" in text and "(bool)__shfl_xor_sync" in text
    sources["shuffle_types"] = text
    compile_all(sources, tmp_path)
