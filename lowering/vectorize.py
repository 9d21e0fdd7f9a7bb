"""``vectorized`` loops -> explicit SIMD code with LLVM vector types (what TVM does).

A loop ``loop.for %i = %lb to %ub step 1 vectorized { body }`` whose body is straight
line (loads, stores, ``loop.dim``, scalar arith/math) becomes

* a main loop that runs while ``i + W <= ub``, ``W`` lanes per iteration, ``i`` stepping
  by ``W``: ``W = vector_bits / (widest element type)`` (16 f32 lanes for AVX-512), or
  the largest power of two within the trip count when that is bounded at compile time
  (constant bounds, or the inner loop of a split);
* then the scalar loop from where it stopped to ``ub`` (the remainder: any trip count).

Each value of the body is classified, per vector iteration:

* *uniform*: the same in every lane (defined outside the loop, or computed from uniform
  values only, or loaded from a uniform address of a buffer the loop does not store
  to): one scalar, splatted when a vector needs it;
* *linear*: an integer/index value ``base + stride * lane`` (the induction variable,
  then ``+``/``-`` uniform values, ``*`` constants): one scalar (lane 0) and the stride;
  a *block division* of a stride-1 linear value, ``x / d`` (floor or unsigned) or
  ``x % d`` (unsigned), is uniform (the quotient) or linear (the remainder) when
  ``lanes`` divides ``d`` and lane 0 is a multiple of ``lanes`` in every vector
  iteration (from the alignment of the loop's start and of the uniform terms:
  constants, loop variables, sums, products, min/max), so that no vector crosses a
  multiple of ``d``: a grouped convolution's input channel ``(o / 8) * 8 + c``;
* *varying*: one vector value.

Loads whose last index is linear with stride 1 (others uniform) are vector loads,
stores likewise vector stores; other varying addresses become per-lane scalar loads
(``insertelement``) and stores (in lane order). Ops with a vector form (float and
integer arithmetic, comparisons, select, casts, min/max, fabs/sqrt/floor/fma, and
sin/cos/exp2... as LLVM vector intrinsics, which LLVM turns into one libm call per lane)
are emitted once on vectors; the rest (``tanh``, ``erf``, ``atan2`` libm calls, floor
division...) per lane. Results are those of the serial loop, bit for bit, except
reductions with ``reassoc`` (below).

Reductions into a uniform address (``acc[] = acc[] op x``, the accumulator pattern of
te-to-loop) are recognised: ``op`` one of addf, mulf, maximumf, minimumf, maxnumf,
minnumf, addi, muli, andi, ori, xori, max/min(s/u)i. Float add/mul with ``reassoc``
keep one partial result per lane (a vector accumulator) and combine the lanes and the
old value after the main loop; without ``reassoc`` each vector iteration adds its lanes
in order (``llvm.vector.reduce.fadd`` without fast-math flags: the serial order,
exact). The others are exact in any order.

Not vectorised (lowered as a serial loop, which LLVM's own vectoriser may still
vectorise; the reason is logged on the ``tensorkiln.lowering`` logger at debug level):
a step other than the constant 1; nested loops, allocations or calls in the body; a
buffer the loop stores to and also accesses at other indices (except where every
access indexes one axis by the same linear value and the others by uniform ones:
points apart, whose lanes never meet), or stores to at an
address that is uniform (other than a reduction) or that is not linear in the loop
variable (lanes could collide); element types wider than the vector.

Vector operands of ``llvm.fcmp`` and ``llvm.select`` with a vector condition are
valid LLVM, and xDSL's LLVM IR printer emits them, but xDSL 0.74's op definitions only
accept scalars: ``llvm_ops.VectorFCmpOp`` and ``llvm_ops.VectorSelectOp`` are the same
ops (same names, same printers) with the vector forms allowed.
"""

from __future__ import annotations

import logging
import math as pymath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import loop
from ..dialects.scalar import RemFOp
from . import llvm_ops
from .llvm_converter import FunctionConverter, constant_int, loop_converter, static_upper_bound
from .llvm_ops import VectorFCmpOp, VectorSelectOp
from .scalar_to_llvm import SCALAR_CONVERTERS, int_constant, llvm_type


@lru_cache(maxsize=16)
def _broadcast_mask(lanes: int) -> DenseArrayBase:
    """A shufflevector mask taking lane 0 into every one of ``lanes`` lanes."""
    return DenseArrayBase.from_list(i32, [0] * lanes)

logger = logging.getLogger("tensorkiln.lowering")


# ---------------------------------------------------------------------------
# vector forms of scalar ops

VectorConverter = Callable[[Builder, Operation, Sequence[SSAValue], int], "SSAValue | None"]
VECTOR_CONVERTERS: dict[type[Operation], VectorConverter] = {}


