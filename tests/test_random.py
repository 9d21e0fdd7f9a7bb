"""Random numbers: ``graph.random`` (interpreter and compiled code draw the same bits),
the hidden random-state input every runtime fills, the distributions' statistics, and
torch's random ops (rand, randn, randint, the samplers, randperm, multinomial, dropout
and rrelu in training).

Random outputs cannot be compared with torch's values: the tests check exact agreement
between our executors for one state, and the statistics of many draws against the
distributions (bounds chosen many standard errors wide: they do not flake)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from xdsl.dialects.builtin import f32, i32

import tensorkiln as tk
from tensorkiln.frontends.builder import GraphBuilder
from tensorkiln.interpreter import interpret

RNG = np.random.default_rng()


def _state() -> np.ndarray:
    return RNG.integers(-(2**62), 2**62, size=2, dtype=np.int64)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _ks_statistic(samples: np.ndarray, cdf) -> float:
    """Kolmogorov-Smirnov distance of ``samples`` from ``cdf``."""
    x = np.sort(samples.astype(np.float64).ravel())
    n = x.size
    c = cdf(x)
    return float(max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)))


def _draws_module(shape=(3, 7, 5)):
    b = GraphBuilder()
    x = b.input("x", (3, 5))
    u = b.draw("uniform", shape, np.float32)
    n = b.draw("normal", (1001,), np.float64)
    return b.finish(b.add(x, b.reduce_sum(u, [1])), u, n)


# -- graph level ------------------------------------------------------------------


def _filecheck(text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(checks)
    done = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=text, text=True, capture_output=True)
    assert done.returncode == 0, done.stderr + text


def test_draw_adds_the_state_input_and_a_stream_per_op(tmp_path):
    module = _draws_module()
    text = str(module)
    checks = """
    CHECK: func.func @main(%x: tensor<3x5xf32>, %rng_state: tensor<2xi64>)
    CHECK-SAME: attributes {tk.random_state = 1 : i64}
    CHECK: graph.random %rng_state {{.*}}distribution = "uniform"{{.*}}stream = 0 : i64
    CHECK-SAME: -> tensor<3x7x5xf32>
    CHECK: graph.random %rng_state {{.*}}distribution = "normal"{{.*}}stream = 1 : i64
    CHECK-SAME: -> tensor<1001xf64>
    """
    _filecheck(text, checks, tmp_path)


def test_compiled_draws_match_the_interpreter():
    module = _draws_module()
    x, state = RNG.standard_normal((3, 5)).astype(np.float32), _state()
    want = interpret(module)(x, state)
    got = tk.build(module)(x, state)
    np.testing.assert_array_equal(got[1], want[1])  # uniform: the same bits
    # normal: our log/cos vs numpy's libm; a few ulps each, amplified up to ~1e-12 in the tails
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1].dtype == np.float32 and got[2].dtype == np.float64


def test_symbolic_shapes_draw_the_numbers_of_the_static_shape():
    """The counter of an element depends on its indices only: a batch of n draws the first
    n rows of a larger batch, and a symbolic shape draws what the static one does."""
    b = GraphBuilder()
    x = b.input("x", ("n", 1, 3))
    module = b.finish(b.add(x, b.draw("uniform", ("n", 6, 1), np.float32, [x])))
    lib, state = tk.build(module), _state()
    big = lib(np.zeros((9, 1, 3), np.float32), state)
    small = lib(np.zeros((4, 1, 3), np.float32), state)
    np.testing.assert_array_equal(small, big[:4])
    b = GraphBuilder()
    static = b.finish(b.draw("uniform", (4, 6, 1), np.float32))
    np.testing.assert_array_equal(tk.build(static)(state), small[:, :, :1])


def test_the_state_is_checked_by_the_verifier():
    b = GraphBuilder()
    wrong = b.input("s", (3,), np.int64)
    with pytest.raises(Exception, match="tensor<2xi64>"):
        b.random(wrong, "uniform", 0, (4,), f32)
    with pytest.raises(Exception, match="unknown distribution 'gamma'"):
        b.random(b.input("t", (2,), np.int64), "gamma", 0, (4,), f32)
    with pytest.raises(Exception, match="f32 or f64"):
        b.random(b.input("q", (2,), np.int64), "normal", 0, (4,), i32)


def test_printed_ir_parses_back():
    from xdsl.parser import Parser

    from tensorkiln.universe import make_context

    module = _draws_module()
    parsed = Parser(make_context(), str(module)).parse_module()
    assert str(parsed) == str(module)


# -- statistics ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_and_normal_statistics(dtype):
    b = GraphBuilder()
    module = b.finish(b.draw("uniform", (301, 333), dtype), b.draw("normal", (301, 333), dtype))
    u, n = tk.build(module)(_state())
    assert u.dtype == n.dtype == dtype
    assert 0.0 <= u.min() and u.max() < 1.0
    count = u.size  # 100233 draws: standard errors of about 1e-3
    assert abs(u.mean() - 0.5) < 6 * math.sqrt(1 / 12 / count)
    assert abs(u.var() - 1 / 12) < 0.003
    assert _ks_statistic(u, lambda x: np.clip(x, 0, 1)) < 1.63 * 1.5 / math.sqrt(count)
    assert abs(n.mean()) < 6 / math.sqrt(count) and abs(n.std() - 1) < 0.01
    assert _ks_statistic(n, _normal_cdf) < 1.63 * 1.5 / math.sqrt(count)
    # neighbours along either axis and the two ops are uncorrelated
    for a, c in [(u[:, :-1], u[:, 1:]), (u[:-1], u[1:]), (u, n)]:
        assert abs(np.corrcoef(a.ravel(), c.ravel())[0, 1]) < 6 / math.sqrt(a.size)


# -- the state: per call, manual_seed, every runtime ---------------------------------


def test_calls_draw_new_numbers_and_manual_seed_repeats_them(tmp_path):
    module = _draws_module()
    lib = tk.build(module)
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    first, second = lib(x), lib(x)
    assert not np.array_equal(first[1], second[1])
    lib.manual_seed(1234)
    a = lib(x)
    lib.manual_seed(1234)
    b = lib(x)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)
    # the graph executor shares the module's state; a loaded artifact has its own, from the same default seed
    lib.manual_seed(1234)
    np.testing.assert_array_equal(lib.graph_executor()(x)[1], a[1])
    lib.export_library(str(tmp_path / "random.tk"))
    loaded = tk.runtime.load_module(str(tmp_path / "random.tk"))
    loaded.manual_seed(1234)
    np.testing.assert_array_equal(loaded(x)[1], a[1])


def test_argument_errors_leave_the_state_out():
    lib = tk.build(_draws_module())
    with pytest.raises(ValueError, match=r"expected 1 arguments \(x\), got 0"):
        lib()


def test_vm_fills_the_state():
    module = _draws_module()
    vm = tk.create_executor("vm", module).evaluate()
    x, state = RNG.standard_normal((3, 5)).astype(np.float32), _state()
    np.testing.assert_array_equal(vm(x, state)[1], interpret(module)(x, state)[1])
    assert vm(x)[1].shape == (3, 7, 5)


# -- the GPU path, without a GPU -------------------------------------------------------


def test_emulated_gpu_kernels_draw_the_cpu_numbers():
    from tensorkiln.driver.cuda import build_emulated

    module = _draws_module()
    x, state = RNG.standard_normal((3, 5)).astype(np.float32), _state()
    got, want = build_emulated(module)(x, state), tk.build(module)(x, state)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12)


def test_emitted_cuda_compiles(tmp_path):
    import test_cuda_nvcc

    if test_cuda_nvcc.NVCC is None:
        pytest.skip("nvcc is not installed (CUDA toolkit); nothing to compile with")
    source = tk.emit_source(_draws_module(), target="cuda -arch=sm_90")
    assert ">>" in source and "random" in source
    test_cuda_nvcc.compile_all({"random": source}, tmp_path)


def test_params_bound_by_name_leave_the_state_out():
    b = GraphBuilder()
    x, w = b.input("x", (3, 5)), b.input("w", (5,))
    module = b.finish(b.add(b.mul(x, w), b.draw("uniform", (3, 5))))
    x_value, w_value = RNG.standard_normal((3, 5)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    for kind in ("interpreter", "aot"):
        f = tk.create_executor(kind, module, params={"w": w_value}).evaluate()
        noise = f(x_value) - x_value * w_value
        assert noise.shape == (3, 5) and 0 <= noise.min() and noise.max() < 1
        state = _state()
        # (the compiled x * w + u may round once, as a fused multiply-add: an absolute term too)
        np.testing.assert_allclose(f(x_value, state), interpret(module)(x_value, w_value, state), rtol=1e-6, atol=1e-6)
