"""Matrix decompositions: graph.lu_factor, pivot_permutation, householder_qr,
householder_product, eigh, jacobi_svd (one te.dense_linalg kernel each) and the torch
functions made of them (lu_factor(_ex), lu, lu_unpack, lu_solve, geqrf,
householder_product, ormqr, qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, cond,
matrix_norm, matrix_exp), against torch eager on fresh random inputs: tall, wide and square odd
sizes, batched and broadcast, float32 and float64; singular, rank-deficient and
repeated-eigenvalue matrices; the interpreter (numpy references), symbolic batches,
the emulated GPU and nvcc.

LU and QR follow LAPACK step for step, so their results are torch's to rounding. Eigen-
and singular vectors are unique only up to sign (and within repeated values up to a
rotation): they are checked by reconstruction, orthogonality, and column by column
against torch's up to sign where the values are distinct.

Tolerances: relative to the largest output, 2e-4 in float32 and 1e-10 in float64 (a few
``n * eps`` of a backward-stable algorithm on the matrices below, condition numbers
of a few units to a few hundred)."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from nvcc import compile_ptx
from tensorkiln.driver.cuda import build_emulated

torch = pytest.importorskip("torch")
from torch_compile import compile_torch_fn  # noqa: E402
from tensorkiln.frontends.torch.importer import TorchImportError  # noqa: E402

RTOL = {"float32": 2e-4, "float64": 1e-10}
SHAPES = [(2, 3, 7, 4), (3, 5, 5), (1, 3, 6)]  # tall, square, wide: batch dims first


def _close(got, want, dtype: str, what: str = "") -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    scale = np.abs(want).max(initial=1.0)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * scale, err_msg=what)


def _run(fn, *inputs: np.ndarray):
    """(ours, torch's) results of ``fn`` on ``inputs``, each a list."""
    got = compile_torch_fn(fn, *inputs)(*inputs)
    want = fn(*(torch.from_numpy(x) for x in inputs))
    as_list = lambda r: list(r) if isinstance(r, tuple | list) else [r]  # noqa: E731
    return [np.asarray(g) for g in as_list(got)], [w.numpy() for w in as_list(want)]


def _same_up_to_sign(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    """Columns of ``got`` equal ``want``'s, each possibly negated."""
    signs = np.sign(np.sum(got * want, axis=-2, keepdims=True))
    _close(got * np.where(signs == 0, 1, signs).astype(got.dtype), want, dtype, what)


def _orthonormal_columns(q: np.ndarray, dtype: str, what: str) -> None:
    k = q.shape[-1]
    _close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k, dtype=q.dtype), (*q.shape[:-2], k, k)), dtype, what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_lu_and_qr_match_torch(rng, dtype, shape):
    a = rng.standard_normal(shape).astype(dtype)
    m, n = shape[-2:]

    def lu_and_qr(x):
        packed, pivots, info = torch.linalg.lu_factor_ex(x)
        p, lower, upper = torch.linalg.lu(x)
        reflectors, tau = torch.geqrf(x)
        q, r = torch.linalg.qr(x)
        qc, rc = torch.linalg.qr(x, mode="complete")
        return packed, pivots, info, p, lower, upper, reflectors, tau, q, r, qc, rc, torch.linalg.qr(x, mode="r")[1]

    got, want = _run(lu_and_qr, a)
    names = "packed pivots info P L U reflectors tau Q R Q_complete R_complete R_only".split()
    for g, w, name in zip(got, want, names):
        _close(g, w, dtype, name)
    assert got[1].dtype == np.int32 and got[2].dtype == np.int32
    p, lower, upper = got[3:6]
    _close(p @ lower @ upper, a, dtype, "P L U")
    assert got[8].shape == (*shape[:-2], m, min(m, n)) and got[10].shape == (*shape[:-2], m, m)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_householder_product_ormqr_lu_unpack_and_lu_solve(rng, dtype):
    a = rng.standard_normal((2, 6, 4)).astype(dtype)
    other = rng.standard_normal((2, 6, 3)).astype(dtype)

    def qr_uses(x, y):
        reflectors, tau = torch.geqrf(x)
        return (
            torch.linalg.householder_product(reflectors, tau),
            torch.ormqr(reflectors, tau, y),
            torch.ormqr(reflectors, tau, y, transpose=True),
            torch.ormqr(reflectors, tau, y.mT, left=False),
        )

    for g, w, name in zip(*_run(qr_uses, a, other), ["householder_product", "Q y", "Q^T y", "y^T Q"]):
        _close(g, w, dtype, name)

    square = (np.eye(5) + rng.standard_normal((3, 5, 5)) / 3).astype(dtype)
    rhs = rng.standard_normal((1, 5, 2)).astype(dtype)  # broadcast against the batch of 3

    def lu_uses(x, y):
        packed, pivots = torch.linalg.lu_factor(x)
        return (
            *torch.lu_unpack(packed, pivots),
            torch.linalg.lu_solve(packed, pivots, y),
            torch.linalg.lu_solve(packed, pivots, y, adjoint=True),
            torch.linalg.lu_solve(packed, pivots, y.mT, left=False),
        )

    for g, w, name in zip(*_run(lu_uses, square, rhs), ["P", "L", "U", "solve", "adjoint", "right"]):
        _close(g, w, dtype, name)


