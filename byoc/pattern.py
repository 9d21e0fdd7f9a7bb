"""A small declarative pattern language over graph ops (TVM's dataflow patterns, in little).

A pattern describes a value by how it is computed; matching starts at a root op and
walks its operands::

    from tensorkiln.byoc.pattern import is_op, wildcard, is_constant

    dense = is_op("graph.dense", wildcard("x"), is_constant("w"))        # dense without bias
    act = is_op("graph.relu", dense) | is_op("graph.sigmoid", dense)     # alternatives
    f32 = act.has_dtype("float32")                                        # a predicate

- :func:`is_op` matches an op by its graph op class or name (``"graph.dense"``, or
  ``"dense"``); with operand patterns, the op must have exactly that many operands and
  each must match; with none, any operands match (they become inputs).
- :func:`wildcard` matches any value (an input of the match).
- :func:`is_constant` matches a ``graph.constant``.
- ``a | b`` tries ``a``, then ``b``.
- ``.has_dtype(...)``, ``.has_shape(...)``, ``.has_rank(n)``, ``.where(predicate, why)``
  restrict what the pattern matched.
- ``.named("act")`` makes the matched value findable in :attr:`Match.bindings`.

A successful :meth:`Pattern.match` gives a :class:`Match`: the matched ops (the root
first) and the input values in pattern order.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from ..dialects.graph import ConstantOp
from ..dialects.graph.types import element_type, numpy_dtype, shape_of


@dataclass
class Match:
    """What a pattern matched: ``ops`` (graph ops, the root first), ``inputs`` (values
    from outside the match, in pattern order) and ``bindings`` (``named`` patterns)."""

    ops: list[Operation] = field(default_factory=list)
    inputs: list[SSAValue] = field(default_factory=list)
    bindings: dict[str, SSAValue] = field(default_factory=dict)

    @property
    def root(self) -> Operation:
        return self.ops[0]

    def add_input(self, value: SSAValue) -> None:
        if value not in self.inputs:
            self.inputs.append(value)


class Pattern:
    """Base of all patterns: ``match(value)`` -> :class:`Match` or None."""

    name: str | None = None

    def match(self, value: SSAValue) -> Match | None:
        """Match ``value`` (usually a root op's result)."""
        found = Match()
        return found if self._match(value, found) else None

    def match_op(self, op: Operation) -> Match | None:
        """Match the value ``op`` computes (its one result)."""
        if len(op.results) != 1:
            return None
        return self.match(op.results[0])

    def _match(self, value: SSAValue, m: Match) -> bool:
        if not self._match_here(value, m):
            return False
        if self.name is not None:
            if self.name in m.bindings and m.bindings[self.name] is not value:
                return False
            m.bindings[self.name] = value
        return True

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        raise NotImplementedError

    # -- combinators -----------------------------------------------------------------

    def __or__(self, other: Pattern) -> Pattern:
        return AltPattern((self, other))

    def named(self, name: str) -> Pattern:
        """This pattern, binding what it matches to ``name`` in :attr:`Match.bindings`."""
        named = copy.copy(self)
        named.name = name
        return named

    def where(self, predicate: Callable[[SSAValue], bool], why: str = "predicate") -> Pattern:
        """This pattern, where ``predicate(value)`` also holds."""
        return PredicatePattern(self, predicate, why)

    def has_dtype(self, *dtypes: str | type | np.dtype) -> Pattern:
        """This pattern, where the value's element type is one of ``dtypes`` (numpy names)."""
        wanted = {np.dtype(d) for d in dtypes}
        return self.where(lambda v: numpy_dtype(element_type(v.type)) in wanted, f"dtype in {sorted(map(str, wanted))}")

    def has_rank(self, *ranks: int) -> Pattern:
        """This pattern, where the value's rank is one of ``ranks``."""
        return self.where(lambda v: len(shape_of(v.type)) in ranks, f"rank in {ranks}")

    def has_shape(self, shape: Sequence[int | str | None]) -> Pattern:
        """This pattern, where the value's shape is ``shape`` (None: any size in that dim)."""
        want = tuple(shape)

        def same(v: SSAValue) -> bool:
            got = shape_of(v.type)
            return len(got) == len(want) and all(w is None or w == g for w, g in zip(want, got))

        return self.where(same, f"shape {want}")


class WildcardPattern(Pattern):
    def __init__(self, name: str | None = None):
        self.name = name

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        m.add_input(value)
        return True

    def __repr__(self) -> str:
        return f"wildcard({self.name!r})" if self.name else "wildcard()"


class ConstantPattern(Pattern):
    def __init__(self, name: str | None = None):
        self.name = name

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        if not isinstance(value.owner, ConstantOp):
            return False
        m.add_input(value)
        return True

    def __repr__(self) -> str:
        return "is_constant()"


class OpPattern(Pattern):
    def __init__(self, op: str | type, operands: Sequence[Pattern] | None):
        if isinstance(op, str):
            self.op_name = op if "." in op else f"graph.{op}"
            self.op_class = None
        elif isinstance(op, type) and hasattr(op, "name"):
            self.op_class, self.op_name = op, op.name
        else:
            raise TypeError(f"is_op: expected a graph op class or name, got {op!r}")
        for k, p in enumerate(operands or ()):
            if not isinstance(p, Pattern):
                raise TypeError(f"is_op({self.op_name!r}): operand #{k} is {p!r}, not a pattern")
        self.operands = tuple(operands) if operands is not None else None
        self.name = None

    def _is_op(self, op: Operation) -> bool:
        return isinstance(op, self.op_class) if self.op_class is not None else op.name == self.op_name

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        op = value.owner
        if not isinstance(op, Operation) or not self._is_op(op) or len(op.results) != 1:
            return False
        if op in m.ops:  # the same op reached twice (a diamond): one match of it
            return True
        m.ops.append(op)
        if self.operands is None:
            for v in op.operands:
                m.add_input(v)
            return True
        if len(op.operands) != len(self.operands):
            return False
        return all(p._match(v, m) for p, v in zip(self.operands, op.operands))

    def __repr__(self) -> str:
        inner = "" if self.operands is None else ", " + ", ".join(map(repr, self.operands))
        return f"is_op({self.op_name!r}{inner})"


class AltPattern(Pattern):
    def __init__(self, options: Sequence[Pattern]):
        self.options = tuple(options)
        self.name = None

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        for option in self.options:
            trial = Match(list(m.ops), list(m.inputs), dict(m.bindings))
            if option._match(value, trial):
                m.ops[:], m.inputs[:] = trial.ops, trial.inputs
                m.bindings.clear()
                m.bindings.update(trial.bindings)
                return True
        return False

    def __or__(self, other: Pattern) -> Pattern:
        return AltPattern((*self.options, other))

    def __repr__(self) -> str:
        return " | ".join(map(repr, self.options))


class PredicatePattern(Pattern):
    def __init__(self, inner: Pattern, predicate: Callable[[SSAValue], bool], why: str):
        self.inner, self.predicate, self.why = inner, predicate, why
        self.name = None

    def _match_here(self, value: SSAValue, m: Match) -> bool:
        return self.predicate(value) and self.inner._match(value, m)

    def __repr__(self) -> str:
        return f"{self.inner!r}.where({self.why})"


def is_op(op: str | type, *operands: Pattern) -> Pattern:
    """An op of this class or name (``"graph.dense"`` or ``"dense"``) whose operands match
    ``operands`` (any operands when none are given).

    Example: ``is_op("graph.relu", is_op("graph.dense", wildcard(), is_constant()))``"""
    return OpPattern(op, operands if operands else None)


def wildcard(name: str | None = None) -> Pattern:
    """Any value; it becomes an input of the match. Example: ``is_op("graph.add", wildcard(), wildcard())``"""
    return WildcardPattern(name)


def is_constant(name: str | None = None) -> Pattern:
    """A ``graph.constant``. Example: ``is_op("graph.dense", wildcard(), is_constant())``"""
    return ConstantPattern(name)


__all__ = ["Match", "Pattern", "is_constant", "is_op", "wildcard"]
