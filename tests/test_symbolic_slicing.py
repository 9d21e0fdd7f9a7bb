"""Slicing, padding, concatenating and strided windows along symbolic dims: result dims
are expressions (``s0 - 1``, ``s0 + s1``, ``((s0 - 3)//2) + 1``) in one canonical
spelling (``runtime/dim_arith.py``); models exported with a dynamic sequence length
(KV-cache concat, last-token select, causal padding, strided conv) compile once and
match torch at several lengths; torch.export's symbol ranges are checked at call time."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph.types import shape_of
from tensorkiln.runtime import dim_arith
from tensorkiln.runtime.dim_expr import evaluate

# -- dim arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + s0 - 1", "s0"),
        ("s0*4", "4*s0"),
        ("s1 + s0 - 3", "s0 + s1 - 3"),
        ("((s27 - 1)//2)", "((s27 + 1)//2) - 1"),
        ("(s0 - 2)//2 + 1", "(s0//2)"),
        ("(2*s0 + s1 + 5)//2", "((s1 + 1)//2) + s0 + 2"),
        ("(((s0 + 1)//2)//2 + 1)//2", "((s0 + 5)//8)"),
        ("(4*s0 + 2)//2", "2*s0 + 1"),
        ("s0 - s0 + 7", 7),
        ("Max(s0, 1) + 0", "Max(1, s0)"),
        ("5 - s0", "-s0 + 5"),
        ("s1*s0 + s0*s1", "2*s0*s1"),
        ("((s53**2)//s53)", "s53"),  # XLNet's attention scores (torch's sympy spelling)
        ("(2*s0*s1 + 4*s0)//(2*s0)", "s1 + 2"),
        ("(s0*s1 + 1)//s0", "((s0*s1 + 1)//s0)"),  # not exact: kept whole
        ("Mod(s0, 4)", "-4*(s0//4) + s0"),  # x mod k = x - k*(x//k)
        ("Mod(-Mod(s0, 8) + 8, 8) + s0", "-8*((-s0)//8)"),  # s0 rounded up to a multiple of 8 (Mamba2)
    ],
)
def test_canonical_spelling(text, expected):
    assert dim_arith.canonical(text) == expected


def test_arithmetic_agrees_with_evaluation():
    rng = np.random.default_rng(3)
    dims = ["s0", "s0 - 1", "2*s0 + s1", "((s0 - 3)//2)", 5]
    for _ in range(50):
        a, b = rng.choice(len(dims), 2)
        k = int(rng.integers(1, 5))
        values = {"s0": int(rng.integers(3, 40)), "s1": int(rng.integers(0, 9))}
        x, y = dims[a], dims[b]

        def ev(d):
            return d if isinstance(d, int) else evaluate(d, values)

        assert ev(dim_arith.add(x, y)) == ev(x) + ev(y)
        assert ev(dim_arith.sub(x, y)) == ev(x) - ev(y)
        assert ev(dim_arith.mul(x, k)) == ev(x) * k
        assert ev(dim_arith.floordiv(x, k)) == ev(x) // k
        assert ev(dim_arith.ceildiv(x, k)) == -(-ev(x) // k)


def test_solve_linear_dims():
    assert dim_arith.solve("2*s0 + 1", 9) == {"s0": 4}
    assert dim_arith.solve("2*s0 + 1", 8) is None
    assert dim_arith.solve("s0*s1", 8) is None
    assert dim_arith.linear_symbol("3*n - 2") == "n" and dim_arith.linear_symbol("(n//2)") is None


# -- graph ops on symbolic axes -----------------------------------------------------------------


def _build(inputs, body):
    b = tk.GraphBuilder()
    values = [b.input(name, shape, "float32") for name, shape in inputs]
    module = b.finish(body(b, *values))
    return module, tk.build(module), tk.create_executor("interpreter", module).evaluate()


def test_slices_of_a_symbolic_axis_from_both_ends(rng):
    module, lib, ref = _build(
        [("x", (3, "n"))],
        lambda b, x: b.concat(
            [b.slice(x, [1], [None], [1]), b.slice(x, [0], [-1], [1]), b.slice(x, [-4], [-1], [1], [2])], axis=1
        ),
    )
    (out_type,) = module.body.block.first_op.function_type.outputs.data
    assert shape_of(out_type) == (3, "2*n")  # (n - 1) + (n - 1) + 2
    for n in (4, 5, 11):
        x = rng.standard_normal((3, n)).astype("f4")
        want = np.concatenate([x[:, 1:], x[:, :-1], x[:, -4:-1:2]], 1)
        assert lib(x).shape == want.shape == (3, 2 * n)
        np.testing.assert_array_equal(lib(x), want)
        np.testing.assert_array_equal(ref(x), want)


@pytest.mark.parametrize("executor", ["aot", "graph", "vm", "interpreter"])
def test_a_size_too_small_for_a_slice_is_a_clear_error(executor):
    """Without torch.export's ranges (a model built by hand), a call whose size makes
    a computed dim negative is refused by every executor, naming the dim."""
    b = tk.GraphBuilder()
    x = b.input("x", (2, "n"))
    module = b.finish(b.relu(b.slice(x, [2], [None], [1])))
    run = tk.create_executor(executor, module).evaluate()
    assert run(np.ones((2, 2), "f4")).shape == (2, 0)
    with pytest.raises(ValueError, match=r"too small for the model: its dim 'n - 2' is -1 at n=1"):
        run(np.ones((2, 1), "f4"))
    # a window of static length on the symbolic axis: its end must lie inside
    b = tk.GraphBuilder()
    module = b.finish(b.slice(b.input("x", (2, "n")), [2], [7], [1]))
    run = tk.create_executor(executor, module).evaluate()
    x = np.arange(14, dtype="f4").reshape(2, 7)
    np.testing.assert_array_equal(run(x), x[:, 2:7])
    with pytest.raises(ValueError, match=r"its dim 'n - 7' is -3 at n=4"):
        run(np.ones((2, 4), "f4"))


def test_pad_and_crop_a_symbolic_axis(rng):
    _, lib, ref = _build([("x", (2, "n", 3))], lambda b, x: b.pad(b.pad(x, [0, 2, 0], [0, 1, 0], 1.5), [0, -1, 0], [0, 0, 0]))
    for n in (1, 6):
        x = rng.standard_normal((2, n, 3)).astype("f4")
        want = np.pad(x, ((0, 0), (2, 1), (0, 0)), constant_values=1.5)[:, 1:]
        np.testing.assert_array_equal(lib(x), want)
        np.testing.assert_array_equal(ref(x), want)


def test_concat_of_two_symbolic_axes(rng):
    _, lib, _ = _build([("k", (2, "n", 4)), ("v", (2, "m", 4))], lambda b, k, v: b.concat([k, v, k], axis=1))
    for n, m in ((3, 1), (1, 7)):
        k, v = rng.standard_normal((2, n, 4)).astype("f4"), rng.standard_normal((2, m, 4)).astype("f4")
        np.testing.assert_array_equal(lib(k, v), np.concatenate([k, v, k], 1))


def test_strided_windows_on_symbolic_axes_infer_expression_dims():
    b = tk.GraphBuilder()
    x = b.input("x", (1, 3, "h", "w"))
    conv = b.conv2d(x, b.constant(np.ones((6, 3, 3, 3), "f4")), strides=2, padding=1)
    pool = b.max_pool2d(x, kernel=2)
    up = b.conv2d_transpose(x, b.constant(np.ones((3, 2, 3, 3), "f4")), strides=2)
    assert shape_of(conv.type) == (1, 6, "((h + 1)//2)", "((w + 1)//2)")
    assert shape_of(pool.type) == (1, 3, "(h//2)", "(w//2)")
    assert shape_of(up.type) == (1, 2, "2*h + 1", "2*w + 1")
    with pytest.raises(Exception, match=r"symbolic \(h\): with ceil_mode and stride 2"):
        b.max_pool2d(x, kernel=2, ceil_mode=True)


# -- torch models with a dynamic sequence length ---------------------------------------------------

torch = pytest.importorskip("torch", reason="the model tests need torch")
from torch.export import Dim  # noqa: E402

from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

nn, F = torch.nn, torch.nn.functional


class CausalConvNet(nn.Module):
    """WaveNet-style: left padding on the time axis, dilated and strided 1-d convs."""

    def __init__(self):
        super().__init__()
        self.dilated = nn.Conv1d(3, 8, 2, dilation=2)
        self.down = nn.Conv1d(8, 5, 3, stride=2)
        self.up = nn.ConvTranspose1d(5, 4, 4, stride=2, padding=1)

    def forward(self, x):
        h = torch.tanh(self.dilated(F.pad(x, (2, 0))))
        return self.up(self.down(h)), h[:, :, -1]


class DecoderStep(nn.Module):
    """One attention step with a KV cache: the new key/value concatenated to the cache
    (symbolic length), the last position's logits."""

    def __init__(self, d=16):
        super().__init__()
        self.q, self.k, self.v, self.out = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, 11)

    def forward(self, x, k_cache, v_cache):
        k = torch.cat([k_cache, self.k(x)], 1)
        v = torch.cat([v_cache, self.v(x)], 1)
        att = (self.q(x) @ k.transpose(1, 2)).softmax(-1)
        h = att @ v
        return self.out(h[:, -1]), k[:, 1:], x[:, :, 1:] - x[:, :, :-1]


