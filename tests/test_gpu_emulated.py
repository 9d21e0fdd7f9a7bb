"""Numerics of the GPU path without a GPU: each model is lowered exactly as for
``target="cuda"`` (default GPU schedules, loop-to-gpu) and the resulting gpu-dialect
kernels run on the CPU through ``emulate-gpu`` (every block and thread, barriers
honoured) and the LLVM JIT, against torch eager, on odd sizes that leave partial
blocks and tiles."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models are written in torch")

from tensorkiln.driver.cuda import build_emulated  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from gpu_models import CASES, LinearGelu  # noqa: E402

def _check(lib, model, inputs) -> None:
    """The model's output, or each of its outputs, against torch's."""
    expected = model(*inputs)
    got = lib(*[t.numpy() for t in inputs])
    expected, got = (expected, got) if isinstance(expected, tuple) else ((expected,), (got,))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e.detach().numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", CASES)
def test_emulated_gpu_kernels_match_torch(name):
    make, shapes = CASES[name]
    torch.manual_seed(len(name))
    model = make().eval()
    inputs = tuple(torch.randn(*s) for s in shapes)
    lib = build_emulated(from_exported_program(torch.export.export(model, inputs)))
    _check(lib, model, inputs)


def test_symbolic_batch_sizes_give_right_grids():
    """One compile, several batch sizes: the host computes each launch's grid."""
    torch.manual_seed(0)
    model = LinearGelu().eval()
    x = torch.randn(5, 45)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    lib = build_emulated(from_exported_program(ep))
    for batch in (2, 67, 130):
        _check(lib, model, (torch.randn(batch, 45),))


def test_each_kernel_gets_the_strategy_of_its_kind():
    """Matrix products get the tiled GEMM (few rows: a warp per output), long row kernels (softmax, layer norm) a block
    per row, short ones a thread per row, elementwise kernels a grid-stride loop (the
    attribute tk.gpu_strategy records the choice)."""
    from tensorkiln.driver.cuda import lower_to_gpu
    from tensorkiln.lowering.loop_to_gpu import gpu_module_of

    chosen = {}
    for name in ("linear_gelu", "batch_matmul", "long_rows", "elementwise", "row_kernels", "layernorm_softmax_sum"):
        make, shapes = CASES[name]
        inputs = tuple(torch.randn(*s) for s in shapes)
        gpu_level, _ = lower_to_gpu(from_exported_program(torch.export.export(make().eval(), inputs)))
        for kernel in gpu_module_of(gpu_level).body.block.ops:
            chosen[f"{name}:{kernel.sym_name.data}"] = kernel.attributes["tk.gpu_strategy"].data
    kernel_of = {k: k.split(":")[1] for k in chosen}
    # the dense layer of linear_gelu has 7 rows: a warp per output, not a 64-row tile
    assert {v for k, v in chosen.items() if kernel_of[k].startswith("dense")} == {"warp_reduction"}, chosen
    assert any(v == "gemm_shared" for k, v in chosen.items() if kernel_of[k].startswith("batch_matmul")), chosen
    rows = {k: v for k, v in chosen.items() if kernel_of[k].startswith(("softmax", "log_softmax", "reduce"))}
    # softmax (301), the max/mean epilogue (301), layer norm and log_softmax (257): blocks;
    # layer norm, softmax and the sum epilogue of rows of 53 (too short for a block): a
    # thread per row
    assert sorted(rows.values()) == ["one_thread_per_row"] * 3 + ["row_blocks"] * 4, chosen
