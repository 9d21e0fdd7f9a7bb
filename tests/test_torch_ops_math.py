"""Op-level numeric tests of the elementwise math converters (frontends/torch/ops/math.py) and the
graph ops under them (sin, cos, tan, atan, atan2, asin, acos, sinh, cosh, asinh, acosh, atanh,
log1p, expm1, exp2, log2, log10, erfc, lgamma, ceil, trunc, fmod, copysign).

Each torch case is a tiny module calling the torch functions that export to the ATen overloads it
names (checked: they must appear in the graph the importer sees), exported, imported, compiled
with tk.build and compared with torch eager on fresh random inputs with odd shapes: float32 within
a relative L2 error of 1e-5 and ``allclose(rtol=1e-5, atol=1e-6)``, float64 within 1e-12, ints and
bools exactly, NaN and inf where torch has them, same shapes and dtypes. Several ops share one
module (a tuple of outputs), so that each case exports and compiles once;
``test_every_math_overload_has_a_case`` checks that every overload registered in math.py is named
by some case. Then the same ops on the GPU path (emulated on the CPU; the CUDA C through nvcc where
installed), folded by fold-constants, and the graph ops in f16/f32/f64 on special values. Last,
each new op's accuracy against a float64 reference in ulp (tiny erfc results relative, not
absolute), and round(x, decimals) bit for bit against torch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
nn = torch.nn
F = torch.nn.functional

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.registry import CONVERTERS  # noqa: E402
from torch_op_cases import CaseTable, Fn, assert_matches  # noqa: E402
from torch_op_cases import check as shared_check  # noqa: E402

# -- inputs: each maker is rng -> a fresh torch tensor --------------------------------------------


def uniform(*shape, low=-4.0, high=4.0, dtype=np.float32):
    return lambda rng: torch.from_numpy(rng.uniform(low, high, shape).astype(dtype))


def near_zero(*shape, dtype=np.float32):
    """Magnitudes from 1e-8 to 10, both signs (log1p/expm1 are accurate near 0 where
    log(1 + x) and exp(x) - 1 are not); above -1, where log1p is defined."""

    def make(rng):
        v = np.sign(rng.standard_normal(shape)) * 10.0 ** rng.uniform(-8, 1, shape)
        return torch.from_numpy(np.maximum(v, -0.999).astype(dtype))

    return make


def nonzero(*shape, dtype=np.float32):
    """Floats away from zero (|v| >= 0.5), both signs, for divisors."""

    def make(rng):
        v = rng.standard_normal(shape) * 3
        return torch.from_numpy((np.sign(v) * (0.5 + np.abs(v))).astype(dtype))

    return make


def with_specials(*shape, dtype=np.float32):
    """Normal values with NaN, +-inf, +-0 and huge ones sprinkled in."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-30], dtype)

    def make(rng):
        v = (rng.standard_normal(shape) * 4).astype(dtype)
        mask = rng.random(shape) < 0.3
        v[mask] = rng.choice(specials, int(mask.sum()))
        return torch.from_numpy(v)

    return make


def ints(*shape, low=-20, high=21, dtype=torch.int64, exclude_zero=False):
    def make(rng):
        v = rng.integers(low, high, shape)
        if exclude_zero:
            v = np.where(v == 0, 7, v)
        return torch.from_numpy(v).to(dtype)

    return make


def unit_interval(*shape, dtype=np.float32):
    """[-1, 1] with its edges: +-1, the floats just inside them, +-0, and a few outside (NaN)."""
    eps = np.finfo(dtype).epsneg
    edges = np.array([1.0, -1.0, 1 - eps, -(1 - eps), 1 - 2 * eps, -(1 - 2 * eps), 1 - 1e-4, 0.0, -0.0, 1e-30, 1.5, -2.0], dtype)

    def make(rng):
        v = rng.uniform(-1, 1, shape).astype(dtype)
        mask = rng.random(shape) < 0.3
        v[mask] = rng.choice(edges, int(mask.sum()))
        return torch.from_numpy(v)

    return make


