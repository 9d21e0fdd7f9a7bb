"""Dense linear algebra: graph.solve, triangular_solve, cholesky, det_factors (te.dense_linalg:
one kernel per op, the sequential algorithm per matrix, the batch loops outermost) and the
torch functions that become them (inv, det, slogdet, logdet, solve, cholesky,
solve_triangular, triangular_solve, cholesky_solve, cholesky_inverse), against torch eager on fresh well-conditioned inputs of
odd sizes, batched and broadcast, float32 and float64; singular and negative-determinant
matrices, pivoting, the interpreter, symbolic batches, the GPU path (emulated).

Tolerances: the inputs are ``I + R / n`` (``R`` standard normal; condition number a few
units) and ``X X^T / n + I``, so a backward-stable algorithm's result is within a small
multiple of ``n * eps`` of the exact one: 1e-4 relative to the largest output in float32
(eps 1.2e-7, n <= 33), 1e-10 in float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.driver.cuda import build_emulated, lower_to_gpu
from tensorkiln.driver.pipelines import TO_LOOPS
from tensorkiln.lowering.loop_to_gpu import gpu_module_of
from tensorkiln.passes.pipeline import PassContext, run_pipeline

torch = pytest.importorskip("torch")
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.importer import TorchImportError  # noqa: E402

RTOL = {"float32": 1e-4, "float64": 1e-10}


def _close(got: np.ndarray, want: np.ndarray, dtype: str, what: str = "") -> None:
    """Within ``RTOL`` of the largest |value| (infinities and NaNs where torch has them)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=what)
    scale = np.abs(want[finite]).max(initial=1.0)
    np.testing.assert_allclose(got[finite], want[finite], rtol=RTOL[dtype], atol=RTOL[dtype] * scale, err_msg=what)


