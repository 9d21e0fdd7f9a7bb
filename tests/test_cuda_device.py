"""On a real NVIDIA GPU (skipped elsewhere): ``tk.build(target="cuda")`` runs the models
through cupy and matches torch; inputs as numpy, cupy or torch CUDA tensors, outputs as
cupy or numpy. Run by ``benchmarks/gpu_check.sh`` on the GPU machine."""

from __future__ import annotations

import numpy as np
import pytest

from tensorkiln.runtime.cuda import CudaUnavailableError, require_cupy

try:
    cp = require_cupy()  # cupy and a CUDA GPU, or the reason why not
except CudaUnavailableError as missing:
    pytest.skip(str(missing), allow_module_level=True)

import tensorkiln as tk  # noqa: E402

TOLERANCE = 1e-4  # relative L2 error: GPU expf/tanhf differ from the CPU's in the last bits


def _rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def _mlp():
    rng = np.random.default_rng(1)
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37))
    w1, w2 = rng.standard_normal((45, 37)).astype("f4"), rng.standard_normal((13, 45)).astype("f4")
    module = b.finish(b.softmax(b.dense(b.relu(b.dense(x, w1)), w2), -1))
    return module


@pytest.mark.parametrize("batch", [1, 67, 300])
def test_builder_model_numpy_and_cupy_inputs(batch):
    module = _mlp()
    ref = tk.create_executor("interpreter", module).evaluate()
    lib = tk.build(module, target="cuda")
    x = np.random.default_rng(batch).standard_normal((batch, 37)).astype("f4")
    out = lib(x)
    assert isinstance(out, cp.ndarray)
    assert _rel(cp.asnumpy(out), ref(x)) < TOLERANCE
    assert _rel(lib(cp.asarray(x), output="numpy"), ref(x)) < TOLERANCE


def test_torch_cuda_tensor_inputs_and_errors():
    torch = pytest.importorskip("torch")
    module = _mlp()
    lib = tk.build(module, target="cuda -arch=sm_90" if cp.cuda.Device().compute_capability == "90" else "cuda")
    x = torch.randn(5, 37, device="cuda")
    want = tk.create_executor("interpreter", module).evaluate()(x.cpu().numpy())
    assert _rel(lib(x, output="numpy"), want) < TOLERANCE
    with pytest.raises(ValueError, match="argument 'x': expected dtype float32"):
        lib(np.zeros((5, 37), np.float64))
    with pytest.raises(ValueError, match="argument 'x'"):
        lib(np.zeros((5, 36), np.float32))


def test_every_default_strategy_on_the_gpu():
    torch = pytest.importorskip("torch")
    from gpu_models import CASES

    from tensorkiln.frontends.torch import from_exported_program

    for name, (make, shapes) in CASES.items():
        torch.manual_seed(0)
        model = make().eval()
        inputs = tuple(torch.randn(*s) for s in shapes)
        lib = tk.build(from_exported_program(torch.export.export(model, inputs)), target="cuda")
        got = lib(*[t.numpy() for t in inputs], output="numpy")
        expected = model(*inputs)
        expected, got = (expected, got) if isinstance(expected, tuple) else ((expected,), (got,))
        assert len(got) == len(expected), name
        for g, e in zip(got, expected):  # (models with several outputs: each one)
            assert _rel(g, e.detach().numpy()) < TOLERANCE, name


# every GEMM template configuration (128/64 rows x 128/64 columns, partial tiles, k not a
# multiple of the step), a warp per output (8 rows), and a padded NHWC conv (implicit GEMM)
@pytest.mark.parametrize("m, k, n", [(530, 37, 515), (600, 5, 70), (45, 20, 577), (1031, 1025, 1027), (8, 300, 77)])
def test_gemm_templates_on_the_gpu(m, k, n):
    rng = np.random.default_rng(m + n)
    a, b = rng.standard_normal((m, k)).astype("f4"), rng.standard_normal((k, n)).astype("f4")
    g = tk.GraphBuilder()
    lib = tk.build(g.finish(g.matmul(g.input("a", (m, k)), g.input("b", (k, n)))), target="cuda")
    assert _rel(lib(a, b, output="numpy"), a.astype("f8") @ b) < TOLERANCE


def test_conv_implicit_gemm_on_the_gpu():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 19, 30, 29)).astype("f4"), rng.standard_normal((70, 19, 3, 3)).astype("f4")
    g = tk.GraphBuilder()
    lib = tk.build(g.finish(g.relu(g.conv2d(g.input("x", x.shape), w, strides=2, padding=1))), target="cuda")
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1))
    assert _rel(lib(x, output="numpy"), want.numpy()) < TOLERANCE


def test_tf32_tensor_cores_on_the_gpu():
    """``-tf32``: the products on the tensor cores match torch's TF32 matmul (inputs rounded
    to TF32, so against fp32 they differ by ~1e-3)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((1000, 300)).astype("f4"), rng.standard_normal((300, 517)).astype("f4")
    g = tk.GraphBuilder()
    lib = tk.build(g.finish(g.matmul(g.input("a", a.shape), g.input("b", b.shape))), target="cuda -tf32")
    got = lib(a, b, output="numpy")
    assert _rel(got, a.astype("f8") @ b) < 2e-3
    flag = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        want = (torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda()).cpu().numpy()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = flag
    assert _rel(got, want) < 1e-4


def _zoo_names() -> list[str]:
    try:
        from tensorkiln.examples.torch_zoo import ZOO
    except ImportError:  # no torch: the test below skips
        return []
    return list(ZOO)


@pytest.mark.parametrize("name", _zoo_names())
def test_torch_zoo_on_the_gpu(name):
    torch = pytest.importorskip("torch")
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    entry = ZOO[name]
    model = entry.build()
    inputs = random_inputs(entry, seed=0)
    lib = tk.build(from_exported_program(torch.export.export(model, inputs)), target="cuda")
    got = lib(*[t.numpy() for t in inputs], output="numpy")
    want = model(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple | list) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.detach().numpy()
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            assert _rel(g, w) < TOLERANCE


def test_index_checks_on_the_gpu():
    """An embedding's ids out of range raise IndexError after the launches (the check's
    predicate copied back); ids in range give torch's rows."""
    torch = pytest.importorskip("torch")
    from tensorkiln.frontends.torch import from_exported_program

    table = torch.nn.Embedding(11, 6).eval()
    ids = torch.tensor([[1, 10, 3]])
    lib = tk.build(from_exported_program(torch.export.export(table, (ids,))), target="cuda")
    assert _rel(lib(ids.numpy(), output="numpy"), table(ids).detach().numpy()) < TOLERANCE
    with pytest.raises(IndexError, match="out of range"):
        lib(np.array([[1, 11, 3]]))
