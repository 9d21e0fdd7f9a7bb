"""expand-math: f32 exp/log/tanh/erf/expm1/log1p/sigmoid/pow compiled through ``tk.build``
(where the pass runs before loop-to-llvm), checked against float64 numpy (math.erf for erf),
and the generated code checked to be vector code without libm calls.

Tolerances are the pass's targets: exp, log, expm1, log1p and pow within 2e-7 relative
(about 2 ulp; expm1 and log1p also for tiny arguments, where ``exp(x) - 1`` and
``log(1 + x)`` lose every digit), tanh, erf and sigmoid within 2e-7 absolute; special values
exactly as numpy gives them.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from xdsl.dialects import arith, math as math_dialect

import tensorkiln as tk
from tensorkiln.lowering.expand_math import ExpandMathPass

SHAPES = [(3, 1001), (7,), (1, 17, 5)]
SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-40, -1e-40, 1e-30, 0.5, -0.5,
     88.72, 88.73, 89.5, -87.3, -103.0, -103.9, -104.5, 1e30, -1e30, 3.4e38, -3.4e38,
     0.625, -0.625, 0.875, -0.875, 3.9, -3.9, 4.0, 9.0, -9.0, 0.34657, -0.34657, -17.9, -18.1,
     1e-8, -1e-8, -0.999999, -0.5, 0.99999994, 16777216.0],
    dtype=np.float32,
)  # fmt: skip

_erf = np.vectorize(math.erf, otypes=[np.float64])

REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": _erf,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "sin": np.sin,
    "cos": np.cos,
}
#: (relative, absolute) tolerance per op
TOLERANCE = {
    "exp": (2e-7, 0.0),
    "log": (2e-7, 0.0),
    "tanh": (0.0, 2e-7),
    "erf": (0.0, 2e-7),
    "expm1": (2e-7, 0.0),
    "log1p": (2e-7, 0.0),
    "sigmoid": (0.0, 2e-7),
    "sin": (0.0, 1e-7),
    "cos": (0.0, 1e-7),
}

_CACHE: dict = {}


def unary_module(op: str, shape: tuple[int, ...], dtype=np.float32):
    b = tk.GraphBuilder()
    x = b.input("x", shape, dtype)
    return b.finish(getattr(b, op)(x))


def compiled_unary(op: str, shape: tuple[int, ...]):
    key = (op, shape)
    if key not in _CACHE:
        _CACHE[key] = tk.build(unary_module(op, shape))
    return _CACHE[key]


def compiled_pow(shape: tuple[int, ...]):
    key = ("pow", shape)
    if key not in _CACHE:
        b = tk.GraphBuilder()
        a, c = b.input("a", shape), b.input("b", shape)
        _CACHE[key] = tk.build(b.finish(b.pow(a, c)))
    return _CACHE[key]


def assert_matches(got: np.ndarray, want64: np.ndarray, rtol: float, atol: float) -> None:
    """``got`` (f32) against a float64 reference: NaN exactly where it is NaN; where the
    reference overflows f32, inf (or within one ulp of it); with a relative tolerance, a
    reference in the denormal range within one denormal step; elsewhere within ``rtol``
    relative or ``atol`` absolute."""
    assert got.dtype == np.float32
    got, want64 = got.reshape(-1), want64.reshape(-1)
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    nan = np.isnan(want64)
    assert np.array_equal(np.isnan(got), nan), f"NaN at {np.flatnonzero(np.isnan(got) != nan)[:5]}"
    f32 = np.finfo(np.float32)
    huge = ~nan & np.isinf(want)
    with np.errstate(invalid="ignore"):
        gap = np.abs(got[huge].astype(np.float64) - want64[huge])
    ok = (got[huge] == want[huge]) | (gap <= 2.0**104)  # 2^104: the ulp of the largest f32
    assert ok.all(), f"{got[huge][~ok][:5]} vs {want64[huge][~ok][:5]}"
    tiny = ~nan & ~huge & (np.abs(want64) < f32.tiny) if atol == 0 else np.zeros_like(nan)
    ok = np.abs(got[tiny].astype(np.float64) - want64[tiny]) <= f32.smallest_subnormal
    assert ok.all(), f"{got[tiny][~ok][:5]} vs {want64[tiny][~ok][:5]}"
    regular = ~nan & ~huge & ~tiny
    error = np.abs(got[regular].astype(np.float64) - want64[regular])
    bound = np.maximum(rtol * np.abs(want64[regular]), atol)
    worst = int(np.argmax(error - bound)) if error.size else 0
    assert (error <= bound).all(), (
        f"error {error[worst]:.3g} > {bound[worst]:.3g} at {got[regular][worst]!r} "
        f"(want {want64[regular][worst]!r})"
    )


def inputs_for(op: str, shape, rng: np.random.Generator) -> np.ndarray:
    """Random values over the op's interesting range, with the special values spliced in."""
    if op == "log":
        x = np.exp(rng.uniform(-100, 88, shape)) * rng.choice([1, 1, 1, -1], shape)
    elif op in ("tanh", "erf"):
        x = rng.uniform(-6, 6, shape) * rng.choice([1, 1e-3, 20], shape)
    elif op == "expm1":  # tiny arguments, the reduction's seams at multiples of ln2/2, saturation
        x = rng.uniform(-20, 90, shape) * rng.choice([1, 1e-2, 1e-6], shape)
    elif op == "log1p":  # tiny arguments both ways, near -1, huge ones
        x = rng.choice([-1, 1], shape) * np.exp(rng.uniform(-60, 0, shape))
        x = np.where(rng.random(shape) < 0.3, np.exp(rng.uniform(-10, 80, shape)), x)
    elif op in ("sin", "cos"):  # tiny to huge: the reduction is exact for every f32
        x = rng.uniform(-4, 4, shape) * np.exp(rng.uniform(-30, 86, shape))
    else:
        x = rng.uniform(-100, 100, shape)
    x = x.astype(np.float32).reshape(-1)
    n = min(len(SPECIAL), x.size)
    x[rng.choice(x.size, n, replace=False)] = SPECIAL[:n]
    return x.reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_unary_matches_numpy(op: str, shape, rng: np.random.Generator) -> None:
    x = inputs_for(op, shape, rng)
    got = compiled_unary(op, shape)(x)
    with np.errstate(all="ignore"):
        want = REFERENCE[op](x.astype(np.float64))
    assert_matches(got, want, *TOLERANCE[op])


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_unary_special_values(op: str) -> None:
    got = compiled_unary(op, SPECIAL.shape)(SPECIAL)
    with np.errstate(all="ignore"):
        want = REFERENCE[op](SPECIAL.astype(np.float64))
    assert_matches(got, want, *TOLERANCE[op])
    if op in ("tanh", "erf", "expm1", "log1p"):
        assert got[0] == 0 and not np.signbit(got[0]) and np.signbit(got[1])  # +-0 kept
    if op in ("tanh", "erf"):
        assert got[2] == 1 and got[3] == -1


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "erf", "expm1", "log1p", "sin", "cos"])
def test_unary_million_points(op: str, rng: np.random.Generator) -> None:
    """About 1e6 random points over [-100, 100] (log: |x|, and tiny/huge magnitudes)."""
    shape = (1000, 1001)
    x = rng.uniform(-100, 100, shape).astype(np.float32)
    if op == "log":
        x = np.abs(x) * np.exp(rng.uniform(-80, 80, shape)).astype(np.float32)
    if op in ("expm1", "log1p", "sin", "cos"):
        x = inputs_for(op, shape, rng)
    got = compiled_unary(op, shape)(x)
    with np.errstate(all="ignore"):
        want = REFERENCE[op](x.astype(np.float64))
    assert_matches(got, want, *TOLERANCE[op])