def from_one(*shape, dtype=np.float32):
    """1 exactly, 1 + 10**-7 ... 10**4 (acosh's domain from its edge), and 0.5 (outside)."""

    def make(rng):
        v = 1 + 10.0 ** rng.uniform(-7, 4, shape)
        mask = rng.random(shape) < 0.2
        v[mask] = rng.choice([1.0, 0.5], int(mask.sum()))
        return torch.from_numpy(v.astype(dtype))

    return make


def spread(*shape, low=-3.0, high=3.0, dtype=np.float32):
    """Signed magnitudes 10**low ... 10**high (tiny arguments of sinh/asinh, huge ones)."""

    def make(rng):
        v = np.sign(rng.standard_normal(shape)) * 10.0 ** rng.uniform(low, high, shape)
        return torch.from_numpy(v.astype(dtype))

    return make


# -- the check -----------------------------------------------------------------------------------


def check(fn, makers, rng, expect=(), *, decompose=True, runs=2):
    """torch_op_cases.check, every element within the tolerance as well."""
    shared_check(fn, makers, rng, expect, decompose=decompose, runs=runs, elementwise=True)


#: the cases below; ``COVERED``: the overloads (without "aten.") they name
case = CaseTable()
COVERED = case.covered


# -- the cases -----------------------------------------------------------------------------------


def _trig(x, y):
    return torch.sin(x), torch.cos(x), torch.tan(x), torch.atan(x), torch.atan2(x, y), torch.atan2(y, 2.0 * x)


def _exp_log(small, positive):
    return (
        torch.log1p(small), torch.expm1(small), F.logsigmoid(small * 10), torch.exp2(small * 10),
        torch.log2(positive), torch.log10(positive),
    )  # fmt: skip


def _rounding(x, y):
    return torch.trunc(x), torch.ceil(x), torch.frac(x), torch.sign(x), torch.sgn(x), torch.hypot(x, y)


def _float_remainders(x, y):
    return x % 3.0, x % -2.5, x % y, 7.0 % y, torch.remainder(x, y), torch.fmod(x, 2.5), torch.fmod(x, y)


def _int_ops(i, j):
    return (
        i % 3, i % -4, i % j, 17 % j, torch.fmod(i, j), torch.fmod(i, -3), torch.sign(i),
        torch.trunc(i), torch.ceil(i), torch.isnan(i), torch.isinf(i), torch.sin(i), i % 2.5,
    )  # fmt: skip


def _specials(x, y):
    return (
        torch.isnan(x), torch.isinf(x), torch.nan_to_num(x), torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0),
        torch.sign(x), torch.hypot(x, y), torch.trunc(x), torch.sin(x), torch.log1p(x), x % y, torch.fmod(x, y),
    )  # fmt: skip


def _undecomposed(x, p):
    return (
        torch.frac(x), torch.nan_to_num(x), torch.nan_to_num(x, nan=0.5, posinf=1e4), torch.logit(p),
        torch.logit(p, eps=1e-3), torch.sgn(x),
    )  # fmt: skip


def _inverse_trig(u, x):
    return torch.asin(u), torch.acos(u), torch.atanh(u), torch.erfinv(u), torch.special.erfinv(u), torch.asin(x)


def _hyperbolic(x, p):
    return torch.sinh(x), torch.cosh(x), torch.asinh(x), torch.acosh(p), torch.cosh(x * 0.01)


def _erfc_lgamma(x, g):
    return torch.erfc(x), torch.special.erfc(-x), torch.lgamma(g), torch.lgamma(x), torch.special.gammaln(g)


def _sign_and_rounding(x, y):
    return (
        torch.copysign(x, y), torch.signbit(torch.copysign(x, y)), torch.copysign(x, -1.0), torch.copysign(y, 2),
        torch.signbit(x), torch.round(x, decimals=2), torch.round(x * 1000, decimals=-2), torch.round(x, decimals=0),
    )  # fmt: skip


def _xlogy(x, p):
    return torch.xlogy(x, p), torch.xlogy(2.0, p), torch.xlogy(x, 3.0), torch.special.xlog1py(x, p), torch.xlogy(x * 0, p)


def _int_inputs(i, j):
    """Integer operands of the new ops: float results (copysign, asin...), bools (signbit)."""
    return (
        torch.asin(i % 2), torch.sinh(i % 5), torch.erfc(i), torch.lgamma(j.abs()), torch.copysign(i, j),
        torch.signbit(i), torch.acosh(j.abs()),
    )  # fmt: skip