def _check_at_lengths(model, args, dynamic_shapes, lengths, grow_axes):
    model.eval()
    lib = tk.build(from_exported_program(torch.export.export(model, args, dynamic_shapes=dynamic_shapes)))
    for length in lengths:
        resized = []
        for a, axes in zip(args, grow_axes):
            shape = list(a.shape)
            for axis in axes:
                shape[axis] = length
            resized.append(torch.randn(*shape))
        with torch.no_grad():
            want = model(*resized)
        got = lib(*[a.numpy() for a in resized])
        for g, w in zip(got if isinstance(got, list | tuple) else [got], want if isinstance(want, tuple) else [want]):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)
    return lib


def test_causal_conv_net_at_several_lengths():
    torch.manual_seed(0)
    t = Dim("t", min=6, max=200)
    _check_at_lengths(CausalConvNet(), (torch.randn(2, 3, 20),), ({2: t},), (6, 7, 31, 64), [(2,)])


def test_decoder_step_with_a_growing_cache():
    torch.manual_seed(1)
    n = Dim("n", min=2, max=512)
    args = (torch.randn(1, 1, 16), torch.randn(1, 9, 16), torch.randn(1, 9, 16))
    lib = _check_at_lengths(DecoderStep(), args, (None, {1: n}, {1: n}), (2, 5, 33), [(), (1,), (1,)])
    with pytest.raises(ValueError, match=r"argument 'k_cache' dim 1: 'n' = 1 is outside \[2, 512\]"):
        lib(np.zeros((1, 1, 16), "f4"), np.zeros((1, 1, 16), "f4"), np.zeros((1, 1, 16), "f4"))