def test_lu_of_singular_matrices_reports_the_first_zero_pivot(rng):
    """``info``: 0, or the 1-based step of the first exactly zero pivot (LAPACK's); the
    factors still multiply back."""
    a = rng.standard_normal((3, 4, 4))
    a[1, :, 2] = 0.0  # column 3 zero: the third pivot is 0
    a[2] = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 5.0))  # rank one: the second pivot is 0
    got, want = _run(lambda x: torch.linalg.lu_factor_ex(x), a)
    np.testing.assert_array_equal(got[2], want[2].astype(np.int32))
    assert list(got[2]) == [0, 3, 2]
    _close(got[0], want[0], "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eigh_matches_torch(rng, dtype):
    x = rng.standard_normal((2, 3, 7, 7))
    a = (x + np.swapaxes(x, -1, -2)).astype(dtype)

    def eigen(t):
        values, vectors = torch.linalg.eigh(t)
        return values, vectors, torch.linalg.eigvalsh(t, UPLO="U"), torch.linalg.pinv(t, hermitian=True)

    (values, vectors, upper_values, pinv), want = _run(eigen, a)
    _close(values, want[0], dtype, "eigenvalues")
    _close(upper_values, want[2], dtype, "eigenvalues of the upper triangle")
    _same_up_to_sign(vectors, want[1], dtype, "eigenvectors")
    _orthonormal_columns(vectors, dtype, "eigenvectors")
    _close((vectors * values[..., None, :]) @ np.swapaxes(vectors, -1, -2), a, dtype, "V diag(w) V^T")
    _close(pinv, want[3], dtype, "pinv(hermitian)")


def test_eigh_reads_one_triangle_and_handles_repeated_and_zero_eigenvalues():
    """Only the ``UPLO`` triangle is read (garbage in the other); repeated eigenvalues
    (the identity, a rank-one matrix) and the zero matrix give torch's values and
    orthonormal vectors."""
    a = np.stack([np.eye(5), np.ones((5, 5)), np.zeros((5, 5)), np.diag([3.0, -1.0, 0.0, 0.0, 2.0])])
    garbage = a + np.triu(np.full((5, 5), 1e3), 1)
    got, want = _run(lambda t: torch.linalg.eigh(t, UPLO="L"), garbage)
    _close(got[0], want[0], "float64", "eigenvalues")
    _orthonormal_columns(got[1], "float64", "eigenvectors")
    _close((got[1] * got[0][..., None, :]) @ np.swapaxes(got[1], -1, -2), a, "float64", "V diag(w) V^T")


def test_a_nan_spreads_to_every_value_of_its_matrix_only(rng):
    """A NaN keeps rotating (its comparison is unordered), so no partly finite eigen- or
    singular values come out; the other matrices of the batch are unaffected."""
    x = rng.standard_normal((2, 4, 4)).astype(np.float32)
    a = x + np.swapaxes(x, -1, -2)
    a[1, 2, 0] = a[1, 0, 2] = np.nan
    values, singular = compile_torch_fn(lambda t: (torch.linalg.eigvalsh(t), torch.linalg.svdvals(t)), a)(a)
    assert np.isnan(values[1]).all() and np.isnan(singular[1]).all()
    _close(values[0], np.linalg.eigvalsh(a[0]), "float32")
    _close(singular[0], np.linalg.svd(a[0], compute_uv=False), "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_svd_matches_torch(rng, dtype, shape):
    a = rng.standard_normal(shape).astype(dtype)
    k = min(shape[-2:])

    def decompositions(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        uf, sf, vhf = torch.linalg.svd(x)  # full_matrices=True
        return u, s, vh, uf, vhf, torch.linalg.svdvals(x), torch.linalg.pinv(x), torch.linalg.matrix_norm(x, ord=2), torch.linalg.matrix_norm(x, ord="nuc"), torch.linalg.matrix_rank(x)

    got, want = _run(decompositions, a)
    u, s, vh, uf, vhf, svdvals, pinv, two, nuclear, rank = got
    for g, w, name in zip([s, svdvals, pinv, two, nuclear], [want[1], want[5], want[6], want[7], want[8]], ["S", "svdvals", "pinv", "2-norm", "nuclear norm"]):
        _close(g, w, dtype, name)
    np.testing.assert_array_equal(rank, want[9])
    _same_up_to_sign(u, want[0], dtype, "U")
    _same_up_to_sign(np.swapaxes(vh, -1, -2), np.swapaxes(want[2], -1, -2), dtype, "V")
    _close((u * s[..., None, :]) @ vh, a, dtype, "U S Vh")
    for q, name in ((uf, "full U"), (np.swapaxes(vhf, -1, -2), "full V")):
        assert q.shape == q.shape[:-2] + (q.shape[-2], q.shape[-2]), name
        _orthonormal_columns(q, dtype, name)
    _close(uf[..., :k] * s[..., None, :] @ vhf[..., :k, :], a, dtype, "full U S Vh")


def test_svd_of_rank_deficient_matrices_keeps_orthonormal_vectors(rng):
    """Zero singular values: U's columns are still orthonormal (a QR of ``a V``), and
    pinv / matrix_rank drop them as torch does."""
    low = rng.standard_normal((2, 6, 2)) @ rng.standard_normal((2, 2, 4))  # rank 2 of 4
    a = np.concatenate([low, np.zeros((1, 6, 4))]).astype(np.float32)
    got, want = _run(lambda x: (*torch.linalg.svd(x, full_matrices=False), torch.linalg.pinv(x), torch.linalg.matrix_rank(x)), a)
    u, s, vh, pinv, rank = got
    _close(s, want[1], "float32", "S")
    _orthonormal_columns(u, "float32", "U")
    _close((u * s[..., None, :]) @ vh, a, "float32", "U S Vh")
    _close(pinv, want[3], "float32", "pinv")
    np.testing.assert_array_equal(rank, [2, 2, 0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_exp_matches_torch(rng, dtype):
    """Scaling and squaring: norms from 0 to 40 (0 to 7 squarings per matrix, in one
    batch), a rotation of angle ~1e3 (a skew-symmetric matrix: 11 squarings)."""
    a = rng.standard_normal((4, 6, 6)) * np.array([0.0, 1e-3, 1.0, 8.0])[:, None, None]
    skew = rng.standard_normal((1, 2, 2)) * 1e3
    for x in (a.astype(dtype), (skew - np.swapaxes(skew, -1, -2)).astype(dtype)):
        (got,), (want,) = _run(lambda t: torch.linalg.matrix_exp(t), x)
        # float32: the rotation's angle itself is only known to ~1e3 * eps
        _close(got, want, dtype) if x.shape[-1] == 6 or dtype == "float64" else np.testing.assert_allclose(got, want, atol=5e-3)


def test_symbolic_batch(rng):
    def fn(x):
        q, r = torch.linalg.qr(x)
        return q, r, torch.linalg.svdvals(x), torch.linalg.eigvalsh(x @ x.mT)

    a = rng.standard_normal((3, 5, 4)).astype(np.float32)
    lib = compile_torch_fn(fn, a, dynamic_shapes=(({0: torch.export.Dim("batch")},),))  # (forward takes *xs)
    for size in (1, 4):
        a = rng.standard_normal((size, 5, 4)).astype(np.float32)
        for g, w in zip(lib(a), fn(torch.from_numpy(a))):
            _close(g, w.numpy(), "float32")


def test_graph_ops_compiled_match_the_interpreter(rng):
    """The interpreter runs the numpy references: the kernels' steps, so the same
    roundings up to the order of a few sums."""
    b = tk.GraphBuilder()
    a, s, piv = b.input("a", (2, 6, 4), "float64"), b.input("s", (5, 5), "float64"), b.input("p", (3, 4), "int32")
    qr = b.householder_qr(a)
    counts = b.input("counts", (3,), "float64")
    module = b.finish(
        b.lu_factor(a), b.pivot_permutation(piv, 6), qr, b.householder_product(b.slice(qr, [0], [6], [1]), b.input("tau", (4,), "float64")),
        b.eigh(s, lower=False), b.jacobi_svd(a), b.repeated_squaring(b.div(s, 4.0), counts),
    )
    x = rng.standard_normal((5, 5))
    inputs = (
        rng.standard_normal((2, 6, 4)), x + x.T, rng.integers(-1, 9, (3, 4)).astype(np.int32),
        np.array([3.0, -1.0, np.nan]),  # squared 3 times; negative and NaN counts: 0
        rng.standard_normal(4),
    )
    compiled = tk.build(module)(*inputs)
    interpreted = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for got, want in zip(compiled, interpreted):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    perm = compiled[1]
    assert (np.sort(perm, axis=1) == np.arange(6)).all()  # out-of-range pivots clamped: still a permutation
    quarter = inputs[1] / 4
    np.testing.assert_allclose(compiled[-1], [np.linalg.matrix_power(quarter, 8), quarter, quarter], rtol=1e-12)


def test_gpu_kernels_emulated_and_through_nvcc(rng, tmp_path):
    b = tk.GraphBuilder()
    a, s = b.input("a", ("n", 5, 3)), b.input("s", (4, 4))
    qr = b.householder_qr(a)
    module = b.finish(b.lu_factor(a), qr, b.householder_product(b.slice(qr, [0], [5], [1]), b.input("tau", (3,))), b.eigh(s), b.jacobi_svd(a))
    x = rng.standard_normal((4, 4)).astype(np.float32)
    inputs = (rng.standard_normal((3, 5, 3)).astype(np.float32), x + x.T, rng.standard_normal(3).astype(np.float32))
    for got, want in zip(build_emulated(module)(*inputs), tk.build(module)(*inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ptx = compile_ptx(tk.emit_source(module, target="cuda -arch=sm_90"), tmp_path, "decompositions")
    assert all(f".entry {name}_" in ptx for name in ("lu_factor", "householder_qr", "householder_product", "eigh", "jacobi_svd"))


def test_errors():
    b = tk.GraphBuilder()
    with pytest.raises(VerifyException, match="at least as many rows as columns"):
        b.jacobi_svd(b.input("w", (3, 5)))
    with pytest.raises(VerifyException, match="batch of square matrices"):
        b.eigh(b.input("r", (3, 4)))
    with pytest.raises(VerifyException, match="pivots must be integers"):
        b.pivot_permutation(b.input("f", (3,)), 4)
    with pytest.raises(VerifyException, match="at most one swap per row"):
        b.pivot_permutation(b.input("i", (5,), "int32"), 4)
    with pytest.raises(VerifyException, match="static matrix size"):
        b.lu_factor(b.input("n", ("k", 3)))
    with pytest.raises(VerifyException, match=r"tau must be \(..., k\) with a static k <= 3"):
        b.householder_product(b.input("v", (5, 3)), b.input("t", (4,)))
    with pytest.raises(TorchImportError, match="pivot=False"):
        compile_torch_fn(lambda x: torch.linalg.lu_factor(x, pivot=False), np.eye(3, dtype=np.float32))


def test_models_that_use_them(rng):
    """Whitening by the eigenvectors of a covariance (columns up to sign) and an
    orthogonal Procrustes alignment (``U Vh``: sign-free), end to end."""

    class Whiten(torch.nn.Module):
        def forward(self, x):
            centered = x - x.mean(0, keepdim=True)
            values, vectors = torch.linalg.eigh(centered.mT @ centered / (x.shape[0] - 1))
            return centered @ vectors / torch.sqrt(values + 1e-5)

    class Procrustes(torch.nn.Module):
        def forward(self, a, b):
            u, _, vh = torch.linalg.svd(a.mT @ b)
            return a @ (u @ vh)

    x = rng.standard_normal((200, 10)).astype(np.float32) * np.linspace(0.5, 3, 10, dtype=np.float32)
    (white,), (want,) = _run(Whiten(), x)
    _same_up_to_sign(white, want, "float32", "whitened")
    np.testing.assert_allclose(np.cov(white.astype(np.float64), rowvar=False), np.eye(10), atol=1e-3)
    a, b = rng.standard_normal((50, 3)).astype(np.float32), rng.standard_normal((50, 3)).astype(np.float32)
    (aligned,), (want,) = _run(Procrustes(), a, b)
    _close(aligned, want, "float32", "aligned")
