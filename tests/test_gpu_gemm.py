"""The GPU GEMM template (``schedule/gpu_gemm.py``) without a GPU: matrix products and
convolutions as implicit GEMMs, lowered exactly as for ``target="cuda"`` and run on the
CPU through ``emulate-gpu``, against numpy/torch on odd sizes that leave partial tiles
in every tile configuration; which loops become rows, columns and k; and (where nvcc is
installed) that the compute reads shared memory with 16-byte vector loads, unspilled."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.driver.cuda import build_emulated, lower_to_gpu
from tensorkiln.lowering.loop_to_gpu import gpu_module_of
from tensorkiln.passes.pipeline import PassContext
from tensorkiln.schedule.gpu_gemm import MIN_ROWS, GemmShape, GemmTiles, choose_tiles, to_gemm_form
from tensorkiln.schedule.schedule import Schedule, kernels

torch = pytest.importorskip("torch", reason="convolutions are checked against torch")
F = torch.nn.functional


def _strategies(module) -> dict[str, str]:
    gpu_level, _ = lower_to_gpu(module)
    return {k.sym_name.data: k.attributes["tk.gpu_strategy"].data for k in gpu_module_of(gpu_level).body.block.ops}


def _run(module, inputs, expected, rtol=2e-5) -> None:
    got = build_emulated(module)(*inputs)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale)


def _gemm_kernel(strategies: dict[str, str], prefix: str) -> str:
    (name,) = [k for k in strategies if k.startswith(prefix)]
    return strategies[name]


def test_tiles_follow_the_static_sizes():
    assert choose_tiles(4096, 4096) == GemmTiles(128, 128, 8)
    assert choose_tiles(50176, 64) == GemmTiles(128, 64, 16)
    assert choose_tiles(64, 1000) == GemmTiles(64, 128, 16)
    assert choose_tiles(7, 29) == GemmTiles(64, 64, 16)
    assert choose_tiles(4096, 4096).per_row == 8 and choose_tiles(50176, 64).per_col == 4


# (M, K, N): each tile configuration (64/128 rows x 64/128 columns), partial tiles, K not
# a multiple of the k step, K smaller than it
@pytest.mark.parametrize("m, k, n", [(67, 45, 71), (530, 37, 515), (600, 5, 70), (45, 20, 577), (16, 3, 1)])
def test_matmul_in_every_tile_configuration(m, k, n):
    rng = np.random.default_rng(m * n + k)
    a, b = rng.standard_normal((m, k)).astype("f4"), rng.standard_normal((k, n)).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.matmul(g.input("a", (m, k)), g.input("b", (k, n))))
    assert _strategies(module) == {"matmul_0": "gemm_shared"}
    _run(module, (a, b), a @ b)


def test_dense_with_epilogue_and_symbolic_rows():
    rng = np.random.default_rng(3)
    w, bias = rng.standard_normal((33, 70)).astype("f4"), rng.standard_normal(33).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.sigmoid(g.dense(g.input("x", ("n", 70)), w, bias)))
    lib = build_emulated(module)
    for rows in (1, 130):
        x = rng.standard_normal((rows, 70)).astype("f4")
        np.testing.assert_allclose(lib(x), 1 / (1 + np.exp(-(x @ w.T + bias))), rtol=2e-5, atol=2e-6)


def test_batch_matmul_batches_are_block_z():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 19, 23)).astype("f4"), rng.standard_normal((3, 23, 17)).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.batch_matmul(g.input("a", a.shape), g.input("b", b.shape)))
    assert _gemm_kernel(_strategies(module), "batch_matmul") == "gemm_shared"
    _run(module, (a, b), a @ b)


def _conv_module(x_shape, weight, bias, layout="NCHW", **attrs):
    g = tk.GraphBuilder()
    return g.finish(g.relu(g.conv2d(g.input("x", x_shape), weight, bias, **attrs)))


# (x shape, out channels, kernel, strides, padding, dilation): odd sizes, strides,
# dilation, asymmetric padding, 1x1, more output channels than a 64-column tile
CONVS = [
    ((2, 3, 17, 15), 5, (3, 3), 2, 1, 1),
    ((1, 7, 9, 11), 70, (3, 3), 1, 1, 2),
    ((2, 5, 13, 10), 9, (5, 3), (2, 1), (2, 1, 0, 1), 1),
    ((3, 16, 6, 7), 24, (1, 1), 1, 0, 1),
]


@pytest.mark.parametrize("x_shape, out_channels, kernel, strides, padding, dilation", CONVS)
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_conv2d_is_an_implicit_gemm(x_shape, out_channels, kernel, strides, padding, dilation, layout):
    """NHWC (the default: convert-layout) and NCHW (convert-layout off) convolutions; in
    NCHW the rows are the output channels, and fewer than MIN_ROWS of them keep the
    direct convolution (``gemm``)."""
    rng = np.random.default_rng(out_channels)
    x = rng.standard_normal(x_shape).astype("f4")
    w = rng.standard_normal((out_channels, x_shape[1], *kernel)).astype("f4")
    bias = rng.standard_normal(out_channels).astype("f4")
    module = _conv_module(x.shape, w, bias, strides=strides, padding=padding, dilation=dilation)
    pads = padding if isinstance(padding, int) else None
    tx = torch.from_numpy(x)
    if pads is None:  # (top, left, bottom, right)
        top, left, bottom, right = padding
        tx, pads = F.pad(tx, (left, right, top, bottom)), 0
    expected = F.relu(F.conv2d(tx, torch.from_numpy(w), torch.from_numpy(bias), stride=strides, padding=pads, dilation=dilation))
    disabled = () if layout == "NHWC" else ("convert-layout",)
    # a channels-last 1x1 conv is a dense layer over its pixels (conv1x1-to-dense)
    pointwise = layout == "NHWC" and kernel == (1, 1) and padding == 0
    with PassContext(disabled_passes=disabled):
        few_rows = layout == "NCHW" and out_channels < MIN_ROWS
        tag = "dense" if pointwise else "conv2d"
        assert _gemm_kernel(_strategies(module), tag) == ("gemm" if few_rows else "gemm_shared")
        _run(module, (x,), expected.numpy())


def test_conv_with_a_symbolic_batch():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((6, 4, 3, 3)).astype("f4")
    module = _conv_module(("n", 4, 9, 8), w, None, padding=1)
    lib = build_emulated(module)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 4, 9, 8)).astype("f4")
        expected = F.relu(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)).numpy()
        np.testing.assert_allclose(lib(x), expected, rtol=2e-5, atol=2e-5)


def test_grouped_and_depthwise_convs_keep_the_register_tiles():
    """A group's input channels depend on the output channel: no row/column split, so
    the kernel keeps the direct convolution (``gemm``), with right numerics."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 6, 9, 7)).astype("f4")
    for groups, out in ((2, 4), (6, 6)):
        w = rng.standard_normal((out, 6 // groups, 3, 3)).astype("f4")
        module = _conv_module(x.shape, w, None, padding=1, groups=groups)
        assert _gemm_kernel(_strategies(module), "conv2d") == "gemm"
        expected = F.relu(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1, groups=groups)).numpy()
        _run(module, (x,), expected)


def _conv_kernel(x_shape, weight, disabled=()):
    from tensorkiln.driver.pipelines import TO_LOOPS, optimize_graph
    from tensorkiln.passes.pipeline import run_pipeline

    module = _conv_module(x_shape, weight, None, padding=1)
    with PassContext(disabled_passes=disabled) as ctx:
        optimize_graph(module, ctx)
        run_pipeline(module, TO_LOOPS, ctx)
    (kernel,) = [k for k in kernels(module) if k.attributes["tk.kernel"].data.startswith("conv2d")]
    return kernel


def test_gemm_form_groups_the_loops_by_operand():
    w = np.ones((8, 3, 3, 3), "f4")
    nhwc = Schedule(_conv_kernel((2, 3, 10, 12), w))
    assert to_gemm_form(nhwc) == GemmShape(2 * 10 * 12, 8, True)  # rows n*oh*ow, columns oc
    assert nhwc.loops() == ["i0.i1.fused.i2.fused", "i3", "k0.k1.fused.k2.fused"]
    nchw = Schedule(_conv_kernel((2, 3, 10, 12), w, disabled=("convert-layout",)))
    assert to_gemm_form(nchw) == GemmShape(8, 10 * 12, True)  # batch n, rows oc, columns oh*ow
    assert nchw.loops() == ["i0", "i1", "i2.i3.fused", "k0.k1.fused.k2.fused"]


def test_torch_conv1d_and_transposed_conv():
    """Both become conv2d kernels (a transposed conv: one per stride phase), each an
    implicit GEMM."""
    torch.manual_seed(0)
    for model, shape in (
        (torch.nn.Conv1d(5, 11, 4, stride=2, padding=1), (2, 5, 23)),
        (torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1), (2, 4, 7, 6)),
    ):
        from tensorkiln.frontends.torch import from_exported_program

        x = torch.randn(*shape)
        module = from_exported_program(torch.export.export(model.eval(), (x,)))
        convs = {k: v for k, v in _strategies(module).items() if k.startswith("conv2d")}
        assert convs and set(convs.values()) == {"gemm_shared"}, convs
        _run(module, (x.numpy(),), model(x).detach().numpy())


