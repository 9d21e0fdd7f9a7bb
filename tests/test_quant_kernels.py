"""int8 kernels: qdense / qconv2d in their packed form (VNNI's 4-deep weight words),
scheduled by the int8 strategies, compiled for this machine (vpdpbusd where it has
AVX512_VNNI) and for a target without VNNI (haswell: the widened fallback), checked
exactly against the numpy references at odd sizes (tails of the 4-deep packing and of
the 16-channel blocks), saturating zero points, and the packing itself."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.backend.llvm.convert import convert_module
from xdsl.ir import BlockArgument

import tensorkiln as tk
from tensorkiln.dialects.graph import quant
from tensorkiln.dialects.lowp import Dot4U8S8Op, dot4_u8s8_reference
from tensorkiln.lowering.graph_to_te.quant_products import pack_words
from tensorkiln.passes.pipeline import PassContext, run_pipeline

HASWELL = "llvm -mcpu=haswell"
TARGETS = ["llvm", HASWELL]
QINFO = {np.int8: (-128, 127), np.uint8: (0, 255)}


def qrandom(rng, shape, dtype):
    low, high = QINFO[dtype]
    return rng.integers(low, high + 1, shape).astype(dtype)


def product_params(rng, b, x_dtype, y_dtype, channels, extreme):
    x_zp = QINFO[x_dtype][1] if extreme else int(qrandom(rng, (), x_dtype))
    y_zp = QINFO[y_dtype][0] if extreme else int(qrandom(rng, (), y_dtype))
    values = [
        np.float32(0.02), np.asarray(x_zp, x_dtype), rng.uniform(0.001, 0.003, channels).astype(np.float32),
        np.zeros(channels, np.int8), np.float32(0.05), np.asarray(y_zp, y_dtype),
    ]  # fmt: skip
    return [b.constant(v) for v in values]


def check_exact(module, x, target):
    want = tk.create_executor("interpreter", module).evaluate()(x)
    got = tk.build(module, target)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert np.unique(want).size > 1  # (not all saturated)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "rows, k, n, x_dtype, y_dtype, relu, extreme",
    [
        ((37,), 131, 83, np.uint8, np.uint8, True, False),  # k % 4 = 3, n % 16 = 3
        ((5,), 64, 128, np.int8, np.int8, False, True),  # whole blocks of 64 channels, zero points at the edges
        ((2, 3), 7, 3, np.int8, np.uint8, False, False),  # less than one word and one vector
        ((130,), 258, 200, np.uint8, np.int8, True, True),
    ],
)
def test_qdense_packed(rng, target, rows, k, n, x_dtype, y_dtype, relu, extreme):
    b = tk.GraphBuilder()
    x = b.input("x", (*rows, k), x_dtype)
    w = qrandom(rng, (n, k), np.int8)
    w.reshape(-1)[:2] = (-128, 127)
    params = product_params(rng, b, x_dtype, y_dtype, n, extreme)
    bias = b.constant(rng.integers(-2000, 2000, n).astype(np.int32))
    module = b.finish(b.qdense(x, b.constant(w), bias, params, relu=relu))
    xv = qrandom(rng, (*rows, k), x_dtype)
    xv.reshape(-1)[:2] = QINFO[x_dtype]
    check_exact(module, xv, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "shape, out_channels, kernel, strides, padding, x_dtype",
    [
        ((1, 9, 7, 5), 20, 3, 2, 1, np.uint8),  # 5 channels: a word with a tail
        ((2, 11, 13, 16), 64, 3, 1, (0, 1, 2, 1), np.int8),
        ((1, 6, 6, 32), 48, 1, 1, 0, np.uint8),
    ],
)
def test_qconv2d_packed(rng, target, shape, out_channels, kernel, strides, padding, x_dtype):
    b = tk.GraphBuilder()
    x = b.input("x", shape, x_dtype)
    w = qrandom(rng, (kernel, kernel, shape[3], out_channels), np.int8)
    params = product_params(rng, b, x_dtype, x_dtype, out_channels, extreme=False)
    bias = b.constant(rng.integers(-2000, 2000, out_channels).astype(np.int32))
    y = b.qconv2d(x, b.constant(w), bias, params, strides=strides, padding=padding, layout="NHWC", relu=True)
    check_exact(b.finish(y), qrandom(rng, shape, x_dtype), target)


def test_uint8_weights_pack_centered_or_as_stored(rng):
    """uint8 weights with zero point 128 center into int8; with zero point 0 the words hold
    them minus 128 and the row-sum form corrects: both packed, both exact."""
    b = tk.GraphBuilder()
    x = b.input("x", (4, 9), np.uint8)
    outputs = []
    for zero_point in (128, 0):
        w = rng.integers(0, 256, (6, 9)).astype(np.uint8)
        params = [b.constant(np.float32(0.1)), b.constant(np.uint8(3)), b.constant(np.float32(0.01)),
                  b.constant(np.uint8(zero_point)), b.constant(np.float32(0.2)), b.constant(np.uint8(0))]  # fmt: skip
        outputs.append(b.qdense(x, b.constant(w), None, params))
    module = b.finish(*outputs)
    xv = rng.integers(0, 256, (4, 9)).astype(np.uint8)
    want = tk.create_executor("interpreter", module).evaluate()(xv)
    for got, expected in zip(tk.build(module)(xv), want):
        np.testing.assert_array_equal(got, expected)
    loops = lowered(module, "+avx512vnni")
    assert len([op for op in loops.walk() if isinstance(op, Dot4U8S8Op)]) == 2


def test_pack_words_layout(rng):
    w = rng.integers(-128, 128, (70, 3, 10)).astype(np.int8)
    words = pack_words(w)
    assert words.shape == (5, 3, 3, 16) and words.dtype == np.int32  # 70 -> 5 blocks of 16, 10 -> 3 words
    as_bytes = words[..., None].view(np.int8).reshape(5, 3, 3, 16, 4)
    for o, c, k in [(0, 0, 0), (69, 2, 9), (17, 1, 5)]:
        assert as_bytes[o // 16, c, k // 4, o % 16, k % 4] == w[o, c, k]
    assert as_bytes[69 // 16, 0, 2, 69 % 16, 2] == 0 and as_bytes[4, 0, 0, 15, 0] == 0  # padding
    assert pack_words(rng.integers(-128, 128, (128, 8)).astype(np.int8)).shape == (2, 2, 64)


def test_dot4_reference_saturation_edges():
    a = np.array([-1, 0x04030201], np.int32)  # bytes 255 x 4; 1, 2, 3, 4
    b = np.array([np.uint32(0x80808080).view(np.int32), 0x01010101], np.int32)  # -128 x 4; 1 x 4
    np.testing.assert_array_equal(dot4_u8s8_reference(np.array([7, 0]), a, b), [7 - 4 * 255 * 128, 10])


def lowered(module, features: str, vector_bits: int = 512):
    """The graph module lowered to scheduled loops for a target with ``features``."""
    work = module.clone()
    ctx = PassContext(opt_level=2, dump_ir=False)
    passes = ["checks-to-outputs", "legalize-unsigned", "graph-to-te", "te-to-loop",
              f'default-schedule{{vector_bits={vector_bits} features="{features}"}}']  # fmt: skip
    run_pipeline(work, passes, ctx)
    return work


def llvm_ir(module, features: str, vector_bits: int = 512) -> str:
    work = lowered(module, features, vector_bits)
    run_pipeline(work, ["bf16-storage", "expand-math", f"loop-to-llvm{{vector_bits={vector_bits}}}"], PassContext(opt_level=2, dump_ir=False))
    return str(convert_module(work, fallback_target_triple="x86_64-unknown-linux-gnu"))


def _dense_module(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (12, 64), np.uint8)
    params = product_params(rng, b, np.uint8, np.uint8, 128, extreme=False)
    return b.finish(b.qdense(x, b.constant(qrandom(rng, (128, 64), np.int8)), None, params))


def test_strategy_and_intrinsic(rng):
    module = _dense_module(rng)
    loops = lowered(module, "+avx512f,+avx512vnni")
    (kernel,) = [f for f in loops.ops if "tk.strategy" in f.attributes]
    assert kernel.attributes["tk.strategy"].data == "qdense_register_tile"
    dots = [op for op in kernel.walk() if isinstance(op, Dot4U8S8Op)]
    assert dots and all(op.isa is not None and op.isa.data == "avx512_vnni" for op in dots)
    assert any(op.acc.owner is not None for op in dots)  # accumulating in place (not dot(0, ...) + acc)
    assert "call <16 x i32> @\"llvm.x86.avx512.vpdpbusd.512\"" in llvm_ir(module, "+avx512f,+avx512vnni")
    without = llvm_ir(module, "+avx2,+fma", vector_bits=256)
    assert "vpdpbusd" not in without and "mul <32 x i32>" in without


def test_plain_form_with_runtime_scales(rng):
    """A product whose scales are inputs keeps the plain arithmetic (and its numbers)."""
    b = tk.GraphBuilder()
    x = b.input("x", (3, 10), np.int8)
    scale = b.input("scale", (), np.float32)
    params = [scale, b.constant(np.int8(1)), b.constant(np.float32(0.01)), b.constant(np.int8(0)), b.constant(np.float32(0.1)), b.constant(np.int8(-3))]
    module = b.finish(b.qdense(x, b.constant(qrandom(rng, (5, 10), np.int8)), None, params))
    assert not [op for op in lowered(module, "+avx512vnni").walk() if isinstance(op, Dot4U8S8Op)]
    xv = qrandom(rng, (3, 10), np.int8)
    s = np.asarray(0.03, np.float32)
    np.testing.assert_array_equal(tk.build(module)(xv, s), tk.create_executor("interpreter", module).evaluate()(xv, s))
    assert isinstance(module.body.block.ops.first.body.block.last_op.prev_op, quant.QDenseOp)


@pytest.mark.parametrize("target", TARGETS)
def test_qdense_with_weight_zero_points(rng, target):
    """Weights whose centered values leave int8 (int8 with zero points not 0, uint8 with
    zero points not 128: onnxruntime's in-graph weight quantization): the words hold the
    weight as it is and the epilogue subtracts zw[o] * sum_k x (a row-sum kernel)."""
    for x_dtype, w_dtype in ((np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)):
        b = tk.GraphBuilder()
        x = b.input("x", (2, 9, 70), x_dtype)
        w = qrandom(rng, (40, 70), w_dtype)
        w[:, 0] = QINFO[w_dtype][1]
        zw = (rng.integers(-3, 4, 40) + (0 if w_dtype == np.int8 else 127)).astype(w_dtype)
        zw[0] = -1 if w_dtype == np.int8 else 127  # 127 - (-1), 255 - 127 = 128: outside int8
        params = [b.constant(np.float32(0.02)), b.constant(np.asarray(5, x_dtype)), b.constant(rng.uniform(0.001, 0.003, 40).astype(np.float32)),
                  b.constant(zw), b.constant(np.float32(0.05)), b.constant(np.asarray(3, x_dtype))]  # fmt: skip
        module = b.finish(b.qdense(x, b.constant(w), b.constant(rng.integers(-2000, 2000, 40).astype(np.int32)), params))
        check_exact(module, qrandom(rng, (2, 9, 70), x_dtype), target)
        assert any(isinstance(op, Dot4U8S8Op) for op in lowered(module, "+avx512vnni").walk())


@pytest.mark.parametrize("n", [83, 1000])
def test_column_tiles_start_on_packed_blocks(rng, n):
    """Output channels that are no multiple of 16 (a 1000-class head): the column tiles
    start at multiples of the tile, the last one guarded, never shifted back over the
    channel count (``arith.minsi`` on the column start): a shifted tile straddles the
    packed weight's blocks of 16 and reads them lane by lane (1x2048 -> 1000: 430 us)."""
    b = tk.GraphBuilder()
    x = b.input("x", (1, 260), np.uint8)
    params = product_params(rng, b, np.uint8, np.uint8, n, extreme=False)
    module = b.finish(b.qdense(x, b.constant(qrandom(rng, (n, 260), np.int8)), None, params))
    (kernel,) = [f for f in lowered(module, "+avx512f,+avx512vnni").ops if "tk.strategy" in f.attributes]
    assert kernel.attributes["tk.strategy"].data == "qdense_register_tile"
    # a shifted tile starts at min(iv, n - tile); a guarded one runs min(tile, n - iv) columns
    shifted = [op for op in kernel.walk() if op.name == "arith.minsi" and any(isinstance(v, BlockArgument) for v in op.operands)]
    assert not shifted
    check_exact(module, qrandom(rng, (1, 260), np.uint8), "llvm")


@pytest.mark.parametrize("width, rows", [(28, 4), (14, 5)])
def test_conv_tile_rows_compute_fewest_pixels(rng, width, rows):
    """An int8 conv's register tile takes the rows (of 6, 5, 4 for 4 vectors) that
    compute the fewest pixels of an image row: 28 wide 4 (not 6: 30 pixels), 14 wide 5."""
    b = tk.GraphBuilder()
    shape = (1, 3, width, 12)
    x = b.input("x", shape, np.uint8)
    params = product_params(rng, b, np.uint8, np.uint8, 64, extreme=False)
    module = b.finish(b.qconv2d(x, b.constant(qrandom(rng, (1, 1, 12, 64), np.int8)), None, params, layout="NHWC"))
    (kernel,) = [f for f in lowered(module, "+avx512f,+avx512vnni").ops if "tk.strategy" in f.attributes]
    assert kernel.attributes["tk.strategy"].data == "qconv2d_register_tile"
    tiles = {str(op.results[0].type) for op in kernel.walk() if op.name == "loop.alloc"}
    assert f"memref<{rows}x64xi32>" in tiles
    check_exact(module, qrandom(rng, shape, np.uint8), "llvm")