def _ins(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


def vector_type(t: Attribute, lanes: int) -> VectorType:
    return _vector_of(llvm_type(t), lanes)


@lru_cache(maxsize=256)
def _vector_of(element: Attribute, lanes: int) -> VectorType:
    """``vector<lanes x element>``, made once (attributes are immutable; making one
    verifies its parameters, which showed in loop-to-llvm's profile)."""
    return VectorType(element, [lanes])


def _suffix(t: Attribute) -> str:
    """LLVM's intrinsic type suffix of a vector type: ``v16f32``."""
    return f"v{t.get_shape()[0]}{t.element_type}"


def vector_constant(b: Builder, values: Sequence[int | float], t: Attribute) -> SSAValue:
    vt = VectorType(llvm_type(t), [len(values)])
    if isinstance(t, IntegerType) and t.width.data > 1:  # lane * stride may leave the type's range: wrap, as the scalar code does
        width = t.width.data
        values = [((v + (1 << (width - 1))) % (1 << width)) - (1 << (width - 1)) for v in values]
    return _ins(b, llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(vt, list(values)), vt))


def _same_as_scalar(*classes: type[Operation]) -> None:
    """Ops whose scalar converter builds llvm ops typed by their operands (vector-safe)."""
    for c in classes:
        VECTOR_CONVERTERS[c] = lambda b, op, args, lanes, c=c: SCALAR_CONVERTERS[c](b, op, args)


_same_as_scalar(
    arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.NegfOp,
    arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.DivUIOp, arith.RemSIOp,
    arith.RemUIOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp, arith.ShLIOp, arith.ShRSIOp,
    arith.ShRUIOp, arith.CmpiOp, RemFOp,
)  # fmt: skip


def _cmpf(b: Builder, op: arith.CmpfOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    return _ins(b, VectorFCmpOp(args[0], args[1], IntegerAttr(op.predicate.value.data, i64)))


def _select(b: Builder, op: arith.SelectOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    return _ins(b, llvm_ops.make(VectorSelectOp, *args))


def _minmax(predicate: str) -> VectorConverter:
    def convert(b: Builder, op: Operation, args: Sequence[SSAValue], lanes: int) -> SSAValue:
        a, c = args
        pred = IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), i64)
        take_a = _ins(b, llvm_ops.make(llvm.ICmpOp, a, c, pred))
        return _ins(b, llvm_ops.make(VectorSelectOp, take_a, a, c))

    return convert


VECTOR_CONVERTERS[arith.CmpfOp] = _cmpf
VECTOR_CONVERTERS[arith.SelectOp] = _select
VECTOR_CONVERTERS[arith.MaxSIOp] = _minmax("sgt")
VECTOR_CONVERTERS[arith.MinSIOp] = _minmax("slt")
VECTOR_CONVERTERS[arith.MaxUIOp] = _minmax("ugt")
VECTOR_CONVERTERS[arith.MinUIOp] = _minmax("ult")

_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.BitcastOp: llvm.BitcastOp,
}


def _cast(b: Builder, op: Operation, args: Sequence[SSAValue], lanes: int) -> SSAValue | None:
    frm, to = op.operands[0].type, op.results[0].type
    if isinstance(op, arith.TruncFOp) and to == f16 and frm != f32:
        return None  # the f64 -> f16 rounding sequence: per lane
    return _ins(b, _CASTS[type(op)](args[0], vector_type(to, lanes)))