def _f64_everything(x, y, small):
    return (*_trig(x, y), *_exp_log(small, y.abs()), *_rounding(x, y), *_float_remainders(x, y))


def _f64_new_ops(u, x, p):
    return (*_inverse_trig(u, x), *_hyperbolic(x, p), *_erfc_lgamma(x, p), *_sign_and_rounding(x, u), *_xlogy(u, p))


CASES = [
    case("trig-f32", _trig, (uniform(3, 5, 7, low=-100, high=100), nonzero(5, 7)),
         "sin.default", "cos.default", "tan.default", "atan.default", "atan2.default"),
    case("exp-log-f32", _exp_log, (near_zero(4, 33), uniform(4, 33, low=1e-3, high=1e3)),
         "log1p.default", "expm1.default", "exp2.default", "log2.default", "log10.default"),
    case("rounding-f32", _rounding, (uniform(3, 19, low=-6, high=6), uniform(19, low=-1e3, high=1e3)),
         "trunc.default", "ceil.default", "sign.default", "hypot.default"),
    case("remainder-f32", _float_remainders, (uniform(6, 11, low=-50, high=50), nonzero(11)),
         "remainder.Scalar", "remainder.Tensor", "remainder.Scalar_Tensor", "fmod.Scalar", "fmod.Tensor"),
    case("int64", _int_ops, (ints(5, 9, low=-1000, high=1000), ints(9, exclude_zero=True)),
         "remainder.Scalar", "remainder.Tensor", "remainder.Scalar_Tensor", "fmod.Tensor", "fmod.Scalar",
         "sign.default", "isnan.default", "isinf.default"),
    case("int32", _int_ops, (ints(7, low=-99, high=99, dtype=torch.int32), ints(7, dtype=torch.int32, exclude_zero=True))),
    case("nan-inf-f32", _specials, (with_specials(5, 13), with_specials(13)), "isnan.default", "isinf.default"),
    case("undecomposed-f32", _undecomposed, (with_specials(3, 17), uniform(3, 17, low=-0.2, high=1.2)),
         "frac.default", "nan_to_num.default", "logit.default", "sgn.default", decompose=False),
    case("float64", _f64_everything,
         (uniform(4, 7, low=-100, high=100, dtype=np.float64), nonzero(7, dtype=np.float64), near_zero(4, 7, dtype=np.float64))),
    case("inverse-trig-f32", _inverse_trig, (unit_interval(5, 31), uniform(31, low=-1.2, high=1.2)),
         "asin.default", "acos.default", "atanh.default", "erfinv.default"),
    case("hyperbolic-f32", _hyperbolic, (spread(4, 29, low=-6, high=1.9), from_one(29)),
         "sinh.default", "cosh.default", "asinh.default", "acosh.default"),
    case("erfc-lgamma-f32", _erfc_lgamma, (uniform(4, 23, low=-4, high=10), uniform(23, low=-9.5, high=40)),
         "erfc.default", "lgamma.default"),
    case("sign-rounding-f32", _sign_and_rounding, (with_specials(3, 21), with_specials(21)),
         "copysign.Tensor", "copysign.Scalar", "signbit.default", "round.decimals"),
    case("xlogy-f32", _xlogy, (uniform(5, 9, low=-2, high=2), uniform(9, low=0, high=5))),
    case("new-ops-int64", _int_inputs, (ints(6, 11), ints(11, low=1, high=30)),
         "asin.default", "sinh.default", "erfc.default", "lgamma.default", "copysign.Tensor", "signbit.default"),
    case("new-ops-float64", _f64_new_ops,
         (unit_interval(4, 9, dtype=np.float64), uniform(9, low=-8, high=20, dtype=np.float64), from_one(9, dtype=np.float64))),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "makers", "expect", "decompose"), CASES)
def test_math_ops(rng, fn, makers, expect, decompose):
    check(fn, makers, rng, expect, decompose=decompose)


