"""partition-loops on compiled kernels: concatenations (many inputs, odd sizes, along
the vectorized axis, an outer axis and a parallel one; fused with an epilogue and with
NHWC convolutions around them) and padding, against numpy and torch; after the pass a
concatenation kernel loads each input once per element, and symbolic sizes keep the
select chain (still right)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects import loop
from tensorkiln.passes.pipeline import PassContext, run_pipeline
from tensorkiln.schedule.partition import MAX_PIECES, cut_points
from tensorkiln.schedule.schedule import kernels
from tensorkiln.schedule.simplify import IndexRanges

from strategy_helpers import scheduled_loops


def concat_module(shapes, axis, symbolic=()):
    b = tk.GraphBuilder()
    inputs = [
        b.input(f"x{k}", tuple(f"n{k}" if a in symbolic else d for a, d in enumerate(shape))) for k, shape in enumerate(shapes)
    ]
    joined = b.concat(inputs, axis=axis)
    return b.finish(b.relu(b.add(b.mul(joined, 1.5), -0.25)))


def expected(arrays, axis):
    return np.maximum(np.concatenate(arrays, axis) * np.float32(1.5) - np.float32(0.25), 0)


def partitioned_kernels(module):
    work = scheduled_loops(module)
    run_pipeline(work, ("partition-loops",), PassContext(opt_level=2, dump_ir=False))
    return kernels(work)


def loads_per_buffer(kernel) -> dict[int, int]:
    counts: dict[int, int] = {}
    for op in kernel.walk():
        if isinstance(op, loop.LoadOp):
            index = kernel.body.block.args.index(op.buffer)
            counts[index] = counts.get(index, 0) + 1
    return counts


CASES = [
    # (input shapes, axis): the axis innermost (vectorized), outer, and one element wide
    ([(3, 7), (3, 17), (3, 1), (3, 32)], 1),
    ([(5, 2, 9), (1, 2, 9), (4, 2, 9)], 0),
    ([(2, 3, 33), (2, 13, 33), (2, 1, 33)], 1),
    ([(2, 5, 7, 3)] * 25, 3),
]


@pytest.mark.parametrize("shapes, axis", CASES, ids=lambda c: str(c) if isinstance(c, int) else f"{len(c)}x{c[0]}")
def test_concat_numerics(rng, shapes, axis):
    module = concat_module(shapes, axis)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = tk.build(module)(*arrays)
    np.testing.assert_allclose(got, expected(arrays, axis), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shapes, axis", CASES, ids=lambda c: str(c) if isinstance(c, int) else f"{len(c)}x{c[0]}")
def test_concat_reads_each_input_once(shapes, axis):
    (kernel,) = partitioned_kernels(concat_module(shapes, axis))
    counts = loads_per_buffer(kernel)
    assert counts == {k: 1 for k in range(len(shapes))}, counts
    assert not [op for op in kernel.walk() if op.name == "arith.select"]


def test_large_parallel_concat(rng):
    # channel-major (NCHW-like) with enough work for the outer loop to run in parallel
    shapes = [(1, 24, 40, 41), (1, 7, 40, 41), (1, 40, 40, 41)]
    module = concat_module(shapes, 1)
    (kernel,) = partitioned_kernels(module)
    assert any(op.kind.data == "parallel" for op in kernel.walk() if isinstance(op, loop.ForOp))
    assert loads_per_buffer(kernel) == {0: 1, 1: 1, 2: 1}
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    np.testing.assert_allclose(tk.build(module)(*arrays), expected(arrays, 1), rtol=1e-6, atol=1e-6)


def test_symbolic_concat_keeps_the_selects(rng):
    shapes = [(3, 7), (4, 7)]
    module = concat_module(shapes, 0, symbolic=(0,))
    (kernel,) = partitioned_kernels(module)
    assert [op for op in kernel.walk() if op.name == "arith.select"]
    for rows in ((3, 4), (1, 9)):
        arrays = [rng.standard_normal((r, 7)).astype(np.float32) for r in rows]
        np.testing.assert_allclose(tk.build(module)(*arrays), expected(arrays, 0), rtol=1e-6, atol=1e-6)


def test_too_many_pieces_are_left_whole(rng):
    shapes = [(2, 1)] * (MAX_PIECES + 1)
    module = concat_module(shapes, 1)
    (kernel,) = partitioned_kernels(module)
    assert [op for op in kernel.walk() if op.name == "arith.select"]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    np.testing.assert_allclose(tk.build(module)(*arrays), expected(arrays, 1), rtol=1e-6, atol=1e-6)


def test_cut_points_of_each_predicate():
    # a*i + k <pred> 0 changes value at these i, for i in [0, 20)
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import IndexType, IntegerAttr
    from xdsl.ir import Block, Region

    index = IndexType()
    entry = Block()
    const = {v: arith.ConstantOp(IntegerAttr(v, index)) for v in (0, 1, 2, 3, 7, 20)}
    entry.add_ops(const.values())
    body = Block(arg_types=[index])
    i = body.args[0]
    twice = arith.MuliOp(i, const[2].result)
    body.add_ops(
        [
            twice,
            arith.CmpiOp(i, const[7].result, "slt"),  # i < 7: at 7
            arith.CmpiOp(i, const[7].result, "sle"),  # i <= 7: at 8
            arith.CmpiOp(const[3].result, i, "sgt"),  # 3 > i: at 3
            arith.CmpiOp(twice.result, const[7].result, "sge"),  # 2i >= 7: at 4
            arith.CmpiOp(i, const[1].result, "eq"),  # not an order: no cut
            loop.YieldOp(),
        ]
    )
    for_op = loop.ForOp(const[0].result, const[20].result, const[1].result, body, name="i0")
    entry.add_ops([for_op, func.ReturnOp()])
    func.FuncOp("k", ((), ()), Region(entry))
    assert cut_points(for_op, IndexRanges()) == [3, 4, 7, 8]


torch = pytest.importorskip("torch")


class DenseLayers(torch.nn.Module):
    """A DenseNet block: every layer reads the concatenation of all earlier outputs."""

    def __init__(self, channels: int, growth: int, layers: int):
        super().__init__()
        self.norms = torch.nn.ModuleList(torch.nn.BatchNorm2d(channels + k * growth) for k in range(layers))
        self.convs = torch.nn.ModuleList(
            torch.nn.Conv2d(channels + k * growth, growth, 3, padding=1, bias=False) for k in range(layers)
        )

    def forward(self, x):
        features = [x]
        for norm, conv in zip(self.norms, self.convs):
            features.append(conv(torch.relu(norm(torch.cat(features, 1)))))
        return torch.cat(features, 1)


def test_dense_block_against_torch():
    from tensorkiln.frontends.torch import from_exported_program

    torch.manual_seed(0)
    model = DenseLayers(5, 3, 6).eval()
    for norm in model.norms:
        norm.running_mean.uniform_(-1, 1)
        norm.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 5, 9, 11)
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    with torch.no_grad():
        want = model(x).numpy()
    got = lib(x.numpy())
    assert got.shape == want.shape == (2, 5 + 3 * 6, 9, 11)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pad", [(1, 1, 2, 0), (0, 3, 1, 1), (2, 2, 2, 2)], ids=str)
def test_constant_pad_against_torch(pad):
    from tensorkiln.frontends.torch import from_exported_program

    class Pad(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.pad(x * 2.0, pad, value=0.5)

    x = torch.randn(2, 3, 7, 5)
    lib = tk.build(from_exported_program(torch.export.export(Pad(), (x,))))
    np.testing.assert_array_equal(lib(x.numpy()), Pad()(x).numpy())
