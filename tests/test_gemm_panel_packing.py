"""The matmul strategy packs B one column panel at a time when column panels run
outside the row blocks (B too big for the L2 cache): numerics on odd sizes (shifted
last tiles, a partial last panel), batch_matmul, and that the panel stage is there."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects import loop
from tensorkiln.schedule import kernels

from strategy_helpers import scheduled_loops


@pytest.fixture(autouse=True)
def one_mib_l2(monkeypatch):
    """The loop order follows this machine's L2 size; pin it (1 MiB) so the shapes
    below pack on any machine."""
    from tensorkiln.schedule.strategies import gemm

    monkeypatch.setattr(gemm, "l2_cache_bytes", lambda: 1 << 20)


def test_l2_size_of_this_machine() -> None:
    from tensorkiln.schedule.strategies.gemm import _parse_size, l2_cache_bytes

    assert 64 << 10 <= l2_cache_bytes() <= 64 << 20
    assert (_parse_size("512K"), _parse_size("2M"), _parse_size("4096")) == (512 << 10, 2 << 20, 4096)


def _matmul(a_shape, b_shape, batched=False):
    b = tk.GraphBuilder()
    op = b.batch_matmul if batched else b.matmul
    return b.finish(op(b.input("a", a_shape), b.input("b", b_shape)))


def _panel_stages(module) -> list[tuple[int, ...]]:
    return [
        op.results[0].type.get_shape()
        for k in kernels(scheduled_loops(module))
        for op in k.walk()
        if isinstance(op, loop.AllocOp) and "tk.stage" in op.attributes
    ]


@pytest.mark.parametrize(
    "a_shape, b_shape, batched",
    [((37, 520), (520, 600), False), ((5, 3, 700), (5, 700, 401), True), ((64, 1024), (1024, 1024), False)],
)
def test_packed_panels_match_numpy(a_shape, b_shape, batched, rng: np.random.Generator) -> None:
    module = _matmul(a_shape, b_shape, batched)
    assert _panel_stages(module), "expected a packed panel of B"
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    np.testing.assert_allclose(tk.build(module)(a, b), a @ b, rtol=1e-4, atol=1e-3)


def test_small_b_is_not_packed() -> None:
    """B that stays in L2 (row blocks outside): no panel copy."""
    assert _panel_stages(_matmul((64, 256), (256, 256))) == []


def _dense(rows: int, weight: np.ndarray):
    b = tk.GraphBuilder()
    return b.finish(b.dense(b.input("x", (rows, weight.shape[1])), weight))


def test_dense_packs_panels_read_by_several_row_blocks(rng: np.random.Generator) -> None:
    """A constant weight whose width the column tile does not divide is transposed at
    compile time, and still lies its width apart per row: row blocks that share a
    column panel get it copied contiguous first."""
    weight = rng.standard_normal((600, 520)).astype(np.float32)
    module = _dense(37, weight)
    assert _panel_stages(module), "expected a packed panel of the weight"
    x = rng.standard_normal((37, 520)).astype(np.float32)
    np.testing.assert_allclose(tk.build(module)(x), x @ weight.T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("rows", [1, "n"])
def test_matrix_vector_dense_is_not_packed(rows, rng: np.random.Generator) -> None:
    """One row block reads each panel once: copying it first would only add traffic;
    nor when the row count is symbolic (a batch-1 call would copy the whole weight)."""
    weight = rng.standard_normal((600, 520)).astype(np.float32)
    assert _panel_stages(_dense(rows, weight)) == []
    x = rng.standard_normal((3, 520)).astype(np.float32)
    if rows == "n":
        np.testing.assert_allclose(tk.build(_dense(rows, weight))(x), x @ weight.T, rtol=1e-4, atol=1e-3)


def _register_tiles(module, vector_bits: int) -> list[tuple[int, ...]]:
    return [
        op.results[0].type.get_shape()
        for k in kernels(scheduled_loops(module, vector_bits))
        for op in k.walk()
        if isinstance(op, loop.AllocOp) and "tk.stage" not in op.attributes
    ]


@pytest.mark.parametrize("columns", [1024, 600, 64, 40])
def test_avx2_register_tile_fits_sixteen_registers(columns: int) -> None:
    """With 8-lane vectors (AVX2: 16 ymm registers) the accumulators, a row of B's
    vectors and A's broadcast fit in 16 registers (4 x 4 vectors spilled); AVX-512 keeps
    its 6 x 64 tile."""
    module = _matmul((96, 300), (300, columns))
    (rows, width), = _register_tiles(module, 256)
    vectors = -(-width // 8)
    assert rows * vectors + vectors + 1 <= 16 and rows * vectors >= 8, (rows, width)
    if columns == 1024:
        assert _register_tiles(module, 512) == [(6, 64)]


@pytest.mark.parametrize("rows", [37, "n"])
def test_dense_weight_is_packed_into_panels_at_compile_time(rows, rng: np.random.Generator) -> None:
    """When the column tile divides the features, the constant weight is stored as its
    panels (``P[n / tile, k, tile]``, transform_layout with a block): no run-time copy,
    and a symbolic row count reads contiguous panels too."""
    from tensorkiln.schedule.layout import recorded_blocks

    weight = rng.standard_normal((576, 520)).astype(np.float32)
    module = _dense(rows, weight)
    (kernel,) = kernels(scheduled_loops(module))
    assert _panel_stages(module) == []
    ((axis, tile),) = recorded_blocks(kernel).values()
    assert axis == 0 and 576 % tile == 0
    assert kernel.body.block.args[1].type.get_shape() == (576 // tile, 520, tile)
    lib = tk.build(module)
    for m in ([37] if rows == 37 else [1, 5, 37]):
        x = rng.standard_normal((m, 520)).astype(np.float32)
        np.testing.assert_allclose(lib(x), x @ weight.T, rtol=1e-4, atol=1e-3)