def _index_cast(b: Builder, op: arith.IndexCastOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    frm, to = llvm_type(op.input.type), llvm_type(op.result.type)
    if frm == to:
        return args[0]
    cast = llvm.SExtOp if frm.width.data < to.width.data else llvm.TruncOp
    return _ins(b, cast(args[0], vector_type(to, lanes)))


def _uitofp(b: Builder, op: arith.UIToFPOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    wide = _ins(b, llvm.ZExtOp(args[0], VectorType(i32, [lanes])))  # booleans only (as the scalar form)
    return _ins(b, llvm.SIToFPOp(wide, vector_type(op.result.type, lanes)))


def _fptosi(b: Builder, op: arith.FPToSIOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    to = vector_type(op.result.type, lanes)
    name = f"llvm.fptosi.sat.{_suffix(to)}.{_suffix(args[0].type)}"
    return _ins(b, llvm.CallIntrinsicOp(name, list(args), [to]))


for _c in _CASTS:
    VECTOR_CONVERTERS[_c] = _cast
VECTOR_CONVERTERS[arith.IndexCastOp] = _index_cast
VECTOR_CONVERTERS[arith.UIToFPOp] = _uitofp
VECTOR_CONVERTERS[arith.FPToSIOp] = _fptosi

_FLOAT_INTRINSICS: dict[type[Operation], str] = {
    arith.MaximumfOp: "maximum",
    arith.MinimumfOp: "minimum",
    arith.MaxnumfOp: "maxnum",
    arith.MinnumfOp: "minnum",
    math.ExpOp: "exp",
    math.LogOp: "log",
    math.SqrtOp: "sqrt",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.AbsFOp: "fabs",
    math.FmaOp: "fma",
    math.PowFOp: "pow",
    math.CopySignOp: "copysign",
    math.TruncOp: "trunc",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.Exp2Op: "exp2",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.RoundEvenOp: "roundeven",
}


def _float_intrinsic(b: Builder, op: Operation, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    t = vector_type(op.results[0].type, lanes)
    return _ins(b, llvm.CallIntrinsicOp(f"llvm.{_FLOAT_INTRINSICS[type(op)]}.{_suffix(t)}", list(args), [t]))


def _rsqrt(b: Builder, op: math.RsqrtOp, args: Sequence[SSAValue], lanes: int) -> SSAValue:
    t = op.result.type
    root = _ins(b, llvm.CallIntrinsicOp(f"llvm.sqrt.{_suffix(args[0].type)}", list(args), [args[0].type]))
    return _ins(b, llvm.FDivOp(vector_constant(b, [1.0] * lanes, t), root))


for _c in _FLOAT_INTRINSICS:
    VECTOR_CONVERTERS[_c] = _float_intrinsic
VECTOR_CONVERTERS[math.RsqrtOp] = _rsqrt


# ---------------------------------------------------------------------------
# reductions


@dataclass(frozen=True)
class _ReductionKind:
    identity: Callable[[Attribute], int | float]
    #: the horizontal reduction intrinsic's stem (``llvm.vector.reduce.<stem>``)
    horizontal: str


def _int_min(t: Attribute) -> int:
    return -(1 << (t.width.data - 1))


def _int_max(t: Attribute) -> int:
    return (1 << (t.width.data - 1)) - 1


# (the integer identities are written as the signed value of the bit pattern)
REDUCTIONS: dict[type[Operation], _ReductionKind] = {
    arith.AddfOp: _ReductionKind(lambda t: -0.0, "fadd"),
    arith.MulfOp: _ReductionKind(lambda t: 1.0, "fmul"),
    arith.MaximumfOp: _ReductionKind(lambda t: -pymath.inf, "fmaximum"),
    arith.MinimumfOp: _ReductionKind(lambda t: pymath.inf, "fminimum"),
    arith.MaxnumfOp: _ReductionKind(lambda t: pymath.nan, "fmax"),
    arith.MinnumfOp: _ReductionKind(lambda t: pymath.nan, "fmin"),
    arith.AddiOp: _ReductionKind(lambda t: 0, "add"),
    arith.MuliOp: _ReductionKind(lambda t: 1, "mul"),
    arith.AndIOp: _ReductionKind(lambda t: -1, "and"),
    arith.OrIOp: _ReductionKind(lambda t: 0, "or"),
    arith.XOrIOp: _ReductionKind(lambda t: 0, "xor"),
    arith.MaxSIOp: _ReductionKind(_int_min, "smax"),
    arith.MinSIOp: _ReductionKind(_int_max, "smin"),
    arith.MaxUIOp: _ReductionKind(lambda t: 0, "umax"),
    arith.MinUIOp: _ReductionKind(lambda t: -1, "umin"),
}


@dataclass
class _Reduction:
    load: loop.LoadOp
    combine: Operation
    store: loop.StoreOp
    #: the value combined into the accumulator each iteration
    operand: SSAValue
    #: float add/mul without reassoc: each vector iteration reduces its lanes in order
    ordered: bool


def _has_reassoc(op: Operation) -> bool:
    flags = getattr(op, "fastmath", None)
    return flags is not None and any(str(f) in ("reassoc", "fast") for f in flags.data)


# ---------------------------------------------------------------------------
# analysis

UNIFORM, LINEAR, VARYING = "uniform", "linear", "varying"


@dataclass
class _Plan:
    lanes: int
    kinds: dict[SSAValue, str] = field(default_factory=dict)
    strides: dict[SSAValue, int] = field(default_factory=dict)
    #: linear values: a power of two dividing lane 0 in every vector iteration
    alignments: dict[SSAValue, int] = field(default_factory=dict)
    reductions: list[_Reduction] = field(default_factory=list)

    def kind(self, v: SSAValue) -> str:
        return self.kinds.get(v, UNIFORM)  # values from outside the loop are uniform

    def access(self, indices: Sequence[SSAValue]) -> str:
        """``uniform``, ``contiguous`` (consecutive lanes, consecutive elements) or ``gather``."""
        kinds = [self.kind(i) for i in indices]
        if all(k == UNIFORM for k in kinds):
            return "uniform"
        if (
            kinds[-1] == LINEAR
            and self.strides[indices[-1]] == 1
            and all(k == UNIFORM for k in kinds[:-1])
        ):
            return "contiguous"
        return "gather"


class NotVectorizable(Exception):
    pass


def _element_bits(t: Attribute) -> int:
    # (exact types: isinstance against xDSL's ABCs and the AnyFloat union is slow, and
    # this runs for every op of every vectorized loop)
    t = t.element_type if type(t) is VectorType else t
    if type(t) is IndexType:
        return 64
    return t.width.data if type(t) is IntegerType else t.bitwidth


def _affine_stride(op: Operation, plan: _Plan) -> int | None:
    """The stride of ``op``'s result if it is linear in the loop variable, else None."""
    if not isinstance(op.results[0].type, IndexType | IntegerType) or llvm_type(op.results[0].type) != i64:
        return None
    kinds = [plan.kind(v) for v in op.operands]
    if any(k == VARYING for k in kinds):
        return None
    strides = [plan.strides.get(v, 0) for v in op.operands]
    match op:
        case arith.AddiOp():
            return strides[0] + strides[1]
        case arith.SubiOp():
            return strides[0] - strides[1]
        case arith.MuliOp():
            for a, c in ((0, 1), (1, 0)):
                if kinds[c] == UNIFORM and (factor := constant_int(op.operands[c])) is not None:
                    return strides[a] * factor
            return None
        case arith.IndexCastOp():
            return strides[0]
    return None


#: the largest power of two the alignment analysis tracks
_MAX_ALIGNMENT = 1 << 16


def _power_of_two_factor(n: int) -> int:
    """The largest power of two dividing ``n`` (capped; 0 is divisible by all)."""
    return _MAX_ALIGNMENT if n == 0 else min(_MAX_ALIGNMENT, n & -n)


def uniform_alignment(value: SSAValue) -> int:
    """A power of two that divides ``value`` (an index computed outside the vectorized
    loop) wherever it is computed: constants, loop variables with such bounds and
    steps, and sums, products, minima and maxima of them (a split loop's shifted last
    tile ``min(co, 88)`` is a multiple of 8 when ``co`` steps by 16)."""
    if (c := constant_int(value)) is not None:
        return _power_of_two_factor(abs(c))
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, loop.ForOp) and value is parent.induction_var:
            return min(uniform_alignment(parent.lb), uniform_alignment(parent.step))
        return 1
    if isinstance(owner, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp | arith.MinUIOp | arith.MaxUIOp):
        return min(uniform_alignment(owner.lhs), uniform_alignment(owner.rhs))
    if isinstance(owner, arith.MuliOp):
        return min(_MAX_ALIGNMENT, uniform_alignment(owner.lhs) * uniform_alignment(owner.rhs))
    if isinstance(owner, arith.IndexCastOp):
        return uniform_alignment(owner.input)
    return 1


def _lane0_alignment(v: SSAValue, plan: _Plan) -> int:
    """A power of two dividing ``v`` in lane 0 of every vector iteration."""
    if plan.kind(v) == LINEAR:
        return plan.alignments.get(v, 1)
    return uniform_alignment(v)


def _linear_alignment(op: Operation, plan: _Plan) -> int:
    """Lane-0 alignment of a linear ``op`` result (see :func:`_affine_stride`)."""
    aligns = [_lane0_alignment(v, plan) for v in op.operands]
    if isinstance(op, arith.MuliOp):
        return min(_MAX_ALIGNMENT, aligns[0] * aligns[1])
    return min(aligns)


def _block_division(op: Operation, plan: _Plan) -> str | None:
    """The kind of ``x / d`` or ``x % d`` (floor or unsigned; ``d`` a positive constant)
    of a linear ``x`` with stride 1 when no vector crosses a multiple of ``d``: with
    ``lanes`` dividing ``d`` and lane 0 a multiple of ``lanes``, the quotient is the same
    in every lane (uniform: a grouped convolution reads one input channel for a vector
    of a group's output channels) and the remainder is lane 0's plus the lane
    (linear). None otherwise."""
    if not isinstance(op, arith.FloorDivSIOp | arith.DivUIOp | arith.RemUIOp):
        return None
    x, divisor = op.operands
    d = constant_int(divisor)
    if not plan.lanes or d is None or d <= 0 or plan.kind(x) != LINEAR or plan.strides[x] != 1:
        return None
    if min(_power_of_two_factor(d), _lane0_alignment(x, plan)) % plan.lanes:
        return None
    return LINEAR if isinstance(op, arith.RemUIOp) else UNIFORM


def _rows_apart(accesses: Sequence[loop.LoadOp | loop.StoreOp], plan: _Plan) -> bool:
    """Whether the accesses to a buffer all index one axis by the same value linear in
    the loop variable, every other axis by uniform values (a butterfly's points at the
    lane's signal): with every index inside its axis, two accesses that differ in a
    uniform index never reach the same element in any lanes, and where they agree each
    lane meets only itself, in program order as in the serial loop."""
    first = accesses[0].indices
    axes = [k for k, i in enumerate(first) if plan.kind(i) != UNIFORM]
    if len(axes) != 1 or plan.kind(first[axes[0]]) != LINEAR or not plan.strides.get(first[axes[0]]):
        return False  # (a stride of 0 would put every lane on one element)
    axis = axes[0]
    return all(
        len(a.indices) == len(first)
        and a.indices[axis] == first[axis]
        and all(plan.kind(i) == UNIFORM for k, i in enumerate(a.indices) if k != axis)
        for a in accesses
    )


def analyze(op: loop.ForOp, vector_bits: int) -> _Plan:
    """How to vectorise ``op``; raises NotVectorizable (with the reason) if it cannot."""
    if constant_int(op.step) != 1:
        raise NotVectorizable("its step is not the constant 1")
    body = [o for o in op.body.block.ops if not isinstance(o, loop.YieldOp)]
    loads: dict[SSAValue, list[loop.LoadOp]] = {}
    stores: dict[SSAValue, list[loop.StoreOp]] = {}
    for o in body:
        if isinstance(o, loop.LoadOp):
            loads.setdefault(o.buffer, []).append(o)
        elif isinstance(o, loop.StoreOp):
            stores.setdefault(o.buffer, []).append(o)
        elif isinstance(o, loop.DimOp) or type(o) in SCALAR_CONVERTERS:
            pass
        else:
            raise NotVectorizable(f"its body holds '{o.name}' (only loads, stores and scalar arith/math)")

    plan, widest = _classify(op, body, stores, lanes=0)  # (lanes unknown: block divisions vary)
    # (booleans are bytes in memory; at most 64 lanes)
    widest = max(widest or 64, 8)
    lanes = vector_bits // widest
    if lanes < 2:
        raise NotVectorizable(f"its {widest}-bit elements do not fit twice in {vector_bits}-bit vectors")
    # no wider than the trip count when it is bounded at compile time (8 lanes for 8 iterations)
    lb, bound = constant_int(op.lb), static_upper_bound(op.ub)
    if lb is not None and bound is not None and bound - lb < lanes:
        if bound - lb < 2:
            raise NotVectorizable(f"it runs at most {max(0, bound - lb)} iteration(s)")
        lanes = 1 << ((bound - lb).bit_length() - 1)
    plan, _ = _classify(op, body, stores, lanes)  # (block divisions depend on the lanes)

    for buffer, written in stores.items():
        accesses: list[loop.LoadOp | loop.StoreOp] = loads.get(buffer, []) + written
        indices = tuple(written[0].indices)
        if plan.access(indices) == "uniform":
            plan.reductions.append(_reduction(buffer, loads.get(buffer, []), written, op))
            continue
        if any(tuple(a.indices) != indices for a in accesses) and not _rows_apart(accesses, plan):
            raise NotVectorizable(f"it stores to buffer {buffer.name_hint or buffer} and accesses it at other indices")
        if any(plan.kind(i) == VARYING for i in indices):
            raise NotVectorizable(
                f"it stores to buffer {buffer.name_hint or buffer} at indices that are not linear in the loop variable"
            )
    return plan


def _classify(
    op: loop.ForOp, body: list[Operation], stores: dict[SSAValue, list[loop.StoreOp]], lanes: int
) -> tuple[_Plan, int]:
    """Each body value's kind with ``lanes`` lanes, and the widest element (bits)."""
    plan = _Plan(lanes=lanes)
    plan.kinds[op.induction_var] = LINEAR
    plan.strides[op.induction_var] = 1
    plan.alignments[op.induction_var] = min(uniform_alignment(op.lb), lanes)
    widest = 0
    for o in body:
        if isinstance(o, loop.StoreOp):
            widest = max(widest, _element_bits(o.value.type))
            continue
        result = o.results[0]
        if isinstance(o, loop.LoadOp):
            widest = max(widest, _element_bits(result.type))
            uniform = all(plan.kind(i) == UNIFORM for i in o.indices)
            plan.kinds[result] = UNIFORM if uniform and o.buffer not in stores else VARYING
        elif isinstance(o, loop.DimOp) or all(plan.kind(v) == UNIFORM for v in o.operands):
            plan.kinds[result] = UNIFORM
        elif (stride := _affine_stride(o, plan)) is not None:
            plan.kinds[result] = LINEAR if stride else UNIFORM
            if stride:
                plan.strides[result] = stride
                plan.alignments[result] = _linear_alignment(o, plan)
        elif (kind := _block_division(o, plan)) is not None:
            plan.kinds[result] = kind
            if kind == LINEAR:
                plan.strides[result] = 1
                plan.alignments[result] = lanes
        else:
            plan.kinds[result] = VARYING
            if not isinstance(result.type, IndexType):
                widest = max(widest, _element_bits(result.type))
    return plan, widest


def _reduction(
    buffer: SSAValue, loads: list[loop.LoadOp], stores: list[loop.StoreOp], loop_op: loop.ForOp
) -> _Reduction:
    name = buffer.name_hint or str(buffer)
    if len(loads) != 1 or len(stores) != 1:
        raise NotVectorizable(f"it stores to the uniform address of {name} and that is not one load-op-store reduction")
    load, store = loads[0], stores[0]
    if tuple(load.indices) != tuple(store.indices):
        raise NotVectorizable(f"its reduction into {name} loads and stores different elements")
    for i in load.indices:
        if loop_op.is_ancestor(i.owner) and not isinstance(i.owner, arith.ConstantOp):
            raise NotVectorizable(f"the index of its reduction into {name} is computed inside the loop")
    block = loop_op.body.block
    combine = store.value.owner
    if (
        not isinstance(combine, Operation)
        or type(combine) not in REDUCTIONS
        or combine.parent_block() is not block
        or not load.result.has_one_use()
        or not combine.results[0].has_one_use()
        or load.result not in combine.operands
        or block.get_operation_index(load) > block.get_operation_index(store)
    ):
        raise NotVectorizable(f"it stores to the uniform address of {name} and that is not a reduction")
    a, c = combine.operands
    operand = c if a is load.result else a
    ordered = isinstance(combine, arith.AddfOp | arith.MulfOp) and not _has_reassoc(combine)
    return _Reduction(load, combine, store, operand, ordered)


# ---------------------------------------------------------------------------
# emission


class _Vectorizer:
    """Emits one vector iteration of the body into the converter's current block."""

    def __init__(self, conv: FunctionConverter, plan: _Plan, accumulators: Sequence[SSAValue]):
        self.conv = conv
        self.plan = plan
        self.lanes = plan.lanes
        self.vectors: dict[SSAValue, SSAValue] = {}
        self.accumulators = dict(zip([r.combine for r in plan.reductions if not r.ordered], accumulators, strict=True))
        self.new_accumulators: dict[Operation, SSAValue] = {}
        self.skip: set[Operation] = {r.load for r in plan.reductions} | {r.store for r in plan.reductions}
        self.reductions = {r.combine: r for r in plan.reductions}

    @property
    def b(self) -> Builder:
        return self.conv.b

    def ins(self, op: Operation) -> SSAValue:
        return self.conv.emit(op)

    # -- lanes and vectors --------------------------------------------------------

    def splat(self, scalar: SSAValue) -> SSAValue:
        vt = _vector_of(scalar.type, self.lanes)
        single = self.ins(llvm_ops.make(llvm.InsertElementOp, self.ins(llvm_ops.make(llvm.UndefOp, vt)), scalar, int_constant(self.b, 0, i32)))
        return self.ins(llvm_ops.make(llvm.ShuffleVectorOp, single, single, _broadcast_mask(self.lanes), vt))

    def vector(self, v: SSAValue) -> SSAValue:
        """``v`` as a vector of its lanes."""
        if v in self.vectors:
            return self.vectors[v]
        scalar = self.conv.values[v]
        kind = self.plan.kind(v)
        if kind == VARYING:
            raise AssertionError(f"no vector for varying value {v}")
        vec = self.splat(scalar)
        if kind == LINEAR:
            stride = self.plan.strides[v]
            steps = vector_constant(self.b, [lane * stride for lane in range(self.lanes)], scalar.type)
            vec = self.ins(llvm.AddOp(vec, steps))
        self.vectors[v] = vec
        return vec

    def lane(self, v: SSAValue, lane: int) -> SSAValue:
        """The scalar value of ``v`` in ``lane``."""
        kind = self.plan.kind(v)
        if kind == UNIFORM or (kind == LINEAR and lane == 0):
            return self.conv.values[v]
        if kind == LINEAR:
            offset = int_constant(self.b, lane * self.plan.strides[v], self.conv.values[v].type)
            return self.ins(llvm_ops.add(self.conv.values[v], offset))
        return self.extract(self.vectors[v], lane)

    def extract(self, vec: SSAValue, lane: int) -> SSAValue:
        # extractelement, spelled as a one-lane shuffle + bitcast (xDSL 0.74's llvm
        # dialect has no extractelement; LLVM folds this back to one)
        element = vec.type.element_type
        one = self.ins(llvm.ShuffleVectorOp(vec, vec, DenseArrayBase.from_list(i32, [lane]), VectorType(element, [1])))
        return self.ins(llvm.BitcastOp(one, element))

    def assemble(self, scalars: Sequence[SSAValue]) -> SSAValue:
        vec = self.ins(llvm_ops.make(llvm.UndefOp, VectorType(scalars[0].type, [self.lanes])))
        for lane, s in enumerate(scalars):
            vec = self.ins(llvm_ops.make(llvm.InsertElementOp, vec, s, int_constant(self.b, lane, i32)))
        return vec

    # -- the body -----------------------------------------------------------------

    def emit(self, ops: Sequence[Operation]) -> None:
        conv = self.conv
        for o in ops:
            if isinstance(o, loop.YieldOp) or o in self.skip:
                continue
            if o in self.reductions:
                self.emit_reduction(self.reductions[o])
            elif isinstance(o, loop.StoreOp):
                self.emit_store(o)
            elif self.plan.kind(o.results[0]) != VARYING:
                conv.convert_op(o)  # one scalar: uniform, or lane 0 of a linear value
            elif isinstance(o, loop.LoadOp):
                self.emit_load(o)
            else:
                self.emit_op(o)

    def emit_load(self, o: loop.LoadOp) -> None:
        buf = self.conv.buffers[o.buffer]
        t = o.result.type
        size = max(1, _element_bits(t) // 8)
        if self.plan.access(o.indices) == "contiguous":
            address = self.conv.address(o.buffer, o.indices)
            if t == i1:  # booleans are bytes in memory, but bits in an LLVM vector in memory
                raw = self.ins(llvm.LoadOp(address, VectorType(i8, [self.lanes]), alignment=1))
                self.vectors[o.result] = self.ins(llvm.TruncOp(raw, VectorType(i1, [self.lanes])))
                return
            vt = vector_type(t, self.lanes)
            self.vectors[o.result] = self.ins(llvm_ops.load(address, vt, alignment=size))
            return
        lanes = []
        for lane in range(self.lanes):
            address = self.conv.address_of(buf, [self.lane(i, lane) for i in o.indices])
            lanes.append(self.ins(llvm_ops.load(address, llvm_type(t))))
        self.vectors[o.result] = self.assemble(lanes)

    def emit_store(self, o: loop.StoreOp) -> None:
        buf = self.conv.buffers[o.buffer]
        size = max(1, _element_bits(o.value.type) // 8)
        if self.plan.access(o.indices) == "contiguous":
            value = self.vector(o.value) if o.value not in self.vectors else self.vectors[o.value]
            if o.value.type == i1:  # one byte per boolean (see emit_load)
                value = self.ins(llvm.ZExtOp(value, VectorType(i8, [self.lanes])))
            self.ins(llvm_ops.store(value, self.conv.address(o.buffer, o.indices), alignment=size))
            return
        for lane in range(self.lanes):
            address = self.conv.address_of(buf, [self.lane(i, lane) for i in o.indices])
            self.ins(llvm_ops.store(self.lane(o.value, lane), address))

    def operand_vectors(self, o: Operation) -> list[SSAValue]:
        return [self.vectors[v] if v in self.vectors else self.vector(v) for v in o.operands]

    def emit_op(self, o: Operation) -> None:
        result = o.results[0]
        converter = VECTOR_CONVERTERS.get(type(o))
        vec = converter(self.b, o, self.operand_vectors(o), self.lanes) if converter else None
        if vec is None:  # no vector form: once per lane
            scalar = SCALAR_CONVERTERS[type(o)]
            lanes = [scalar(self.b, o, [self.lane(v, lane) for v in o.operands]) for lane in range(self.lanes)]
            vec = self.assemble(lanes)
        self.vectors[result] = vec

    def emit_reduction(self, r: _Reduction) -> None:
        x = self.vectors[r.operand] if r.operand in self.vectors else self.vector(r.operand)
        if r.ordered:
            address = self.conv.address(r.load.buffer, r.load.indices)
            old = self.ins(llvm.LoadOp(address, r.load.result.type))
            reduce = llvm.VectorReduceFAddOp if isinstance(r.combine, arith.AddfOp) else llvm.VectorReduceFMulOp
            self.ins(llvm.StoreOp(self.ins(reduce(old, x)), address))
            return
        acc = self.accumulators[r.combine]
        args = [acc if v is r.load.result else x for v in r.combine.operands]
        self.new_accumulators[r.combine] = VECTOR_CONVERTERS[type(r.combine)](self.b, r.combine, args, self.lanes)


def _finish_reduction(conv: FunctionConverter, r: _Reduction, acc: SSAValue) -> None:
    """After the main loop: fold the lanes of ``acc`` into the accumulator in memory."""
    for i in r.load.indices:  # (constants may be made inside the loop: make them here too)
        if isinstance(i.owner, arith.ConstantOp):
            conv.convert_op(i.owner)
    address = conv.address(r.load.buffer, r.load.indices)
    t = r.load.result.type
    old = conv.emit(llvm.LoadOp(address, t))
    if isinstance(r.combine, arith.AddfOp):
        new = conv.emit(llvm.VectorReduceFAddOp(old, acc))
    elif isinstance(r.combine, arith.MulfOp):
        new = conv.emit(llvm.VectorReduceFMulOp(old, acc))
    else:
        kind = REDUCTIONS[type(r.combine)]
        partial = conv.emit(
            llvm.CallIntrinsicOp(f"llvm.vector.reduce.{kind.horizontal}.{_suffix(acc.type)}", [acc], [llvm_type(t)])
        )
        new = SCALAR_CONVERTERS[type(r.combine)](conv.b, r.combine, [old, partial])
    conv.emit(llvm.StoreOp(new, address))


#: vector iterations per trip of the main loop when it carries reassociable reductions:
#: one accumulator per copy, so the adds of consecutive iterations do not wait on each
#: other (an FMA's latency is 4-5 cycles; a dot product of 3072 floats, one thread,
#: znver2: 19 -> 40 GB/s of weights)
INTERLEAVE = 4


@loop_converter("vectorized")
def convert_vectorized(conv: FunctionConverter, op: loop.ForOp) -> bool:
    """Emit ``op`` as a vector main loop + scalar remainder; False (nothing emitted) if
    the loop cannot be vectorised (the caller then lowers it serially). With
    reassociable reductions, a first main loop runs ``INTERLEAVE`` vector iterations
    per trip with one accumulator each, and the accumulators are combined after it."""
    try:
        plan = analyze(op, conv.state.vector_bits)
    except NotVectorizable as e:
        logger.debug("loop '%s' in '%s' is lowered serially: %s", op.loop_name.data, conv.name, e)
        return False
    lanes = plan.lanes
    accumulated = [r for r in plan.reductions if not r.ordered]
    accumulators = []
    for r in accumulated:
        t = r.load.result.type
        accumulators.append(vector_constant(conv.b, [REDUCTIONS[type(r.combine)].identity(t)] * lanes, t))
    iv = conv.values[op.lb]
    lb, bound = constant_int(op.lb), static_upper_bound(op.ub)
    if accumulated and (lb is None or bound is None or bound - lb >= INTERLEAVE * lanes):
        iv, copies = _vector_loop(conv, op, plan, iv, accumulators * INTERLEAVE, INTERLEAVE)
        n = len(accumulated)
        accumulators = []
        for k, r in enumerate(accumulated):
            partial = copies[k::n]
            total = partial[0]
            for other in partial[1:]:
                total = VECTOR_CONVERTERS[type(r.combine)](conv.b, r.combine, [total, other], lanes)
            accumulators.append(total)
    iv, accumulators = _vector_loop(conv, op, plan, iv, accumulators, 1)
    for r, acc in zip(accumulated, accumulators, strict=True):
        _finish_reduction(conv, r, acc)
    # the remainder, from where the main loop stopped
    conv.serial_loop(op, lb=iv)
    return True


def _vector_loop(
    conv: FunctionConverter, op: loop.ForOp, plan: _Plan, start: SSAValue, accumulators: list[SSAValue], copies: int
) -> tuple[SSAValue, list[SSAValue]]:
    """A loop from ``start`` while ``copies`` vector iterations fit before ``op``'s upper
    bound, each trip running them in order (copy c owns ``accumulators[c*n:(c+1)*n]``,
    n the reductions kept in vectors). Returns where it stopped and the accumulators
    there; the block after it is the converter's current block."""
    lanes = plan.lanes
    n = len(accumulators) // copies
    # runs while iv + copies * lanes <= ub, i.e. iv <= ub - copies * lanes
    limit = conv.emit(llvm.SubOp(conv.values[op.ub], int_constant(conv.b, copies * lanes)))
    header = Block(arg_types=[i64] + [v.type for v in accumulators])
    body = Block()
    exit_block = Block()
    conv.region.add_block([header, body])
    conv.emit(llvm_ops.br(header, start, *accumulators))
    conv.block = header
    iv = header.args[0]
    fits = conv.emit(llvm_ops.make(llvm.ICmpOp, iv, limit, llvm_ops.integer(llvm.ICmpPredicateFlag("sle").to_int())))
    conv.emit(llvm_ops.cond_br(fits, body, exit_block))
    conv.block = body
    accumulated = [r for r in plan.reductions if not r.ordered]
    updated = []
    for c in range(copies):
        at = iv if c == 0 else conv.emit(llvm_ops.add(iv, int_constant(conv.b, c * lanes), llvm_ops.NO_SIGNED_WRAP))
        conv.values[op.induction_var] = at
        vectorizer = _Vectorizer(conv, plan, header.args[1 + c * n : 1 + (c + 1) * n])
        vectorizer.emit(list(op.body.block.ops))
        updated += [vectorizer.new_accumulators[r.combine] for r in accumulated]
    nxt = conv.emit(llvm_ops.add(iv, int_constant(conv.b, copies * lanes), llvm_ops.NO_SIGNED_WRAP))
    conv.emit(llvm_ops.br(header, nxt, *updated))
    conv.region.add_block(exit_block)
    conv.block = exit_block
    return iv, list(header.args[1:])


__all__ = ["REDUCTIONS", "VECTOR_CONVERTERS", "VectorFCmpOp", "VectorSelectOp", "analyze", "convert_vectorized"]