from nvcc import NVCC  # noqa: E402


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed (CUDA toolkit); nothing to compile with")
@pytest.mark.parametrize("shape", ["gemm", "conv"])
def test_compute_reads_shared_memory_in_16_byte_vectors(shape, tmp_path):
    """What makes the template fast on the device: every shared-memory read of the
    compute is an ``ld.shared.v4.f32`` (4 per 64 FMAs in a 128x128 tile), and ptxas
    keeps the register tile in 128 registers (two blocks of 256 threads per SM): at most
    one value spilled (seen: a shared address of the copy, reloaded once per k step),
    never the 32-64 accumulators."""
    g = tk.GraphBuilder()
    if shape == "gemm":
        module = g.finish(g.matmul(g.input("a", (1024, 1024)), g.input("b", (1024, 1024))))
        vectors_per_fma = 4 / 64
    else:
        w = np.ones((64, 64, 3, 3), "f4")
        module = g.finish(g.conv2d(g.input("x", (4, 64, 28, 28)), w, padding=1))
        vectors_per_fma = 3 / 32  # 128 x 64 tile: 8 x 4 outputs a thread, 2 + 1 vectors
    source = tmp_path / "k.cu"
    source.write_text(tk.emit_source(module, target="cuda"))
    ptx = tmp_path / "k.ptx"
    subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-diag-suppress", "177", "-o", ptx, source], check=True)
    text = ptx.read_text()
    kernel = text[text.index(".entry matmul" if shape == "gemm" else ".entry conv2d") :]
    kernel = kernel[: kernel.find(".entry", 1) if ".entry" in kernel[1:] else len(kernel)]
    vectors = len(re.findall(r"ld\.shared\.v4\.f32", kernel))
    scalars = len(re.findall(r"ld\.shared\.f32", kernel))
    fmas = len(re.findall(r"fma\.rn\.f32", kernel))
    assert scalars == 0 and fmas >= 256 and vectors == fmas * vectors_per_fma, (vectors, scalars, fmas)
    report = subprocess.run(
        [NVCC, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-diag-suppress", "177", "-o", tmp_path / "k.cubin", source],
        check=True, capture_output=True, text=True,
    ).stderr  # fmt: skip
    registers = int(re.search(r"Used (\d+) registers", report).group(1))
    stores, loads = map(int, re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report).groups())
    assert registers <= 128 and stores <= 4 and loads <= 4, report


