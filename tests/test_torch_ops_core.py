"""Op-level numeric tests of the core ATen converters (frontends/torch/ops/elementwise.py, linalg.py,
shape.py, reduce.py and the batch-norm/layer-norm/pooling converters of nn.py).

Each case is a tiny module calling the torch functions that export to the ATen overloads it names
(checked: the overloads must appear in the decomposed graph the importer sees), exported, imported,
compiled with tk.build and compared with torch eager on fresh random inputs: float32 within a
relative L2 error of 1e-5, float64 within 1e-12, ints and bools exactly, same shapes and dtypes.
Several variants of an op share one module (a tuple of outputs, compared one by one), so that each
case exports and compiles once; ``test_every_core_overload_has_a_case`` checks that every overload
registered in those files is named by some case.

Cases marked ``decompose=False`` import the program as exported (no Core ATen decomposition): the
overloads they name (``rsub``, ``t``, ``transpose``, ``reshape``, ``silu``, ...) only reach the
importer that way."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
nn = torch.nn
F = torch.nn.functional
A = torch.ops.aten

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program
from tensorkiln.frontends.torch.importer import _decompose
from tensorkiln.frontends.torch.registry import CONVERTERS
from moe_ops import grouped_mm_fallback  # noqa: E402
from torch_op_cases import CaseTable, Fn, check, overloads, qualified  # noqa: E402

# -- inputs: each maker is rng -> a fresh torch tensor --------------------------------------------


def f32(*shape, scale=2.0, dtype=np.float32):
    return lambda rng: torch.from_numpy(np.asarray(rng.standard_normal(shape) * scale, dtype=dtype))


def f64(*shape, scale=2.0):
    return f32(*shape, scale=scale, dtype=np.float64)


def nonzero(*shape, dtype=np.float32):
    """Floats away from zero (|v| >= 0.5), for denominators."""

    def make(rng):
        v = rng.standard_normal(shape)
        return torch.from_numpy((np.sign(v) * (0.5 + np.abs(v))).astype(dtype))

    return make


def ints(*shape, low=-6, high=7, dtype=torch.int64, exclude_zero=False):
    def make(rng):
        v = rng.integers(low, high, shape)
        if exclude_zero:
            v = np.where(v == 0, 1, v)
        return torch.from_numpy(v).to(dtype)

    return make


def bools(*shape):
    return lambda rng: torch.from_numpy(rng.random(shape) < 0.5)


# -- the check -----------------------------------------------------------------------------------


#: the cases below; ``COVERED``: the overloads (without "aten.") they name
case = CaseTable()
COVERED = case.covered


CASE_ARGS = "fn, makers, expect, decompose"


def run_case(rng, fn, makers, expect, decompose):
    check(fn, makers, rng, expect, decompose=decompose)


# ---------------------------------------------------------------------------
# arithmetic


def _float_arith(a, b):
    return (
        a + b, a.add(b, alpha=2), a - b, a.sub(b, alpha=0.5), torch.rsub(a, b, alpha=2), a * b, a / b,
        torch.maximum(a, b), torch.minimum(a, b), torch.max(a, b),
    )  # fmt: skip


def _scalar_arith(x):
    return x + 2.5, x - 2.5, 3 - x, x * 3, x * -0.5, x / 2.0, 2.0 / x, x.add(2, alpha=3), 1.5 + x, x.sub(1, alpha=2)


def _scalar_overloads(x, i):
    return (
        A.add.Scalar(x, 2.5), A.add.Scalar(x, 2, alpha=3), A.sub.Scalar(x, 1.5), A.mul.Scalar(x, 3),
        A.div.Scalar(x, 4.0), A.add.Scalar(i, 2), A.mul.Scalar(i, 3), A.sub.Scalar(i, 1), A.div.Scalar(i, 2),
        A.mul.Scalar(i, 0.5),
    )  # fmt: skip


def _int_arith(i, j):
    return (
        i + j, i - j, i * j, i + 2, i * 3, 3 - i, i.add(j, alpha=2), i / j, i / 2,
        torch.div(i, j, rounding_mode="trunc"), torch.div(i, 4, rounding_mode="trunc"), i // j, i // -3,
        torch.div(i, 4, rounding_mode="floor"), -i, i.abs(),
        torch.maximum(i, j), torch.minimum(i, j), i * 2.5, i - 0.5,
    )  # fmt: skip


def _promotion(i32, i64, x32, x64, b):
    return i32 + i64, x32 + x64, i64 * x32, b + i32, x32 * b, i32 / i64, x64 - i32, torch.maximum(i32, x32)


def _zero_dim(x, s, s64, i):
    # a 0-d tensor does not promote a dimensioned one of the same kind: x * s64 stays float32
    return (
        x + s, x * s64, i + s, i < s, s - x, torch.maximum(x, s), x == s64, i * s64, torch.where(x > 0, s, x),
        s.expand(3, 4), torch.cat([x[0], s[None]]),
    )  # fmt: skip


def _div_modes(a, b):
    return (
        torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor"), a // b,
        torch.div(a, 2.5, rounding_mode="floor"), torch.div(a, -2.5, rounding_mode="trunc"), a // 0.75,
    )  # fmt: skip


def _pow(x, y):
    p = x.abs() + 0.1
    return x**2, x**3, p**0.5, p**y, 2.0**x, x**-1, torch.pow(x, 4), torch.pow(p, -1.5)


def _pow_int(i, j):
    return i**2, i**3, i**j, i * i.abs() ** 2, i**0, i**1, i**5, 2**j, torch.pow(i.int(), 3), torch.pow(i.int(), j)


ARITHMETIC = [
    case("float-broadcast", _float_arith, (f32(3, 1, 5), nonzero(4, 1)),
         "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum.default", "minimum.default"),
    case("float-same-shape-f64", _float_arith, (f64(3, 5, 7), nonzero(3, 5, 7, dtype=np.float64))),
    case("float-scalar", _scalar_arith, (nonzero(3, 5, 7),), "add.Tensor", "reciprocal.default"),
    case("scalar-overloads", _scalar_overloads, (f32(3, 5, 7), ints(3, 5, 7)),
         "add.Scalar", "sub.Scalar", "mul.Scalar", "div.Scalar"),
    case("int64", _int_arith, (ints(3, 5, 7), ints(5, 1, exclude_zero=True)), "div.Tensor_mode", "neg.default"),
    case("int32", _int_arith, (ints(3, 5, 7, dtype=torch.int32), ints(5, 1, dtype=torch.int32, exclude_zero=True))),
    case("promotion", _promotion, (ints(3, 5, dtype=torch.int32), ints(5, exclude_zero=True), f32(3, 5), f64(5), bools(3, 5))),
    case("zero-dim-operands", _zero_dim, (f32(3, 5), f32(), f64(), ints(3, 5))),
    case("div-rounding-modes", _div_modes, (f32(3, 5, 7), nonzero(5, 7)), "div.Tensor_mode"),
    case("div-rounding-modes-f64", _div_modes, (f64(3, 5, 7), nonzero(5, 7, dtype=np.float64))),
    case("pow", _pow, (nonzero(3, 5, 7), f32(5, 7, scale=1.5)), "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar"),
    case("pow-int", _pow_int, (ints(3, 5, 7), ints(5, 7, low=0, high=4)), "pow.Tensor_Scalar", "pow.Tensor_Tensor"),
    case("rsub-not-decomposed", lambda a, b: (3 - a, torch.rsub(a, b, alpha=2), 2 - b.int()), (f32(3, 5, 7), f32(5, 7)),
         "rsub.Scalar", "rsub.Tensor", decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, ARITHMETIC)
def test_arithmetic(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# unary math, activations, clamp


def _unary(x):
    p = x.abs() + 0.1
    return (
        x.neg(), x.abs(), x.relu(), x.exp(), p.log(), p.sqrt(), p.rsqrt(), x.tanh(), x.sigmoid(), torch.erf(x),
        x.floor(), x.round(), (x.floor() + 0.5).round(), x.reciprocal(), F.gelu(x), F.gelu(x, approximate="tanh"),
        F.silu(x), torch.relu(-x),
    )  # fmt: skip


UNARY_OPS = [
    f"{op}.default"
    for op in ("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "round", "reciprocal", "gelu")
]  # fmt: skip


def _special_values(x, zero):
    """inf and nan where torch has them (the check compares non-finite values exactly)."""
    inf, nan = x / zero, zero / zero
    return (
        inf, nan, zero.log(), (-x.abs()).log(), (-x.abs()).sqrt(), (x * 60).exp(), zero.rsqrt(), zero.reciprocal(),
        torch.div(x, zero, rounding_mode="floor"), torch.div(x, zero, rounding_mode="trunc"), torch.pow(zero, -1.0),
        torch.maximum(nan, x), torch.minimum(x, nan), nan.clamp(-1, 1), inf.clamp(-1, 1), torch.sigmoid(inf),
        torch.tanh(inf), torch.erf(inf), inf.relu(), inf.floor(), inf.round(), nan > 0, torch.ne(nan, nan), torch.eq(inf, inf),
        torch.softmax(inf, -1),
    )  # fmt: skip


def _clamp(x, low, high):
    return (
        x.clamp(-1, 1), F.hardtanh(x, -0.5, 0.7), x.clamp(min=0.1), x.clamp(max=-0.3), x.clamp(min=low),
        x.clamp(low, high), x.clamp(max=high), F.relu6(x), torch.clamp(x, -2.5, 2),
    )  # fmt: skip


def _clamp_int(i, low):
    return (
        i.clamp(-2, 2), i.clamp(min=low), i.clamp(max=3), i.clamp(low, low + 3), F.hardtanh(i.float(), -2, 2),
        i.clamp(-1.5, 2.5), i.clamp(min=0.5), torch.clamp(i.float() * 0.7, min=low, max=low.float() + 2.5),
    )  # fmt: skip


UNARY = [
    case("float32", _unary, (f32(3, 5, 7),), *UNARY_OPS),
    case("float64", _unary, (f64(3, 5, 7),)),
    case("special-values", _special_values, (f32(5), lambda rng: torch.zeros(5))),
    case("silu-not-decomposed", lambda x: (F.silu(x), F.hardtanh(x, -1.5, 0.5)), (f32(3, 5, 7),),
         "silu.default", "hardtanh.default", decompose=False),
    case("clamp", _clamp, (f32(3, 5, 7), f32(5, 1, scale=0.5), f32(7)),
         "clamp.default", "hardtanh.default", "clamp.Tensor"),
    case("clamp-int", _clamp_int, (ints(3, 5, 7), ints(7, low=-3, high=1)), "clamp.default", "clamp.Tensor"),
    case("clamp-min-max-not-decomposed",
         lambda x, y: (torch.clamp_min(x, 0.1), torch.clamp_max(x, -0.2), torch.clamp_min(x, y), torch.clamp_max(x, y)),
         (f32(3, 5, 7), f32(5, 7)), "clamp_min.default", "clamp_max.default", "clamp_min.Tensor", "clamp_max.Tensor",
         decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, UNARY)
def test_unary_and_clamp(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# comparisons, where, logical and bitwise ops, masked_fill


def _compare(a, b):
    ra, rb = a.round(), b.round()
    return (
        ra == rb, ra != rb, a < b, a <= b, a > b, a >= b,
        ra == 1, ra != 0, a < 0.5, a <= -0.25, a > 0, a >= 1,
    )  # fmt: skip


COMPARE_OPS = [f"{op}.{kind}" for kind in ("Tensor", "Scalar") for op in ("eq", "ne", "lt", "le", "gt", "ge")]


def _compare_mixed(i, j, x, i32, b):
    return i == j, i != 2, i < x, i >= 0.5, i > -1.5, x <= i32, i32 < i, b == (i > 0), b != True, x.double() > x


def _where(c, x, y, i, j):
    return torch.where(c, x, y), torch.where(x > 0, x, -x), torch.where(c, i, j), torch.where(c, x, i), torch.where(c, 1.0, x), torch.where(c, i, 2)


def _where_scalars(c, x):
    return A.where.ScalarSelf(c, 1.5, x), A.where.ScalarOther(c, x, -2.0), A.where.Scalar(c, 1.0, 0.0), torch.where(c, x, 3)


def _logical(a, b, i, x):
    return (
        torch.logical_and(a, b), torch.logical_or(a, i), torch.logical_xor(x, b), torch.logical_not(i),
        a & b, a | True, a ^ b, ~a, ~i, torch.bitwise_and(a, True), torch.bitwise_xor(a, False),
    )  # fmt: skip


def _masked_fill(x, m, v):
    return x.masked_fill(m, -1e9), x.masked_fill(m[0], 2), x.masked_fill(m, v), x.int().masked_fill(m, 5)


SELECTION = [
    case("compare-float", _compare, (f32(3, 1, 5), f32(4, 1)), *COMPARE_OPS),
    case("compare-mixed-dtypes", _compare_mixed,
         (ints(3, 5), ints(5), f32(3, 5), ints(3, 5, dtype=torch.int32), bools(3, 5)), "eq.Tensor", "lt.Tensor"),
    case("where", _where, (bools(3, 1, 5), f32(4, 5), f32(3, 4, 1), ints(4, 5), ints(5)), "where.self"),
    case("where-scalars-not-decomposed", _where_scalars, (bools(3, 5), f32(5)),
         "where.ScalarSelf", "where.ScalarOther", "where.Scalar", decompose=False),
    case("logical-bitwise", _logical, (bools(3, 5), bools(5), ints(3, 5), f32(3, 5)),
         "logical_and.default", "logical_or.default", "logical_xor.default", "logical_not.default",
         "bitwise_and.Tensor", "bitwise_or.Scalar", "bitwise_xor.Tensor", "bitwise_not.default",
         "bitwise_and.Scalar", "bitwise_xor.Scalar"),
    case("bitwise-or-tensor", lambda a, b: (a | b, torch.bitwise_or(a, b[0])), (bools(3, 5), bools(3, 5)),
         "bitwise_or.Tensor"),
    case("bit-shifts", lambda a, b: ((a << 3) + (a >> 2), torch.bitwise_left_shift(b, 29), torch.bitwise_right_shift(b, 5)),
         (ints(3, 5, low=-1000, high=1000), ints(5, low=-2**31, high=2**31 - 1, dtype=torch.int32)),
         "__lshift__.Scalar", "__rshift__.Scalar", "bitwise_left_shift.Tensor_Scalar", "bitwise_right_shift.Tensor_Scalar"),
    # integers bit by bit (two's complement: negative values, int64 beyond 32 bits, int8/int32)
    case("bitwise-integers",
         lambda a, b, c: ((a & b) | (a ^ 0x5A5A5A5A5A), a & 255, b ^ b[0], c & 0x3C, c | -8, ~(c ^ 1)),
         (ints(3, 5, low=-2**40, high=2**40), ints(5, low=-2**31, high=2**31 - 1, dtype=torch.int32),
          ints(4, 6, low=-128, high=128, dtype=torch.int8)),
         "bitwise_and.Tensor", "bitwise_or.Tensor", "bitwise_xor.Tensor", "bitwise_and.Scalar",
         "bitwise_or.Scalar", "bitwise_xor.Scalar"),
    case("masked-fill-not-decomposed", _masked_fill, (f32(3, 5), bools(3, 5), f32()),
         "masked_fill.Scalar", "masked_fill.Tensor", decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, SELECTION)
def test_comparison_and_selection(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# casts and identities


def _casts(x, i, b):
    return (
        x.to(torch.int32), x.long(), x.bool(), x.round().bool(), x.double(), i.float(), i.to(torch.int32),
        b.float(), b.long(), b.int(), x.double().float(), i.bool(), x.to(torch.int32).to(torch.float64),
        i.to(torch.int8).to(torch.int64),
    )  # fmt: skip


def _identities(x):
    return x.clone() * 2, x.detach() + 1, A.alias(x) - 1, x.contiguous() * x


CASTS = [
    case("casts", _casts, (f32(3, 5, 7), ints(3, 5, 7, low=-200, high=200), bools(3, 5, 7)),
         "_to_copy.default", "_assert_tensor_metadata.default"),
    case("identities", _identities, (f32(3, 5, 7),), "clone.default", "alias.default"),
    case("casts-not-decomposed",
         lambda x, i: (x.to(torch.int32), i.to(torch.float64), x.detach() * 2, A.lift_fresh_copy(x) + 1, x.clone() - 1),
         (f32(3, 5), ints(3, 5)), "to.dtype", "detach.default", "lift_fresh_copy.default", "clone.default",
         decompose=False),
    # what some decompositions leave (renorm of a bfloat16 tensor): a cast
    case("prims-cast", lambda x: torch.ops.prims.convert_element_type.default(x, torch.float64) * 3,
         (f32(3, 5),), "prims.convert_element_type.default", decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, CASTS)
def test_casts_and_identities(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# matrix products


def _mm(a, b, c, d):
    return (
        a @ b, torch.mm(a, b), torch.addmm(c, a, b), torch.addmm(d, a, b, beta=0.5, alpha=2),
        torch.addmm(c, a, b, beta=0), torch.addmm(d, a, b, alpha=-1), b.t() @ a.t(),
    )  # fmt: skip


def _matmul(a, b, v, m):
    return torch.bmm(a, b), a @ b, a @ v, v @ b, a @ m, v @ v, m.t() @ v, a[:, None] @ b[None]


class Linears(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 6)
        self.no_bias = nn.Linear(7, 4, bias=False)

    def forward(self, x, w, b):
        return self.fc(x), self.no_bias(x), F.linear(x, w, b), F.linear(x[0], w), F.linear(x[0, 0], w, b), self.fc(x[None])


def offsets(total: int, groups: int):
    """Sorted int32 ends of ``groups`` consecutive groups covering ``total`` positions,
    the second group empty (torch leaves positions past the last end unset)."""

    def make(rng):
        ends = np.sort(rng.integers(0, total + 1, groups))
        ends[1], ends[-1] = ends[0], total
        return torch.from_numpy(ends.astype(np.int32))

    return make


def small_ints(*shape):
    """Floats holding small integers: sums of their products are exact in any order."""
    return lambda rng: torch.from_numpy(rng.integers(-4, 5, shape).astype(np.float32))


def _grouped_mm(rows, experts, columns, weights, row_ends, column_ends):
    """torch._grouped_mm's four forms, in bfloat16 (torch exports no other dtype) on
    small integers (exact, whatever the order of the sums): rows by group
    (mixture-of-experts), columns by group, the contraction by group, and a batch."""
    rows, experts, columns, weights = (t.bfloat16() for t in (rows, experts, columns, weights))
    products = (
        F.grouped_mm(rows, experts, offs=row_ends), F.grouped_mm(weights, columns, offs=column_ends),
        F.grouped_mm(columns, columns.T.contiguous(), offs=column_ends), F.grouped_mm(weights, experts),
        F.grouped_mm(rows, experts, offs=row_ends, out_dtype=torch.bfloat16),
    )  # fmt: skip
    return tuple(p.float() for p in products)


def _transformers_grouped_mm(rows, experts, ends):
    return grouped_mm_fallback(rows, experts, offs=ends) * 2


LINALG = [
    case("mm-addmm", _mm, (f32(3, 4), f32(4, 5), f32(5), f32(3, 5)), "mm.default", "addmm.default"),
    case("mm-addmm-f64", _mm, (f64(3, 4), f64(4, 5), f64(5), f64(3, 5))),
    case("bmm-matmul", _matmul, (f32(2, 3, 4), f32(2, 4, 5), f32(4), f32(4, 5)), "bmm.default", "mm.default"),
    case("linear", Linears(), (f32(2, 3, 7), f32(5, 7), f32(5)), "linear.default"),
    case("addmv", lambda c, a, v: (torch.addmv(c, a, v), torch.addmv(c, a, v, beta=0.5, alpha=-2), torch.addmv(c[:1], a, v, beta=0)),
         (f32(5), f32(5, 7), f32(7)), "addmv.default"),
    case("addbmm", lambda c, a, b: (torch.addbmm(c, a, b), torch.addbmm(c[0], a, b, beta=2, alpha=0.5)),
         (f32(4, 6), f32(3, 4, 5), f32(3, 5, 6)), "addbmm.default"),
    case("bilinear", nn.Bilinear(5, 6, 4), (f32(3, 5), f32(3, 6)), "_trilinear.default"),
    case("bilinear-batched", lambda a, b, w: F.bilinear(a, b, w), (f32(2, 3, 5), f32(2, 3, 6), f32(4, 5, 6))),
    case("grouped-mm", _grouped_mm, (*(small_ints(*s) for s in ((13, 8), (4, 8, 16), (8, 24), (4, 5, 8))), offsets(13, 4), offsets(24, 4)),
         "_grouped_mm.default"),
    case("grouped-mm-transformers", _transformers_grouped_mm, (f32(13, 8), f32(4, 8, 12), offsets(13, 4)),
         "transformers.grouped_mm_fallback.default"),
    case("pdist", lambda x: (F.pdist(x), F.pdist(x, 1), F.pdist(x, 3), F.pdist(x, float("inf"))), (f32(6, 5),),
         "_pdist_forward.default"),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, LINALG)
def test_matrix_products(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# data movement


def _views(x):
    y = x.view(3, 1, 5, 1, 7)
    return (
        x.view(15, 7), x.reshape(-1), x.reshape(7, -1, 3), x.flatten(1), x.flatten(), x.unsqueeze(-1),
        x.unsqueeze(1), x[None].squeeze(0), y.squeeze(), y.squeeze(-2), y.squeeze((1, -2)), x.permute(2, 0, 1),
        x.permute(-1, -3, -2), x.transpose(-1, 0), x.mT, x[0].t(), x.transpose(0, 1).reshape(5, 21) * 2,
        x.squeeze(0), x.view(1, 105).squeeze(-2),
    )  # fmt: skip


def _expand_cat(x, y, i, i32, b):
    return (
        x.expand(3, 4, 7), x.expand(2, 3, 5, 7), x.expand(-1, 4, -1), torch.cat([x, y], 1), torch.cat([y, y, y], -1),
        torch.cat([x.expand(3, 2, 7), y], -2), torch.cat([y, i], 0), torch.cat([i32, i], 0), torch.cat([b, i32], 1),
        torch.cat([b, b], 0), torch.cat([y.double(), y], 2), torch.cat([y]) * 2,
    )  # fmt: skip


def _slices(x):
    return (
        x[:, 1:5:2, ::3], x[..., -4:-1], x[:, -3:], x[1:, :, 2:], x[:, :100], x[:, -100:2], x[::2, ::4, 1::5],
        x[:, -1], x.select(-1, -2), x[1], x[:, 2, ::2], x[-1, -1, -1:], x.narrow(2, 3, 4), x[:, 4:1],
    )  # fmt: skip


def _views_not_decomposed(x):
    return (
        x.reshape(7, 15), A._unsafe_view(x, [15, 7]), x.view(3, 1, 5, 1, 7).squeeze(), x[None].squeeze(0),
        x[0].t(), x[0, 0].t() * 2, x.transpose(0, -1), x.transpose(1, 2).reshape(-1, 5),
    )  # fmt: skip


def _diagonals(x):
    return (
        torch.diagonal(x[0]), x.diagonal(1, 1, 2), x.diagonal(-2, -1, -2), x.diagonal(0, 2, 0), x[0].diagonal(4),
        x[1].diagonal(-3), x.diagonal(9, 1, 2), torch.diagonal(x, 2, -1, 1) * 2,
    )  # fmt: skip


def _copy_variants(x):
    """The ``*_copy`` overloads (what functionalization and some exporters emit): the views' values."""
    return (
        A.view_copy(x, [5, 21]), A.permute_copy(x, [1, 0, 2]), A.narrow_copy(x, 1, -3, 2), A.narrow_copy(x, 2, 1, 4),
        A.unbind_copy(x, 1)[3], A.as_strided_copy(x, (3, 4), (7, 1), 2), A.t_copy(x[0]), A.expand_copy(x[:, :1], [3, 4, 7]),
        A.select_copy(x, 2, -1), A.slice_copy(x, 1, 1, 4), A.diagonal_copy(x, 1, 1, 2), A.squeeze_copy(x[:, :1], 1),
        A.squeeze_copy.dims(x[:1, :1], [0, 1]), A.squeeze_copy(x[:1]), A.unsqueeze_copy(x, 0), A.transpose_copy(x, 0, 2),
        A.alias_copy(x), A.detach_copy(x), A.unfold_copy(x, 2, 2, 1),
    )  # fmt: skip


