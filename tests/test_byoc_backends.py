"""BYOC backends, numerically: offloaded models (compiled and interpreted) against the
model without offload, the NPU's decision log, serialization, errors, cuBLAS skipping."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.byoc import deserialize, external_modules
from tensorkiln.byoc.backends import blas, cublas
from tensorkiln.byoc.deploy import bind_trampolines, trampoline_source

BLAS_MISSING = blas.unavailable()
BACKENDS = [
    "example_npu",
    pytest.param("blas", marks=pytest.mark.skipif(BLAS_MISSING is not None, reason=str(BLAS_MISSING))),
]


def _f4(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _mlp(rng, batch="n"):
    b = tk.GraphBuilder()
    x = b.input("x", (batch, 33))
    h = b.relu(b.dense(x, _f4(rng, 19, 33), _f4(rng, 19)))
    h = b.sigmoid(b.add(b.dense(h, _f4(rng, 11, 19)), _f4(rng, 11)))
    return b.finish(b.softmax(b.tanh(b.dense(h, _f4(rng, 7, 11))), -1))


def _products(rng):
    b = tk.GraphBuilder()
    x = b.input("x", (2, 5, 13))  # dense on a rank-3 input
    y = b.input("y", (3, 6, 7))
    z = b.input("z", (3, 7, 4))
    o = b.input("o", (1, 7, 9))  # batch broadcast from 1
    m = b.input("m", (6, 7))
    d = b.dense(x, _f4(rng, 10, 13), _f4(rng, 10))
    bmm = b.relu(b.batch_matmul(y, z))
    bcast = b.batch_matmul(y, o)
    mm = b.tanh(b.add(_f4(rng, 5), b.matmul(m, _f4(rng, 7, 5))))  # bias on the left
    return b.finish(d, bmm, bcast, mm)


def _check(part, module, inputs, rtol=2e-5):
    compiled = tk.build(part)
    want = tk.create_executor("interpreter", module).evaluate()(*inputs)
    for run in (compiled, tk.create_executor("interpreter", part).evaluate()):
        got = run(*inputs)
        got, expect = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, expect, strict=True):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bind_constants", [True, False])
def test_mlp_offloaded_matches_with_a_symbolic_batch(rng, backend, bind_constants):
    module = _mlp(rng)
    part = tk.byoc.partition_for(module, backend, bind_constants=bind_constants)
    assert [op.name for op in part.walk() if op.name.startswith("byoc.")] == ["byoc.call"]
    for batch in (1, 7):
        _check(part, module, [_f4(rng, batch, 33)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_product_kind_with_epilogues(rng, backend):
    module = _products(rng)
    part = tk.byoc.partition_for(module, backend)
    assert len(external_modules(part)) == 4
    _check(part, module, [_f4(rng, 2, 5, 13), _f4(rng, 3, 6, 7), _f4(rng, 3, 7, 4), _f4(rng, 1, 7, 9), _f4(rng, 6, 7)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_merged_region_with_temporaries(rng, backend):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 9))
    h = b.dense(x, _f4(rng, 8, 9))
    y = b.relu(b.dense(b.relu(b.dense(h, _f4(rng, 6, 8))), _f4(rng, 5, 6)))
    module = b.finish(b.neg(y))
    part = tk.byoc.partition_for(module, backend)
    (ext,) = external_modules(part)
    assert len(ext.outputs) == 1 and len(ext.describe()["steps"]) == 3
    _check(part, module, [_f4(rng, 4, 9)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_serialized_modules_run_the_same(rng, backend):
    for bind in (True, False):
        part = tk.byoc.partition_for(_mlp(rng, batch=3), backend, bind_constants=bind)
        (ext,) = external_modules(part)
        copy = deserialize(ext.serialize())
        assert type(copy) is type(ext) and copy.inputs == ext.inputs and copy.outputs == ext.outputs
        inputs = [_f4(rng, *s.shape) for s in ext.inputs]
        for got, want in zip(copy.run(*inputs), ext.run(*inputs)):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="bad magic"):
        deserialize(b"nonsense")


def test_npu_decision_log_is_readable_and_deterministic(rng):
    module = _mlp(rng, batch=5)
    logs = [external_modules(tk.byoc.partition_for(module, "example_npu"))[0].log for _ in range(2)]
    assert logs[0] == logs[1]
    assert logs[0] == [
        "region: 3 step(s), inputs in0, outputs t2",
        "step 0 [example_npu.dense_bias_act]: dense M=5 N=19 K=33 -> matrix engine; weight w0 (bound constant); "
        "tier sram (3548 bytes); tile 5x19x33",
        "step 0: fused into the matrix engine output stage: bias w1, relu",
        "step 1 [example_npu.dense_bias_act]: dense M=5 N=11 K=19 -> matrix engine; weight w2 (bound constant); "
        "tier sram (1436 bytes); tile 5x11x19",
        "step 1: fused into the matrix engine output stage: bias w3",
        "step 1: sigmoid -> vector engine (not fusable), one pass over 5x11",
        "step 2 [example_npu.dense_act]: dense M=5 N=7 K=11 -> matrix engine; weight w4 (bound constant); "
        "tier sram (668 bytes); tile 5x7x11",
        "step 2: tanh -> vector engine (not fusable), one pass over 5x7",
    ]


def test_npu_log_names_symbolic_dims_and_dram_for_big_weights(rng):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 300))
    module = b.finish(b.dense(x, _f4(rng, 301, 300)))
    (npu,) = external_modules(tk.byoc.partition_for(module, "example_npu"))
    assert "dense M=n N=301 K=300" in npu.log[1] and "tier dram (streamed by tiles)" in npu.log[1]


def test_an_error_inside_a_python_module_reaches_the_caller(rng):
    module = _mlp(rng, batch=2)
    part = tk.byoc.partition_for(module, "example_npu")
    (npu,) = external_modules(part)
    lib = tk.build(part)
    npu.program.steps[0]["op"] = "broken"  # make the numpy step fail at run time
    npu.program.steps[0]["b"] = "missing"
    with pytest.raises(RuntimeError, match=r"external module 'example_npu_main_0\w*' \(example_npu\) failed: 'missing'"):
        lib(_f4(rng, 2, 33))
    # an executor that does not check for the error gets NaN, not stale memory
    out = tk.create_executor("graph", part).evaluate()(_f4(rng, 2, 33))
    assert np.isnan(out).all()
    with pytest.raises(RuntimeError, match="failed"):
        npu.raise_pending()


def test_wrong_inputs_to_an_external_module_are_named(rng):
    (npu,) = external_modules(tk.byoc.partition_for(_mlp(rng, batch=2), "example_npu"))
    with pytest.raises(ValueError, match=r"input #0: shape \(2, 32\), expected \(2, 33\)"):
        npu.run(np.zeros((2, 32), np.float32))


def test_cublas_partitions_anywhere_and_skips_cleanly_without_a_gpu(rng):
    module = _mlp(rng, batch=4)
    part = tk.byoc.partition_for(module, "cublas", codegen=False)
    assert {op.name for op in part.walk()} >= {"byoc.region", "byoc.composite"}
    reason = cublas.unavailable()
    if reason is not None:
        with pytest.raises(RuntimeError, match="cublas.*cannot run here"):
            tk.byoc.partition_for(module, "cublas")
        pytest.skip(f"cuBLAS offload not run: {reason}")
    offloaded = tk.byoc.partition_for(module, "cublas")
    _check(offloaded, module, [_f4(rng, 4, 33)], rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_modules_deserialize_and_run_without_the_compiler(rng, backend, tmp_path):
    """What an export artifact needs: bytes -> module -> run, in a process without xDSL."""
    (ext,) = external_modules(tk.byoc.partition_for(_mlp(rng, batch=3), backend))
    x = _f4(rng, 3, 33)
    (tmp_path / "module.bin").write_bytes(ext.serialize())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", ext.run(x)[0])
    code = f"""
