"""Scans: graph.cumsum, cumprod, logcumsumexp, cumargmax/cumargmin (te.scan: one running
value per line, ``O(n)`` along the axis) and the torch ops that become them (cumsum,
cumprod, logcumsumexp, cummax, cummin). Compiled results are compared with numpy (to the
bit where the order of the arithmetic is numpy's: float sums and products run in element
order), with a float64 reference within the error bound of serial float32 summation, with
torch eager, and on the GPU path (emulated), on odd shapes with the scan axis first,
in the middle and last."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.driver.cuda import build_emulated, lower_to_gpu
from tensorkiln.driver.pipelines import TO_LOOPS
from tensorkiln.dialects import te
from tensorkiln.dialects.graph.indexing import running_extreme_positions
from tensorkiln.lowering.loop_to_gpu import gpu_module_of
from tensorkiln.passes.pipeline import PassContext, run_pipeline

SHAPE = (5, 7, 3)


def _scans(shape, dtype, ops=("cumsum", "cumprod")):
    """A module returning each op in ``ops`` along every axis (op-major)."""
    b = tk.GraphBuilder()
    x = b.input("x", shape, dtype)
    return b.finish(*(getattr(b, op)(x, axis) for op in ops for axis in range(len(shape))))


def _data(rng, shape, dtype) -> np.ndarray:
    if dtype.startswith("int"):
        # large enough that int32 sums and every product overflow: integers wrap as numpy's
        return rng.integers(-(1 << 28), 1 << 28, shape).astype(dtype)
    return (1 + rng.standard_normal(shape) / 4).astype(dtype)  # products near 1 stay finite


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_cumsum_and_cumprod_along_every_axis_match_numpy_to_the_bit(rng, dtype):
    """Element order without reassociation: the same roundings as numpy's accumulate."""
    lib = tk.build(_scans(SHAPE, dtype))
    x = _data(rng, SHAPE, dtype)
    got = lib(x)
    want = [np.cumsum(x, a, dtype=x.dtype) for a in range(3)] + [np.cumprod(x, a, dtype=x.dtype) for a in range(3)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_integer_scans_wrap():
    """int32 and int64 sums and products wrap (torch's int64 cumsum/cumprod)."""
    for dtype in (np.int32, np.int64):
        top = np.iinfo(dtype).max
        x = np.array([[top, 1, 1, top, 3], [top // 2 + 1, 2, 2, 2, -1]], dtype)
        got = tk.build(_scans(x.shape, np.dtype(dtype).name))(x)
        with np.errstate(over="ignore"):
            want = [np.cumsum(x, a, dtype=dtype) for a in (0, 1)] + [np.cumprod(x, a, dtype=dtype) for a in (0, 1)]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert got[1][0, 1] == np.iinfo(dtype).min  # max + 1


def test_a_long_axis_stays_within_the_bound_of_serial_float32_summation(rng):
    """5000 terms: bit-equal to numpy's float32 cumsum (same order), and within the
    recursive-summation bound ``(k - 1) * eps * sum |x_j|`` of the exact (float64) sums."""
    n = 5000
    b = tk.GraphBuilder()
    x = b.input("x", (3, n))
    lib = tk.build(b.finish(b.cumsum(x, 1)))
    data = rng.standard_normal((3, n)).astype(np.float32)
    got = lib(data)
    np.testing.assert_array_equal(got, np.cumsum(data, 1))
    exact = np.cumsum(data.astype(np.float64), 1)
    bound = np.arange(n) * np.finfo(np.float32).eps * np.cumsum(np.abs(data.astype(np.float64)), 1)
    assert np.all(np.abs(got - exact) <= bound + 1e-30)


def test_symbolic_batch(rng):
    """The lines' loop bounds and the scan's length come from the buffers at run time."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 6, 5))
    lib = tk.build(b.finish(*(b.cumsum(x, a) for a in range(3)), b.logcumsumexp(x, 0), b.cumargmin(x, 0)))
    for n in (1, 4, 9):
        data = rng.standard_normal((n, 6, 5)).astype(np.float32)
        *sums, lse, positions = lib(data)
        for a, got in enumerate(sums):
            np.testing.assert_array_equal(got, np.cumsum(data, a))
        np.testing.assert_allclose(lse, np.logaddexp.accumulate(data, 0), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(positions, running_extreme_positions(data, 0, "min"))


def _with_specials(rng, shape) -> np.ndarray:
    """Small integers as floats (many ties), NaNs, infinities and signed zeros."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, 12, replace=False)
    flat[picks[:3]], flat[picks[3:6]], flat[picks[6:8]] = np.nan, np.inf, -np.inf
    flat[picks[8:10]], flat[picks[10:]] = -0.0, 0.0
    return x


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_logcumsumexp_and_running_extremes_match_their_references(rng, axis):
    b = tk.GraphBuilder()
    x, i = b.input("x", SHAPE), b.input("i", SHAPE, "int32")
    lib = tk.build(
        b.finish(b.logcumsumexp(x, axis), b.cumargmax(x, axis), b.cumargmin(x, axis), b.cumargmax(i, axis))
    )
    data, ints = _with_specials(rng, SHAPE), rng.integers(-2, 3, SHAPE).astype(np.int32)
    lse, argmax, argmin, int_argmax = lib(data, ints)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(lse, np.logaddexp.accumulate(data, axis), rtol=1e-6, atol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(argmax, running_extreme_positions(data, axis, "max"))
    np.testing.assert_array_equal(argmin, running_extreme_positions(data, axis, "min"))
    np.testing.assert_array_equal(int_argmax, running_extreme_positions(ints, axis, "max"))


def test_running_extreme_positions_reference():
    """The last position on ties; a NaN is taken, and only a later NaN replaces it."""
    x = np.array([1.0, 3.0, 3.0, 2.0, 3.0, np.nan, 5.0, np.nan])
    assert running_extreme_positions(x, 0, "max").tolist() == [0, 1, 2, 2, 4, 5, 5, 7]
    assert running_extreme_positions(x, 0, "min").tolist() == [0, 0, 0, 0, 0, 5, 5, 7]


@pytest.mark.parametrize("kind", ["interpreter", "graph", "vm", "aot"])
def test_every_executor_runs_scans(rng, kind):
    b = tk.GraphBuilder()
    x = b.input("x", (4, 9))
    module = b.finish(b.cumsum(b.exp(x), 1), b.cumargmax(x, 0), b.logcumsumexp(x, 1))
    run = tk.create_executor(kind, module).evaluate()
    data = rng.standard_normal((4, 9)).astype(np.float32)
    sums, positions, lse = run(data)
    np.testing.assert_allclose(sums, np.cumsum(np.exp(data), 1), rtol=1e-6)
    np.testing.assert_array_equal(positions, running_extreme_positions(data, 0, "max"))
    np.testing.assert_allclose(lse, np.logaddexp.accumulate(data, 1), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# schedules: the lines run in parallel (CPU), one line per GPU thread


def test_cpu_default_schedule_runs_the_lines_in_parallel():
    """The serial loop along the axis counts as work: 64 lines of 4096 are worth threads."""
    b = tk.GraphBuilder()
    x = b.input("x", (64, 4096))
    module = b.finish(b.cumsum(x, 1))
    run_pipeline(module, TO_LOOPS + ("default-schedule",), PassContext(opt_level=0, dump_ir=False))
    (kernel,) = [f for f in module.ops if "tk.kernel" in f.attributes]
    assert kernel.attributes["tk.strategy"].data == "parallel_outer"
    kinds = {f.loop_name.data: f.kind.data for f in kernel.walk() if hasattr(f, "loop_name")}
    assert kinds == {"i0": "parallel", "scan0": "serial"}


def test_gpu_maps_each_line_to_a_thread(rng):
    """Every scan kernel is bound to blocks and threads (a 1-d scan: one thread), and the
    emulated kernels give the CPU's results."""
    b = tk.GraphBuilder()
    x, v = b.input("x", ("n", 7, 3)), b.input("v", (11,), "int64")
    module = b.finish(b.cumsum(x, 1), b.cumprod(x, 0), b.logcumsumexp(x, 2), b.cumargmax(x, 1), b.cumsum(v, 0))
    gpu_level, _ = lower_to_gpu(module)
    kernels = gpu_module_of(gpu_level).body.block.ops
    strategies = {k.sym_name.data: k.attributes["tk.gpu_strategy"].data for k in kernels}
    assert set(strategies.values()) == {"one_thread_per_element"}, strategies
    lib = build_emulated(module)
    data, ints = rng.standard_normal((5, 7, 3)).astype(np.float32), rng.integers(-9, 9, 11)
    sums, products, lse, positions, int_sums = lib(data, ints)
    np.testing.assert_array_equal(sums, np.cumsum(data, 1))
    np.testing.assert_array_equal(products, np.cumprod(data, 0))
    np.testing.assert_allclose(lse, np.logaddexp.accumulate(data, 2), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(positions, running_extreme_positions(data, 1, "max"))
    np.testing.assert_array_equal(int_sums, np.cumsum(ints))


# ---------------------------------------------------------------------------
# verifiers


def test_graph_op_errors():
    b = tk.GraphBuilder()
    with pytest.raises(VerifyException, match="input must be a float tensor"):
        b.logcumsumexp(b.input("i", (3, 4), "int32"), 1)
    with pytest.raises(VerifyException, match="input must be numeric"):
        b.cumargmax(b.input("m", (3, 4), "bool"), 0)
    with pytest.raises(VerifyException, match="axis 2 is out of range"):
        b.cumargmin(b.input("x", (3, 4)), 2)
    y = b.cumargmax(b.input("y", ("n", 4), "int32"), -1)
    assert str(y.type) == "tensor<?x4xi64, #graph.dims<n, _>>" and y.owner.axis.value.data == 1


def _te_scan(shape, dtype, axis, combiner):
    b = tk.GraphBuilder()
    x = b.input("x", shape, dtype)
    return te.ScanOp(x, axis, combiner)


@pytest.mark.parametrize(
    "dtype, axis, combiner, message",
    [
        ("float32", 1, "max", "unknown combiner 'max'"),
        ("float32", 2, "add", "axis 2 out of range"),
        ("int32", 0, "logaddexp", "'logaddexp' needs a float input"),
    ],
)
def test_te_scan_verifier(dtype, axis, combiner, message):
    with pytest.raises(VerifyException, match=message):
        _te_scan((3, 4), dtype, axis, combiner).verify()


def test_te_scan_result_types():
    assert str(_te_scan((3, 4), "int32", 1, "argmax").result.type) == "tensor<3x4xi64>"
    assert str(_te_scan((3, 4), "int32", 1, "mul").result.type) == "tensor<3x4xi32>"
    add = _te_scan((3, 4), "float32", 0, "add")
    wrong = te.ScanOp.create(
        operands=[add.input], result_types=[_te_scan((3, 4), "float32", 0, "argmin").result.type],
        properties=dict(add.properties),
    )
    with pytest.raises(VerifyException, match="gives tensor<3x4xf32>, not tensor<3x4xi64>"):
        wrong.verify()


# ---------------------------------------------------------------------------
# torch


def test_torch_scans_match_eager(rng):
    """cummax/cummin on ties, NaNs, infinities and signed zeros (values gathered at the
    positions: exactly torch's), on ints and bools; logcumsumexp with infinities and NaN,
    float64; 0-d inputs; the ops are exported as themselves."""
    torch = pytest.importorskip("torch")
    from tensorkiln.frontends.torch import from_exported_program

    class Scans(torch.nn.Module):
        def forward(self, x, i, m, s):
            return (
                *torch.cummax(x, 1), *torch.cummin(x, 0), *torch.cummax(i, -1), *torch.cummin(m, 1),
                torch.logcumsumexp(x, 1), torch.logcumsumexp(x.double(), 0), *torch.cummax(s, 0),
                torch.logcumsumexp(s, 0), torch.cumsum(s, 0), x.cumsum(-1), i.cumprod(0),
            )  # fmt: skip

    inputs = (
        torch.from_numpy(_with_specials(rng, (6, 9))),
        torch.from_numpy(rng.integers(-2, 3, (5, 7))),
        torch.from_numpy(rng.random((4, 7)) > 0.5),
        torch.tensor(1.5),
    )
    model = Scans()
    exported = torch.export.export(model, inputs)
    targets = {str(n.target) for n in exported.graph.nodes}
    assert {"aten.cummax.default", "aten.cummin.default", "aten.logcumsumexp.default"} <= targets
    lib = tk.build(from_exported_program(exported))
    got = lib(*[t.numpy() for t in inputs])
    for k, (g, e) in enumerate(zip(got, model(*inputs))):
        e = e.numpy()
        assert g.dtype == e.dtype and g.shape == e.shape, k
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"output {k}")
            if k in (0, 2):  # cummax/cummin values: torch's signed zeros too
                np.testing.assert_array_equal(np.signbit(g), np.signbit(e), err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"output {k}")


def test_torch_scans_with_a_symbolic_batch(rng):
    torch = pytest.importorskip("torch")
    from tensorkiln.frontends.torch import from_exported_program

    class PositionIds(torch.nn.Module):
        """Hugging Face's position ids from an attention mask, and a running maximum."""

        def forward(self, mask, x):
            return (mask.cumsum(-1) - 1) * mask, torch.cummax(x, 1).values

    mask = torch.ones(3, 10, dtype=torch.int64)
    x = torch.randn(3, 10)
    batch = torch.export.Dim("batch")
    exported = torch.export.export(PositionIds(), (mask, x), dynamic_shapes=({0: batch}, {0: batch}))
    lib = tk.build(from_exported_program(exported))
    for n in (1, 5):
        mask = torch.from_numpy((rng.random((n, 10)) > 0.3).astype(np.int64))
        x = torch.from_numpy(rng.standard_normal((n, 10)).astype(np.float32))
        for g, e in zip(lib(mask.numpy(), x.numpy()), PositionIds()(mask, x)):
            np.testing.assert_array_equal(g, e.numpy())