def _diagonal_assign(x, v):
    y = x.clone()
    y[0].diagonal()[:] = v[:5]  # diagonal_scatter
    z = x[1].clone()
    z.fill_diagonal_(2.5)  # as_strided_scatter
    return (
        y, z, torch.diagonal_scatter(x, v[:3, None] * torch.ones(3, 5), 0, 1, 2),
        torch.diagonal_scatter(x, v[:6].reshape(3, 2), -3, 1, 2), torch.diagonal_scatter(x[0], v[:5], 2),
        torch.diagonal_scatter(x, torch.outer(v[:5], v[5:8]), 1, 0, 2),
    )  # fmt: skip


SHAPE = [
    case("copy-variants", _copy_variants, (f32(3, 5, 7),), "view_copy.default", "permute_copy.default",
         "narrow_copy.default", "unbind_copy.int", "as_strided_copy.default", "t_copy.default", "expand_copy.default",
         "select_copy.int", "slice_copy.Tensor", "diagonal_copy.default", "squeeze_copy.dim", "squeeze_copy.dims",
         "squeeze_copy.default", "unsqueeze_copy.default", "transpose_copy.int", "alias_copy.default",
         "detach_copy.default", "unfold_copy.default", decompose=False),
    case("diagonal-scatter", _diagonal_assign, (f32(3, 5, 7), f32(9)), "diagonal_scatter.default",
         "as_strided_scatter.default"),
    case("diagonal", _diagonals, (f32(3, 5, 7),), "diagonal.default"),
    case("diagonal-int", lambda i: (i.diagonal(), i.diagonal(-1, 2, 1), i.diagonal(1, 0, 2)), (ints(4, 3, 6),)),
    case("views", _views, (f32(3, 5, 7),), "view.default", "unsqueeze.default", "squeeze.dims", "permute.default"),
    case("expand-cat", _expand_cat,
         (f32(3, 1, 7), f32(3, 2, 7), ints(3, 2, 7), ints(3, 2, 7, dtype=torch.int32), bools(3, 2, 7)),
         "expand.default", "cat.default"),
    case("slice-select", _slices, (f32(3, 5, 7),), "slice.Tensor", "select.int"),
    case("unfold", lambda x: (x.unfold(2, 3, 2), x.unfold(0, 2, 1), x.unfold(-1, 7, 1)), (f32(3, 5, 7),), "unfold.default"),
    case("as-strided", lambda x: (x.as_strided((5, 3), (1, 5)), x.as_strided((2, 2, 3), (3, 1, 4), 1), x.as_strided((2, 2), (0, 1)),
                                  x.as_strided((3, 5), (5, 1))),
         (f32(3, 5),), "as_strided.default"),
    case("as-strided-channels-last", lambda x: F.adaptive_avg_pool2d(x.contiguous(memory_format=torch.channels_last) * 2, 1),
         (f32(2, 6, 5, 7),), "as_strided.default"),
    case("views-not-decomposed", _views_not_decomposed, (f32(3, 5, 7),),
         "reshape.default", "_unsafe_view.default", "squeeze.default", "squeeze.dim", "t.default", "transpose.int",
         decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, SHAPE)
def test_data_movement(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


def _slice_assign(x, v):
    y = x.clone()
    y[:, 1:4] = v
    y[0, :, 2:] = 0.5
    return y


def test_slice_scatter_and_copy(rng):
    check(_slice_assign, (f32(3, 5, 7), f32(3, 3, 7)), rng, ("slice_scatter.default",))


def test_cat_skips_empty_vectors(rng):
    """torch's legacy rule: a 1-d empty tensor beside tensors of a higher rank is skipped."""
    check(lambda x: (torch.cat([x.new_zeros(0), x], 1), torch.cat([x, x.new_zeros(0), x])), (f32(3, 5),), rng,
          ("cat.default",))  # fmt: skip


def _strided_assign(x, v):
    """Interleaved halves, as rotary embeddings write them: ``out[..., 0::2] = a``."""
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * v - b
    out[..., 1::2] = b * v + a
    y = x.clone()
    y[:, 1:6:3] = 0.5
    y[-1, ::2] = v[0, :1]
    return out, y


def test_slice_scatter_with_steps(rng):
    check(_strided_assign, (f32(3, 6, 8), f32(6, 4)), rng, ("slice_scatter.default",))


def test_copy_not_decomposed(rng):
    # a broadcasting in-place copy: aten.copy.default (the decomposition turns it into expand)
    check(lambda x, v: A.copy(x, v), (f32(3, 5), f32(5)), rng, ("copy.default",), decompose=False)


COVERED.update(("slice_scatter.default", "copy.default"))


# ---------------------------------------------------------------------------
# reductions and softmax


def _reduce_dims(keepdim):
    def fn(x, i):
        return (
            x.sum(-1, keepdim), x.sum((0, 2), keepdim), x.sum((-1, -3), keepdim), x.mean(1, keepdim),
            x.mean((0, -1), keepdim), x.amax(-1, keepdim), x.amax((0, 1), keepdim), x.amin(0, keepdim),
            x.amin((-2, -1), keepdim), i.sum(1, keepdim), i.amax(-1, keepdim), i.amin((0, 2), keepdim),
            x.double().mean(-2, keepdim),
        )  # fmt: skip

    return fn


def _reduce_all(x, i, i32, b):
    return (
        x.sum(), x.mean(), i.sum(), i32.sum(), x.sum(dtype=torch.float64), b.sum(), x.amax(), i.amin(),
        x.double().mean(), x.mean(dtype=torch.float64), i32.sum(-1, dtype=torch.int32), x.amax((0, 1, 2), keepdim=True),
        torch.mean(i, dim=-1, dtype=torch.float32), b.sum(-1), b.sum((0, 1), keepdim=True),
    )  # fmt: skip


def _softmax(x):
    return tuple(f(x, dim) for dim in (0, 1, 2, -1, -2) for f in (torch.softmax, torch.log_softmax))


def _extremes(x, i, b):
    return x.max(), x.min(), i.max(), i.min(), b.max(), b.min(), x[0, 0].max(), b.amax(-1), b.amin((0, 1), keepdim=True)


def _products(x, i, b):
    near_one = 1 + x / 8
    return (
        near_one.prod(), near_one.prod(1), near_one.prod(-1, keepdim=True), x.prod(0), i.prod(), i.prod(2),
        i.int().prod(1, keepdim=True), b.prod(0), b.prod(), near_one.prod(1, dtype=torch.float64), x.long().prod(-1),
        near_one.cumprod(1), i.cumprod(2), b.cumprod(0), x.cumprod(-1, dtype=torch.float64), i.int().cumprod(0),
    )  # fmt: skip


def _vector_norms(x):
    vector_norm = torch.linalg.vector_norm
    return (
        x.norm(dim=1), x.norm(p=1, dim=(1, 2)), x.norm(float("inf"), dim=-1), x.norm(0, dim=-1), x.norm(3, dim=-1),
        x.norm(), vector_norm(x, -float("inf")), vector_norm(x, 2, dtype=torch.float64), vector_norm(x, 0.5, (0, 2), True),
        vector_norm(x, -1.5, 2), vector_norm(x, 1, -1, keepdim=True), x.round().norm(0), F.normalize(x, dim=1),
        F.normalize(x, p=1, dim=-1), F.cosine_similarity(x, x.flip(0), dim=1), F.pairwise_distance(x[0], x[1]),
    )  # fmt: skip


def _distances(a, b):
    return (
        torch.cdist(a, b), torch.cdist(a, b, p=1), torch.cdist(a, b, p=float("inf")), torch.cdist(a, b, p=3),
        torch.cdist(a[0], b[1], p=0.5), torch.cdist(a, b[:1]), torch.cdist(a.round(), b.round(), p=0),
    )  # fmt: skip


REDUCE = [
    case("dims", _reduce_dims(False), (f32(3, 5, 7), ints(3, 5, 7)),
         "sum.dim_IntList", "mean.dim", "amax.default", "amin.default"),
    case("dims-keepdim", _reduce_dims(True), (f32(3, 5, 7), ints(3, 5, 7))),
    case("all", _reduce_all, (f32(3, 5, 7), ints(3, 5, 7), ints(3, 5, 7, dtype=torch.int32), bools(3, 5, 7)),
         "sum.dim_IntList", "mean.default"),
    case("all-not-decomposed", lambda x, i: (x.sum(), x.mean(), i.sum()), (f32(3, 5, 7), ints(3, 5, 7)),
         "sum.default", "mean.default", decompose=False),
    case("softmax", _softmax, (f32(3, 5, 7, scale=10.0),), "_softmax.default", "_log_softmax.default"),
    case("softmax-f64", _softmax, (f64(3, 5, 7, scale=10.0),)),
    case("max-min-all", _extremes, (f32(3, 5, 7), ints(3, 5, 7), bools(3, 5, 7)), "max.default", "min.default"),
    case("prod-cumprod", _products, (f32(3, 5, 7), ints(3, 5, 7), bools(3, 5)),
         "prod.default", "prod.dim_int", "cumprod.default"),
    case("vector-norms", _vector_norms, (f32(3, 5, 7),), "linalg_vector_norm.default"),
    case("vector-norms-f64", _vector_norms, (f64(3, 5, 7),)),
    case("cdist", _distances, (f32(2, 6, 5), f32(2, 9, 5)), "_cdist_forward.default"),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, REDUCE)
def test_reductions(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


# ---------------------------------------------------------------------------
# batch norm, layer norm, pooling


def _with_random_stats(bn: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn_like(bn.running_mean))
        bn.running_var.copy_(torch.rand_like(bn.running_var) + 0.2)
        if bn.affine:
            bn.weight.copy_(torch.randn_like(bn.weight))
            bn.bias.copy_(torch.randn_like(bn.bias))
    return bn


def _affine(norm: nn.Module) -> nn.Module:
    torch.manual_seed(1)
    with torch.no_grad():
        for p in norm.parameters():
            p.copy_(torch.randn_like(p))
    return norm


class InstanceNorms(nn.Module):
    """Instance norm 2-d and 1-d (batched and not), with and without affine parameters,
    and the functional form: each is group norm with a group per channel
    (``frontends/torch/norm_decompositions.py``)."""

    def __init__(self):
        super().__init__()
        self.plain = nn.InstanceNorm2d(3)
        self.affine = _affine(nn.InstanceNorm2d(4, affine=True, eps=1e-3))
        self.one_d = nn.InstanceNorm1d(5)
        self.one_d_affine = _affine(nn.InstanceNorm1d(5, affine=True))
        self.weight, self.bias = nn.Parameter(torch.randn(3)), nn.Parameter(torch.randn(3))

    def forward(self, x, y):
        return (
            self.plain(x), self.affine(y), self.one_d(x.reshape(2, 5, 21)), self.one_d_affine(x[0].reshape(5, 21)),
            F.instance_norm(x, weight=self.weight, bias=self.bias, eps=1e-2),
        )  # fmt: skip


NORM = [
    case("batch-norm-2d", _with_random_stats(nn.BatchNorm2d(5)), (f32(2, 5, 3, 7),),
         "_native_batch_norm_legit_no_training.default"),
    case("batch-norm-2d-no-affine", _with_random_stats(nn.BatchNorm2d(4, affine=False, eps=1e-3)), (f32(2, 4, 5, 3),)),
    case("batch-norm-1d", _with_random_stats(nn.BatchNorm1d(6)), (f32(3, 6),)),
    case("batch-norm-1d-sequence", _with_random_stats(nn.BatchNorm1d(4, momentum=0.3)), (f32(2, 4, 9),)),
    case("layer-norm-last-dim", _affine(nn.LayerNorm(7)), (f32(3, 5, 7),), "native_layer_norm.default"),
    case("layer-norm-two-dims", _affine(nn.LayerNorm((5, 7))), (f32(2, 3, 5, 7),)),
    case("layer-norm-no-affine", nn.LayerNorm(7, elementwise_affine=False, eps=1e-3), (f32(3, 5, 7, scale=5.0),)),
    case("layer-norm-no-bias", _affine(nn.LayerNorm((5, 7), bias=False)), (f32(3, 5, 7),)),
    case("layer-norm-functional", lambda x, w: F.layer_norm(x, (7,), w), (f32(4, 7), f32(7))),
    case("instance-norm", InstanceNorms(), (f32(2, 3, 5, 7, scale=3.0), f32(3, 4, 6, 5)), "group_norm.default"),
    case("instance-norm-f64", nn.InstanceNorm2d(3), (f64(2, 3, 5, 7),)),
    case("instance-norm-running-stats-eval", _with_random_stats(nn.InstanceNorm2d(3, track_running_stats=True)),
         (f32(2, 3, 5, 7),), "rsqrt.default"),
    case("batch-norm-legit-no-stats-not-decomposed", lambda x, w, b: A._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5)[0],
         (f32(2, 3, 5, 7), f32(3), f32(3)), "_native_batch_norm_legit.no_stats", decompose=False),
    case("batch-norm-legit-eval-not-decomposed",
         lambda x, w, b, m, v: A._native_batch_norm_legit(x, w, b, m, v, False, 0.1, 1e-5)[0],
         (f32(2, 3, 5, 7), f32(3), f32(3), f32(3), lambda rng: torch.from_numpy(rng.random(3, np.float32) + 0.5)),
         "_native_batch_norm_legit.default", decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, NORM)
def test_normalization(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


@pytest.mark.parametrize(
    "norm",
    [nn.BatchNorm2d(3), nn.BatchNorm1d(3, momentum=0.3, affine=False), nn.InstanceNorm2d(3, track_running_stats=True)],
    ids=["batch", "batch1d-momentum", "instance"],
)
def test_norm_in_training_mode_normalises_by_the_batch_and_moves_the_running_statistics(rng, norm):
    """Training mode (exported as the functional batch norm): the output uses the batch's
    statistics; the running ones, updated in place, are refused by name unless imported
    with ``state_as_io``; then three calls in a row track torch's module (unbiased
    variance, momentum, the batch counter)."""
    shape = (5, 3, 7) if isinstance(norm, nn.BatchNorm1d) else (2, 3, 4, 5)
    with torch.no_grad():
        for name, buffer in norm.named_buffers():
            if buffer.is_floating_point():
                buffer.copy_(torch.from_numpy(rng.random(buffer.shape, np.float32) + 0.5))
    ep = torch.export.export(norm.train(), (torch.randn(*shape),))
    assert "aten._native_batch_norm_legit_functional.default" in overloads(_decompose(ep))
    with pytest.raises(TorchImportError, match=r"updates .*running_mean.* in place.*state_as_io=True"):
        from_exported_program(ep)
    module, state = from_exported_program(ep, state_as_io=True)
    lib, state = tk.build(module), list(state.values())
    for _ in range(3):
        x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * 2 + 1)
        y, *state = lib(x.numpy(), *state)
        with torch.no_grad():
            np.testing.assert_allclose(y, norm(x).numpy(), rtol=1e-5, atol=1e-5)
        for got, (name, want) in zip(state, norm.named_buffers()):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


COVERED.add("_native_batch_norm_legit_functional.default")


def test_batch_norm_with_update_called_directly(rng):
    """``torch.ops.aten._batch_norm_with_update`` (what torch.compile's training graphs
    call): the normalised output, the batch's mean and inverse std, an empty reserve and
    the new running statistics, all six as torch computes them."""

    def fn(x, weight, bias, mean, var):
        return torch.ops.aten._batch_norm_with_update(x, weight, bias, mean.clone(), var.clone(), 0.2, 1e-4)

    def positive(*shape):
        return lambda r: torch.from_numpy(r.random(shape).astype(np.float32) + 0.5)

    check(fn, (f32(4, 3, 5, 2), f32(3), f32(3), f32(3), positive(3)), rng, ("_batch_norm_with_update_functional.default",))


COVERED.add("_batch_norm_with_update_functional.default")


def test_resize_keeps_the_leading_elements(rng):
    """``resize_`` / ``resize_as_`` (aten.resize): a smaller shape holds the first elements
    in row-major order; a larger one those, then what torch leaves uninitialised (not
    compared: we give zeros)."""

    class Resize(torch.nn.Module):
        def forward(self, x, y):
            return x.clone().resize_(3, 4) * 2, y.clone().resize_as_(x[:2]) + 1

    x, y = f32(4, 5)(rng), f32(2, 3)(rng)
    program = torch.export.export(Resize(), (x, y))
    lib = tk.build(from_exported_program(program))
    x, y = f32(4, 5)(rng), f32(2, 3)(rng)
    smaller, larger = lib(x.numpy(), y.numpy())
    want_smaller, want_larger = Resize()(x, y)
    assert smaller.shape == (3, 4) and larger.shape == (2, 5)
    np.testing.assert_array_equal(smaller, want_smaller.numpy())
    np.testing.assert_array_equal(larger.ravel()[:6], want_larger.numpy().ravel()[:6])
    np.testing.assert_array_equal(larger.ravel()[6:], np.ones(4, np.float32))


COVERED.add("resize.default")


def test_max_pool_backward_adds_the_gradients_of_shared_maxima(rng):
    """max_pool2d/3d_with_indices_backward (in exported training graphs): overlapping
    windows (stride below the kernel) share maxima, whose gradients add up; ceil mode
    and padding in 2-d."""
    aten = torch.ops.aten

    def fn(x, g, v, h):
        _, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
        _, j = F.max_pool3d(v, 2, 1, return_indices=True)
        return (
            aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], True, i),
            aten.max_pool3d_with_indices_backward(h, v, [2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 1, 1], False, j),
        )

    check(fn, (f32(2, 3, 9, 11), f32(2, 3, 5, 6), f32(1, 2, 5, 6, 7), f32(1, 2, 4, 5, 6)), rng,
          ("max_pool2d_with_indices_backward.default", "max_pool3d_with_indices_backward.default"))  # fmt: skip


def _max_pools(x):
    return (
        F.max_pool2d(x, 2), F.max_pool2d(x, 3, 2, 1), F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        F.max_pool2d(x, 2, 2, 1, ceil_mode=True), F.max_pool2d(x, (2, 3), (1, 2)), F.max_pool2d(x, 3, 1, 1, dilation=2),
        F.max_pool2d(x, (3, 2), 3, ceil_mode=True),
    )  # fmt: skip


def _avg_pools(x):
    return (
        F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        F.avg_pool2d(x, 2, 2, 1, ceil_mode=True), F.avg_pool2d(x, (2, 3), (2, 1), (1, 0)),
        F.avg_pool2d(x, (3, 2), 3, ceil_mode=True),
    )  # fmt: skip


def _adaptive_max(x):
    return (
        F.adaptive_max_pool2d(x, (2, 3)), F.adaptive_max_pool2d(x, 3), F.adaptive_max_pool2d(x, (4, 1)),
        F.adaptive_max_pool2d(x, (7, 5)), F.adaptive_max_pool2d(x, 1), nn.AdaptiveMaxPool2d((None, 2))(x),
        F.adaptive_max_pool1d(x[0], 2), F.adaptive_max_pool2d(x[0], (3, 2)), F.adaptive_max_pool2d(x, 4, return_indices=True)[0],
    )  # fmt: skip


def _adaptive(x):
    return (
        F.adaptive_avg_pool2d(x, (2, 3)), F.adaptive_avg_pool2d(x, 3), F.adaptive_avg_pool2d(x, (4, 1)),
        F.adaptive_avg_pool2d(x, (7, 5)), F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (None, 2)),
    )  # fmt: skip