import sys
sys.modules["xdsl"] = None  # importing xDSL now fails
import subprocess
import sys

import numpy as np
from tensorkiln.byoc.external import deserialize
module = deserialize(open({str(tmp_path / "module.bin")!r}, "rb").read())
got = module.run(np.load({str(tmp_path / "x.npy")!r}))[0]
np.testing.assert_array_equal(got, np.load({str(tmp_path / "want.npy")!r}))
print(type(module).__name__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == type(ext).__name__


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) to link a shared library")
@pytest.mark.parametrize("backend", BACKENDS)
def test_trampolines_call_a_deserialized_module_from_a_shared_library(rng, backend, tmp_path):
    """The export path's two halves: a C trampoline linked into a library, bound at load."""
    (ext,) = external_modules(tk.byoc.partition_for(_mlp(rng), backend))  # symbolic batch: dims passed
    source = tmp_path / "trampolines.c"
    source.write_text(trampoline_source([ext]))
    library = tmp_path / "libext.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    loaded = deserialize(ext.serialize())
    lib = ctypes.CDLL(str(library))
    bind_trampolines(lib, [loaded])
    x = _f4(rng, 6, 33)
    out = np.empty((6, 7), np.float32)
    entry = getattr(lib, ext.symbol)
    entry.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    entry(x.ctypes.data, 6, out.ctypes.data, 6)
    loaded.raise_pending()
    np.testing.assert_array_equal(out, ext.run(x)[0])


