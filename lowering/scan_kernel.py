"""The loop kernel of a ``te.scan``: one running value per line of the input (every axis
but the scan axis), carried along the axis in a local scalar buffer::

    loop.for %i0 ... name("i0") {                      // lines: independent, parallel
      %acc = loop.alloc() {scope = "local"}            // the running state
      loop.store <init>, %acc[]
      loop.for %k = 0 to %n name("scan0") {            // serial, in element order
        %x = loop.load %in[.., %k, ..]
        %v = combine(loop.load %acc[], %x)
        loop.store %v, %acc[]
        loop.store %v, %out[.., %k, ..]
      }
    }

``O(n)`` along the axis, where TE's element form costs ``O(n^2)``. Float sums and
products are combined in element order without reassociation (numpy's ``accumulate``,
to the bit); integers wrap. ``argmax``/``argmin`` carry the running extreme and its
position (torch's ``cummax``/``cummin``: the last position on ties, a NaN is taken
and sticks); ``logaddexp`` is torch's ``logcumsumexp`` step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, MemRefType, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ..dialects import loop, te
from ..dialects.graph.types import is_float
from .line_nest import line_nest, scalar_literal
from .te_builder import highest_value, lowest_value
from .kernel_registry import KernelHost, kernel_rule
from .loop_nest import buffer_type, emit_loop_nest

#: the ``tk.kernel`` tag of a te.scan without a ``tag`` attribute (graph-to-te names
#: each after its graph op: ``cumsum``, ``cumprod``...)
TAG = "scan"

Literal = FloatAttr | IntegerAttr
#: (builder, running state, element, its position along the axis) -> the new state
Step = Callable[[Builder, Sequence[SSAValue], SSAValue, SSAValue], list[SSAValue]]


@dataclass(frozen=True)
class Combiner:
    """How one te.scan combiner runs: its running state (initial values for the input's
    element type) and one step; the scan's result is the state's first value."""

    init: Callable[[Attribute], tuple[Literal, ...]]
    step: Step


def _insert(b: Builder, op: Operation) -> SSAValue:
    return b.insert(op).results[0]


def _arith(float_op: type[Operation], int_op: type[Operation]) -> Step:
    """``acc op x``: no fast-math flags, so floats combine in element order."""

    def step(b: Builder, state: Sequence[SSAValue], x: SSAValue, k: SSAValue) -> list[SSAValue]:
        return [_insert(b, (float_op if is_float(x.type) else int_op)(state[0], x))]

    return step


def _log_add_exp(b: Builder, state: Sequence[SSAValue], x: SSAValue, k: SSAValue) -> list[SSAValue]:
    """``log(exp(acc) + exp(x))`` as torch computes it: ``hi + log1p(exp(lo - hi))``
    (stable: the exponent is at most 0), and ``x`` itself when both are the same
    infinity (``inf - inf`` would be NaN); a NaN propagates."""
    (acc,) = state
    lo, hi = _insert(b, arith.MinimumfOp(acc, x)), _insert(b, arith.MaximumfOp(acc, x))
    apart = _insert(b, arith.CmpfOp(lo, hi, "une"))
    infinity = _insert(b, arith.ConstantOp(FloatAttr(float("inf"), x.type)))
    finite = _insert(b, arith.CmpfOp(_insert(b, math.AbsFOp(lo)), infinity, "one"))
    gap = _insert(b, math.ExpOp(_insert(b, arith.SubfOp(lo, hi))))
    combined = _insert(b, arith.AddfOp(hi, _insert(b, math.Log1pOp(gap))))
    return [_insert(b, arith.SelectOp(_insert(b, arith.OrIOp(apart, finite)), combined, x))]


def _arg_extreme(float_predicate: str, int_predicate: str) -> Step:
    """State (position, extreme): ``x`` is taken when it is NaN or, the extreme not being
    NaN, at least as large (``oge``) / small (``ole``) as it (torch's rule)."""

    def step(b: Builder, state: Sequence[SSAValue], x: SSAValue, k: SSAValue) -> list[SSAValue]:
        position, extreme = state
        if is_float(x.type):
            is_nan = _insert(b, arith.CmpfOp(x, x, "uno"))
            take = _insert(b, arith.OrIOp(is_nan, _insert(b, arith.CmpfOp(x, extreme, float_predicate))))
        else:
            take = _insert(b, arith.CmpiOp(x, extreme, int_predicate))
        here = _insert(b, arith.IndexCastOp(k, IntegerType(64)))
        return [_insert(b, arith.SelectOp(take, here, position)), _insert(b, arith.SelectOp(take, x, extreme))]

    return step


def _from_start(extreme: Callable[[Attribute], float | int]) -> Callable[[Attribute], tuple[Literal, ...]]:
    """Position 0 and the value every element beats (so the first element is taken)."""
    return lambda t: (IntegerAttr(0, IntegerType(64)), scalar_literal(extreme(t), t))


#: te.scan's combiner -> how it runs
COMBINERS: dict[str, Combiner] = {
    "add": Combiner(lambda t: (scalar_literal(0, t),), _arith(arith.AddfOp, arith.AddiOp)),
    "mul": Combiner(lambda t: (scalar_literal(1, t),), _arith(arith.MulfOp, arith.MuliOp)),
    "logaddexp": Combiner(lambda t: (scalar_literal(float("-inf"), t),), _log_add_exp),
    "argmax": Combiner(_from_start(lowest_value), _arg_extreme("oge", "sge")),
    "argmin": Combiner(_from_start(highest_value), _arg_extreme("ole", "sle")),
}


def scan_tag(op: te.ScanOp) -> str:
    """The kernel tag of ``op``: its ``tag`` attribute (the graph op's name), else ``scan``."""
    tag = op.attributes.get("tag")
    return tag.data if isinstance(tag, StringAttr) else TAG


def scan_kernel(op: te.ScanOp, name: str) -> func.FuncOp:
    """The kernel ``name(input, out)`` of ``op`` (module docstring)."""
    combiner = COMBINERS[op.combiner.data]
    arg_types = [buffer_type(op.input.type), buffer_type(op.result.type)]
    entry = Block(arg_types=arg_types)
    x, out = entry.args
    b = Builder(InsertPoint.at_end(entry))
    nest = line_nest(b, x, op.axis.value.data)
    inner = nest.inner
    state = []
    for value in combiner.init(op.input.type.element_type):
        acc = inner.insert(loop.AllocOp(MemRefType(value.type, []), scope="local")).result
        inner.insert(loop.StoreOp(inner.insert(arith.ConstantOp(value)).result, acc, []))
        state.append(acc)
    (k,), body = emit_loop_nest(inner, [nest.size], "scan", role="scan")
    element = body.insert(loop.LoadOp(x, nest.at(k))).result
    new = combiner.step(body, [body.insert(loop.LoadOp(acc, [])).result for acc in state], element, k)
    for value, acc in zip(new, state):
        body.insert(loop.StoreOp(value, acc, []))
    body.insert(loop.StoreOp(new[0], out, nest.at(k)))
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (arg_types, []), Region(entry))
    loop.set_kernel_tag(kernel, scan_tag(op))
    return kernel


@kernel_rule(te.ScanOp)
def scan(host: KernelHost, op: te.ScanOp, target: SSAValue) -> None:
    """One kernel scanning ``op``'s input into ``target``, line by line."""
    host.call(scan_kernel(op, host.kernel_name(scan_tag(op))), [host.buffer(v) for v in op.inputs] + [target])


__all__ = ["COMBINERS", "TAG", "Combiner", "scan_kernel", "scan_tag"]
