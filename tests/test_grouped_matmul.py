"""``graph.grouped_matmul`` (each row times the matrix of its group: mixture-of-experts
layers) compiled for the CPU and as emulated GPU kernels, checked against numpy; and a
mixture-of-experts block written the way Hugging Face transformers writes it (top-k
routing, rows sorted by expert, ``_grouped_mm`` or transformers' custom op, unsorted
and summed per token) against torch eager, for symbolic token counts."""

from __future__ import annotations

import numpy as np
import pytest
from strategy_helpers import chosen_strategies

import tensorkiln as tk
from tensorkiln.interpreter import interpret

RNG = np.random.default_rng()


def _module(rows, depth: int, columns: int, groups: int, dtype=np.float32, group_dtype=np.int32):
    b = tk.GraphBuilder()
    x = b.input("x", (rows, depth), dtype)
    w = b.input("w", (groups, depth, columns), dtype)
    g = b.input("g", (rows,), group_dtype)
    return b.finish(b.grouped_matmul(x, w, g))


def _reference(x, w, g):
    valid = (g >= 0) & (g < w.shape[0])
    want = np.einsum("sk,skn->sn", x.astype(np.float64), w[np.clip(g, 0, w.shape[0] - 1)].astype(np.float64))
    return np.where(valid[:, None], want, 0)


def _inputs(rows, depth, columns, groups, dtype=np.float32, sort=True):
    x = RNG.standard_normal((rows, depth)).astype(dtype)
    w = RNG.standard_normal((groups, depth, columns)).astype(dtype)
    g = RNG.integers(-2, groups + 2, rows).astype(np.int32)  # some out of range: zero rows
    return x, w, np.sort(g) if sort else g


@pytest.mark.parametrize(
    "rows, depth, columns, groups",
    [(1, 1, 1, 1), (13, 7, 5, 3), (37, 29, 45, 5), (64, 96, 128, 8), (130, 33, 70, 17)],
)
def test_compiled_matches_numpy(rows, depth, columns, groups):
    module = _module(rows, depth, columns, groups)
    assert chosen_strategies(module)["grouped_matmul"] in {"grouped_gemm_register_tile", "reduce_rows"}
    lib = tk.build(module)
    for sort in (True, False):  # MoE dispatch sorts rows by expert; any order is allowed
        x, w, g = _inputs(rows, depth, columns, groups, sort=sort)
        got = lib(x, w, g)
        assert got.shape == (rows, columns) and got.dtype == np.float32
        np.testing.assert_allclose(got, _reference(x, w, g), rtol=1e-5, atol=1e-5 * depth)
        assert not got[(g < 0) | (g >= groups)].any()


