"""Indices out of range raise as torch raises (``frontends/torch/ops/index_checks.py``),
in a straight-line function (no VM): the check's predicate is one more result of the
compiled function (``checks-to-outputs``), checked by every executor after the call.
Valid indices (odd sizes, negative where torch allows them) still match torch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.runtime.host_checks import IndexCheckError, RuntimeCheckError  # noqa: E402
from tensorkiln.runtime.module import CompiledModule  # noqa: E402
from tensorkiln.runtime.signature import RuntimeCheck, Signature  # noqa: E402
from torch_compile import compile_torch_fn  # noqa: E402

F = torch.nn.functional


def _torch(fn, *inputs):
    out = fn(*(torch.from_numpy(np.asarray(a)) for a in inputs))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _ours(lib, *inputs):
    out = lib(*inputs)
    return list(out) if isinstance(out, tuple) else [out]


#: (name, fn, valid inputs, out-of-range inputs, words of the message); x is (7, 5)
X = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
CASES = [
    ("embedding", lambda w, i: F.embedding(i, w), (X, np.array([[0, 6, 3], [2, 2, 5]])), (X, np.array([[0, 7, 3], [2, 2, 5]])),
     "embedding of"),
    ("embedding-negative", lambda w, i: F.embedding(i, w), (X, np.array([1, 6])), (X, np.array([1, -1])), "embedding of"),
    ("index_select", lambda w, i: torch.index_select(w, 1, i), (X, np.array([4, 0, 4])), (X, np.array([4, 5, 0])),
     r"index_select of .*\[0, 5\)"),
    ("gather", lambda w, i: torch.gather(w, 0, i), (X, np.array([[6, 0, 1, 2, 3]])), (X, np.array([[6, 0, -1, 2, 3]])),
     "gather of"),
    ("index-negative", lambda w, i: w[i], (X, np.array([-7, 6, -1])), (X, np.array([-8, 0, 0])), r"\[-7, 7\)"),
    ("index-two-axes", lambda w, i, j: w[i, j], (X, np.array([0, 6]), np.array([4, -5])), (X, np.array([0, 6]), np.array([4, 5])),
     "along dim 1"),
    ("index_put", lambda w, i: w.index_put((i,), torch.tensor(2.0)), (X, np.array([3, -7])), (X, np.array([3, 7])),
     "along dim 0"),
    ("scatter", lambda w, i: w.scatter(1, i, 2.0), (X, np.array([[4], [0]])), (X, np.array([[5], [0]])), "scatter of"),
    ("scatter_add", lambda w, i: w.scatter_add(0, i, torch.ones(1, 5)), (X, np.array([[6, 1, 2, 3, 4]])),
     (X, np.array([[6, 1, 2, 3, 9]])), "scatter_add of"),
    ("scatter_reduce", lambda w, i: w.scatter_reduce(0, i, torch.ones(1, 5), "amax"), (X, np.array([[6, 1, 2, 3, 4]])),
     (X, np.array([[6, 1, 2, -3, 4]])), "scatter_reduce of"),
    ("index_add", lambda w, i: w.index_add(0, i, torch.ones(2, 5)), (X, np.array([6, 0])), (X, np.array([6, 70])), "out of range"),
    ("take", lambda w, i: torch.take(w, i), (X, np.array([34, -35, 0])), (X, np.array([35, 0, 0])), r"\[-35, 35\)"),
    ("put", lambda w, i: w.put(i, torch.ones(2)), (X, np.array([34, -35])), (X, np.array([0, -36])), "put of"),
    ("embedding_bag", lambda w, i, o: F.embedding_bag(i, w, o), (X, np.array([0, 6, 3]), np.array([0, 2])),
     (X, np.array([0, 7, 3]), np.array([0, 2])), "embedding_bag"),
    ("cross_entropy-ignore", lambda w, t: F.cross_entropy(w, t), (X, np.array([0, -100, 4, 1, 0, 3, 2])),
     (X, np.array([0, -100, 5, 1, 0, 3, 2])), "out of range"),
]


@pytest.mark.parametrize("name, fn, valid, invalid, words", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_indices_raise_and_valid_ones_match_torch(name, fn, valid, invalid, words):
    lib = compile_torch_fn(fn, *valid)
    assert isinstance(lib, CompiledModule) and lib.signature.checks  # one straight-line function, no VM
    for ours, ref in zip(_ours(lib, *valid), _torch(fn, *valid), strict=True):
        np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    with pytest.raises((IndexError, RuntimeError)):  # torch raises too
        _torch(fn, *invalid)
    with pytest.raises(IndexCheckError, match=words) as raised:
        lib(*invalid)
    assert isinstance(raised.value, IndexError) and isinstance(raised.value, RuntimeError)
    for ours, ref in zip(_ours(lib, *valid), _torch(fn, *valid)):  # still right after an error
        np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)


def _embedding_module(**export_kwargs):
    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(11, 6)

        def forward(self, input_ids):
            return self.table(input_ids) * 2.0

    model = Embed().eval()
    ids = torch.tensor([[1, 10, 3]])
    return model, from_exported_program(torch.export.export(model, (ids,), **export_kwargs))


def test_every_executor_raises_naming_the_input(tmp_path):
    from tensorkiln.runtime import load_module

    model, module = _embedding_module()
    good, bad = np.array([[1, 10, 3]]), np.array([[1, 11, 3]])
    expected = model(torch.from_numpy(good)).detach().numpy()
    lib = tk.build(module)
    lib.export_library(str(tmp_path / "embed"))
    runs = {
        "aot": lib,
        "graph": lib.graph_executor(),
        "interpreter": tk.create_executor("interpreter", module).evaluate(),
        "vm": tk.create_executor("vm", module).evaluate(),
        "loaded": load_module(str(tmp_path / "embed")),
    }
    for kind, run in runs.items():
        np.testing.assert_allclose(run(good), expected, rtol=1e-6, err_msg=kind)
        with pytest.raises(IndexError, match=r"embedding of 'input_ids': an index is out of range \[0, 11\)"):
            run(bad)


def test_symbolic_sizes_are_checked_at_their_run_time_values():
    batch = torch.export.Dim("batch", min=1)
    words = torch.export.Dim("words", min=2)
    fn = lambda w, i: F.embedding(i, w)  # noqa: E731
    lib = compile_torch_fn(fn, X, np.array([[1, 2], [3, 4]]), dynamic_shapes=(({0: words}, {0: batch}),))
    table = np.random.default_rng(1).standard_normal((13, 5)).astype(np.float32)
    np.testing.assert_allclose(lib(table, np.array([[12, 0], [3, 4], [5, 6]])), table[[[12, 0], [3, 4], [5, 6]]])
    with pytest.raises(IndexError, match="out of range"):
        lib(table, np.array([[13, 0]]))
    with pytest.raises(IndexError):
        lib(table[:4], np.array([[12, 0]]))


def test_constant_indices_are_checked_on_import():
    class Pick(torch.nn.Module):
        def __init__(self, rows):
            super().__init__()
            self.register_buffer("rows", torch.tensor(rows))

        def forward(self, x):
            return torch.index_select(x, 0, self.rows)

    x = torch.randn(4, 3)
    module = from_exported_program(torch.export.export(Pick([3, 0]), (x,)))
    assert not any(op.name == "graph.check" for op in module.walk())  # nothing left to check at run time
    np.testing.assert_allclose(tk.build(module)(x.numpy()), x.numpy()[[3, 0]])
    with pytest.raises(IndexError, match=r"index_select.*index 4 is out of range \[0, 4\)"):
        from_exported_program(torch.export.export(Pick([3, 4]), (x,)))


def test_a_check_inside_control_flow_is_run_by_the_vm():
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(9, 4)

        def forward(self, ids, x):
            return torch.cond(x.sum() > 0, lambda i, x: self.table(i) + x, lambda i, x: x * 2.0, (ids, x))

    model = Branchy().eval()
    ids, x = torch.tensor([8, 0, 3]), torch.ones(3, 4)
    lib = tk.build(from_exported_program(torch.export.export(model, (ids, x))))
    assert "check" in [ins[0] for ins in lib.program.code]
    np.testing.assert_allclose(lib(ids.numpy(), x.numpy()), model(ids, x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(lib(np.array([9, 0, 3]), -x.numpy()), -2 * x.numpy())  # branch not taken: no check
    with pytest.raises(IndexError, match="out of range"):
        lib(np.array([9, 0, 3]), x.numpy())


def test_emulated_gpu_build_checks_too():
    from tensorkiln.driver.cuda import build_emulated

    model, module = _embedding_module()
    lib = build_emulated(module)
    np.testing.assert_allclose(lib(np.array([[0, 10, 2]])), model(torch.tensor([[0, 10, 2]])).detach().numpy(), rtol=1e-6)
    with pytest.raises(IndexError):
        lib(np.array([[0, -1, 2]]))


def test_cuda_module_reads_the_predicates_after_the_launches(monkeypatch):
    """With the stand-in cupy (kernels do not run) a check's predicate is what its buffer
    holds: true lets the outputs through, false raises."""
    from fake_cupy import fake_cupy

    from tensorkiln.runtime import cuda as runtime

    fake = fake_cupy([])
    monkeypatch.setattr(runtime, "require_cupy", lambda: fake)
    _, module = _embedding_module()
    lib = tk.build(module, target="cuda")
    assert [c.error for c in lib.signature.checks] == ["IndexError"]
    for fill, raises in ((np.ones, False), (np.zeros, True)):
        fake.empty = lambda shape, dtype, fill=fill: fill(shape, dtype).view(type(fake.asarray(np.zeros(1))))
        if raises:
            with pytest.raises(IndexError):
                lib(np.array([[1, 2, 3]]))
        else:
            assert lib(np.array([[1, 2, 3]])).shape == (1, 3, 6)
    assert fake.copies[-1] == ("to host", (1,))  # the predicates came back in one copy


def test_signature_lists_checks_and_round_trips_as_json():
    sig = Signature((), (), checks=(RuntimeCheck("bad index", "IndexError"), RuntimeCheck("bad size")))
    assert Signature.from_json(sig.to_json()).checks == sig.checks
    assert [s.name for s in sig.entry_outputs] == ["check0", "check1"]
    with pytest.raises(IndexCheckError, match="bad index"):
        sig.results([np.array(False), np.array(True)])
    with pytest.raises(RuntimeCheckError, match="bad size") as raised:
        sig.results([np.array(True), np.array(False)])
    assert not isinstance(raised.value, IndexError)


def test_checks_can_be_left_out_then_indices_clamp():
    fn = lambda w, i: F.embedding(i, w)  # noqa: E731

    class Model(torch.nn.Module):
        def forward(self, w, i):
            return fn(w, i)

    ids = np.array([[0, 6, 3]])
    program = torch.export.export(Model(), (torch.from_numpy(X), torch.from_numpy(ids)))
    lib = tk.build(from_exported_program(program, check_indices=False))
    assert not lib.signature.checks
    assert not any(op.name == "graph.check" for op in from_exported_program(program, check_indices=False).walk())
    np.testing.assert_allclose(lib(X, ids), X[ids])
    np.testing.assert_allclose(lib(X, np.array([[9, -1, 3]])), X[[[6, 6, 3]]])  # 9 clamped to 6, -1 wrapped


def test_assert_async_checks_one_hot_classes_and_user_asserts():
    lib = compile_torch_fn(lambda i: F.one_hot(i, 5), np.array([0, 4, 2]))
    np.testing.assert_array_equal(lib(np.array([1, 4, 3, 0])[:3]), np.eye(5, dtype=np.int64)[[1, 4, 3]])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        lib(np.array([0, 5, 1]))
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        lib(np.array([0, -1, 1]))
    lib = compile_torch_fn(lambda x: (torch._assert_async(x.sum() > 0, "sum must be positive"), x * 2)[1], X[0])
    np.testing.assert_allclose(lib(np.abs(X[1])), 2 * np.abs(X[1]))
    with pytest.raises(RuntimeCheckError, match="sum must be positive"):
        lib(-np.abs(X[1]))


def test_checks_on_indices_computed_from_constants_are_dropped_in_the_build():
    """Reflect and replicate padding index with positions computed from constants: their
    checks are true whatever the input, so the build drops them (no predicate results,
    no kernels computing them); a check on an input's indices stays and still raises."""

    class PadsAndLookup(torch.nn.Module):
        def forward(self, x, ids):
            reflected = F.pad(x, (1, 2, 2, 1), mode="reflect")
            replicated = F.pad(x, (2, 0, 1, 1), mode="replicate")
            return reflected[..., 1:-1, :-2] * replicated[..., 1:, 1:], F.embedding(ids, x[0, 0])

    x, ids = torch.randn(2, 3, 6, 7), torch.tensor([[0, 5, 2]])
    module = from_exported_program(torch.export.export(PadsAndLookup(), (x, ids)))
    assert sum(op.name == "graph.check" for op in module.walk()) > 1  # the pads' checks, the lookup's
    lib = tk.build(module)
    assert [c.error for c in lib.signature.checks] == ["IndexError"]  # the lookup's alone
    for got, want in zip(_ours(lib, x.numpy(), ids.numpy()), _torch(PadsAndLookup(), x.numpy(), ids.numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(IndexError, match="embedding"):
        lib(x.numpy(), np.array([[0, 6, 2]]))


def test_a_check_is_settled_only_by_constants_through_a_short_cone():
    """``settled_true``: a predicate of constants alone that holds everywhere; not one that
    reads an input, not one that fails somewhere, not one past ``SETTLED_CONE_OPS`` ops."""
    from tensorkiln.passes.checks_to_outputs import SETTLED_CONE_OPS, settled_true

    b = tk.GraphBuilder()
    x = b.input("x", (5,), "int64")
    positions = b.constant(np.arange(5, dtype=np.int64))
    bound = b.constant(np.array(5, dtype=np.int64))
    assert settled_true(b.compare(positions, bound, "lt"))
    assert not settled_true(b.compare(positions, b.constant(np.array(4, dtype=np.int64)), "lt"))  # 4 < 4 fails
    assert not settled_true(b.compare(x, bound, "lt"))
    long = positions
    for _ in range(SETTLED_CONE_OPS):
        long = b.add(long, b.constant(np.array(0, dtype=np.int64)))
    assert not settled_true(b.compare(long, bound, "lt"))
