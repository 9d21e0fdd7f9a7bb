"""What every graph op shares: result type inference, its verifier, reference semantics.

A graph op's result type is a function of its operand types and properties. Each op
says how in :meth:`GraphOp.infer_result_type`; the same function builds the op (the
constructor never takes a result type) and verifies parsed IR (a result type that
disagrees with inference is an error naming the op, expected and found).

Each op also carries its numpy reference semantics (:meth:`GraphOp.reference`, used by
the interpreter) and its fusion pattern kind (:attr:`GraphOp.PATTERN_KIND`), so one op
is defined in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    StringAttr,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from .types import DimNamesAttr, Shape, element_type, numpy_dtype, shape_of


class OpPatternKind(IntEnum):
    """How an op may fuse with its neighbours (TVM's OpPatternKind, same order)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class GraphOp(IRDLOperation):
    """Base of graph ops with one tensor result whose type is inferred."""

    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    #: True when the op only moves, selects or fills elements, never computing on their
    #: values: it runs on any element type as it is. The others compute float16 and
    #: bfloat16 in float32 and round their result (``passes/legalize_16bit_floats.py``),
    #: as torch does.
    MOVES_DATA: ClassVar[bool] = False

    def infer_result_type(self) -> TensorType:
        """The result type implied by the operands and properties (raise VerifyException if invalid)."""
        raise NotImplementedError(f"{self.name} does not infer its result type")

    def reference(self, *inputs: np.ndarray) -> np.ndarray:
        """Numpy reference semantics: the result for these input arrays."""
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def in_float32(self, operands: Sequence[SSAValue]) -> GraphOp:
        """A new (uninserted) op computing this one on ``operands``: its own operands
        with the 16-bit float ones cast to float32. Its result type is inferred again, so a
        16-bit float result becomes float32 (``passes/legalize_16bit_floats.py``). Ops whose element
        type is a property override this."""
        new = self.clone()
        for k, value in enumerate(operands):
            new.operands[k] = value
        # Safe: the clone is not in a block yet and its result has no uses.
        new.results[0]._type = new.infer_result_type()  # pyright: ignore[reportPrivateUsage]
        return new

    # -- construction -------------------------------------------------------------

    def _build(
        self,
        operands: Sequence[SSAValue | Operation | Sequence[SSAValue | Operation]],
        properties: Mapping[str, Attribute | None] | None = None,
        attributes: Mapping[str, Attribute] | None = None,
    ) -> None:
        """Initialise with these operands and properties; the result type is inferred."""
        placeholder = TensorType(i64, [])
        super().__init__(
            operands=operands,
            properties=dict(properties or {}),
            attributes=dict(attributes or {}),
            result_types=[placeholder],
        )
        try:
            inferred = self.infer_result_type()
        except VerifyException as e:
            # a failed op is never inserted: its operands must not keep it as a user
            self.drop_all_references()
            raise VerifyException(f"{self.name}: {e}") from None
        # Safe: the op was just created and its result has no uses yet.
        self.results[0]._type = inferred  # pyright: ignore[reportPrivateUsage]

    # -- verification ---------------------------------------------------------------

    def verify_(self) -> None:
        try:
            # Operand types must be graph tensor types (named symbolic dims, a supported
            # element type): ops whose inference never looks at a shape would pass them on.
            for operand in self.operands:
                shape_of(operand.type)
                numpy_dtype(element_type(operand.type))
            expected = self.infer_result_type()
        except VerifyException as e:
            raise VerifyException(f"{self.name}: {e}") from None
        found = self.results[0].type
        if found != expected:
            raise VerifyException(
                f"{self.name}: result type {found} does not match the inferred type {expected}"
            )


# ---------------------------------------------------------------------------
# helpers for op definitions


def operand_shape(value: SSAValue) -> Shape:
    return shape_of(value.type)


def operand_element(value: SSAValue) -> Attribute:
    return element_type(value.type)


def ints_attr(values: Sequence[int]) -> DenseArrayBase:
    """An ``array<i64: ...>`` property from Python ints."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def ints(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def expect_rank(what: str, shape: Shape, *ranks: int) -> None:
    if len(shape) not in ranks:
        allowed = " or ".join(str(r) for r in ranks)
        raise VerifyException(f"{what} must have rank {allowed}, got shape {shape}")


def expect_same_element(what: str, *types: Attribute) -> Attribute:
    elements = sorted({str(element_type(t)): element_type(t) for t in types}.items())
    if len(elements) != 1:
        raise VerifyException(f"{what} must have one element type, got " + ", ".join(n for n, _ in elements))
    return elements[0][1]


# ---------------------------------------------------------------------------
# target shapes with symbolic dims, as properties: shape = array<i64: -1, 12>, dims = #graph.dims<n, _>

#: how a symbolic dim is stored in a ``shape`` property (its name is in ``dims``)
SYMBOLIC_DIM = -1


def shape_props(shape: Sequence[int | str]) -> dict[str, Attribute | None]:
    """``shape`` (and ``dims`` when a dim is a symbol) properties for a target shape."""
    stored = [SYMBOLIC_DIM if isinstance(d, str) else int(d) for d in shape]
    if not any(isinstance(d, str) for d in shape):
        return {"shape": ints_attr(stored), "dims": None}
    names = ArrayAttr([StringAttr(d if isinstance(d, str) else "") for d in shape])
    return {"shape": ints_attr(stored), "dims": DimNamesAttr(names)}


def target_shape(shape_attr: DenseArrayBase, dims_attr: DimNamesAttr | None) -> Shape:
    """The target shape as ints and symbol names, checking the -1 / dims pairing."""
    shape = ints(shape_attr)
    names = [n.data for n in dims_attr.names.data] if dims_attr is not None else [""] * len(shape)
    if len(names) != len(shape):
        raise VerifyException(
            f"dims names {len(names)} dims but shape has {len(shape)} ({list(shape)})"
        )
    result: list[int | str] = []
    for i, (d, name) in enumerate(zip(shape, names)):
        if d == SYMBOLIC_DIM:
            if not name:
                raise VerifyException(
                    f"shape[{i}] is -1 (a symbolic dim) but dims gives it no name; "
                    f"-1 is not inferred in stored IR, write the size"
                )
            result.append(name)
        elif d < 0:
            raise VerifyException(f"shape[{i}] = {d} is negative (shape {list(shape)})")
        else:
            if name:
                raise VerifyException(
                    f"dims names shape[{i}] '{name}' but the shape gives it the static size {d} "
                    "(symbolic dims are -1 in shape)"
                )
            result.append(d)
    return tuple(result)