def test_every_math_overload_has_a_case():
    """Every overload registered in math.py is named by a case above (and each case checks
    that its program uses them)."""
    registered = {name for name, fn in CONVERTERS.items() if fn.__module__ == "tensorkiln.frontends.torch.ops.math"}
    assert len(registered) >= 25
    assert not registered - {f"aten.{e}" for e in COVERED}, sorted(registered - {f"aten.{e}" for e in COVERED})


def test_integer_remainders_are_exact_at_the_extremes():
    """Python's % and fmod on int32 MIN/MAX with every divisor sign (x % -1 is 0, MIN % -1
    does not trap), against Python's own integers."""
    info = np.iinfo(np.int32)
    a = np.array([info.min, info.max, info.min + 1, -7, 7, 0, -1] * 4, np.int32)
    b = np.array([-1, 1, info.max, info.min, -2, 3, 5] * 4, np.int32)
    lib = tk.build(_import(lambda i, j: (i % j, torch.fmod(i, j)), (torch.from_numpy(a), torch.from_numpy(b))))
    rem, fmod = lib(a, b)
    pairs = list(zip(a.tolist(), b.tolist()))
    np.testing.assert_array_equal(rem, np.array([x % y for x, y in pairs], np.int32))
    np.testing.assert_array_equal(fmod, np.array([int(np.fmod(x, y)) for x, y in pairs], np.int32))


def _import(fn, inputs):
    return from_exported_program(torch.export.export(Fn(fn).eval(), tuple(inputs)))


# -- the GPU path: the same kernels, emulated on the CPU; their CUDA C through nvcc --------------


def _every_op(x, y, i, j):
    small = x * 1e-3
    u = torch.sin(x)  # in [-1, 1]
    return (
        *_trig(x, y), torch.log1p(small), torch.expm1(small), torch.exp2(x), torch.log2(y.abs()), torch.log10(y.abs()),
        *_rounding(x, y), x % y, 2.0 % y, torch.fmod(x, y), i % j, torch.fmod(i, j), torch.sign(i),
        torch.isnan(x / y), torch.isinf(x), torch.nan_to_num(torch.log(x)),
        *_inverse_trig(u, y), *_hyperbolic(x * 0.1, 1 + y.abs()), *_erfc_lgamma(x * 0.3, y), *_sign_and_rounding(x, y),
    )  # fmt: skip


def _every_op_inputs(rng) -> tuple:
    return (uniform(9, 37, low=-30, high=30)(rng), nonzero(37)(rng), ints(9, 37, low=-500, high=500)(rng),
            ints(37, exclude_zero=True)(rng))  # fmt: skip


def test_gpu_kernels_compute_them(rng):
    """Every new op through the CUDA lowering (default GPU schedules, loop-to-gpu), its
    kernels run on the CPU by emulate-gpu, against torch."""
    from tensorkiln.driver.cuda import build_emulated

    inputs = _every_op_inputs(rng)
    lib = build_emulated(_import(_every_op, inputs))
    with torch.no_grad():
        want = [t.numpy() for t in _every_op(*inputs)]
    assert_matches(list(lib(*(t.numpy() for t in inputs))), want, elementwise=True)


def test_cuda_source_compiles(rng, tmp_path):
    """The CUDA C of every new op (f32 and, for the graph ops, f16 and f64) compiles with nvcc."""
    from test_cuda_nvcc import NVCC, compile_all

    from tensorkiln.driver.cuda import emit_cuda_source

    if NVCC is None:
        pytest.skip("nvcc is not installed (CUDA toolkit); nothing to compile with")
    sources = {"every_op": emit_cuda_source(_import(_every_op, _every_op_inputs(rng)))}
    for dtype in (np.float16, np.float64):
        sources[f"graph_ops_{np.dtype(dtype).name}"] = emit_cuda_source(_graph_ops_module(dtype, (4, 9)))
    compile_all(sources, tmp_path)


# -- the graph ops: fold-constants, the interpreter, f16/f32/f64 special values -------------------

def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # the poles (0, negative integers), huge arguments
        return math.inf


UNARY = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "atan": np.arctan, "log1p": np.log1p, "expm1": np.expm1,
    "exp2": np.exp2, "log2": np.log2, "log10": np.log10, "ceil": np.ceil, "trunc": np.trunc,
    "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "lgamma": np.vectorize(_lgamma, otypes=[np.float64]),
}  # fmt: skip
BINARY = {"fmod": np.fmod, "atan2": np.arctan2, "copysign": np.copysign}


