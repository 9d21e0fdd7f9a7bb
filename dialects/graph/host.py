"""Ops the host runs between compiled functions: sizes read from data, run-time checks.

A compiled function allocates its outputs from the sizes its inputs give, so a size
that depends on the *values* of a tensor (how many elements of a mask are true, the
rows ``nonzero`` finds) must be read on the host, between functions, as the VM reads
the predicate of ``graph.if``. A model with ``graph.data_size`` runs on the VM
(``tensorkiln.driver.vm``).

- ``graph.data_size``: its operand is a 0-d integer tensor (a count the model computed);
  its result is a *size carrier*: a tensor with no elements whose first dim is a new
  symbol (``u0``) equal to that count. Ops after it take their ``u0`` dims from the
  carrier, as they take ``n`` from an input. The count must lie in ``[lower, upper]``
  (torch.export's range of the symbol); a count outside is a run-time error::

      %k = graph.data_size %count {lower = 0 : i64, upper = 12 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>

- ``graph.check``: raise ``message`` when the predicate (one element) is false: the
  run-time assertions of a model (torch's ``_assert_scalar``, indices in range), which a
  kernel cannot raise. ``error`` names the exception (``RuntimeError``, the default, or
  ``IndexError``: ``runtime/host_checks.py``). A straight-line function computes the
  predicate as one more output that its caller checks (``passes/checks_to_outputs.py``);
  the VM checks it after the function it is computed in::

      graph.check %ok {message = "image features and image tokens do not match"} : tensor<i1>
      graph.check %in {message = "index out of range", error = "IndexError"} : tensor<i1>

Both have side effects (an error), so no pass removes them as dead code.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i8, i64
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from ...runtime.host_checks import CHECK_ERRORS, check, checked_size, size_carrier
from .types import numpy_dtype, shape_of, tensor_type


def carrier_type(symbol: str) -> TensorType:
    """The type of a size carrier for ``symbol``: ``tensor<?x0xi8, #graph.dims<symbol, _>>``."""
    return tensor_type((symbol, 0), i8)


@irdl_op_definition
class DataSizeOp(IRDLOperation):
    """``graph.data_size``: a size read from a 0-d integer tensor (module docstring)."""

    name = "graph.data_size"
    count = operand_def(TensorType)
    carrier = result_def(TensorType)
    lower = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))
    upper = opt_prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$count attr-dict `:` type($count) `->` type($carrier)"

    def __init__(self, count: SSAValue, symbol: str, lower: int = 0, upper: int | None = None):
        props = {"lower": IntegerAttr(lower, i64)}
        if upper is not None:
            props["upper"] = IntegerAttr(upper, i64)
        super().__init__(operands=[count], result_types=[carrier_type(symbol)], properties=props)

    @property
    def symbol(self) -> str:
        """The symbol this op's size binds (``u0``)."""
        return str(shape_of(self.carrier.type)[0])

    @property
    def bounds(self) -> tuple[int, int | None]:
        return self.lower.value.data, None if self.upper is None else self.upper.value.data

    def verify_(self) -> None:
        count = self.count.type
        if not isinstance(count, TensorType) or shape_of(count) != () or not np.issubdtype(
            numpy_dtype(count.element_type), np.integer
        ):
            raise VerifyException(f"graph.data_size: the count must be a 0-d integer tensor, got {count}")
        shape = shape_of(self.carrier.type)
        if len(shape) != 2 or not isinstance(shape[0], str) or shape[1] != 0:
            raise VerifyException(f"graph.data_size: the result must be a size carrier (?x0xi8 with a symbol), got {self.carrier.type}")
        lower, upper = self.bounds
        if lower < 0 or (upper is not None and upper < lower):
            raise VerifyException(f"graph.data_size: bad range [{lower}, {upper}]")

    def reference(self, count: np.ndarray) -> np.ndarray:
        return size_carrier(checked_size(count, self.symbol, *self.bounds))


@irdl_op_definition
class CheckOp(IRDLOperation):
    """``graph.check``: a run-time assertion (module docstring)."""

    name = "graph.check"
    pred = operand_def(TensorType)
    message = prop_def(StringAttr)
    error = prop_def(StringAttr, default_value=StringAttr("RuntimeError"))

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$pred attr-dict `:` type($pred)"

    def __init__(self, pred: SSAValue, message: str, error: str = "RuntimeError"):
        super().__init__(operands=[pred], properties={"message": StringAttr(message), "error": StringAttr(error)})

    def verify_(self) -> None:
        shape = shape_of(self.pred.type)
        if any(isinstance(d, str) or d != 1 for d in shape):
            raise VerifyException(f"graph.check: the predicate must have one element, got {self.pred.type}")
        if self.error.data not in CHECK_ERRORS:
            raise VerifyException(f"graph.check: error must be one of {', '.join(CHECK_ERRORS)}, got '{self.error.data}'")

    def reference(self, pred: np.ndarray) -> tuple[()]:
        check(pred, self.message.data, self.error.data)
        return ()


#: ops the host runs
HOST_OPS = (DataSizeOp, CheckOp)


def data_size_symbols(function) -> set[str]:
    """The symbols the ``graph.data_size`` ops of ``function`` bind."""
    return {op.symbol for op in function.walk() if isinstance(op, DataSizeOp)}


__all__ = [
    "HOST_OPS",
    "CheckOp",
    "DataSizeOp",
    "carrier_type",
    "data_size_symbols",
]
