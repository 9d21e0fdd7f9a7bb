"""BYOC external modules in the CUDA build, without a GPU: ``partition_for(mod, "cublas")``
then ``tk.build(part, target="cuda")`` with the cupy stand-in of ``fake_cupy.py``.

What is checked: the host program's order of kernel launches and cuBLAS calls, the
buffers it binds to each (the external module gets the device arrays the host program
allocated, nothing is copied back to the host), weights uploaded once, and the numbers
of whole models offloaded to cuBLAS (the stand-in's ``matmul`` computes with numpy) on
odd sizes. The stand-in's kernels do not run: in a model that mixes our kernels and
cuBLAS, the numbers checked are those the cuBLAS region wrote into the buffer the next
kernel reads; the whole mixed model's numbers are checked through the GPU emulator (the
last test) and, on a GPU, by ``test_cuda_byoc_device.py``. A host-only backend's region
in a CUDA build is refused.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from fake_cupy import FakeArray, fake_cupy

import tensorkiln as tk
from tensorkiln.runtime.cuda import HostOnlyExternalError
from tensorkiln.byoc import external_modules
from tensorkiln.byoc.backends import cublas


@pytest.fixture
def gpu(monkeypatch):
    """The stand-in as ``cupy`` (for the runtime and the cuBLAS module): its call log."""
    log: list = []
    fake = fake_cupy(log)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert cublas.unavailable() is None
    return fake, log


def _f4(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _mlp(rng):
    """dense+bias+relu -> dense -> sigmoid on a symbolic batch: all cuBLAS patterns."""
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 37))
    h = b.relu(b.dense(x, _f4(rng, 45, 37), _f4(rng, 45)))
    return b.finish(b.sigmoid(b.dense(h, _f4(rng, 13, 45) / 8)))  # / 8: exp stays finite


def _reference(module, *xs):
    return tk.create_executor("interpreter", module).evaluate()(*xs)


def _library_calls(log) -> list[str]:
    return [entry[0] for entry in log]


@pytest.mark.parametrize("merge", [True, False])
def test_a_model_offloaded_whole_runs_on_device_buffers(gpu, rng, merge):
    fake, log = gpu
    module = _mlp(rng)
    part = tk.byoc.partition_for(module, "cublas", merge=merge)
    lib = tk.build(part, target="cuda")
    assert lib._module is None  # no kernel of ours to compile
    calls = [line.strip() for line in lib.host_source.splitlines() if "rt.call_external" in line]
    symbols = [m.symbol for m in external_modules(part)]
    assert len(symbols) == (1 if merge else 2)
    assert [c.split("'")[1] for c in calls] == symbols  # one call per region, in program order
    x = _f4(rng, 67, 37)
    fake.copies.clear()
    out = lib(x)
    assert isinstance(out, FakeArray) and out.shape == (67, 13)
    np.testing.assert_allclose(np.asarray(out), _reference(module, x), rtol=1e-5, atol=1e-6)
    assert _library_calls(log) == [
        "cupy.matmul", "cupy.maximum", "cupy.matmul", "cupy.negative", "cupy.exp", "cupy.reciprocal"
    ]  # fmt: skip
    # the input and the three weights go to the device; nothing comes back
    assert sorted(shape for _, shape in fake.copies) == [(13, 45), (45,), (45, 37), (67, 37)]
    assert all(where == "to device" for where, _ in fake.copies)
    # a second call with a device input copies nothing: weights stay on the device
    fake.copies.clear()
    x2 = _f4(rng, 3, 37)
    np.testing.assert_allclose(lib(fake.asarray(x2), output="numpy"), _reference(module, x2), rtol=1e-5, atol=1e-6)
    assert fake.copies == [("to device", (3, 37)), ("to host", (3, 13))]  # the stand-in's asarray, output="numpy"


def test_kernels_and_cublas_calls_run_in_program_order_on_shared_buffers(gpu, rng, monkeypatch):
    """dense (cuBLAS) -> softmax (our kernels) -> dense+tanh (cuBLAS)."""
    _, log = gpu
    w1, b1, w2 = _f4(rng, 19, 33), _f4(rng, 19), _f4(rng, 7, 19)
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 33))
    h = b.softmax(b.relu(b.dense(x, w1, b1)), -1)
    module = b.finish(b.tanh(b.dense(h, w2)))
    part = tk.byoc.partition_for(module, "cublas")
    first, second = external_modules(part)
    read_by_second = []
    run_second = second.run_device
    monkeypatch.setattr(second, "run_device", lambda i, o: (read_by_second.extend(i), run_second(i, o)))
    lib = tk.build(part, target="cuda")
    xv = _f4(rng, 29, 33)
    out = lib(xv)
    names = _library_calls(log)
    kernels = [n for n in names if not n.startswith("cupy.")]
    assert kernels and all(n.startswith("softmax") for n in kernels)
    assert names == ["cupy.matmul", "cupy.maximum", *kernels, "cupy.matmul", "cupy.tanh"]
    launches = [entry for entry in log if not entry[0].startswith("cupy.")]
    # every kernel reads the buffer the first region wrote, holding its (checked) result
    written = launches[0][3][0]
    assert isinstance(written, FakeArray) and written.shape == (29, 19)
    np.testing.assert_allclose(np.asarray(written), np.maximum(xv @ w1.T + b1, 0), rtol=1e-5, atol=1e-6)
    assert all(any(a is written for a in entry[3]) for entry in launches)
    # the last kernel's output is what the second region reads; it writes the model's output
    last_written = [a for a in launches[-1][3] if isinstance(a, FakeArray)][-1]
    assert len(read_by_second) == 1 and read_by_second[0] is last_written
    assert log[-2][1:] == ((29, 19), (19, 7)) and out.shape == (29, 7)
    src = lib.host_source
    assert src.index(f"rt.call_external('{first.symbol}'") < src.index("rt.launch(") < src.index(
        f"rt.call_external('{second.symbol}'"
    )


def test_the_external_module_gets_device_arrays_and_symbolic_sizes(gpu, rng, monkeypatch):
    _, _ = gpu
    module = _mlp(rng)
    part = tk.byoc.partition_for(module, "cublas")
    (ext,) = external_modules(part)
    seen = []
    original = ext.run_device

    def spy(inputs, outputs):
        seen.append(([type(a) for a in inputs], [a.shape for a in inputs], [a.shape for a in outputs]))
        original(inputs, outputs)

    monkeypatch.setattr(ext, "run_device", spy)
    lib = tk.build(part, target="cuda")
    for batch in (1, 41):
        lib(_f4(rng, batch, 37))
    assert seen == [([FakeArray], [(1, 37)], [(1, 13)]), ([FakeArray], [(41, 37)], [(41, 13)])]


def test_lifted_weights_are_device_buffers_of_the_host_program(gpu, rng):
    fake, log = gpu
    module = _mlp(rng)
    part = tk.byoc.partition_for(module, "cublas", bind_constants=False)
    (ext,) = external_modules(part)
    assert len(ext.inputs) == 4 and not ext.weights  # x, w1, b1, w2 passed at every call
    lib = tk.build(part, target="cuda")
    fake.copies.clear()
    x = fake.asarray(_f4(rng, 5, 37))
    fake.copies.clear()
    np.testing.assert_allclose(np.asarray(lib(x)), _reference(module, np.asarray(x)), rtol=1e-5, atol=1e-6)
    assert fake.copies == []  # the weights were uploaded when the module was made


def test_empty_batch_calls_nothing(gpu, rng):
    _, log = gpu
    lib = tk.build(tk.byoc.partition_for(_mlp(rng), "cublas"), target="cuda")
    assert lib(np.zeros((0, 37), np.float32)).shape == (0, 13)
    assert log == []


def test_batch_broadcasting_and_a_rank1_dense(gpu, rng):
    """Shapes sgemm could not stride (blas refuses them), and a vector input."""
    b = tk.GraphBuilder()
    p, q = b.input("p", (2, 1, 3, 9)), b.input("q", (1, 5, 9, 4))
    v = b.input("v", (11,))
    w, bias = _f4(rng, 6, 11), _f4(rng, 6)
    module = b.finish(b.batch_matmul(p, q), b.tanh(b.dense(v, w, bias)))
    part = tk.byoc.partition_for(module, "cublas")
    assert len(external_modules(part)) == 2
    lib = tk.build(part, target="cuda")
    args = [_f4(rng, 2, 1, 3, 9), _f4(rng, 1, 5, 9, 4), _f4(rng, 11)]
    for got, want in zip(lib(*args, output="numpy"), _reference(module, *args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_cpu_build_and_the_interpreter_copy_through_the_host(gpu, rng):
    """cuBLAS from CPU code: inputs copied to the device, outputs back (the llvm build's
    native callback and the interpreter both call ``run``)."""
    fake, log = gpu
    module = _mlp(rng)
    part = tk.byoc.partition_for(module, "cublas")
    x = _f4(rng, 9, 37)
    for got in (tk.build(part)(x), _reference(part, x)):
        np.testing.assert_allclose(got, _reference(module, x), rtol=1e-5, atol=1e-6)
    assert ("to host", (9, 13)) in fake.copies


@pytest.mark.parametrize("backend", ["example_npu", "blas"])
def test_a_host_only_backend_in_a_cuda_build_is_refused_by_name(rng, backend):
    pytest.importorskip("scipy") if backend == "blas" else None
    part = tk.byoc.partition_for(_mlp(rng), backend)
    (ext,) = external_modules(part)
    with pytest.raises(HostOnlyExternalError, match=f"'{ext.symbol}' \\(BYOC backend '{backend}'\\) runs on the host only"):
        tk.build(part, target="cuda")


@pytest.mark.parametrize("backend", ["cublas", "example_npu"])
def test_the_gpu_emulator_runs_external_modules_between_its_kernels(gpu, rng, backend):
    """``build_emulated``: our kernels run on the CPU with GPU semantics, the regions
    through their CPU entry (cuBLAS on the stand-in): the whole mixed model's numbers."""
    from tensorkiln.driver.cuda import build_emulated

    b = tk.GraphBuilder()
    x = b.input("x", ("n", 33))
    h = b.softmax(b.relu(b.dense(x, _f4(rng, 19, 33), _f4(rng, 19))), -1)
    module = b.finish(b.tanh(b.dense(h, _f4(rng, 7, 19))))
    part = tk.byoc.partition_for(module, backend)
    lib = build_emulated(part)
    assert [m.symbol for m in lib.external_modules] == [m.symbol for m in external_modules(part)]
    xv = _f4(rng, 23, 33)
    np.testing.assert_allclose(lib(xv), _reference(module, xv), rtol=1e-5, atol=1e-6)