def _graph_ops_module(dtype, shape, constant: np.ndarray | None = None):
    """Every new graph op on ``x`` (an input, or ``constant``) and on (``x``, its reverse)."""
    b = tk.GraphBuilder()
    x = b.input("x", shape, dtype) if constant is None else b.constant(constant)
    y = b.flip(x, [len(shape) - 1])
    return b.finish(*(getattr(b, name)(x) for name in UNARY), *(getattr(b, name)(x, y) for name in BINARY))


def _graph_ops_expected(x: np.ndarray) -> list[np.ndarray]:
    """In float64, rounded once to ``x``'s type."""
    wide, reverse = x.astype(np.float64), x[..., ::-1].astype(np.float64)
    with np.errstate(all="ignore"):
        values = [fn(wide) for fn in UNARY.values()] + [fn(wide, reverse) for fn in BINARY.values()]
        return [v.astype(x.dtype) for v in values]


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5,
            3.0, 100.0, -100.0, 1e4, -60000.0, 88.0, -0.999]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_graph_ops_special_values(dtype):
    """Zeros, infinities, NaN, tiny and large values (outside the log domains too), in each
    float type: the compiled ops and the interpreter agree with numpy in float64."""
    with np.errstate(all="ignore"):
        x = np.array(SPECIALS, dtype).reshape(2, 11)
    module = _graph_ops_module(dtype, x.shape)
    rtol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    compiled = tk.build(module)(x)
    with np.errstate(all="ignore"):
        interpreted = tk.create_executor("interpreter", module).evaluate()(x)
    names = [*UNARY, *BINARY]
    for name, got, got_interp, want in zip(names, compiled, interpreted, _graph_ops_expected(x)):
        for what, g in (("compiled", got), ("interpreter", got_interp)):
            assert g.dtype == want.dtype and g.shape == want.shape, f"{name} ({what})"
            np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-30, equal_nan=True, err_msg=f"{name} ({what})")


def test_fold_constants_folds_them(rng):
    """A graph of the new ops on a constant folds to constants (by the ops' numpy references):
    the values of the interpreter before folding, and of the compiled ops on that input."""
    from tensorkiln.passes.pipeline import PassContext, run_pipeline

    c = rng.uniform(-3, 3, (3, 5)).astype(np.float32)
    compiled = tk.build(_graph_ops_module(np.float32, c.shape))(c)
    module = _graph_ops_module(np.float32, c.shape, constant=c)
    with np.errstate(all="ignore"):
        interpreted = tk.create_executor("interpreter", module).evaluate()()
        run_pipeline(module, ["fold-constants", "dce"], PassContext())
    assert {op.name for op in module.walk() if op.name.startswith("graph.")} == {"graph.constant"}
    folded = tk.create_executor("interpreter", module).evaluate()()
    for name, got, interp, want in zip([*UNARY, *BINARY], folded, interpreted, compiled):
        np.testing.assert_array_equal(got, interp, err_msg=name)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=name)


