"""Recurrent layers kept as one loop over time: ``graph.rnn`` runs an LSTM, GRU or Elman
(tanh/relu) cell over a sequence, one direction (torch's ``nn.LSTM``/``nn.GRU``/``nn.RNN``,
ONNX's ``LSTM``/``GRU``/``RNN``; a bidirectional or multi-layer network is several ops).

The input's contribution to the gates does not depend on the recurrence, so frontends
compute it for every step at once, as one matrix product before the op (what cuDNN and
ONNX Runtime do): ``gates[t] = x[t] W_ih^T + b_ih``, shape ``(T, B, G*H)`` with ``G`` the
cell's gate count. The op then runs, for ``t`` in ``0..T-1`` (``T-1..0`` when ``reverse``),
with ``r = h @ weight + bias`` (``weight = W_hh^T``, ``(P, G*H)``) and the gates in torch's
order:

- ``lstm`` (i, f, g, o): ``c = sig(f) * c + sig(i) * tanh(g)``, ``h = sig(o) * tanh(c)``
  (each gate ``gates[t] + r``); with a ``projection`` (``W_hr^T``, ``(H, P)``: torch's
  ``proj_size``), ``h = (sig(o) * tanh(c)) @ projection``;
- ``gru`` (r, z, n): ``r = sig(x_r + r_r)``, ``z = sig(x_z + r_z)``,
  ``n = tanh(x_n + r * r_n)``, ``h = (1 - z) * n + z * h`` (torch's GRU, ONNX's
  ``linear_before_reset = 1``);
- ``tanh`` / ``relu``: ``h = act(gates[t] + r)``.

``initial`` is ``(B, P + C)``: the initial ``h`` (``P`` values: the hidden size, or the
projection's) then, for an LSTM, the initial ``c`` (``C = H`` values; ``C = 0`` for the
others). The result ``(T, B, P + C)`` holds the state after each step at that step's
position: ``result[..., :P]`` is the layer's output sequence; the final state is
``result[T - 1]`` (``result[0]`` when ``reverse``).

te-to-loop writes one kernel (``lowering/rnn_kernel.py``): the batch rows (independent
recurrences) outermost, in each a serial loop over time with the recurrent product and
the cell fused inside; its size does not depend on ``T``, which may be symbolic.

Example::

    %s = graph.rnn %gates, %w, %b, %init {cell = "lstm"} : tensor<16x1x256xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<1x128xf32> -> tensor<16x1x128xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import BoolAttr, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, expect_rank, expect_same_element, operand_shape
from .types import format_shape, is_float, tensor_type


@dataclass(frozen=True)
class Cell:
    """What a cell kind computes with: its gate count and whether it carries ``c``."""

    gates: int
    has_cell_state: bool = False


#: ``graph.rnn``'s ``cell`` -> its kind
CELLS: dict[str, Cell] = {"lstm": Cell(4, True), "gru": Cell(3), "tanh": Cell(1), "relu": Cell(1)}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


@irdl_op_definition
class RNNOp(GraphOp):
    """One direction of a recurrent layer over time (see the module docstring)."""

    name = "graph.rnn"
    gates = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    initial = operand_def(TensorType)
    projection = opt_operand_def(TensorType)
    result = result_def(TensorType)
    cell = prop_def(StringAttr)
    reverse = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$gates `,` $weight `,` $bias `,` $initial (`,` $projection^)? attr-dict `:` type($gates) `,` type($weight) "
        "`,` type($bias) `,` type($initial) (`,` type($projection)^)? `->` type($result)"
    )
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(
        self,
        gates: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation,
        initial: SSAValue | Operation,
        projection: SSAValue | Operation | None = None,
        *,
        cell: str,
        reverse: bool = False,
    ):
        self._build(
            [gates, weight, bias, initial, [projection] if projection is not None else []],
            {"cell": StringAttr(cell), "reverse": BoolAttr.from_bool(reverse)},
        )

    @property
    def kind(self) -> Cell:
        return CELLS[self.cell.data]

    @property
    def hidden_size(self) -> int:
        """``H``: the cell's width (each gate's)."""
        return operand_shape(self.gates)[2] // self.kind.gates  # (checked static by inference)

    @property
    def output_size(self) -> int:
        """``P``: the width of ``h`` (the projection's when there is one)."""
        return operand_shape(self.weight)[0]  # (checked static by inference)

    def infer_result_type(self) -> TensorType:
        cell = CELLS.get(self.cell.data)
        if cell is None:
            raise VerifyException(f"cell must be one of {', '.join(CELLS)}, got {self.cell.data!r}")
        g, w, bias, init = (operand_shape(v) for v in (self.gates, self.weight, self.bias, self.initial))
        expect_rank("gates", g, 3)
        expect_rank("weight", w, 2)
        expect_rank("initial", init, 2)
        width = g[2]
        if isinstance(width, str) or width % cell.gates or not width:
            raise VerifyException(
                f"gates (T, B, {cell.gates}*hidden) must have a static last dim, a positive multiple of {cell.gates} "
                f"for a '{self.cell.data}' cell, got {format_shape(g)}"
            )
        hidden = width // cell.gates
        if isinstance(w[0], str) or w[1] != width:
            raise VerifyException(f"weight must be (P, {width}) with P static, got {format_shape(w)}")
        out = w[0]
        if bias != (width,):
            raise VerifyException(f"bias must have shape ({width},), got {format_shape(bias)}")
        carried = cell.has_cell_state * hidden
        if init != (g[1], out + carried):
            raise VerifyException(
                f"initial must be (batch, {out}{f' + {carried}' if carried else ''}) = {format_shape((g[1], out + carried))}, "
                f"got {format_shape(init)}"
            )
        types = [v.type for v in (self.gates, self.weight, self.bias, self.initial)]
        if self.projection is not None:
            if self.cell.data != "lstm":
                raise VerifyException(f"a projection is for 'lstm' cells only, not '{self.cell.data}'")
            projection = operand_shape(self.projection)
            if projection != (hidden, out):
                raise VerifyException(f"projection must have shape ({hidden}, {out}), got {format_shape(projection)}")
            types.append(self.projection.type)
        elif out != hidden:
            raise VerifyException(f"weight's {out} rows must be the hidden size {hidden} (without a projection)")
        element = expect_same_element("operands", *types)
        if not is_float(element):
            raise VerifyException(f"operands must be floats, got {element}")
        return tensor_type((g[0], g[1], out + carried), element)

    def reference(
        self, gates: np.ndarray, weight: np.ndarray, bias: np.ndarray, initial: np.ndarray, projection: np.ndarray | None = None
    ) -> np.ndarray:
        cell, hidden, out = self.cell.data, self.hidden_size, self.output_size
        h, c = initial[:, :out], initial[:, out:]
        result = np.empty((gates.shape[0], gates.shape[1], initial.shape[1]), gates.dtype)
        steps = range(gates.shape[0])
        for t in reversed(steps) if self.reverse.value else steps:
            x, r = gates[t], h @ weight + bias
            part = [slice(k * hidden, (k + 1) * hidden) for k in range(self.kind.gates)]
            if cell == "lstm":
                i, f, o = (_sigmoid(x[:, p] + r[:, p]) for p in (part[0], part[1], part[3]))
                c = f * c + i * np.tanh(x[:, part[2]] + r[:, part[2]])
                h = o * np.tanh(c)
                h = h @ projection if projection is not None else h
            elif cell == "gru":
                reset, update = (_sigmoid(x[:, p] + r[:, p]) for p in part[:2])
                n = np.tanh(x[:, part[2]] + reset * r[:, part[2]])
                h = (1 - update) * n + update * h
            else:
                pre = x + r
                h = np.tanh(pre) if cell == "tanh" else np.maximum(pre, 0)
            result[t] = np.concatenate([h, c], axis=1)
        return result


__all__ = ["CELLS", "Cell", "RNNOp"]
