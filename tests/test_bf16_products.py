"""bfloat16 products with float32 sums: graph.bf16_dense (reference = exact products of
the bfloat16-rounded operands), its packed form on this machine (vdpbf16ps where it has
AVX512_BF16) and on haswell (the widened fallback), the bf16-products pass on bfloat16
models and in autocast mode, compared with torch.autocast."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.backend.llvm.convert import convert_module

import tensorkiln as tk
from tensorkiln.dialects.graph.quant_bf16 import BF16DenseOp
from tensorkiln.dialects.lowp import Dot2BF16Op
from tensorkiln.lowering.graph_to_te.bf16_products import pack_pairs
from tensorkiln.passes.bf16_products import bf16_products
from tensorkiln.passes.pipeline import PassContext, run_pipeline

BF16 = np.dtype(ml_dtypes.bfloat16)
TARGETS = ["llvm", "llvm -mcpu=haswell"]


def exact_products(x, w, bias=None):
    y = x.astype(BF16).astype(np.float64) @ w.astype(BF16).astype(np.float64).T
    return y + bias if bias is not None else y


def assert_sums_close(got, want, k):
    """float32 sums of k bfloat16 products, in another order: relative to the sum of magnitudes."""
    assert got.dtype == np.float32
    scale = np.abs(want).max() + 1e-30
    assert np.abs(got - want).max() <= 4e-7 * np.sqrt(k) * scale + 1e-30


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rows, k, n, input_dtype, bias", [((9,), 33, 70, BF16, True), ((2, 5), 64, 128, np.float32, False), ((1,), 3, 5, BF16, False)])
def test_bf16_dense_packed(rng, target, rows, k, n, input_dtype, bias):
    w = rng.normal(size=(n, k)).astype(np.float32)
    b_values = rng.normal(size=n).astype(np.float32) if bias else None
    b = tk.GraphBuilder()
    x = b.input("x", (*rows, k), input_dtype)
    module = b.finish(b.bf16_dense(x, b.constant(w), b.constant(b_values) if bias else None))
    xv = rng.normal(size=(*rows, k)).astype(np.float32).astype(input_dtype)
    want = exact_products(xv.astype(np.float32), w, b_values)
    assert_sums_close(tk.create_executor("interpreter", module).evaluate()(xv), want, k)
    assert_sums_close(tk.build(module, target)(xv), want, k)


def test_bf16_dense_runtime_weight(rng):
    b = tk.GraphBuilder()
    x, w = b.input("x", (4, 7)), b.input("w", (3, 7), BF16)
    module = b.finish(b.bf16_dense(x, w))
    xv, wv = rng.normal(size=(4, 7)).astype(np.float32), rng.normal(size=(3, 7)).astype(BF16)
    assert_sums_close(tk.build(module)(xv, wv), exact_products(xv, wv.astype(np.float32)), 7)


def test_verifier_and_packing(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 4), np.float16)
    with pytest.raises(Exception, match="input must be float32 or bfloat16"):
        b.bf16_dense(x, b.constant(np.ones((3, 4), np.float32)))
    w = rng.normal(size=(20, 5)).astype(np.float32)
    words = pack_pairs(w)
    assert words.shape == (2, 3, 16)
    halves = words[..., None].view(np.uint16).reshape(2, 3, 16, 2)
    assert halves[1, 2, 3, 0] == w[19, 4].astype(BF16).view(np.uint16) and halves[1, 2, 3, 1] == 0


def _lowered_llvm(module, features, vector_bits=512):
    work = module.clone()
    ctx = PassContext(opt_level=2, dump_ir=False)
    run_pipeline(work, ["checks-to-outputs", "legalize-16bit-floats", "fold-constants", "legalize-unsigned", "graph-to-te", "te-to-loop",
                        f'default-schedule{{vector_bits={vector_bits} features="{features}"}}'], ctx)  # fmt: skip
    strategies = {f.attributes["tk.strategy"].data for f in work.ops if "tk.strategy" in f.attributes}
    dots = [op for op in work.walk() if isinstance(op, Dot2BF16Op)]
    run_pipeline(work, ["bf16-storage", "expand-math", f"loop-to-llvm{{vector_bits={vector_bits}}}"], ctx)
    return strategies, dots, str(convert_module(work, fallback_target_triple="x86_64-unknown-linux-gnu"))


def test_strategy_and_intrinsic(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (12, 64), BF16)
    module = b.finish(b.bf16_dense(x, b.constant(rng.normal(size=(128, 64)).astype(np.float32))))
    strategies, dots, ir = _lowered_llvm(module, "+avx512f,+avx512bf16")
    assert "bf16_dense_register_tile" in strategies
    assert dots and all(d.isa is not None and d.isa.data == "avx512_bf16" for d in dots)
    assert 'call <16 x float> @"llvm.x86.avx512bf16.dpbf16ps.512"' in ir
    _, _, fallback = _lowered_llvm(module, "+avx2,+fma", vector_bits=256)
    assert "dpbf16ps" not in fallback


def _mlp(b, x, weights, dtype):
    h = b.relu(b.dense(x, b.constant(weights[0].astype(dtype)), b.constant(weights[1].astype(dtype))))
    return b.dense(h, b.constant(weights[2].astype(dtype)))


def test_bf16_model_keeps_bf16_storage(rng):
    weights = [rng.normal(size=s).astype(np.float32) * 0.2 for s in ((48, 40), (48,), (24, 48))]
    b = tk.GraphBuilder()
    x = b.input("x", (6, 40), BF16)
    module = b.finish(_mlp(b, x, weights, BF16))
    xv = rng.normal(size=(6, 40)).astype(BF16)
    before = tk.build(module)(xv)  # float32 arithmetic (legalize-16bit-floats)
    bf16_products(module)
    assert len([op for op in module.walk() if isinstance(op, BF16DenseOp)]) == 2
    assert {str(op.input.type.element_type) for op in module.walk() if isinstance(op, BF16DenseOp)} == {"bf16"}
    after = tk.build(module)(xv)
    assert after.dtype == BF16
    # the same float32 sums in another order, rounded to bfloat16: at most one bfloat16 step apart
    np.testing.assert_allclose(after.astype(np.float32), before.astype(np.float32), rtol=2**-7, atol=1e-2)


def test_autocast_matches_torch_autocast(rng):
    torch = pytest.importorskip("torch")
    weights = [rng.normal(size=s).astype(np.float32) * 0.2 for s in ((64, 40), (64,), (16, 64))]
    b = tk.GraphBuilder()
    x = b.input("x", (9, 40))
    h = b.relu(b.dense(x, b.constant(weights[0]), b.constant(weights[1])))
    module = b.finish(b.matmul(h, b.constant(np.ascontiguousarray(weights[2].T))))
    xv = rng.normal(size=(9, 40)).astype(np.float32)
    fp32 = tk.build(module)(xv)
    bf16_products(module, autocast=True)
    assert len([op for op in module.walk() if isinstance(op, BF16DenseOp)]) == 2
    got = tk.build(module)(xv)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t = torch.from_numpy(xv)
        hidden = torch.relu(torch.nn.functional.linear(t, torch.from_numpy(weights[0]), torch.from_numpy(weights[1])))
        want = torch.nn.functional.linear(hidden, torch.from_numpy(weights[2])).float().numpy()
    # bfloat16 inputs (8 bits of mantissa): errors of a few 2^-9 relative to the outputs' scale
    scale = np.abs(fp32).max()
    assert np.abs(got - fp32).max() < 2e-2 * scale
    assert np.abs(got - want).max() < 2e-2 * scale  # torch also rounds the hidden layer to bfloat16


def test_build_precision_option(rng):
    """tk.build(precision="bf16") runs bf16-products{autocast=true}: the same numbers as the
    pass applied by hand, not float32's; a bfloat16 model takes bf16_dense by default."""
    weights = [rng.normal(size=s).astype(np.float32) * 0.2 for s in ((48, 40), (48,), (16, 48))]
    b = tk.GraphBuilder()
    x = b.input("x", (7, 40))
    module = b.finish(b.dense(b.relu(b.dense(x, b.constant(weights[0]), b.constant(weights[1]))), b.constant(weights[2])))
    xv = rng.normal(size=(7, 40)).astype(np.float32)
    by_hand = module.clone()
    bf16_products(by_hand, autocast=True)
    got = tk.build(module, precision="bf16")(xv)
    np.testing.assert_array_equal(got, tk.build(by_hand)(xv))
    assert not np.array_equal(got, tk.build(module)(xv))
    with pytest.raises(ValueError, match="precision must be one of"):
        tk.build(module, precision="int4")
    b = tk.GraphBuilder()
    xb = b.input("x", (7, 40), BF16)
    model16 = b.finish(b.dense(xb, b.constant(weights[0].astype(BF16))))
    by_hand = model16.clone()
    bf16_products(by_hand)
    x16 = xv.astype(BF16)
    np.testing.assert_array_equal(tk.build(model16)(x16), tk.build(by_hand)(x16))