class _DeviceProduct(tk.byoc.PythonExternalModule):
    """A user's own device module: ``a * b`` written into the output, on device arrays."""

    kind = "test.device_product"
    device = "cuda"

    def run_device(self, inputs, outputs):
        assert all(isinstance(a, FakeArray) for a in [*inputs, *outputs])
        np.multiply(*inputs, out=outputs[0])

    def run(self, *inputs):
        return [np.multiply(*inputs)]


def test_a_user_module_with_a_device_entry_runs_in_the_cuda_build(gpu, rng):
    from tensorkiln.byoc.external import spec_of

    def codegen(region):
        specs = [spec_of(a.type) for a in region.body.block.args]
        return _DeviceProduct(region.symbol.data, "device_mul", specs, [spec_of(t) for t in region.outputs.types])

    tk.byoc.register_backend("device_mul", codegen)
    try:
        product = tk.byoc.is_op("graph.mul", tk.byoc.wildcard(), tk.byoc.wildcard())
        tk.byoc.register_patterns("device_mul", [("mul", product, None, 1)])
        _, log = gpu
        b = tk.GraphBuilder()
        x, y = b.input("x", ("n", 13)), b.input("y", ("n", 13))
        part = tk.byoc.partition_for(b.finish(b.exp(b.mul(x, y))), "device_mul")
        lib = tk.build(part, target="cuda")
        xs = [_f4(rng, 5, 13) for _ in range(2)]
        lib(*xs)
        ((kernel, _, _, args),) = log  # the product ran first, then our exp kernel read it
        assert kernel.startswith("exp")
        np.testing.assert_array_equal(np.asarray(args[0]), xs[0] * xs[1])
    finally:
        tk.byoc.unregister_backend("device_mul")