def test_a_bounded_slice_is_checked_against_the_exported_range(tmp_path):
    class Window(nn.Module):
        def forward(self, x):
            return x[:, 2:7] * 2

    t = Dim("t", min=7, max=64)
    lib = _check_at_lengths(Window(), (torch.randn(2, 10),), ({1: t},), (7, 64), [(1,)])
    with pytest.raises(ValueError, match=r"argument 'x' dim 1: 't' = 5 is outside \[7, 64\]"):
        lib(np.zeros((2, 5), "f4"))
    # a deployed artifact keeps the range
    from tensorkiln.runtime.artifact import load_module

    lib.export_library(tmp_path / "window.tk")
    deployed = load_module(tmp_path / "window.tk")
    x = np.random.default_rng(0).standard_normal((2, 9)).astype("f4")
    np.testing.assert_array_equal(deployed(x), x[:, 2:7] * 2)
    with pytest.raises(ValueError, match=r"'t' = 65 is outside \[7, 64\]"):
        deployed(np.zeros((2, 65), "f4"))


class PositionTable(nn.Module):
    """BERT's embeddings: a fixed table of positions (a static axis) cut to the input's
    length (``table[:, :seq]``, ``table[:, start:seq:2]``, the last ``seq - 1``)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(1, 40, 4))

    def forward(self, x):
        seq = x.shape[1]
        return x + self.table[:, :seq], self.table[:, 1:seq:2] * 2, self.table[:, 40 - (seq - 1):]


def test_static_axes_sliced_at_symbolic_bounds():
    torch.manual_seed(3)
    t = Dim("t", min=4, max=40)  # (torch specialises slices of one element)
    _check_at_lengths(PositionTable(), (torch.randn(2, 9, 4),), ({1: t},), (4, 9, 40), [(1,)])


class ShiftedTokens(nn.Module):
    """Seq2seq decoder inputs (BART's shift_tokens_right: slice assignments along the
    symbolic axis), XLNet's relative positions (an arange starting at a size), a slice
    torch proves whole (the last 64 of at most 63), and a pad computed from the length."""

    def forward(self, ids, x):
        shifted = ids.new_zeros(ids.shape)
        shifted[:, 1:] = ids[:, :-1].clone()
        shifted[:, 0] = 7
        shifted[:, 2::3] = -1
        n = x.shape[1]
        chunks = F.pad(x, (1, (4 - n % 4) % 4), value=-1.0)  # to a multiple of 4 after one (Mamba2's chunks)
        return shifted, torch.arange(n, -n, -1.0), x[:, -64:] * 2, chunks


def test_assignments_and_aranges_on_symbolic_axes():
    t = Dim("t", min=6, max=63)  # (torch's guards: t // 3 != 1, and the whole slice)
    args = (torch.randint(0, 50, (2, 9)), torch.randn(2, 9))
    model = ShiftedTokens()
    lib = tk.build(from_exported_program(torch.export.export(model, args, dynamic_shapes=({1: t}, {1: t}))))
    for length in (6, 9, 63):
        ids, x = torch.randint(0, 50, (2, length)), torch.randn(2, length)
        for got, want in zip(lib(ids.numpy(), x.numpy()), model(ids, x)):
            assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
            np.testing.assert_array_equal(got, want.numpy())


def test_split_of_a_symbolic_axis_is_refused_by_name():
    """Pieces whose bounds are neither constants nor the end minus one (``s0`` of
    ``2*s0``) are not expressible yet: a clear error, not a wrong slice."""

    class Halves(nn.Module):
        def forward(self, x):
            a, b = x.chunk(2, -1)
            return a * torch.sigmoid(b)

    h = Dim("h", min=1, max=64)
    ep = torch.export.export(Halves(), (torch.randn(3, 10),), dynamic_shapes=({1: 2 * h},))
    with pytest.raises(Exception, match=r"split_with_sizes.*pieces of symbolic sizes"):
        from_exported_program(ep)


def test_cnn_at_any_image_size():
    """Strided convs and pooling on symbolic height and width (a dynamic-resolution
    export): compiled once, matching torch at odd sizes."""

    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 4, 3, stride=2), nn.ConvTranspose2d(4, 2, 2, stride=2),
    )  # fmt: skip
    torch.manual_seed(2)
    h, w = Dim("h", min=32, max=256), Dim("w", min=32, max=256)
    _check_at_lengths(model, (torch.randn(1, 3, 32, 40),), ({2: h, 3: w},), (33, 47), [(2, 3)])


def test_sizes_used_as_numbers():
    """A SymInt in arithmetic (``x.shape[1] - 1``, torch.roll's index math on a symbolic
    axis) is computed at run time from the input's dims."""

    class SizeMath(nn.Module):
        def forward(self, x):
            return x.sum(1) / x.shape[1] + (x.shape[1] - 1) * x[:, 0], torch.roll(x, 2, 1)

    t = Dim("t", min=2, max=99)
    _check_at_lengths(SizeMath(), (torch.randn(2, 9),), ({1: t},), (2, 5, 31), [(1,)])