def test_symbolic_rows_and_the_interpreter():
    module = _module("s", 24, 20, 6, np.float64, np.int64)
    lib = tk.build(module)
    for rows in (1, 9, 50):
        x, w, g = _inputs(rows, 24, 20, 6, np.float64)
        g = g.astype(np.int64)
        got = lib(x, w, g)
        np.testing.assert_allclose(got, _reference(x, w, g), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(interpret(module)(x, w, g), got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("blocks, block, depth, columns", [(9, 8, 40, 64), (5, 6, 17, 30), (3, 1, 8, 16)])
def test_blocks_of_rows_share_their_group(blocks, block, depth, columns):
    """A 3-d lhs: a group per block of rows (how the torch converter lays out sorted rows)."""
    groups = 4
    b = tk.GraphBuilder()
    w = RNG.standard_normal((groups, depth, columns)).astype(np.float32)  # a constant: packed panels
    x, g = b.input("x", ("n", block, depth)), b.input("g", ("n",), np.int32)
    module = b.finish(b.grouped_matmul(x, w, g))
    lib = tk.build(module)
    xs = RNG.standard_normal((blocks, block, depth)).astype(np.float32)
    gs = RNG.integers(-1, groups + 1, blocks).astype(np.int32)
    got = lib(xs, gs)
    valid = (gs >= 0) & (gs < groups)
    want = np.einsum("smk,skn->smn", xs.astype(np.float64), w[np.clip(gs, 0, groups - 1)].astype(np.float64))
    assert got.shape == (blocks, block, columns)
    np.testing.assert_allclose(got, np.where(valid[:, None, None], want, 0), rtol=1e-5, atol=1e-5 * depth)
    np.testing.assert_allclose(interpret(module)(xs, gs), got, rtol=1e-5, atol=1e-5 * depth)


def test_verifier_names_what_is_wrong():
    b = tk.GraphBuilder()
    x, w = b.input("x", (5, 4)), b.input("w", (3, 4, 6))
    with pytest.raises(Exception, match="one entry per row of lhs"):
        b.grouped_matmul(x, w, b.input("g", (4,), np.int32))
    with pytest.raises(Exception, match="groups must be an integer tensor"):
        b.grouped_matmul(x, w, b.input("gf", (5,)))
    with pytest.raises(Exception, match="contraction dims differ"):
        b.grouped_matmul(x, b.input("w2", (3, 5, 6)), b.input("g2", (5,), np.int32))


# -- the GPU path, without a GPU -------------------------------------------------------


def test_emulated_gpu_kernels_match_the_cpu():
    from tensorkiln.driver.cuda import build_emulated

    module = _module("s", 40, 70, 5)
    x, w, g = _inputs(67, 40, 70, 5, sort=False)
    got = build_emulated(module)(x, w, g)
    np.testing.assert_allclose(got, _reference(x, w, g), rtol=1e-5, atol=1e-4)


def test_emitted_cuda_compiles(tmp_path):
    import test_cuda_nvcc

    if test_cuda_nvcc.NVCC is None:
        pytest.skip("nvcc is not installed (CUDA toolkit); nothing to compile with")
    source = tk.emit_source(_module("s", 40, 70, 5), target="cuda -arch=sm_90")
    assert "grouped_matmul" in source
    test_cuda_nvcc.compile_all({"grouped_matmul": source}, tmp_path)


# -- mixture-of-experts blocks from torch ------------------------------------------------

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
F = torch.nn.functional

from moe_ops import MixtureOfExperts  # noqa: E402

from tensorkiln.frontends.torch import from_exported_program  # noqa: E402


@pytest.mark.parametrize("transformers_op", [True, False], ids=["transformers-op", "aten-grouped-mm"])
def test_mixture_of_experts_block_for_any_token_count(transformers_op):
    torch.manual_seed(int(RNG.integers(1 << 30)))
    dtype = torch.float32 if transformers_op else torch.bfloat16  # torch exports _grouped_mm in bfloat16 only
    model = MixtureOfExperts(24, 40, 6, 2, transformers_op).to(dtype).eval()
    tokens = torch.export.Dim("tokens", min=2, max=256)
    ep = torch.export.export(model, (torch.randn(2, 5, 24, dtype=dtype),), dynamic_shapes=({1: tokens},))
    lib = tk.build(from_exported_program(ep))
    for count in (3, 17, 64):
        x = torch.randn(2, count, 24, dtype=dtype)
        with torch.no_grad():
            want = model(x).float().numpy()
        got = lib(x)  # torch tensors in (bfloat16 ones too); numpy out (ml_dtypes.bfloat16)
        assert got.shape == want.shape and got.dtype.name == str(dtype).removeprefix("torch.")
        error = np.linalg.norm(got.astype(np.float32) - want) / np.linalg.norm(want)
        # bfloat16: both compute each op in float32 and round its result (equal here)
        assert error < (1e-6 if dtype == torch.float32 else 1e-2), error


@pytest.mark.parametrize("tokens, block", [(1, 1), (3, 1), (5, 2), (9, 2), (11, 4), (40, 8)])
def test_mixture_of_experts_at_a_static_token_count(tokens, block):
    """A known row count picks blocks no larger than the rows per expert (a decode step
    does not pad each expert's row to 8); any routing, however uneven, still fits."""
    from tensorkiln.frontends.torch.ops.grouped import block_rows

    assert block_rows(tokens * 2, 5) == block
    torch.manual_seed(int(RNG.integers(1 << 30)))
    model = MixtureOfExperts(16, 24, 5, 2, True).eval()
    x = torch.randn(1, tokens, 16)
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    for scale in (1.0, 8.0):  # a sharper router: most tokens on few experts
        model.router.weight.data *= scale
        lib = lib if scale == 1.0 else tk.build(from_exported_program(torch.export.export(model, (x,))))
        with torch.no_grad():
            want = model(x).numpy()
        got = lib(x.numpy())
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
