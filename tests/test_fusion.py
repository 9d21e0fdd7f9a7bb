"""fuse-ops: the same numbers before and after, and the number of kernels it leaves."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.dialects.graph import ConstantOp, FusedOp, YieldOp
from tensorkiln.examples.models import elementwise_chain, mlp, small_cnn
from tensorkiln.passes.fuse_ops import FuseOpsPass


def fused(module, **options):
    """A fused copy of ``module`` (``options``: FuseOpsPass's)."""
    module = module.clone()
    FuseOpsPass(**options).apply(Context(), module)
    module.verify()
    return module


def kernel_names(module) -> list[str]:
    return [f.sym_name.data for f in lower_to_loops(module).ops if "tk.kernel" in f.attributes]


def check_same_numbers(module, inputs, rtol=1e-5, atol=1e-6, **options):
    before = tk.create_executor("interpreter", module).evaluate()(*inputs)
    after = fused(module, **options)
    np.testing.assert_allclose(tk.build(after)(*inputs), before, rtol=rtol, atol=atol)
    np.testing.assert_allclose(tk.create_executor("interpreter", after).evaluate()(*inputs), before, rtol=rtol, atol=atol)
    return after


def resnet_basic_block(rng, channels=8, size=9):
    """conv-bn-relu, conv-bn, + identity, relu (BN as the per-channel scale/shift torch
    import produces)."""
    b = tk.GraphBuilder()
    x = b.input("x", (1, channels, size, size))

    def conv_bn(h):
        w = rng.standard_normal((channels, channels, 3, 3)).astype("f4") * 0.2
        h = b.conv2d(h, w, padding=1)
        scale = rng.uniform(0.5, 1.5, (1, channels, 1, 1)).astype("f4")
        shift = rng.standard_normal((1, channels, 1, 1)).astype("f4")
        return b.add(b.mul(h, scale), shift)

    h = b.relu(conv_bn(x))
    y = b.relu(b.add(conv_bn(h), x))
    return b.finish(y), [rng.standard_normal((1, channels, size, size)).astype("f4")]


def test_mlp_one_kernel_per_layer(rng):
    module, inputs = mlp(seed=1)
    after = check_same_numbers(module, inputs)
    assert kernel_names(module) == ["dense_0", "relu_0", "dense_1", "relu_1", "dense_2"]
    assert kernel_names(after) == ["dense_relu_0", "dense_relu_1", "dense_0"]


def test_resnet_basic_block_two_kernels(rng):
    module, inputs = resnet_basic_block(rng)
    after = check_same_numbers(module, inputs, rtol=1e-4, atol=1e-5)
    assert len(kernel_names(module)) == 9
    assert kernel_names(after) == ["conv2d_mul_add_relu_0", "conv2d_mul_add_add_relu_0"]


def test_cnn(rng):
    module, inputs = small_cnn(seed=2)
    after = check_same_numbers(module, inputs)
    # conv+relu twice, max pool, adaptive pool (its reshape is injective: not an epilogue), reshape, dense
    assert len(kernel_names(after)) == 6


def test_elementwise_chain_is_one_kernel(rng):
    module, _ = elementwise_chain(40, shape=(5, 7))
    after = check_same_numbers(module, [rng.standard_normal((5, 7)).astype("f4")])
    assert len(kernel_names(after)) == 1
    assert sum(isinstance(op, FusedOp) for op in after.walk()) == 1


def test_layer_norm_pattern_one_kernel(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (6, 33))
    mean = b.reduce_mean(x, (1,), keepdims=True)
    centered = b.sub(x, mean)
    var = b.reduce_mean(b.mul(centered, centered), (1,), keepdims=True)
    y = b.mul(centered, b.rsqrt(b.add(var, 1e-5)))
    module = b.finish(b.add(b.mul(y, rng.standard_normal(33).astype("f4")), 0.5))
    after = check_same_numbers(module, [rng.standard_normal((6, 33)).astype("f4")], rtol=1e-4, atol=1e-5)
    # mean and variance are row members: computed once per row in the normalising kernel
    assert kernel_names(after) == ["reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul_add_0"]
    assert len(kernel_names(module)) > 4


@pytest.mark.parametrize("shape", [(5, 129), (7, 1), (1, 1)])
def test_rms_norm_pattern(rng, shape):
    """x * rsqrt(mean(x^2) + eps) * w: one kernel when rows have several elements."""
    w = rng.standard_normal(shape[-1]).astype("f4")
    b = tk.GraphBuilder()
    x = b.input("x", shape)
    ms = b.reduce_mean(b.mul(x, x), (1,), keepdims=True)
    module = b.finish(b.mul(b.mul(x, b.rsqrt(b.add(ms, 1e-6))), w))
    data = rng.standard_normal(shape).astype("f4")
    after = check_same_numbers(module, [data], rtol=1e-4, atol=1e-5)
    want = data / np.sqrt((data * data).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(tk.build(module)(data), want, rtol=1e-4, atol=1e-5)
    if shape[1] > 1:
        assert kernel_names(after) == ["mul_reduce_mean_add_rsqrt_mul_mul_0"]


def test_row_reduction_across_a_transpose_is_not_a_row_member(rng):
    """A row statistic read through a transpose is read at other rows' indices: it stays
    its own kernel (computing it per element would redo the reduction C times)."""
    b = tk.GraphBuilder()
    x = b.input("x", (9, 9))
    centred = b.sub(x, b.reduce_max(x, (1,), keepdims=True))
    module = b.finish(b.exp(b.transpose(centred, (1, 0))))
    data = rng.standard_normal((9, 9)).astype("f4")
    after = check_same_numbers(module, [data])
    assert "reduce_max_0" in kernel_names(after)


def test_intermediate_with_outside_use_is_kept(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (3, 4))
    e = b.exp(x)
    module = b.finish(b.relu(b.neg(e)), e)
    after = check_same_numbers(module, [rng.standard_normal((3, 4)).astype("f4")])
    assert kernel_names(after) == ["exp_0", "neg_relu_0"]


def test_a_view_read_by_several_groups_is_copied_into_each(rng):
    """The halves of a (2, 5, 7) value, sliced, reshaped and transposed, are read by two
    products (a complex product's real and imaginary parts): each product takes its own
    copy of the real half's views and reads the source directly. The imaginary half is
    read by a dense too, which cannot take a copy (its inputs are read many times), so
    that half stays one kernel, read by all three."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, 5, 7))
    y = b.input("y", (7, 5))
    re = b.transpose(b.reshape(b.slice(x, [0], [1], axes=[0]), [5, 7]), [1, 0])
    im = b.transpose(b.reshape(b.slice(x, [1], [2], axes=[0]), [5, 7]), [1, 0])
    real = b.sub(b.mul(re, y), b.mul(im, y))
    imaginary = b.add(b.mul(re, b.exp(y)), b.mul(im, b.neg(y)))
    w = rng.standard_normal((3, 5)).astype("f4")
    module = b.finish(real, imaginary, b.dense(im, w))
    data = [rng.standard_normal((2, 5, 7)).astype("f4"), rng.standard_normal((7, 5)).astype("f4")]
    after = fused(module)
    names = kernel_names(after)
    assert sorted(names) == ["dense_0", "slice_reshape_transpose_0", "slice_reshape_transpose_exp_mul_neg_mul_add_0",
                             "slice_reshape_transpose_mul_mul_sub_0"], names  # fmt: skip
    re_, im_, y_ = data[0][0].T, data[0][1].T, data[1]
    expected = [re_ * y_ - im_ * y_, re_ * np.exp(y_) - im_ * y_, im_ @ w.T]
    for got in (tk.build(after)(*data), tk.create_executor("interpreter", after).evaluate()(*data)):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 5])
def test_symbolic_dims_in_a_fused_group(rng, n):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 6))
    w = rng.standard_normal((4, 6)).astype("f4")
    s = b.reduce_sum(b.mul(b.relu(b.dense(x, w)), 2.0), (1,), keepdims=True)
    module = fused(b.finish(b.sigmoid(s)))
    data = rng.standard_normal((n, 6)).astype("f4")
    expected = 1 / (1 + np.exp(-(np.maximum(data @ w.T, 0) * 2).sum(1, keepdims=True)))
    np.testing.assert_allclose(tk.build(module)(data), expected, rtol=1e-5)


def test_build_fuses_at_o2_not_at_o0(rng, tmp_path):
    module, inputs = mlp(seed=4)
    fast = tk.build(module)
    plain = tk.build(module, opt_level=0, dump_ir=str(tmp_path))
    np.testing.assert_allclose(fast(*inputs), plain(*inputs), rtol=1e-5, atol=1e-6)
    assert "fuse-ops" in [name for name, _ in fast.pass_timings]
    assert "fuse-ops" not in [name for name, _ in plain.pass_timings]
    dumped = sorted(p.name for p in tmp_path.iterdir())
    assert dumped[0] == "00_input.mlir" and any("loop-to-llvm" in name for name in dumped)


def _members(group: FusedOp) -> list:
    return [op for op in group.body.block.ops if not isinstance(op, ConstantOp | YieldOp)]


def test_long_chains_are_cut_into_bounded_groups(rng):
    module, _ = elementwise_chain(150, shape=(3, 4))
    after = check_same_numbers(module, [rng.standard_normal((3, 4)).astype("f4")], max_group_size=64)
    groups = [op for op in after.walk() if isinstance(op, FusedOp)]
    assert len(groups) == 3 and all(len(_members(g)) <= 64 for g in groups)


def test_a_chain_deeper_than_pythons_recursion_is_one_kernel():
    """te-to-loop inlines producers on a stack of its own: a 1000-op chain (each op
    inlines the one before; nested Python calls overflowed at a few hundred) is one kernel."""
    module, _ = elementwise_chain(1000, shape=(3, 4))
    after = fused(module)
    (group,) = [op for op in after.walk() if isinstance(op, FusedOp)]
    assert len(_members(group)) == 1000
    assert len(kernel_names(after)) == 1


def _series(terms: int):
    """A special function's shape: digamma-like recurrence terms that each read the
    argument and the running sum (values with several uses), at one shape, with a scale
    broadcast from one row -- ``5 * terms + 5`` ops."""
    b = tk.GraphBuilder()
    x = b.input("x", (5, 7))
    s = b.input("s", (1, 7))
    acc = b.mul(x, 0.0)
    for k in range(terms):
        t = b.add(x, float(k + 1))
        acc = b.where(b.compare(t, 0.0, "gt"), b.add(acc, b.div(1.0, t)), acc)
    return b.finish(b.mul(acc, b.exp(b.neg(b.abs(s)))))


def test_a_special_function_sized_dag_is_one_kernel(rng):
    """Hundreds of elementwise ops at one shape (the torch special functions' rules):
    one kernel, not one per 64 ops (digamma was 7, one zeta 28)."""
    module = _series(60)
    inputs = [rng.uniform(-5, 5, (5, 7)).astype("f4"), rng.standard_normal((1, 7)).astype("f4")]
    after = check_same_numbers(module, inputs)
    (group,) = [op for op in after.walk() if isinstance(op, FusedOp)]
    assert len(_members(group)) == 5 * 60 + 5
    assert len(kernel_names(after)) == 1


def test_broadcast_producers_are_recomputed_within_bounds(rng):
    """A (1, 7) chain read by an (80, 7) op runs once per row in the fused kernel: a group
    takes at most max(64, its per-element ops) such ops; the rest is its own kernel."""
    b = tk.GraphBuilder()
    y = b.input("y", (80, 7))
    z = b.input("z", (1, 7))
    h = z
    for k in range(100):
        h = b.tanh(b.add(h, 0.01 * k)) if k % 2 else b.mul(h, 0.9)
    module = b.finish(b.relu(b.add(y, h)))
    inputs = [rng.standard_normal((80, 7)).astype("f4"), rng.standard_normal((1, 7)).astype("f4")]
    after = check_same_numbers(module, inputs)
    groups = [op for op in after.walk() if isinstance(op, FusedOp)]
    assert sorted(len(_members(g)) for g in groups) == [2 + 64, 150 - 64]


def test_concatenated_chains_are_computed_again_within_bounds(rng):
    """A concatenation computes every input for each element: rotate_half's
    ``cat([-x2, x1])`` with its consumers stays one kernel, while a 45-op chain read through
    two nested 2-way concatenations (4 times) is cut where the repeated work would pass
    ``max_copied_work`` (16): its start is a kernel of its own."""
    b = tk.GraphBuilder()
    q = b.input("q", (6, 8))
    x1, x2 = b.slice(q, [0], [4], [1], [1]), b.slice(q, [4], [8], [1], [1])
    rotated = b.concat([b.neg(x2), x1], axis=1)
    rope = check_same_numbers(b.finish(b.add(b.mul(q, 0.5), b.mul(rotated, 0.25))), [rng.standard_normal((6, 8)).astype("f4")])
    assert [len(_members(g)) for g in rope.walk() if isinstance(g, FusedOp)] == [7]

    b = tk.GraphBuilder()
    h = b.input("h", (6, 5))
    for k in range(30):
        h = b.tanh(b.add(h, 0.01 * k)) if k % 2 else b.mul(h, 0.9)
    inner = b.concat([h, b.input("g", (6, 5))], axis=1)
    module = b.finish(b.concat([inner, b.input("f", (6, 10))], axis=0))
    after = check_same_numbers(module, [rng.standard_normal(s).astype("f4") for s in ((6, 5), (6, 5), (6, 10))])
    # the chain's last 5 ops are computed 4 times each (3 extra: 15 <= 16); a sixth would pass 16
    assert sorted(len(_members(g)) for g in after.walk() if isinstance(g, FusedOp)) == [2 + 5, 45 - 5]


def test_torch_resnet_block_and_encoder_layer_kernel_counts(rng):
    """Batch norm folds into the convs and each conv fuses with its epilogue: a ResNet basic
    block is 2 kernels (4 with the transposes to NHWC and back of a lone block); a
    transformer encoder layer drops from ~56 kernels to at most 15: softmax and each
    layer norm (with the residual add before it) are one kernel each."""
    torch = pytest.importorskip("torch")
    from tensorkiln.examples.torch_zoo import BasicBlock
    from tensorkiln.frontends.torch import from_exported_program
    from tensorkiln.driver.pipelines import optimize_graph
    from tensorkiln.passes.pipeline import PassContext

    def kernels(module, opt_level, layout=None):
        work = module.clone()
        optimize_graph(work, PassContext(opt_level=opt_level, dump_ir=False), layout=layout)
        return len(kernel_names(work))

    torch.manual_seed(0)
    block = BasicBlock(8, 8).eval()
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 8, 9, 9)
    module = from_exported_program(torch.export.export(block, (x,)))
    assert kernels(module, 2, layout="NCHW") == 2 < kernels(module, 0)
    # in NHWC: the block's NCHW input and output are transposed once each, around the 2 convs
    assert kernels(module, 2) == 4
    with torch.no_grad():
        np.testing.assert_allclose(tk.build(module)(x.numpy()), block(x).numpy(), rtol=1e-4, atol=1e-5)

    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True, dropout=0.0).eval()
    x = torch.randn(1, 10, 32)
    module = from_exported_program(torch.export.export(layer, (x,)))
    assert kernels(module, 2) <= 15 < kernels(module, 0)
    work = module.clone()
    optimize_graph(work, PassContext(opt_level=2, dump_ir=False))
    names = kernel_names(work)
    assert sum("softmax" in n for n in names) == 1
    assert sum("reduce_mean" in n for n in names) == 2  # two layer norms, one kernel each
    with torch.no_grad():
        np.testing.assert_allclose(tk.build(module)(x.numpy()), layer(x).numpy(), rtol=1e-4, atol=1e-5)


def _chain_reading_each_value_thrice(steps: int):
    b = tk.GraphBuilder()
    x = b.input("x", (64,))
    y = x
    for _ in range(steps):
        y = b.tanh(b.add(b.mul(y, y), b.mul(y, b.constant(np.float32(0.5)))))
    return b.finish(y)


def test_a_fused_value_read_several_times_is_computed_once(rng):
    """te-to-loop computes an inlined producer's element once per block and indices: a
    fused chain whose every step reads the previous value three times emits loop IR
    linear in its length (it was 3**steps: 8 steps took 190 s to build)."""
    sizes = []
    for steps in (4, 8):
        loops = lower_to_loops(fused(_chain_reading_each_value_thrice(steps)))
        (kernel,) = [f for f in loops.ops if "tk.kernel" in f.attributes]
        sizes.append(sum(1 for _ in kernel.walk()))
    assert sizes[1] < 2.5 * sizes[0], f"loop IR ops for 4 and 8 steps: {sizes} (not linear)"
    module = _chain_reading_each_value_thrice(8)
    x = rng.standard_normal(64).astype(np.float32)
    reference = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(tk.build(module)(x), reference, rtol=1e-5, atol=1e-6)


def test_a_long_group_gets_a_short_kernel_name_and_keeps_its_tag():
    """A group of hundreds of ops is named by its first ops (symbols and profiles stay
    readable); the schedules still read every op from its ``tk.kernel`` tag."""
    b = tk.GraphBuilder()
    x = b.input("x", (4, 8))
    y = x
    for _ in range(40):
        y = b.tanh(b.add(y, 0.5))
    module = b.finish(y)
    (kernel,) = [f for f in lower_to_loops(fused(module)).ops if "tk.kernel" in f.attributes]
    assert kernel.sym_name.data == "add_tanh_add_tanh_add_tanh_add_tanh_add_tanh_etc_0"
    assert kernel.attributes["tk.kernel"].data.split("_").count("tanh") == 40
    a = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want = a
    for _ in range(40):
        want = np.tanh(want + np.float32(0.5))
    np.testing.assert_allclose(tk.build(module)(a), want, rtol=1e-5, atol=1e-6)