# (rows, k, columns): a dense layer at batch 1..15 (a partial last block of 8 warps),
# a reduction not a multiple of the warp, one row of a matmul
@pytest.mark.parametrize("rows, k, cols", [(1, 1000, 37), (8, 64, 130), (15, 77, 9)])
def test_few_rows_get_a_warp_per_output(rows, k, cols):
    rng = np.random.default_rng(rows * k)
    x, w = rng.standard_normal((rows, k)).astype("f4"), rng.standard_normal((cols, k)).astype("f4")
    bias = rng.standard_normal(cols).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.relu(g.dense(g.input("x", (rows, k)), w, bias)))
    assert _gemm_kernel(_strategies(module), "dense") == "warp_reduction"
    _run(module, (x,), np.maximum(x @ w.T + bias, 0), rtol=1e-4)
    g = tk.GraphBuilder()
    module = g.finish(g.matmul(g.input("a", (rows, k)), g.input("b", (k, cols))))
    assert _strategies(module) == {"matmul_0": "warp_reduction"}
    _run(module, (x, w.T.copy()), x @ w.T, rtol=1e-4)


def test_few_rows_of_a_short_reduction_keep_the_register_tiles():
    """Shorter than a warp: neither template; the register-tiled ``gemm``."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 20)).astype("f4"), rng.standard_normal((20, 11)).astype("f4")
    g = tk.GraphBuilder()
    module = g.finish(g.matmul(g.input("a", a.shape), g.input("b", b.shape)))
    assert _strategies(module) == {"matmul_0": "gemm"}
    _run(module, (a, b), a @ b)