def _edge_cases(rng):
    """(name, module, inputs): rank-1 input, K = N = 1, batch broadcast from 1 on the left,
    rank 4 with a symbolic batch, an empty batch."""
    cases = []
    b = tk.GraphBuilder()
    cases.append(("rank1", b.finish(b.relu(b.dense(b.input("x", (33,)), _f4(rng, 5, 33), _f4(rng, 5)))), [(33,)]))
    b = tk.GraphBuilder()
    cases.append(("k1n1", b.finish(b.dense(b.input("x", ("n", 1)), _f4(rng, 1, 1))), [(3, 1)]))
    b = tk.GraphBuilder()
    bmm = b.batch_matmul(b.input("x", (1, 4, 5)), b.input("y", (3, 5, 2)))
    cases.append(("bcast", b.finish(bmm), [(1, 4, 5), (3, 5, 2)]))
    b = tk.GraphBuilder()
    bmm = b.batch_matmul(b.input("x", ("b", 2, 4, 5)), b.input("y", ("b", 2, 5, 3)))
    cases.append(("rank4", b.finish(b.sigmoid(bmm)), [(3, 2, 4, 5), (3, 2, 5, 3)]))
    b = tk.GraphBuilder()
    cases.append(("empty", b.finish(b.matmul(b.input("x", ("n", 7)), _f4(rng, 7, 3))), [(0, 7)]))
    return cases


@pytest.mark.parametrize("backend", BACKENDS)
def test_edge_shapes(rng, backend):
    for name, module, shapes in _edge_cases(rng):
        part = tk.byoc.partition_for(module, backend)
        assert len(external_modules(part)) == 1, name
        _check(part, module, [_f4(rng, *s) for s in shapes])


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_executor_runs_external_modules_and_the_profile_names_them(rng, backend):
    from tensorkiln.api import EXECUTOR_KINDS

    module = _mlp(rng)
    part = tk.byoc.partition_for(module, backend)
    x = _f4(rng, 5, 33)
    want = tk.create_executor("interpreter", module).evaluate()(x)
    for kind in EXECUTOR_KINDS:
        got = tk.create_executor(kind, part).evaluate()(x)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=kind)
    (ext,) = external_modules(part)
    assert ext.symbol in str(tk.build(part).profile(x))


def test_a_region_with_several_results_compiles(rng):
    """merge-composites{single_output=false}: one external call writes two temporaries;
    the memory plan gives each its own storage (both executors)."""
    from tensorkiln.passes.pipeline import PassContext, run_pipeline

    b = tk.GraphBuilder()
    x = b.input("x", (4, 16))
    d1 = b.dense(x, _f4(rng, 16, 16))
    u = b.neg(d1)
    module = b.finish(b.add(b.dense(d1, _f4(rng, 8, 16)), b.reshape(b.reduce_sum(u, [1]), (4, 1))))
    part = module.clone()
    steps = ("partition{backend=example_npu}", "merge-composites{single_output=false}",
             "annotate-codegen{backend=example_npu}", "run-codegen")  # fmt: skip
    run_pipeline(part, steps, PassContext(dump_ir=False))
    assert str(part).count("byoc.call") == 1
    data = _f4(rng, 4, 16)
    want = tk.create_executor("interpreter", module).evaluate()(data)
    for kind in ("aot", "graph"):
        np.testing.assert_allclose(tk.create_executor(kind, part).evaluate()(data), want, rtol=2e-5, atol=1e-5)
