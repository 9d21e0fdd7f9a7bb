"""The opt-in TF32 tensor-core path (``target="cuda -tf32"``) without a GPU: the
``loop.mma_tf32`` op and its lane layout, the kernels it schedules, their numerics on the
CPU emulator (A and B rounded to TF32 as ``cvt.rna`` does, sums in f32) against numpy,
and (where nvcc is installed) the PTX: ``mma.sync`` m16n8k8 with ``cvt.rna.tf32``."""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.backends.cuda.codegen import parse_cuda_target
from tensorkiln.driver.cuda import build_emulated, lower_to_gpu
from tensorkiln.backends.llvm.jit import CPUTarget, jit_compile
from tensorkiln.dialects import loop
from tensorkiln.lowering.loop_to_gpu import gpu_module_of
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.universe import make_context


def tf32(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to TF32: nearest 10-bit mantissa, ties away from zero (numpy, on the bits)."""
    bits = np.asarray(x, np.float32, order="C").view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _strategies(module, target: str) -> dict[str, str]:
    gpu_level, _ = lower_to_gpu(module, target=target)
    return {k.sym_name.data: k.attributes["tk.gpu_strategy"].data for k in gpu_module_of(gpu_level).body.block.ops}


def test_every_element_of_each_tile_has_one_lane_and_register():
    rows, cols, depth = loop.MMA_SHAPE
    for operand, registers, shape in (("a", 4, (rows, depth)), ("b", 2, (depth, cols)), ("c", 4, (rows, cols))):
        places = [loop.mma_tf32_position(operand, r, lane) for lane in range(loop.WARP_SIZE) for r in range(registers)]
        assert sorted(places) == [(i, j) for i in range(shape[0]) for j in range(shape[1])], operand
    assert loop.mma_tf32_position("a", 3, 5) == (9, 5)  # PTX: a3 at (groupID + 8, threadID_in_group + 4)
    with pytest.raises(ValueError, match="no operand 'd'"):
        loop.mma_tf32_position("d", 0, 0)


def test_op_prints_parses_and_verifies():
    text = (
        "func.func @k(%x: f32) {\n"
        "  %d0, %d1, %d2, %d3 = loop.mma_tf32 %x, %x, %x, %x, %x, %x, %x, %x, %x, %x\n"
        "  func.return\n}"
    )
    module = Parser(make_context(), text).parse_module()
    module.verify()
    assert "loop.mma_tf32 %x, %x, %x, %x, %x, %x, %x, %x, %x, %x" in str(module)
    with pytest.raises(Exception, match="takes 10 operands"):
        Parser(make_context(), text.replace("%x, %x, %x, %x, %x, %x, %x, %x, %x, %x", "%x, %x")).parse_module()
    op = next(o for o in module.walk() if isinstance(o, loop.MmaTf32Op))
    assert len(op.a) == 4 and len(op.b) == 2 and len(op.c) == 4 and len(op.results) == 4
    broken = loop.MmaTf32Op(op.a, op.b, op.c[:2])
    with pytest.raises(VerifyException, match="expected 4 \\+ 2 \\+ 4 operands"):
        broken.verify_()


def test_target_option():
    assert parse_cuda_target("cuda -tf32").tf32 and not parse_cuda_target("cuda").tf32
    assert parse_cuda_target("cuda -arch=sm_90 -tf32").arch == "sm_90"
    with pytest.raises(ValueError, match="TF32 tensor cores need sm_80"):
        parse_cuda_target("cuda -arch=sm_75 -tf32")
    with pytest.raises(ValueError, match="known: -arch=sm_XX, -tf32"):
        parse_cuda_target("cuda -fast")


def test_only_products_go_to_the_tensor_cores():
    rng = np.random.default_rng(0)
    g = tk.GraphBuilder()
    x = g.input("x", (40, 33))
    module = g.finish(g.softmax(g.matmul(x, g.input("w", (33, 50))), -1), g.dense(g.input("v", (3, 33)), rng.standard_normal((7, 33)).astype("f4")))
    default = _strategies(module, "cuda")
    tensor = _strategies(module, "cuda -tf32")
    assert default["matmul_0"] == "gemm_shared" and tensor["matmul_0"] == "gemm_tf32"
    # softmax is no product; the 3-row dense keeps a warp per output
    assert {k: v for k, v in tensor.items() if k != "matmul_0"} == {k: v for k, v in default.items() if k != "matmul_0"}


def test_emulated_matmul_rounds_inputs_to_tf32():
    """130 x 37 x 70: partial tiles along rows, columns and k (37 = 2 steps of 16 + 5)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((130, 37)).astype("f4"), rng.standard_normal((37, 70)).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.relu(g.matmul(g.input("a", a.shape), g.input("b", b.shape))))
    got = build_emulated(module, target="cuda -tf32")(a, b)
    want = np.maximum(tf32(a).astype(np.float64) @ tf32(b).astype(np.float64), 0)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() < 1e-5 * scale
    # and the rounding happened: fp32 inputs give another answer
    assert np.abs(got - np.maximum(a @ b, 0)).max() > 1e-5 * scale


