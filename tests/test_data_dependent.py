"""Sizes read from data and run-time checks: ``nonzero``, ``masked_select``, ``x[mask]``,
``x[mask] = values``, ``item()`` used as a size, and the assertions a model makes
(``torch._check``, transformers' input checks), on every executor that runs them: the
interpreter, the VM ``tk.build`` makes for them, a deployed VM artifact. Compared with
torch eager on fresh random inputs, including masks with no true element."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph.host import CheckOp, DataSizeOp  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.driver.vm import VMModule  # noqa: E402
from tensorkiln.frontends.builder import GraphBuilder  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.runtime import load_module  # noqa: E402
from tensorkiln.runtime.host_checks import DataDependentSizeError, RuntimeCheckError  # noqa: E402

from torch_op_cases import Fn, flat  # noqa: E402


def executors(module, tmp_path=None) -> list:
    runs = [tk.create_executor("interpreter", module).evaluate(), tk.build(module)]
    if tmp_path is not None:
        runs[1].export_library(tmp_path / "model")
        runs.append(load_module(tmp_path / "model"))
    return runs


def check(fn, make_inputs, rng, *, runs: int = 3, dynamic_shapes=None, tmp_path=None):
    """Export ``fn`` once, then compare every executor with torch on ``runs`` fresh inputs
    (``make_inputs(rng, k)``: the k-th set; k = 0 makes the one exported)."""
    model = Fn(fn).eval()
    kwargs = {} if dynamic_shapes is None else {"dynamic_shapes": (tuple(dynamic_shapes),)}
    module = from_exported_program(torch.export.export(model, make_inputs(rng, 0), **kwargs))
    compiled = executors(module, tmp_path)
    assert isinstance(compiled[1], VMModule)
    for k in range(1, runs + 1):
        inputs = make_inputs(rng, k)
        expected = [t.numpy() for t in flat(model(*inputs))]
        for run in compiled:
            got = run(*[t.numpy() for t in inputs])
            got = list(got) if isinstance(got, tuple) else [got]
            assert len(got) == len(expected)
            for j, (g, e) in enumerate(zip(got, expected)):
                assert g.shape == e.shape and g.dtype == e.dtype, f"output {j}: {g.shape} {g.dtype}, torch {e.shape} {e.dtype}"
                np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=f"output {j}")
    return module, compiled


def randn(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def mask(rng, k, *shape, p=0.5):
    """A random mask; the second set has no true element, the third only true ones."""
    if k == 2:
        return torch.zeros(shape, dtype=torch.bool)
    if k == 3:
        return torch.ones(shape, dtype=torch.bool)
    return torch.from_numpy(rng.random(shape) < p)


def test_nonzero_family(rng):
    """nonzero of floats, ints and bools of ranks 0 to 3, argwhere, as_tuple; one symbol
    per call, the same for two calls on one tensor (torch.export names them once)."""

    def fn(x, m, i):
        return (
            torch.nonzero(x * m), torch.argwhere(m), torch.nonzero(m, as_tuple=True)[2],
            torch.nonzero(i), torch.nonzero(i[0, 0, 0]), torch.nonzero(x[0, :, 1] > 0) * 10,
        )  # fmt: skip

    def inputs(r, k):
        m = mask(r, k, 3, 5, 2)
        return randn(r, 3, 5, 2), m, torch.from_numpy(r.integers(-1, 2, (3, 5, 2)))

    check(fn, inputs, rng)


def test_boolean_mask_indexing(rng, tmp_path):
    """x[mask] over leading and middle axes, a 2-d mask, masked_select with broadcasting,
    with a symbolic batch; then a reduction and arithmetic on the selected rows."""

    def fn(x, m, rows):
        picked = x[m]  # (u, 4)
        middle = x[:, m[0]]  # (b, u', 4)
        return picked.relu().sum(0), picked * 2, middle, torch.masked_select(x, rows[:, None, None] > 0), x[rows > 0][:, 1:]

    def inputs(r, k):
        b = 2 + k
        return randn(r, b, 6, 4), mask(r, k, b, 6), randn(r, b)

    batch = torch.export.Dim("batch", min=2, max=64)
    check(fn, inputs, rng, dynamic_shapes=({0: batch}, {0: batch}, {0: batch}), tmp_path=tmp_path)


def test_mask_with_other_indices(rng):
    """A boolean mask beside integer indices: its nonzero columns in their place
    (torch's advanced indexing: the index shapes broadcast)."""

    def fn(x, m, i):
        return x[m, i[:1]], x[m, :, i[:1]]

    check(fn, lambda r, k: (randn(r, 5, 4, 3), mask(r, k, 5), torch.tensor([1, 0, 2])), rng)


def test_masked_assignment_of_many_values(rng):
    """x[mask] = values, one row per selected element (values of the selection itself,
    broadcast over trailing axes), += with accumulate, a single value, a middle axis."""

    def fn(x, m, v):
        a = x.clone()
        a[m] = a[m] * 3 + 1
        b = x.clone()
        b[m] = 7.0
        c = x.clone()
        c.index_put_((m,), x[m].flip(0), accumulate=True)
        d = x.clone()
        d[:, m[1]] = v[:4, None]  # one value per row of the first axis, broadcast over the selection
        return a, b, c, d

    check(fn, lambda r, k: (randn(r, 4, 5), mask(r, k, 4, 5), randn(r, 5)), rng)


def test_masked_assignment_with_the_wrong_count_raises(rng):
    """Fewer values than selected elements: torch raises, so does every executor."""

    def fn(x, m, v):
        x = x.clone()
        x[m] = v
        return x

    m = torch.tensor([True, False, True, True, False])
    module = from_exported_program(torch.export.export(Fn(fn), (torch.randn(5), m, torch.randn(3)), strict=False))
    for run in executors(module):
        np.testing.assert_allclose(run(np.ones(5, np.float32), m.numpy(), np.arange(3, dtype=np.float32)), [0, 1, 1, 2, 1])
        with pytest.raises(RuntimeCheckError, match="shape mismatch"):
            run(np.ones(5, np.float32), np.ones(5, bool), np.arange(3, dtype=np.float32))


def test_item_as_a_size_and_a_value(rng, tmp_path):
    """``n.item()`` as the length of an arange and a slice end, and as a number."""

    def fn(x, n):
        k = n.item()
        torch._check_is_size(k)
        torch._check(k <= x.shape[0])
        return torch.arange(k) * 2, x[:k] + 1, x * k

    def inputs(r, k):
        return randn(r, 7, 3), torch.tensor(int(r.integers(0, 8)) if k != 2 else 0)

    _, compiled = check(fn, inputs, rng, tmp_path=tmp_path)
    for run in compiled:  # torch: "Runtime assertion failed for expression u0 <= 7"
        with pytest.raises(RuntimeCheckError, match=r"u\d+ is .*outside (its|the) range \[0, 7\]"):
            run(np.ones((7, 3), np.float32), np.array(9))


def test_model_assertions_are_checked(rng):
    """torch._check on data (an item() compared with a size): torch.export folds it
    into the item's range ([3, 3]), which one graph.check tests (the item is no size:
    no graph.data_size, the model stays one function)."""

    def fn(x, ids):
        tokens = (ids == 3).sum()
        torch._check(tokens.item() == x.shape[0], lambda: "one row of x per image token")
        return x * 2

    ids = torch.tensor([1, 3, 3, 0, 3])
    module = from_exported_program(torch.export.export(Fn(fn), (torch.randn(3, 2), ids)))
    assert len([op for op in module.walk() if isinstance(op, CheckOp)]) == 1
    assert not [op for op in module.walk() if isinstance(op, DataSizeOp)]
    for run in executors(module):
        np.testing.assert_allclose(run(np.ones((3, 2), np.float32), ids.numpy()), np.full((3, 2), 2.0))
        with pytest.raises(RuntimeCheckError):
            run(np.ones((3, 2), np.float32), np.array([3, 3, 0, 0, 0]))


def test_an_item_equal_to_an_input_size():
    """torch._check(n.item() == x.shape[0]) with a symbolic x: torch.export calls the
    item s0 from then on; the value is checked against x's size."""

    def fn(x, n):
        k = n.item()
        torch._check(k == x.shape[0])
        return torch.arange(k) + x

    batch = torch.export.Dim("batch", min=2, max=32)
    module = from_exported_program(torch.export.export(Fn(fn), (torch.randn(4), torch.tensor(4)), dynamic_shapes=(({0: batch}, None),)))
    for run in executors(module):
        np.testing.assert_allclose(run(np.ones(6, np.float32), np.array(6)), np.arange(6) + 1.0)
        with pytest.raises(RuntimeCheckError, match=r"is not batch, what the model was exported for"):
            run(np.ones(6, np.float32), np.array(5))


def test_an_all_true_input_check(rng):
    """transformers' ``torch_compilable_check``: ``_is_all_true(...).item()`` through
    ``sym_ite``; a boolean item() needs no size read, the model stays one function."""

    def fn(x, ids):
        ok = torch.all(ids[:, :2] == 5)
        torch._check(ok.item(), lambda: "every row starts with two 5s")
        return x + 1

    ids = torch.tensor([[5, 5, 1], [5, 5, 2]])
    module = from_exported_program(torch.export.export(Fn(fn), (torch.randn(2, 3), ids)))
    assert not [op for op in module.walk() if isinstance(op, DataSizeOp)]
    lib = tk.build(module)
    # a straight-line function (no VM): the check's predicate is one more result
    assert lib.signature.checks and len(lib.signature.outputs) == 1
    for run in (lib, lib.graph_executor()):
        np.testing.assert_allclose(run(np.zeros((2, 3), np.float32), ids.numpy()), np.ones((2, 3)))
        with pytest.raises(RuntimeCheckError):
            run(np.zeros((2, 3), np.float32), np.array([[5, 4, 1], [5, 5, 2]]))


def test_masked_scatter_and_put_raise_where_torch_raises(rng):
    def fn(x, m, source, index):
        return x.masked_scatter(m, source), torch.put(x, index, source[:2])

    example = (torch.randn(6), torch.ones(6, dtype=torch.bool), torch.randn(3), torch.tensor([0, -6]))
    module = from_exported_program(torch.export.export(Fn(fn), example))
    x, source = np.arange(6, dtype=np.float32), -np.arange(1, 4, dtype=np.float32)
    few = np.array([True, False, True, False, False, False])
    for run in executors(module):
        placed, put = run(x, few, source, np.array([5, -6]))
        np.testing.assert_allclose(placed, [-1, 1, -2, 3, 4, 5])
        np.testing.assert_allclose(put, [-2, 1, 2, 3, 4, -1])
        with pytest.raises(RuntimeCheckError, match="Number of elements of source < number of ones in mask"):
            run(x, np.ones(6, bool), source, np.array([5, -6]))
        with pytest.raises(IndexError, match=r"put of .*: an index is out of range \[-6, 6\)"):
            run(x, few, source, np.array([6, 0]))


def test_vm_reads_independent_sizes_together(rng):
    """Three selections of independent data: one function computes the three counts,
    three size reads, one function the rest (not a function per size)."""

    def fn(x, y):
        return x[x > 0], y[y < 0], torch.nonzero(x > y)

    module = from_exported_program(torch.export.export(Fn(fn), (torch.randn(9), torch.randn(9))))
    lib = tk.build(module)
    assert [ins[0] for ins in lib.program.code] == ["call", "size", "size", "size", "call", "ret"]
    x, y = rng.standard_normal(9).astype(np.float32), rng.standard_normal(9).astype(np.float32)
    a, b, c = lib(x, y)
    np.testing.assert_array_equal(a, x[x > 0])
    np.testing.assert_array_equal(b, y[y < 0])
    np.testing.assert_array_equal(c, np.argwhere(x > y))


def test_host_ops_in_a_hand_written_graph():
    """graph.data_size and graph.check from the builder: the VM's program, the interpreter,
    and an out-of-range size."""
    from tensorkiln.dialects.graph.types import element_type_of

    b = GraphBuilder()
    x = b.input("x", ("n",))
    count = b.reduce_sum(b.cast(b.compare(x, 0.0, "gt"), element_type_of(np.int64)), [0])
    carrier = b.data_size(count, "u0", 0, 50)
    b.check(b.compare(b.reduce_sum(x, [0]), 100.0, "lt"), "the sum must stay below 100")
    module = b.finish(b.full(("u0",), 2.0, element_type_of(np.float32), [carrier]))
    text = str(module)
    assert 'graph.data_size %3 {upper = 50 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>' in text
    assert 'graph.check %7 {message = "the sum must stay below 100"} : tensor<i1>' in text
    lib = tk.build(module)
    assert "size r" in lib.program.disassemble() and "check r" in lib.program.disassemble()
    for run in (lib, tk.create_executor("interpreter", module).evaluate()):
        got = run(np.array([1, -2, 3, 0.5, -1], np.float32))
        np.testing.assert_array_equal(got, np.full(3, 2.0, np.float32))
        with pytest.raises(RuntimeCheckError, match="below 100"):
            run(np.full(40, 3.0, np.float32))
        with pytest.raises(DataDependentSizeError, match="u0 is 60"):
            run(np.full(60, 0.5, np.float32))


def test_paths_that_compile_one_function_say_what_runs_host_ops():
    module = from_exported_program(torch.export.export(Fn(lambda x: x[x > 0]), (torch.randn(5),)))
    with pytest.raises(ValueError, match="graph executor cannot run .* sizes read from data"):
        tk.create_executor("graph", module).evaluate()
    with pytest.raises(UnsupportedOperatorError, match="graph.data_size .* run by the VM"):
        tk.emit_source(module, target="cuda")


def test_host_ops_parse_and_verify():
    text = """func.func @main(%c: tensor<i64>, %p: tensor<i1>) -> tensor<?x0xi8, #graph.dims<u0, _>> {
      %k = graph.data_size %c {lower = 1 : i64, upper = 12 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>
      graph.check %p {message = "p must hold"} : tensor<i1>
      func.return %k : tensor<?x0xi8, #graph.dims<u0, _>>
    }"""
    module = tk.parse_module(text)
    (size,) = [op for op in module.walk() if isinstance(op, DataSizeOp)]
    assert (size.symbol, size.bounds) == ("u0", (1, 12))
    run = tk.create_executor("interpreter", module).evaluate()
    assert run(np.array(5), np.array(True)).shape == (5, 0)
    with pytest.raises(DataDependentSizeError, match=r"u0 is 0 at run time, outside its range \[1, 12\]"):
        run(np.array(0), np.array(True))
    with pytest.raises(RuntimeCheckError, match="p must hold"):
        run(np.array(5), np.array(False))
    for bad, why in [
        (text.replace("%c: tensor<i64>", "%c: tensor<2xi64>").replace("%c {", "%c {").replace(": tensor<i64> ->", ": tensor<2xi64> ->"), "0-d integer"),
        (text.replace("lower = 1", "lower = 13"), "bad range"),
        (text.replace("%p: tensor<i1>", "%p: tensor<3xi1>").replace(": tensor<i1>\n", ": tensor<3xi1>\n"), "one element"),
    ]:
        with pytest.raises(Exception, match=why):
            tk.parse_module(bad)


def test_unique_family(rng):
    """unique (sorted, NaNs each their own, last), with inverse and counts; along a dim
    (lexicographic rows); unique_consecutive flattened and along a dim."""

    def fn(x, f, y):
        return (
            torch.unique(x, return_inverse=True, return_counts=True),
            torch.unique_consecutive(x, return_inverse=True, return_counts=True),
            torch.unique(f), torch.unique(f, return_counts=True)[1],
            torch.unique(y, dim=0, return_inverse=True, return_counts=True), torch.unique(y, dim=1),
            torch.unique_consecutive(y, dim=1, return_counts=True),
        )  # fmt: skip

    def inputs(r, k):
        f = r.standard_normal(9).round(0).astype(np.float32)
        f[r.random(9) < 0.3] = np.nan
        return torch.from_numpy(r.integers(0, 5, (4, 3))), torch.from_numpy(f), torch.from_numpy(r.integers(0, 2, (7, 3)))

    check(fn, inputs, rng)


def test_selections_checked_equal_share_a_size(rng):
    """Two selections by masks computed apart (two sizes, u0 and u1) concatenated: torch
    checks u1 == u0 and writes u0 for both from then on, as here; unequal counts raise."""

    def fn(scores, boxes):
        best = scores.max(1).values
        return torch.cat([boxes[best > 0.7], best[best > 0.7, None]], 1)

    check(fn, lambda r, k: (torch.from_numpy(r.random((30, 5)).astype(np.float32)), randn(r, 30, 4)), rng)
    module = from_exported_program(torch.export.export(Fn(fn), (torch.rand(30, 5), torch.randn(30, 4))))
    assert len([op for op in module.walk() if isinstance(op, CheckOp)]) == 1


def test_a_failed_cholesky_raises_as_torch_does(rng):
    """torch's _linalg_check_errors on cholesky's info is a graph.check (we compute info);
    inv's is still dropped (no info: a singular matrix gives inf/nan)."""

    def fn(a, b):
        return torch.linalg.cholesky(a), torch.linalg.inv(b)

    def inputs(r):
        a = randn(r, 2, 4, 4)
        return a @ a.transpose(-1, -2) + torch.eye(4), randn(r, 3, 3)

    module = from_exported_program(torch.export.export(Fn(fn), inputs(rng)))
    assert len([op for op in module.walk() if isinstance(op, CheckOp)]) == 1
    for run in executors(module):
        a, b = inputs(rng)
        factor, inverse = run(a.numpy(), b.numpy())
        np.testing.assert_allclose(factor, torch.linalg.cholesky(a).numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(inverse, torch.linalg.inv(b).numpy(), rtol=1e-3, atol=1e-4)
        a[1] = -a[1]
        with pytest.raises(RuntimeCheckError, match="linalg.cholesky: .* not positive-definite"):
            run(a.numpy(), b.numpy())


def test_results_empty_at_compile_time_are_constants(rng):
    """Ops whose every result has no elements in torch.export's graph (nonzero of an
    empty tensor, cholesky of a batch of no matrices and its info check, a sort along an
    empty axis) become empty constants of torch's shapes and dtypes: no kernel, no data-
    dependent size; the model's other results are computed as usual."""

    def fn(x, a, y):
        return torch.argwhere(x), torch.linalg.cholesky(a, upper=True), x.sum(1) + 1, torch.nonzero(y), y.sort(0)[1]

    args = (randn(rng, 5, 0), randn(rng, 0, 5, 5), randn(rng, 0, 3))
    module = from_exported_program(torch.export.export(Fn(fn), args))
    assert not [op for op in module.walk() if isinstance(op, CheckOp | DataSizeOp)]
    for run in executors(module):
        got = run(*(t.numpy() for t in args))
        expected = flat(fn(*args))
        assert len(got) == len(expected) == 5
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
            np.testing.assert_array_equal(g, e.numpy())


def test_slices_at_positions_read_from_data(rng):
    """``x[:, a:b]``, ``x[a:]``, ``x[:, a:b:2]`` with ``a``, ``b`` from ``item()`` and no
    ``torch._check`` relating them: torch.export names the lengths and the storage
    offsets it asserts non-negative (``sym_storage_offset``); both are computed here as
    torch's slice takes its bounds (negative ones from the end, clamped into the axis,
    an end before the start: empty); ``tensor_split`` at a tensor of indices too."""

    def fn(x, i):
        a, b = i[0].item(), i[1].item()
        return x[:, a:b] * 2, x[a:] + 1, x[:, a:b:2] - 1, *torch.tensor_split(x, i[2:], 1)

    program = torch.export.export(Fn(fn), (randn(rng, 4, 9), torch.tensor([2, 5, 3, 7])))
    assert "sym_storage_offset" in str(program.run_decompositions().graph)
    compiled = executors(from_exported_program(program))
    for a, b in ([0, 9], [-3, 8], [5, 2], [-20, 100], [1, -2], [3, 3]):
        x, i = randn(rng, 4, 9), torch.tensor([a, b, 3, 7])
        expected = flat(fn(x, i))
        for run in compiled:
            got = run(x.numpy(), i.numpy())
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                assert g.shape == tuple(e.shape)
                np.testing.assert_array_equal(g, e.numpy())