def _export(model, *inputs, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_exported_program(torch.export.export(model, inputs, **kwargs))


def _well_conditioned(rng, shape, dtype) -> np.ndarray:
    n = shape[-1]
    return (np.eye(n) + rng.standard_normal(shape) / n).astype(dtype)


def _spd(rng, shape, dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(dtype)


class Everything(torch.nn.Module):
    """Each function once, batched (2, 3) against broadcast right-hand sides."""

    def forward(self, a, s, b, v, bt):
        sign, logabs = torch.linalg.slogdet(a)
        chol = torch.linalg.cholesky(s)
        return (
            torch.linalg.inv(a),
            torch.inverse(a[0, 0]),
            torch.linalg.det(a),
            torch.det(a[1]),
            sign,
            logabs,
            torch.logdet(s),
            torch.linalg.solve(a, b),  # b (3, n, 4): batches broadcast
            torch.linalg.solve(a, v),  # v (n,): a vector
            torch.linalg.solve(a, bt, left=False),  # x a = bt, bt (2, 1, 4, n)
            chol,
            torch.linalg.cholesky(s, upper=True),
            torch.linalg.solve_triangular(torch.tril(a), b, upper=False),
            torch.linalg.solve_triangular(torch.triu(a), bt, upper=True, left=False, unitriangular=True),
            torch.cholesky_solve(b, chol),
            torch.cholesky_solve(b, chol.mT, upper=True),
            torch.cholesky_inverse(chol),
            torch.triangular_solve(b, torch.triu(a))[0],  # (the older spelling)
            torch.triangular_solve(b, torch.tril(a), upper=False, transpose=True, unitriangular=True)[0],
            torch.cholesky_inverse(chol[1].mT, upper=True),
        )


@pytest.mark.parametrize("n", [1, 3, 5, 17, 33])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_functions_match_eager(rng, dtype, n):
    inputs = (
        _well_conditioned(rng, (2, 3, n, n), dtype),
        _spd(rng, (2, 3, n, n), dtype),
        rng.standard_normal((3, n, 4)).astype(dtype),
        rng.standard_normal(n).astype(dtype),
        rng.standard_normal((2, 1, 4, n)).astype(dtype),
    )
    tensors = [torch.from_numpy(x) for x in inputs]
    lib = tk.build(_export(Everything(), *tensors))
    for k, (got, want) in enumerate(zip(lib(*inputs), Everything()(*tensors))):
        _close(got, want.numpy(), dtype, f"output {k}")


def test_singular_matrices_have_determinant_zero():
    """An exactly singular matrix meets a zero pivot: det 0, slogdet (0, -inf), logdet
    -inf (a zero column, and a row that is a multiple of another). torch agrees where its
    LAPACK meets the zero pivot exactly; some builds leave a rounding residue (-6.7e-16
    for the first matrix on an AVX-512 machine), and there its slogdet differs."""
    a = np.array(
        [[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], [[0.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 1.0, 1.0]]],
        np.float64,
    )

    class Dets(torch.nn.Module):
        def forward(self, a):
            return torch.linalg.det(a), *torch.linalg.slogdet(a), torch.logdet(a)

    lib = tk.build(_export(Dets(), torch.from_numpy(a)))
    det, sign, logabs, logdet = lib(a)
    np.testing.assert_array_equal(det, [0.0, 0.0])
    np.testing.assert_array_equal(sign, [0.0, 0.0])
    np.testing.assert_array_equal(logabs, [-np.inf, -np.inf])
    np.testing.assert_array_equal(logdet, [-np.inf, -np.inf])
    want = [w.numpy() for w in Dets()(torch.from_numpy(a))]
    np.testing.assert_allclose(det, want[0], rtol=0, atol=1e-12)
    exact = want[0] == 0
    assert exact.any(), "torch met no zero pivot exactly: nothing left to compare"
    for got, w in zip((sign, logabs, logdet), want[1:]):
        np.testing.assert_array_equal(got[exact], w[exact])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pivoting_and_negative_determinants(rng, dtype):
    """``a[0, 0] = 0`` needs a row swap; rows swapped in a well-conditioned matrix flip the
    determinant's sign: slogdet's sign -1 and logdet NaN, as torch's."""
    n = 5
    a = _well_conditioned(rng, (4, n, n), dtype)
    a[0, 0, 0] = 0.0
    a[1] = a[1][[1, 0, 2, 3, 4]]  # one swap: negative determinant
    a[2] = np.array([[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]], dtype)
    a[3, :, 0] *= -1

    class Pivoting(torch.nn.Module):
        def forward(self, a):
            return torch.linalg.inv(a), torch.linalg.det(a), *torch.linalg.slogdet(a), torch.logdet(a)

    t = torch.from_numpy(a)
    got = tk.build(_export(Pivoting(), t))(a)
    want = [w.numpy() for w in Pivoting()(t)]
    for k in range(4):
        _close(got[k], want[k], dtype, f"output {k}")
    np.testing.assert_array_equal(got[2], want[2])  # the signs
    assert got[2][1:].tolist() == [-1, -1, -1]  # a swap, a 3-cycle and a swap, a negated column
    assert np.isnan(got[4][1:]).all() and np.isnan(want[4][1:]).all()  # logdet of a negative determinant
    _close(got[4][:1], want[4][:1], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_graph_ops_compiled_match_the_interpreter_and_numpy(rng, dtype):
    """The interpreter runs the numpy references (the kernels' algorithm: the same
    roundings), both agree with numpy's LAPACK."""
    n = 7
    b = tk.GraphBuilder()
    a, s, r = b.input("a", (3, n, n), dtype), b.input("s", (n, n), dtype), b.input("r", (1, n, 2), dtype)
    module = b.finish(
        b.solve(a, r),
        b.det_factors(a),
        b.cholesky(s),
        b.triangular_solve(a, r, lower=True),
        b.triangular_solve(a, r, lower=False, unit_diagonal=True),
    )
    inputs = (_well_conditioned(rng, (3, n, n), dtype), _spd(rng, (n, n), dtype), rng.standard_normal((1, n, 2)).astype(dtype))
    compiled = tk.build(module)(*inputs)
    interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for got, want in zip(compiled, interpreted):
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype] / 10, atol=RTOL[dtype] / 10)
    av, sv, rv = inputs
    x, factors, chol, lower, unit_upper = compiled
    _close(x, np.linalg.solve(av, rv).astype(dtype), dtype)
    _close(factors.prod(-1), np.linalg.det(av).astype(dtype), dtype)
    _close(chol, np.linalg.cholesky(sv), dtype)
    _close(lower, np.linalg.solve(np.tril(av), rv).astype(dtype), dtype)
    _close(unit_upper, np.linalg.solve(np.triu(av, 1) + np.eye(n, dtype=dtype), rv).astype(dtype), dtype)


def test_symbolic_batch(rng):
    class InvDet(torch.nn.Module):
        def forward(self, a, b):
            return torch.linalg.inv(a), torch.linalg.det(a), torch.linalg.solve(a, b)

    a, b = _well_conditioned(rng, (3, 4, 4), "float32"), rng.standard_normal((3, 4, 2)).astype(np.float32)
    batch = torch.export.Dim("batch")
    module = _export(InvDet(), torch.from_numpy(a), torch.from_numpy(b), dynamic_shapes=({0: batch}, {0: batch}))
    lib = tk.build(module)
    for size in (1, 6):
        a, b = _well_conditioned(rng, (size, 4, 4), "float32"), rng.standard_normal((size, 4, 2)).astype(np.float32)
        for got, want in zip(lib(a, b), InvDet()(torch.from_numpy(a), torch.from_numpy(b))):
            _close(got, want.numpy(), "float32")


def test_symbolic_matrix_size_is_refused():
    class Inv(torch.nn.Module):
        def forward(self, a):
            return torch.linalg.inv(a)

    n = torch.export.Dim("n", min=2)
    with pytest.raises(TorchImportError, match=r"linalg_inv_ex.*symbolic matrix size"):
        _export(Inv(), torch.randn(3, 3), dynamic_shapes=({0: n, 1: n},))


def test_info_and_lu_results_of_the_ex_functions(rng):
    """``inv_ex``/``solve_ex``'s ``info`` (the first exactly zero pivot, LAPACK's) and the
    LU factors ``solve_ex`` and ``slogdet`` also return, as torch's."""

    class WithInfo(torch.nn.Module):
        def forward(self, a, b):
            inverse, info = torch.linalg.inv_ex(a)
            x, lu, pivots, solve_info = torch.ops.aten._linalg_solve_ex(a, b)
            *_, slogdet_lu, slogdet_pivots = torch.ops.aten._linalg_slogdet(a)
            return info, solve_info, lu, pivots, slogdet_lu, slogdet_pivots

    a = _well_conditioned(rng, (3, 4, 4), "float64")
    a[1, 2] = a[1, 0]  # rows 0 and 2 equal: a pivot is exactly 0
    b = rng.standard_normal((3, 4, 2))
    got = tk.build(_export(WithInfo(), torch.from_numpy(a), torch.from_numpy(b)))(a, b)
    want = WithInfo()(torch.from_numpy(a), torch.from_numpy(b))
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.numpy().dtype and g.shape == w.shape
        # the singular matrix's later pivots are ties of roundings (LAPACK's differ): its info only
        regular = slice(None) if k < 2 else [0, 2]
        np.testing.assert_allclose(g[regular], w.numpy()[regular], rtol=1e-12, atol=1e-12)
    assert got[0][0] == got[0][2] == 0 and got[0][1] > 0


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex_reports_the_first_minor_that_is_not_positive_definite(rng, upper):
    """``info``: 0 for a positive definite matrix, else the order of the first leading
    minor that is not (a negative pivot, a zero one, the very first), as torch; the factor
    of the positive definite ones matches."""

    class CholeskyEx(torch.nn.Module):
        def forward(self, a):
            return torch.linalg.cholesky_ex(a, upper=upper)

    a = _spd(rng, (5, 6, 6), "float32")
    a[1, 3, 3] = -40.0  # order 4
    a[2] = -np.eye(6)  # order 1
    a[3, 5, :], a[3, :, 5] = 0.0, 0.0  # singular: order 6
    a[4, 1, 1] = 1e-3 * a[4, 1, 0] ** 2  # order 2: a11 - a10^2 / a00 < 0 (a00 > 1)
    lib = tk.build(_export(CholeskyEx(), torch.from_numpy(a)))
    factor, info = lib(a)
    want_factor, want_info = CholeskyEx()(torch.from_numpy(a))
    assert info.dtype == np.int32 and info.shape == (5,)
    np.testing.assert_array_equal(info, want_info.numpy())
    assert info[0] == 0 and info[1] == 4 and info[2] == 1 and info[3] == 6
    _close(factor[0], want_factor[0].numpy(), "float32", "the positive definite factor")


def test_cpu_default_schedule_runs_the_matrices_in_parallel():
    """64 matrices of 32 x 32: the elimination's loops count as work."""
    b = tk.GraphBuilder()
    a = b.input("a", (64, 32, 32))
    module = b.finish(b.solve(a, b.constant(np.eye(32, dtype=np.float32))))
    run_pipeline(module, TO_LOOPS + ("default-schedule",), PassContext(opt_level=0, dump_ir=False))
    (kernel,) = [f for f in module.ops if "tk.kernel" in f.attributes]
    assert kernel.attributes["tk.strategy"].data == "parallel_outer"
    kinds = {f.loop_name.data: f.kind.data for f in kernel.walk() if hasattr(f, "loop_name")}
    assert kinds.pop("i0") == "parallel" and set(kinds.values()) == {"serial"}


def test_gpu_gives_each_matrix_a_thread(rng):
    """Every kernel is bound to blocks and threads (an unbatched matrix: one thread), and
    the emulated kernels give the CPU's results."""
    b = tk.GraphBuilder()
    a, r, s = b.input("a", ("n", 5, 5)), b.input("r", (5, 3)), b.input("s", (4, 4))
    module = b.finish(
        b.solve(a, r), b.det_factors(a), b.cholesky(s), b.triangular_solve(a, r, lower=True), b.solve(s, s)
    )
    gpu_level, _ = lower_to_gpu(module)
    kernels = gpu_module_of(gpu_level).body.block.ops
    assert {k.attributes["tk.gpu_strategy"].data for k in kernels} == {"one_thread_per_element"}
    inputs = (_well_conditioned(rng, (3, 5, 5), "float32"), rng.standard_normal((5, 3)).astype(np.float32), _spd(rng, (4, 4), "float32"))
    for got, want in zip(build_emulated(module)(*inputs), tk.build(module)(*inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_graph_op_errors():
    b = tk.GraphBuilder()
    a, r = b.input("a", (2, 3, 3)), b.input("r", (4, 2))
    with pytest.raises(VerifyException, match=r"graph.solve: b must be \(..., 3, k\)"):
        b.solve(a, r)
    with pytest.raises(VerifyException, match="batch of square matrices"):
        b.cholesky(b.input("m", (3, 4)))
    with pytest.raises(VerifyException, match="must be float tensors"):
        b.det_factors(b.input("i", (3, 3), "int32"))
    with pytest.raises(VerifyException, match="do not broadcast"):
        b.triangular_solve(a, b.input("q", (3, 3, 1)), lower=True)
    assert str(b.det_factors(b.input("s", ("n", 4, 4))).type) == "tensor<?x4xf32, #graph.dims<n, _>>"