def test_emulated_conv_on_the_tensor_cores():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 6, 9, 8)).astype("f4"), rng.standard_normal((20, 6, 3, 3)).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.conv2d(g.input("x", x.shape), w, padding=1))
    assert _strategies(module, "cuda -tf32")["conv2d_0"] == "gemm_tf32"
    got = build_emulated(module, target="cuda -tf32")(x)
    want = torch.nn.functional.conv2d(torch.from_numpy(tf32(x)).double(), torch.from_numpy(tf32(w)).double(), padding=1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5 * float(want.abs().max()))


from nvcc import NVCC  # noqa: E402


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed (CUDA toolkit); nothing to compile with")
def test_ptx_runs_the_tensor_cores(tmp_path):
    g = tk.GraphBuilder()
    module = g.finish(g.matmul(g.input("a", (512, 512)), g.input("b", (512, 512))))
    source = tmp_path / "k.cu"
    source.write_text(tk.emit_source(module, target="cuda -arch=sm_90 -tf32"))
    subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-diag-suppress", "177", "-o", tmp_path / "k.ptx", source], check=True)
    ptx = (tmp_path / "k.ptx").read_text()
    # 16 products per 8 steps of k, 2 such steps per shared box of 16
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32", ptx)) == 32
    assert "cvt.rna.tf32.f32" in ptx and not re.search(r"\bfma\.rn\.f32\b", ptx)
    report = subprocess.run(
        [NVCC, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-diag-suppress", "177", "-o", tmp_path / "k.cubin", source],
        check=True, capture_output=True, text=True,
    ).stderr  # fmt: skip
    assert " 0 bytes spill stores" in report, report
    # the default target stays on the FMA units
    assert "mma.sync" not in tk.emit_source(module, target="cuda")


MMA_FILE = Path(__file__).parent / "filecheck" / "gpu" / "mma-tf32.mlir"


def test_one_hand_written_mma_emulated():
    """The FileCheck kernel ``mma-tf32.mlir`` loads each lane's fragments with PTX's
    layout written out by hand (not through ``mma_tf32_position``): emulate-gpu's
    ``loop.mma_tf32`` gives A B with TF32 inputs."""
    module = tk.parse_module(MMA_FILE.read_text())
    run_pipeline(module, ("loop-to-gpu", "emulate-gpu", "loop-to-llvm"), PassContext(opt_level=0, dump_ir=False))
    jit = jit_compile(module, CPUTarget.parse("llvm"))
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 8)).astype("f4"), rng.standard_normal((8, 8)).astype("f4")
    d = np.full((16, 8), np.nan, np.float32)
    main = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(jit.address("main"))
    main(a.ctypes.data, b.ctypes.data, d.ctypes.data)
    np.testing.assert_allclose(d, tf32(a).astype(np.float64) @ tf32(b), rtol=1e-6, atol=1e-6)