# -- accuracy in ulp against float64 references; round(x, decimals) bit for bit ----------------------


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of ``want`` rounded to ``got``'s type (the step
    between denormals for tiny results: relative accuracy down to the denormal range)."""
    with np.errstate(over="ignore"):
        rounded = want.astype(got.dtype)
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(rounded)).astype(np.float64)


def _unit_edges(rng, n: int, dtype) -> np.ndarray:
    """[-1, 1]: a third uniform, a third 1 - 10**-k up to the float just below 1 (both signs),
    a third tiny magnitudes."""
    eps, k = np.finfo(dtype).epsneg, n // 3
    v = rng.uniform(-1, 1, n)
    v[:k] = np.sign(v[:k]) * (1 - 10.0 ** rng.uniform(np.log10(eps), 0, k))
    v[k : 2 * k] = np.sign(v[k : 2 * k]) * 10.0 ** rng.uniform(-30, 0, k)
    return v


def _signed_magnitudes(rng, n: int, dtype) -> np.ndarray:
    return np.sign(rng.standard_normal(n)) * 10.0 ** rng.uniform(-30, 1.9, n)


#: op -> (torch function, its argument's sampler, float64 reference (None: scipy's), mpmath's
#: function, max ulp in float32, in float64)
ACCURACY = {
    "asin": (torch.asin, _unit_edges, np.arcsin, "asin", 1.0, 1.0),
    "acos": (torch.acos, _unit_edges, np.arccos, "acos", 1.0, 1.0),
    "atanh": (torch.atanh, _unit_edges, np.arctanh, "atanh", 2.0, 1.0),
    "sinh": (torch.sinh, _signed_magnitudes, np.sinh, "sinh", 2.0, 1.0),
    "cosh": (torch.cosh, lambda rng, n, d: rng.uniform(-89, 89, n), np.cosh, "cosh", 2.0, 1.0),
    "asinh": (torch.asinh, _signed_magnitudes, np.arcsinh, "asinh", 2.0, 1.0),
    "acosh": (torch.acosh, lambda rng, n, d: 1 + 10.0 ** rng.uniform(-8, 6, n), np.arccosh, "acosh", 2.5, 2.0),
    # up to 10: float32 results down in the denormals, float64 ones near 1e-45
    "erfc": (torch.erfc, lambda rng, n, d: rng.uniform(-5, 10, n), np.vectorize(math.erfc, otypes=[np.float64]), "erfc", 3.5, 2.0),
    "erfinv": (torch.erfinv, _unit_edges, None, "erfinv", 2.0, 2.0),
    "lgamma": (torch.lgamma, lambda rng, n, d: rng.uniform(-20, 50, n), np.vectorize(_lgamma, otypes=[np.float64]), "lgamma", 8.0, 4.0),
}  # fmt: skip


def _accuracy_module(dtype, inputs: list[np.ndarray]):
    fns = [entry[0] for entry in ACCURACY.values()]
    return tk.build(_import(lambda *xs: tuple(f(x) for f, x in zip(fns, xs)), [torch.from_numpy(x) for x in inputs]))


def test_accuracy_float32(rng):
    """About 1e5 points per op over its domain and edges: the compiled float32 op within the
    listed ulp of the float64 reference (scipy's erfinv), non-finite values where it has them."""
    special = pytest.importorskip("scipy.special")
    n = 100_000
    inputs = [sampler(rng, n, np.float32).astype(np.float32) for _, sampler, *_ in ACCURACY.values()]
    outputs = _accuracy_module(np.float32, inputs)(*inputs)
    for (name, (_, _, ref, _, bound, _)), x, got in zip(ACCURACY.items(), inputs, outputs):
        with np.errstate(all="ignore"):
            want = (ref or special.erfinv)(x.astype(np.float64))
        finite = np.isfinite(want.astype(np.float32))
        np.testing.assert_array_equal(got[~finite], want[~finite].astype(np.float32), err_msg=name)
        error = _ulp_error(got[finite], want[finite])
        assert error.max() <= bound, f"{name}: {error.max():.2f} ulp at {x[finite][np.argmax(error)]!r}"


def _mpmath_value(mpmath, name: str, v: float) -> float:
    """``name(v)`` in mpmath's working precision, rounded to float64; NaN at poles and outside
    the domain (those are checked in float32)."""
    try:
        if name == "lgamma":  # Python's math.lgamma is ~100 ulp off near lgamma's zeros
            return float(mpmath.log(abs(mpmath.gamma(v))))
        value = getattr(mpmath, name)(mpmath.mpf(v))
        return float(value) if mpmath.im(value) == 0 else math.nan
    except (ValueError, ZeroDivisionError):
        return math.nan


def test_accuracy_float64(rng):
    """300 points per op in float64 against mpmath at 120 bits."""
    mpmath = pytest.importorskip("mpmath")
    n = 300
    inputs = [sampler(rng, n, np.float64) for _, sampler, *_ in ACCURACY.values()]
    outputs = _accuracy_module(np.float64, inputs)(*inputs)
    with mpmath.workprec(120):
        for (name, (*_, mp_name, _, bound)), x, got in zip(ACCURACY.items(), inputs, outputs):
            want = np.array([_mpmath_value(mpmath, mp_name, float(v)) for v in x])
            finite = np.isfinite(want)
            error = _ulp_error(got[finite], want[finite])
            assert error.max() <= bound, f"{name}: {error.max():.2f} ulp at {x[finite][np.argmax(error)]!r}"


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_round_decimals_is_torch_bit_for_bit(rng, dtype):
    """torch.round(x, decimals=d) for d in -3..8: the same bits as torch (ties to even after
    scaling by 10**d in float32 for float16), signed zeros, inf and NaN included."""
    decimals = (-3, -1, 0, 1, 2, 3, 8)
    big = 6e4 if dtype == np.float16 else 1e30
    x = (rng.standard_normal(4000) * 10.0 ** rng.uniform(-3, 4, 4000)).astype(dtype)
    x[:10] = [0.125, 0.375, 2.5, -2.5, 0.5, big, np.inf, np.nan, -0.0, -0.004]
    fn = lambda t: tuple(torch.round(t, decimals=d) for d in decimals)  # noqa: E731
    got = tk.build(_import(fn, [torch.from_numpy(x)]))(x)
    for d, g, w in zip(decimals, got, fn(torch.from_numpy(x))):
        np.testing.assert_array_equal(g.view(np.uint8), w.numpy().view(np.uint8), err_msg=f"decimals={d}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_frexp_and_ldexp_are_torch_bit_for_bit(rng, dtype):
    """frexp over magnitudes from subnormal to huge (the exponent from log2 corrected where
    it rounds across a power of two: values just below 2**k), zeros, infinities and NaN;
    ldexp with float and integer exponents, to the bit."""
    info = np.finfo(dtype)
    n = 3000
    x = (rng.standard_normal(n) * np.exp2(rng.integers(info.minexp - info.nmant + 2, info.maxexp - 2, n))).astype(dtype)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.5, -info.smallest_subnormal]
    x[8:20] = np.exp2(np.arange(-6, 6)).astype(dtype) * (1 - info.epsneg)
    e = rng.integers(-30, 30, n).astype(dtype)
    i = rng.integers(-20, 20, n)

    def fn(x, e, i):
        return (*torch.frexp(x), torch.ldexp(x, e), torch.ldexp(x, i), torch.ldexp(i, e))

    tensors = [torch.from_numpy(a) for a in (x, e, i)]
    got = tk.build(_import(fn, tensors))(x, e, i)
    for g, w in zip(got, fn(*tensors), strict=True):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


COVERED.update(("frexp.Tensor", "ldexp.Tensor"))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8], ids=lambda d: np.dtype(d).name)
def test_gcd_and_lcm_match_torch(rng, dtype):
    """Euclid's loop unrolled for the type's worst case (consecutive Fibonacci numbers), signs,
    zeros, the type's extremes; lcm in C's promoted int for narrow types, wrapping as torch's."""
    from torch_compile import compile_torch_fn

    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 200, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, 200, endpoint=True).astype(dtype)
    fibonacci = [1, 2]
    while fibonacci[-1] <= info.max - fibonacci[-2]:
        fibonacci.append(fibonacci[-1] + fibonacci[-2])
    edges = [(0, 0), (0, 7), (5, 0), (12, 18), (info.max, info.max - 1), (info.min, info.min), (fibonacci[-1], fibonacci[-2])]
    a[: len(edges)], b[: len(edges)] = zip(*edges)
    if info.min < 0:
        a[len(edges)], b[len(edges)] = -6, -4

    def fn(x, y):
        return torch.gcd(x, y), torch.lcm(x, y)

    got = compile_torch_fn(fn, a, b)(a, b)
    for g, w in zip(got, fn(torch.from_numpy(a), torch.from_numpy(b))):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_array_equal(g, w.numpy())
    module = type("GcdLcm", (torch.nn.Module,), {"forward": lambda self, x, y: fn(x, y)})()
    program = torch.export.export(module, (torch.from_numpy(a), torch.from_numpy(b))).run_decompositions()
    assert {str(n.target) for n in program.graph.nodes} >= {"aten.gcd.default", "aten.lcm.default"}


COVERED.update(("gcd.default", "lcm.default"))