def test_decoder_step_on_the_emulated_gpu_and_every_executor():
    """The same kernels on the GPU path (emulated on the CPU: every block and thread)
    and in the interpreter, graph executor and VM, at a cache length not exported."""
    from tensorkiln.driver.cuda import build_emulated

    torch.manual_seed(3)
    model = DecoderStep().eval()
    n = Dim("n", min=2, max=512)
    args = (torch.randn(1, 1, 16), torch.randn(1, 9, 16), torch.randn(1, 9, 16))
    module = from_exported_program(torch.export.export(model, args, dynamic_shapes=(None, {1: n}, {1: n})))
    x = (torch.randn(1, 1, 16), torch.randn(1, 13, 16), torch.randn(1, 13, 16))
    with torch.no_grad():
        want = [w.numpy() for w in model(*x)]
    runs = {kind: tk.create_executor(kind, module).evaluate() for kind in ("interpreter", "graph", "vm")}
    runs["emulated gpu"] = build_emulated(module)
    for kind, run in runs.items():
        for got, expected in zip(run(*[a.numpy() for a in x]), want):
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5, err_msg=kind)


def test_sliding_windows_of_tensor_unfold():
    """``Tensor.unfold`` (audio framing): windows along a static axis of a 4-d tensor,
    and along a symbolic axis (the window count an expression of it)."""

    class Frames(nn.Module):
        def forward(self, x):
            return x.unfold(1, 4, 2).sum(-1), x.unfold(-1, 5, 3)

    class Patches(nn.Module):
        def forward(self, x):
            return x.unfold(2, 3, 1)

    t = Dim("t", min=8, max=99)
    _check_at_lengths(Frames(), (torch.randn(2, 20),), ({1: t},), (8, 21, 40), [(1,)])
    _check_at_lengths(Patches(), (torch.randn(2, 5, 7, 3),), None, (7,), [()])


