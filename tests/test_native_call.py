"""The native call entry (runtime/native_call.py, backends/llvm/native_entry.py): a
compiled model's repeated calls go through one C function of the interpreter. It must
give the general path's results, fall back to it (and so raise its errors, word for
word) for every call it does not handle, keep concurrent calls apart, and leak nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tensorkiln as tk
from test_call_errors import _module as call_errors_model
from tensorkiln.dialects.functions import find_function, set_dim_ranges
from tensorkiln.runtime import load_module
from tensorkiln.runtime.native_call import BUSY, FALLBACK, NativeCallContext, not_eligible
from tensorkiln.runtime.signature import Signature, TensorSpec
from tensorkiln.runtime.sizes import TensorTooLargeError

F32, F64, I32, I64 = np.dtype("float32"), np.dtype("float64"), np.dtype("int32"), np.dtype("int64")


def _warm(lib, *args):
    """Two calls: the second makes the native entry (the first is timed, general)."""
    lib(*args)
    lib(*args)
    assert lib._native is not None, "the native entry was not made"
    return lib


def _errors(call, args):
    try:
        call(*args)
    except Exception as e:  # noqa: BLE001 (compared below)
        return type(e), str(e)
    return None


# -- a model with symbols, several inputs and outputs ---------------------------------


@pytest.fixture(scope="module")
def symbolic():
    """test_call_errors' model, main(x: f32[n, 4], y: f32[n, 4], idx: i32[3], s: f32[]) ->
    (f32[n, 4], i32[3]), with n in [0, 1000]."""
    module = call_errors_model()
    set_dim_ranges(find_function(module, "main"), {"n": (0, 1000)})
    return _warm(tk.build(module), *_good(3))


def _good(n, seed=0):
    rng = np.random.default_rng(seed + n)
    return [rng.random((n, 4), dtype=F32), rng.random((n, 4), dtype=F32), rng.integers(-9, 9, 3).astype(I32), np.array(1.5, F32)]


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_results_match_the_general_path(symbolic, n):
    args = _good(n)
    assert symbolic._native(*args) is not FALLBACK  # (zero-size dims too)
    out, neg = symbolic(*args)
    ref_out, ref_neg = symbolic._run_general(args)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(neg, ref_neg)
    np.testing.assert_allclose(out, (args[0] + args[1]) * 1.5, rtol=1e-6)
    assert out.shape == (n, 4) and out.dtype == F32 and neg.dtype == I32
    assert out.flags.c_contiguous and out.flags.writeable and out.flags.owndata


def _with(k, value, n=3):
    args = _good(n)
    args[k] = value
    return args


BAD_CALLS = {
    "too-few": _good(3)[:3],
    "too-many": [*_good(3), np.zeros(1, F32)],
    "none": [],
    "f64-for-f32": _with(0, np.zeros((3, 4), F64)),
    "i64-for-i32": _with(2, np.zeros(3, I64)),
    "big-endian": _with(0, np.zeros((3, 4), ">f4")),
    "python-float": _with(3, 1.5),
    "rank": _with(0, np.zeros(12, F32)),
    "scalar-as-1d": _with(3, np.zeros(1, F32)),
    "static-dim": _with(2, np.zeros(4, I32)),
    "symbol-inconsistent": _with(1, np.zeros((5, 4), F32)),
    "symbol-out-of-range": [np.zeros((1001, 4), F32), np.zeros((1001, 4), F32), np.zeros(3, I32), np.array(1.0, F32)],
    "list": _with(0, [[1.0] * 4] * 3),
    "none-arg": _with(0, None),
    "matrix-subclass": _with(0, np.asmatrix(np.zeros((3, 4), F32))),
}


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_calls_fall_back_and_raise_the_general_paths_error(symbolic, case):
    args = BAD_CALLS[case]
    assert symbolic._native(*args) is FALLBACK
    general = _errors(lambda *a: symbolic._run_general(a), args)
    if case == "matrix-subclass":  # not an exact ndarray: the general path accepts it
        assert general is None
        return
    assert general is not None and general[0] is ValueError
    assert _errors(symbolic, args) == general


@pytest.mark.parametrize("layout", ["fortran", "strided", "unaligned-dtype-object", "read-only"])
def test_unusual_arrays_give_right_answers(symbolic, layout):
    x, y, idx, s = _good(5)
    if layout == "fortran":
        x = np.asfortranarray(x)
    elif layout == "strided":
        y = np.repeat(y, 2, axis=0)[::2]
    elif layout == "unaligned-dtype-object":  # an equal dtype, another object: the general path
        x = x.view(np.dtype("float32").newbyteorder("="))
    else:
        x.flags.writeable = False
    out, neg = symbolic(x, y, idx, s)
    np.testing.assert_allclose(out, (x + y) * s, rtol=1e-6)
    np.testing.assert_array_equal(neg, -idx)


def test_outputs_are_fresh_arrays():
    b = tk.GraphBuilder()
    x = b.input("x", (3, 5), F32)
    lib = _warm(tk.build(b.finish(b.relu(x))), np.ones((3, 5), F32))
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(F32)
    first, second = lib(x), lib(x)
    assert first is not second and not np.shares_memory(first, x) and not np.shares_memory(first, second)
    first[...] = 7
    np.testing.assert_array_equal(second, np.maximum(x, 0))


def test_the_entry_alone_keeps_what_it_reads_alive():
    """The function object keeps its context (weights, template, workspace) alive."""
    module, weights = _chain(3)
    lib = tk.build(module)
    x = np.random.default_rng(8).standard_normal((3, 19)).astype(F32)
    _warm(lib, x)
    native = lib._native
    del lib
    import gc

    gc.collect()
    np.testing.assert_allclose(native(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6)


def test_no_reference_leaks(symbolic):
    args = _good(4)
    dtype = np.dtype("float32")
    bad = _with(0, np.zeros((3, 4), F64))
    for _ in range(50):
        symbolic(*args)
        symbolic._native(*bad)
    before = [sys.getrefcount(a) for a in args] + [sys.getrefcount(dtype), sys.getrefcount(FALLBACK)]
    for _ in range(2000):
        out, neg = symbolic(*args)
        symbolic._native(*bad)
    del out, neg
    after = [sys.getrefcount(a) for a in args] + [sys.getrefcount(dtype), sys.getrefcount(FALLBACK)]
    assert after == before
    out, _ = symbolic(*args)
    assert sys.getrefcount(out) == 2  # this name and getrefcount's argument


# -- outputs too large, run-time checks, temporaries ----------------------------------


def test_an_output_too_large_for_64_bits_is_the_general_paths_error():
    """x[n, k] @ y[k, m] with k = 0: empty inputs, an output of 2**80 elements."""
    b = tk.GraphBuilder()
    x, y = b.input("x", ("n", "k"), F32), b.input("y", ("k", "m"), F32)
    lib = _warm(tk.build(b.finish(b.matmul(x, y))), np.ones((2, 3), F32), np.ones((3, 2), F32))
    args = (np.empty((2**40, 0), F32), np.empty((0, 2**40), F32))
    assert lib._native(*args) is FALLBACK
    with pytest.raises(TensorTooLargeError, match="tensor '.*' of shape \\[1099511627776, 1099511627776\\]"):
        lib(*args)
    np.testing.assert_allclose(lib(np.ones((2, 3), F32), np.ones((3, 4), F32)), np.full((2, 4), 3.0))


def test_run_time_checks():
    b = tk.GraphBuilder()
    x = b.input("x", (6,), F32)
    b.check(b.compare(b.reduce_sum(x, [0]), 100.0, "lt"), "the sum must stay below 100")
    lib = _warm(tk.build(b.finish(b.neg(x))), np.zeros(6, F32))
    assert lib.signature.checks
    small, big = np.arange(6, dtype=F32), np.full(6, 20.0, F32)
    assert lib._native(small) is not FALLBACK
    np.testing.assert_array_equal(lib(small), -small)
    assert lib._native(big) is FALLBACK  # the predicate is false: the general path raises
    with pytest.raises(RuntimeError, match="the sum must stay below 100"):
        lib(big)


def _chain(batch):
    """dense -> softmax -> dense -> tanh: intermediates the entry takes as temporaries."""
    rng = np.random.default_rng(5)
    b = tk.GraphBuilder()
    h = x = b.input("x", (batch, 19))
    weights = []
    for k, width in enumerate((23, 7)):
        w = (rng.standard_normal((width, h.type.get_shape()[1])) / 4).astype(F32)
        weights.append(w)
        h = b.dense(h, w)
        h = b.softmax(h, -1) if k == 0 else b.tanh(h)
    return b.finish(h), weights


def _chain_reference(x, weights):
    h = x @ weights[0].T
    h = np.exp(h - h.max(-1, keepdims=True))
    return np.tanh((h / h.sum(-1, keepdims=True)) @ weights[1].T)


def _wrong_from_threads(lib, inputs, weights):
    """Call ``lib`` on ``inputs[t]`` from thread t, all starting at once; the wrong calls."""
    wrong, start = [], threading.Barrier(len(inputs))

    def worker(t):
        start.wait()
        for x in inputs[t]:
            if not np.allclose(lib(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6):
                wrong.append((t, x.shape))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return wrong


def test_static_model_with_temporaries_and_threads():
    module, weights = _chain(3)
    lib = tk.build(module)
    assert lib._workspaces is not None, "expected the entry to take temporaries"
    rng = np.random.default_rng(2)
    _warm(lib, rng.standard_normal((3, 19)).astype(F32))
    x = rng.standard_normal((3, 19)).astype(F32)
    assert lib._native(x) is not FALLBACK
    np.testing.assert_allclose(lib(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6)
    inputs = [[rng.standard_normal((3, 19)).astype(F32) for _ in range(200)] for _ in range(4)]
    assert not _wrong_from_threads(lib, inputs, weights)
    assert lib._native_context.words[BUSY] == 0  # the workspace is idle again


def test_threads_at_changing_sizes():
    """4 threads, each call at its own size: the general path installs workspaces for new
    sizes while other threads' calls run on the installed one (native_call.adopt)."""
    module, weights = _chain("n")
    lib = tk.build(module)
    rng = np.random.default_rng(9)
    inputs = [[rng.standard_normal((1 + (t * 7 + c) % 6 + (c // 50), 19)).astype(F32) for c in range(300)] for t in range(4)]
    wrong = _wrong_from_threads(lib, inputs, weights)
    assert not wrong, wrong[:5]
    assert lib._native is not None


def test_one_copy_of_the_temporaries_for_calls_from_one_thread():
    """The native entry takes the general path's idle workspace: 3 calls, 1 made."""
    module, weights = _chain(4)
    lib = tk.build(module)
    pool = lib._workspaces._pool
    made, make = [], pool._make
    pool._make = lambda symbols: made.append(symbols) or make(symbols)
    x = np.random.default_rng(6).standard_normal((4, 19)).astype(F32)
    for _ in range(3):
        np.testing.assert_allclose(lib(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6)
    assert lib._native is not None and lib._native(x) is not FALLBACK
    assert made == [{}]


def test_symbolic_model_with_temporaries_adopts_the_last_sizes():
    module, weights = _chain("n")
    lib = tk.build(module)
    rng = np.random.default_rng(3)
    _warm(lib, rng.standard_normal((2, 19)).astype(F32))
    for n in (2, 5, 5, 1, 5, 0):
        x = rng.standard_normal((n, 19)).astype(F32)
        np.testing.assert_allclose(lib(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6)
    x = rng.standard_normal((0, 19)).astype(F32)
    assert lib._native(x) is not FALLBACK  # the workspace of the last sizes (n = 0)
    assert lib._native(rng.standard_normal((4, 19)).astype(F32)) is FALLBACK  # another size: general, once
    lib(rng.standard_normal((4, 19)).astype(F32))
    x = rng.standard_normal((4, 19)).astype(F32)
    assert lib._native(x) is not FALLBACK
    np.testing.assert_allclose(lib(x), _chain_reference(x, weights), rtol=1e-4, atol=1e-6)


# -- what is not eligible, switching it off, artifacts ---------------------------------


def test_signatures_the_entry_does_not_take():
    x = TensorSpec("x", ("n",), F32)
    assert not_eligible(Signature((x,), (x,))) is None
    assert "computed dim" in not_eligible(Signature((x,), (TensorSpec("y", ("n - 2",), F32),)))
    assert "random" in not_eligible(Signature((x, TensorSpec("state", (2,), np.dtype("uint64"))), (x,), random_state=1))
    assert NativeCallContext.create(Signature((x,), (TensorSpec("y", ("2*n",), F32),)), 0, [], 4, None) is None


def test_threads_making_the_first_entry_at_once():
    """4 threads call a fresh process's first model from its first call on: the entry is
    compiled once (the others wait), every answer right."""
    code = """
        import threading, numpy as np, tensorkiln as tk
        b = tk.GraphBuilder(); x = b.input("x", ("n", 3), np.float32)
        lib = tk.build(b.finish(b.tanh(b.add(x, 1.0))))
        wrong, start = [], threading.Barrier(4)
        def work(t):
            start.wait()
            for k in range(300):
                x = np.full((1 + (t + k) % 5, 3), t * 0.1 + k * 0.01, np.float32)
                if not np.allclose(lib(x), np.tanh(x + 1)):
                    wrong.append((t, k))
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        [t.start() for t in threads]; [t.join() for t in threads]
        assert not wrong and lib._native is not None, wrong[:3]
        print("ok")
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_environment_switch_turns_it_off():
    code = """
        import numpy as np, tensorkiln as tk
        b = tk.GraphBuilder(); x = b.input("x", (4,), np.float32)
        lib = tk.build(b.finish(b.relu(x)))
        for _ in range(3): y = lib(np.arange(4, dtype=np.float32) - 2)
        assert lib._native is None and list(y) == [0, 0, 0, 1]
        print("ok")
    """
    env = {**os.environ, "TK_NATIVE_CALL": "0"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_artifacts_with_and_without_the_compiler(tmp_path):
    """An exported model.so carries the entry: a deployed model calls it in a process
    without llvmlite or xDSL, and in one with the compiler."""
    module, weights = _chain("n")
    tk.build(module).export_library(str(tmp_path / "chain.tk"))
    x = np.random.default_rng(4).standard_normal((3, 19)).astype(F32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "expected.npy", _chain_reference(x, weights))
    code = f"""
        import sys
        sys.modules["llvmlite"] = sys.modules["xdsl"] = None   # a deployment: no compiler
        import numpy as np
        from tensorkiln.runtime import load_module
        from tensorkiln.runtime.native_call import FALLBACK
        lib = load_module({str(tmp_path / "chain.tk")!r})
        x, expected = np.load({str(tmp_path / "x.npy")!r}), np.load({str(tmp_path / "expected.npy")!r})
        for _ in range(3):
            np.testing.assert_allclose(lib(x), expected, rtol=1e-4, atol=1e-6)
        assert lib._native is not None and lib._native(x) is not FALLBACK
        assert lib._native(x.astype(np.float64)) is FALLBACK
        try:
            lib(x[:, :5])
        except ValueError as e:
            print(e)
        print("ok")
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["argument 'x': expected shape float32[n, 19], got [3, 5] (dim 1: expected 19, got 5)", "ok"]
    deployed = load_module(str(tmp_path / "chain.tk"))  # here the compiler is loaded: the same
    for _ in range(3):
        np.testing.assert_allclose(deployed(x), np.load(tmp_path / "expected.npy"), rtol=1e-4, atol=1e-6)
    assert deployed._native is not None and deployed._native(x) is not FALLBACK


def test_a_library_without_an_entry_of_its_own_uses_the_compiled_one():
    """Built models' native code (the JIT's) has none: the process's compiled entry."""
    from tensorkiln.backends.llvm.native_entry import compiled_entry

    b = tk.GraphBuilder()
    x = b.input("x", (2, 3), F32)
    lib = _warm(tk.build(b.finish(b.exp(x))), np.zeros((2, 3), F32))
    with pytest.raises(KeyError):
        lib._keep_alive.address("tk_native_call")
    assert compiled_entry() is not None
def test_other_dtypes_take_the_entry():
    """bfloat16 (ml_dtypes), int64 and bool: the same dtype objects numpy gives arrays."""
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    b = tk.GraphBuilder()
    x, i = b.input("x", (2, 9), bf16), b.input("i", (2, 9), I64)
    lib = tk.build(b.finish(b.add(x, x), b.neg(i), b.compare(i, 3, "gt")))
    args = (np.linspace(-3, 3, 18).reshape(2, 9).astype(bf16), np.arange(18).reshape(2, 9) - 9)
    _warm(lib, *args)
    assert lib._native(*args) is not FALLBACK
    for got, want in zip(lib(*args), lib._run_general(args)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