def _pools_with_indices(x):
    """torch's indices (flat h * W + w of each window's first maximum), and max_unpool2d
    (a scatter by them): kernels with padding, ceil mode, dilation, 1-d pools."""
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    return (
        F.max_pool2d(x, 2, return_indices=True), F.max_pool2d(x, 3, 2, 1, return_indices=True),
        F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), F.max_pool2d(x, 3, 1, 1, dilation=2, return_indices=True),
        F.max_pool2d(x, (2, 3), (1, 2), return_indices=True)[1], F.max_pool1d(x[0], 3, 2, 1, return_indices=True),
        F.max_pool2d(x[0], 3, 2, 1, return_indices=True), F.max_unpool2d(pooled, indices, 2, output_size=x.shape[-2:]),
    )  # fmt: skip


def _divisors(x):
    return (
        F.avg_pool2d(x, 2, divisor_override=3), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=2),
        F.avg_pool2d(x[0], 3, 1, 1, count_include_pad=False, divisor_override=7),
        F.avg_pool2d(x, 2, divisor_override=-2),  # (torch allows any non-zero divisor)
    )  # fmt: skip


POOL = [
    case("max-pool", _max_pools, (f32(2, 3, 9, 11),), "max_pool2d_with_indices.default"),
    case("max-pool-odd", _max_pools, (f32(1, 2, 5, 7),)),
    case("max-pool-unbatched", lambda x: (F.max_pool2d(x, 2), nn.MaxPool2d(3, 2, 1)(x)), (f32(3, 7, 6),)),
    case("avg-pool", _avg_pools, (f32(2, 3, 9, 11),), "avg_pool2d.default"),
    case("avg-pool-odd", _avg_pools, (f32(1, 2, 5, 7),)),
    case("adaptive-avg-pool-unbatched", lambda x: (F.adaptive_avg_pool2d(x, (2, 4)), F.adaptive_avg_pool2d(x, 1)),
         (f32(3, 7, 6),)),
    case("avg-pool-unbatched", lambda x: (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
         (f32(3, 7, 6),)),
    case("adaptive-avg-pool", _adaptive, (f32(2, 3, 7, 5),), "_adaptive_avg_pool2d.default"),
    case("adaptive-max-pool", _adaptive_max, (f32(2, 3, 7, 5),), "adaptive_max_pool2d.default"),
    case("adaptive-max-pool-f64", lambda x: (F.adaptive_max_pool2d(x, (4, 5)), F.adaptive_max_pool2d(x[0], 2)),
         (f64(1, 2, 9, 6),)),
    case("max-pool-indices", _pools_with_indices, (f32(2, 3, 9, 11),), "max_pool2d_with_indices.default"),
    case("avg-pool-divisor-override", _divisors, (f32(2, 3, 9, 11),), "avg_pool2d.default"),
    case("adaptive-avg-pool-not-decomposed", lambda x: (F.adaptive_avg_pool2d(x, (2, 3)), F.adaptive_avg_pool2d(x, 1)),
         (f32(2, 3, 7, 5),), "adaptive_avg_pool2d.default", decompose=False),
]  # fmt: skip


@pytest.mark.parametrize(CASE_ARGS, POOL)
def test_pooling(rng, fn, makers, expect, decompose):
    run_case(rng, fn, makers, expect, decompose)


def test_max_pool_indices_pick_the_first_of_tied_maxima(rng):
    """Rounded inputs tie often: the index is of the first maximum in scan order, as torch's."""
    tied = lambda rng: torch.from_numpy(rng.integers(-2, 3, (2, 3, 9, 8)).astype(np.float32))  # noqa: E731
    check(_pools_with_indices, (tied,), rng, ("max_pool2d_with_indices.default",))


def test_max_pool_indices_of_a_symbolic_height_are_a_clear_error():
    x = torch.randn(1, 2, 6, 6)
    ep = torch.export.export(
        Fn(lambda x: F.max_pool2d(x, 2, return_indices=True)), (x,), dynamic_shapes=(({2: torch.export.Dim("h", min=4)},),)
    )
    with pytest.raises(TorchImportError, match="indices of a symbolic spatial size"):
        from_exported_program(ep)




# ---------------------------------------------------------------------------
# coverage

_NN_CORE = {
    "aten._native_batch_norm_legit_no_training.default", "aten.native_layer_norm.default",
    "aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default", "aten._adaptive_avg_pool2d.default",
    "aten.adaptive_avg_pool2d.default", "aten.adaptive_max_pool2d.default", "aten._native_batch_norm_legit.no_stats",
    "aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit_functional.default",
}  # fmt: skip


def test_every_core_overload_has_a_case():
    """Every overload registered in elementwise/linalg/grouped/shape/reduce.py, and the norm and pooling ones
    of nn.py, is named by a case above (and each case checks that its program uses them)."""
    modules = {f"tensorkiln.frontends.torch.ops.{m}" for m in ("elementwise", "linalg", "grouped", "shape", "reduce")}
    registered = {name for name, fn in CONVERTERS.items() if fn.__module__ in modules} | _NN_CORE
    assert len(registered) > 90
    covered = {qualified(e) for e in COVERED}
    assert not registered - covered, sorted(registered - covered)