@pytest.mark.parametrize(
    ("source", "target"),
    [(("n", 6, 4), ("n", 24)), ((1, "n", 12), ("n", 3, 4)), (("n", 2, 6), (1, "n", 3, 4)), ((2, "n", 3, 4), (2, "n", 12))],
)
def test_reshapes_keeping_a_symbolic_dim_divide_by_no_symbol(source, target, rng):
    """The dims a reshape keeps at either end (a symbolic batch or sequence, size-1
    dims) index the input directly: no per-element division by a run-time size (a
    BERT-size encoder at a symbolic sequence: 74 -> 47 ms of kernels per 2 layers)."""
    from xdsl.dialects import arith

    from tensorkiln.build import lower_to_loops
    from tensorkiln.schedule import kernels
    from tensorkiln.schedule.nest import static_value

    b = tk.GraphBuilder()
    module = b.finish(b.reshape(b.input("x", source, "float32"), target))
    for kernel in kernels(lower_to_loops(module)):
        for op in kernel.walk():
            if isinstance(op, arith.DivUIOp | arith.FloorDivSIOp | arith.DivSIOp | arith.RemSIOp | arith.RemUIOp):
                assert static_value(op.rhs) is not None, str(kernel)
    lib = tk.build(module)
    for n in (1, 5):
        shape = tuple(n if d == "n" else d for d in source)
        x = rng.standard_normal(shape).astype("f4")
        np.testing.assert_array_equal(lib(x), x.reshape(tuple(n if d == "n" else d for d in target)))