def test_exp_tanh_expm1_log1p_sin_cos_over_a_sweep_of_all_floats() -> None:
    """Every 251st f32 bit pattern (all magnitudes and signs, 17M values) through exp, tanh,
    expm1, log1p, sin and cos."""
    bits = np.arange(0, 1 << 32, 251, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)[: (bits.size // 1000) * 1000].reshape(-1, 1000)
    for op in ("exp", "tanh", "expm1", "log1p", "sin", "cos"):
        got = compiled_unary(op, x.shape)(x)
        with np.errstate(all="ignore"):
            want = REFERENCE[op](x.astype(np.float64))
        assert_matches(got, want, *TOLERANCE[op])


def test_erf_matches_torch(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    x = inputs_for("erf", (3, 1001), rng)
    got = compiled_unary("erf", (3, 1001))(x)
    want = torch.special.erf(torch.from_numpy(x.astype(np.float64))).numpy()
    assert_matches(got, want, *TOLERANCE["erf"])


# ---------------------------------------------------------------------------
# pow

POW_SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf,
     np.nan, 1e-40, -1e-40, 1e30, -1e30, 7.0, -7.0, 0.99999994, 1.0000001, 16777216.0, 1e9],
    dtype=np.float32,
)  # fmt: skip


def test_pow_special_values_like_numpy() -> None:
    """Every pair of special bases and exponents: the same value (and NaN) as numpy."""
    a, b = (v.reshape(-1).copy() for v in np.meshgrid(POW_SPECIAL, POW_SPECIAL))
    got = compiled_pow(a.shape)(a, b)
    with np.errstate(all="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    bad = [(x, y, g, w) for x, y, g, w in zip(a[~same], b[~same], got[~same], want[~same])]
    assert not bad, f"pow(a, b): (a, b, got, want) {bad[:8]}"
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_pow_matches_numpy(shape, rng: np.random.Generator) -> None:
    a = np.exp(rng.uniform(-40, 40, shape)).astype(np.float32)
    b = rng.uniform(-8, 8, shape).astype(np.float32)
    negative = rng.random(shape) < 0.3
    a[negative] *= -1
    b[negative] = np.round(b[negative])  # negative bases with integer exponents
    got = compiled_pow(shape)(a, b)
    with np.errstate(all="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64))
    assert_matches(got, want, 2e-7, 0.0)


def test_pow_constant_exponent_becomes_multiplications(ctx) -> None:
    text = """
    func.func @cube(%x: f32) -> f32 {
      %c = arith.constant 3.0 : f32
      %y = math.powf %x, %c : f32
      func.return %y : f32
    }
    """
    from xdsl.parser import Parser

    module = Parser(ctx, text).parse_module()
    ExpandMathPass().apply(ctx, module)
    names = [op.name for op in module.walk()]
    assert "math.powf" not in names and names.count("arith.mulf") == 2


# ---------------------------------------------------------------------------
# the IR and the machine code


def test_f64_math_is_left_alone(ctx) -> None:
    from xdsl.parser import Parser

    text = """
    func.func @f(%x: f64, %y: f32) -> (f64, f32) {
      %a = math.exp %x : f64
      %b = math.tanh %a : f64
      %c = math.exp %y : f32
      func.return %b, %c : f64, f32
    }
    """
    module = Parser(ctx, text).parse_module()
    ExpandMathPass().apply(ctx, module)
    module.verify()
    ops = [op for op in module.walk()]
    assert sum(isinstance(op, math_dialect.ExpOp) for op in ops) == 1  # the f64 one
    assert sum(isinstance(op, math_dialect.TanhOp) for op in ops) == 1
    assert any(isinstance(op, arith.BitcastOp) for op in ops)


def test_f64_graph_still_compiles(rng: np.random.Generator) -> None:
    x = rng.uniform(-5, 5, (4, 33))
    got = tk.build(unary_module("tanh", (4, 33), np.float64))(x)
    np.testing.assert_allclose(got, np.tanh(x), rtol=1e-15, atol=1e-15)


def _host_has_avx512() -> bool:
    import llvmlite.binding as llvm

    return bool(llvm.get_host_cpu_features().get("avx512f", False))


@pytest.mark.parametrize("op", ["exp", "tanh", "erf", "sigmoid", "log", "expm1", "log1p", "sin", "cos"])
def test_kernel_is_vector_code_without_libm_calls(op: str) -> None:
    lib = compiled_unary(op, (64, 1024))
    asm = lib.assembly()
    calls = re.findall(r"\bcall[a-z]*\s+(\S+)", asm)
    assert not [c for c in calls if re.search(r"exp|log|tanh|erf|pow|sin|cos", c)], calls
    if _host_has_avx512():
        assert "zmm" in asm
    else:
        assert "ymm" in asm or "xmm" in asm


def test_emit_source_has_no_libm_calls() -> None:
    source = tk.emit_source(unary_module("tanh", (3, 1000)))
    assert "tanhf" not in source and "llvm.exp" not in source
    assert "bitcast" in source
