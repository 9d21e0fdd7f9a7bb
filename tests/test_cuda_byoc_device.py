"""On a real NVIDIA GPU (skipped elsewhere): models partitioned for ``cublas`` and built
for ``target="cuda"`` run cuBLAS on the device buffers, between our kernels, and match
the interpreter; nothing is copied to the host on the way. Run by
``benchmarks/gpu_check.sh`` on the GPU machine; ``test_cuda_byoc_fake.py`` checks the
same program order and bindings without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from tensorkiln.runtime.cuda import CudaUnavailableError, require_cupy

try:
    cp = require_cupy()  # cupy and a CUDA GPU, or the reason why not
except CudaUnavailableError as missing:
    pytest.skip(str(missing), allow_module_level=True)

import tensorkiln as tk  # noqa: E402
from tensorkiln.byoc import external_modules  # noqa: E402

TOLERANCE = 1e-4  # relative L2 error (cuBLAS sums in another order; TF32 is off in cupy by default)


def _rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def _f4(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _mixed(rng):
    """dense+bias+relu (cuBLAS) -> softmax (our kernels) -> dense+tanh (cuBLAS)."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37))
    h = b.softmax(b.relu(b.dense(x, _f4(rng, 45, 37), _f4(rng, 45))), -1)
    return b.finish(b.tanh(b.dense(h, _f4(rng, 13, 45))))


@pytest.mark.parametrize("batch", [1, 67, 300])
def test_cublas_regions_between_our_kernels_match(batch):
    rng = np.random.default_rng(batch)
    module = _mixed(rng)
    part = tk.byoc.partition_for(module, "cublas")
    assert len(external_modules(part)) == 2
    lib = tk.build(part, target="cuda")
    x = _f4(rng, batch, 37)
    want = tk.create_executor("interpreter", module).evaluate()(x)
    out = lib(x)
    assert isinstance(out, cp.ndarray)
    assert _rel(cp.asnumpy(out), want) < TOLERANCE
    assert _rel(lib(cp.asarray(x), output="numpy"), want) < TOLERANCE


def test_no_host_round_trip(monkeypatch):
    rng = np.random.default_rng(0)
    module = _mixed(rng)
    lib = tk.build(tk.byoc.partition_for(module, "cublas"), target="cuda")
    x = cp.asarray(_f4(rng, 33, 37))
    lib(x)  # weights uploaded
    cp.cuda.Device().synchronize()

    def no_copy(*args, **kwargs):
        raise AssertionError("an array was copied between host and device during the call")

    # what the runtime and the cuBLAS module copy with (cupy.ndarray's own methods are
    # a C type's, not patchable; neither calls them)
    monkeypatch.setattr(cp, "asnumpy", no_copy)
    monkeypatch.setattr(cp, "asarray", no_copy)
    out = lib(x)
    monkeypatch.undo()
    want = tk.create_executor("interpreter", module).evaluate()(cp.asnumpy(x))
    assert _rel(cp.asnumpy(out), want) < TOLERANCE


def test_a_model_offloaded_whole_and_edge_shapes():
    """Batch broadcasting (2,1) x (1,5), a rank-1 dense with sigmoid, an empty batch."""
    rng = np.random.default_rng(3)
    b = tk.GraphBuilder()
    p, q = b.input("p", ("b", 1, 3, 9)), b.input("q", (1, 5, 9, 4))
    v = b.input("v", (11,))
    module = b.finish(b.batch_matmul(p, q), b.sigmoid(b.dense(v, _f4(rng, 6, 11), _f4(rng, 6))))
    part = tk.byoc.partition_for(module, "cublas")
    lib = tk.build(part, target="cuda")
    assert lib._module is None  # every op offloaded: no kernel of ours
    ref = tk.create_executor("interpreter", module).evaluate()
    for batch in (2, 0):
        args = [_f4(rng, batch, 1, 3, 9), _f4(rng, 1, 5, 9, 4), _f4(rng, 11)]
        for got, want in zip(lib(*args, output="numpy"), ref(*args)):
            assert got.shape == want.shape
            assert _rel(got, want) < TOLERANCE or want.size == 0