class ChunkedHeads(nn.Module):
    """Mamba2's chunking: the sequence padded to a multiple of 8 (``-8*((-s)//8)``
    positions), projected to heads, cut into chunks of 8 and regrouped by head. The
    regrouping kernel's buffers are all padded; the chunk count ``-((-s)//8)`` of the
    tensors inside it is not linear in anything they give, so the length is passed in."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4, 3))

    def forward(self, x):
        b, n, d = x.shape
        padded = F.pad(x, (0, 0, 0, (8 - n % 8) % 8))
        heads = torch.einsum("bnd,dhe->bnhe", padded, self.w)
        chunks = heads.reshape(b, -1, 8, 4, 3).permute(0, 3, 1, 2, 4).reshape(-1, 8, 3)
        return chunks.cumsum(1)


def test_a_kernel_given_the_length_its_padded_buffers_lose(tmp_path):
    from strategy_helpers import scheduled_loops
    from tensorkiln.driver.cuda import build_emulated
    from tensorkiln.dialects import loop
    from tensorkiln.runtime.artifact import load_module
    from tensorkiln.schedule import kernels

    torch.manual_seed(4)
    model = ChunkedHeads()
    module = from_exported_program(torch.export.export(model, (torch.randn(2, 9, 4),), dynamic_shapes=({1: Dim.AUTO},)))
    # the regrouping kernel reads a padded buffer, is passed the model's input for its
    # length (never read), and reads the length off it
    regroup = next(k for k in kernels(scheduled_loops(module, 256)) if k.sym_name.data.startswith("reshape_transpose"))
    padded, carrier, out = regroup.body.block.args
    assert str(carrier.type) == "memref<2x?x4xf32>" and str(padded.type) == "memref<1x?x12xf32>"
    assert not any(isinstance(op, loop.LoadOp) and op.buffer is carrier for op in regroup.walk())
    assert any(isinstance(op, loop.DimOp) and op.buffer is carrier for op in regroup.walk())
    runs = {kind: tk.create_executor(kind, module).evaluate() for kind in ("interpreter", "graph", "vm")}
    runs["emulated gpu"] = build_emulated(module)
    tk.build(module).export_library(tmp_path / "chunked.tk")
    runs["deployed"] = load_module(tmp_path / "chunked.tk")
    for length in (3, 16, 21):
        x = torch.randn(2, length, 4)
        with torch.no_grad():
            want = model(x).numpy()
        for kind, run in runs.items():
            got = np.asarray(run(x.numpy()))
            assert got.shape == want.shape, kind
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{kind} at {length}")


def test_sizes_with_max_and_min_decided_by_the_ranges(rng):
    """MPT's ALiBi pattern: a static table sliced at ``max(0, 16 - s)`` (and ``:min(16, s)``)
    and added to an ``s``-long axis. torch.export records the sizes as ``16 - Max(0, 16 - s)``
    and ``Min(16, s)`` and assumes ``s <= 16``; under that range both are ``s``, so the
    import decides the extrema (it refused the broadcast before)."""

    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.from_numpy(rng.standard_normal((1, 16)).astype(np.float32)))

        def forward(self, x):
            s = x.shape[1]
            return x + self.table[:, max(0, 16 - s) :] + self.table[:, : min(16, s)] * 2

    model = Bias()
    program = torch.export.export(model, (torch.randn(3, 7),), dynamic_shapes=({1: Dim.AUTO},))
    assert any("Max" in str(n.meta["val"].shape) for n in program.graph.nodes if "slice" in str(n.target))
    lib = tk.build(from_exported_program(program))
    for s in (2, 9, 16):
        x = torch.from_numpy(rng.standard_normal((3, s)).astype(np.float32))
        np.testing.assert_allclose(lib(x.numpy()), model(x).numpy(), rtol=1e-6, atol=1e-6)
