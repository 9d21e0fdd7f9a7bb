"""``nn.LSTM``, ``nn.GRU``, ``nn.RNN`` (``aten.lstm/gru/rnn_tanh/rnn_relu.input``, kept whole by
the importer's ``KEEP_WHOLE``): each layer and direction one ``graph.rnn``, a loop over time
with the cell inside, instead of Core ATen's decomposition, which unrolls the cell into a
few kernels per step (a 16-step LSTM built in seconds; 100 steps in minutes).

For each layer and direction: the input projections of all steps as one ``graph.dense``
(``x W_ih^T + b_ih``), then ``graph.rnn`` with ``W_hh^T``, ``b_hh`` and the initial state;
the output sequence and the final states are slices of its result. Multi-layer,
bidirectional, ``batch_first``, without biases, with ``proj_size`` (LSTM), given or zero
initial states, symbolic sequence lengths and batch sizes. Dropout between layers runs
only in training: a model exported in ``train()`` with ``dropout > 0`` is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from ....dialects.graph.recurrent import CELLS
from ....dialects.graph.types import numpy_dtype, shape_of
from ..context import ImportContext
from ..registry import converter


@converter("aten.lstm.input")
def lstm(ctx: ImportContext, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n, c_n)``; ``hx`` is ``[h_0, c_0]``."""
    return recurrent_layers(ctx, "lstm", x, list(hx), params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


@converter("aten.gru.input")
def gru(ctx: ImportContext, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``(output, h_n)``."""
    return recurrent_layers(ctx, "gru", x, [hx], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


@converter("aten.rnn_tanh.input")
def rnn_tanh(ctx: ImportContext, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return recurrent_layers(ctx, "tanh", x, [hx], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


@converter("aten.rnn_relu.input")
def rnn_relu(ctx: ImportContext, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return recurrent_layers(ctx, "relu", x, [hx], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def recurrent_layers(
    ctx: ImportContext,
    cell: str,
    x: SSAValue,
    hx: list[SSAValue],
    params: Sequence[SSAValue],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> tuple[SSAValue, ...]:
    """torch's stacked recurrent layers: the output sequence and the final states
    (``(layers * directions, batch, size)`` each)."""
    g = ctx.b
    if train and dropout and num_layers > 1:
        raise NotImplementedError(
            f"a {num_layers}-layer recurrent network with dropout={dropout} in training mode: export the model in eval()"
        )
    if len(shape_of(x.type)) != 3:
        raise NotImplementedError(f"the input must be 3-d (torch's module batches an unbatched one), got {shape_of(x.type)}")
    if batch_first:
        x = g.transpose(x, [1, 0, 2])
    directions = 2 if bidirectional else 1
    per_layer = len(params) // (num_layers * directions)
    expected = 2 + 2 * bool(has_biases)
    projected = cell == "lstm" and per_layer == expected + 1
    if per_layer not in (expected, expected + projected):
        raise NotImplementedError(f"{len(params)} weights for {num_layers} layers x {directions} directions")
    finals: list[list[SSAValue]] = [[] for _ in hx]
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            weights = list(params[(layer * directions + d) * per_layer :][:per_layer])
            initial = [_layer_state(ctx, state, layer * directions + d) for state in hx]
            y, states = _direction(ctx, cell, x, weights, has_biases, projected, initial, reverse=d == 1)
            outputs.append(y)
            for final, state in zip(finals, states):
                final.append(state)
        x = outputs[0] if directions == 1 else g.concat(outputs, 2)
    y = g.transpose(x, [1, 0, 2]) if batch_first else x
    stacked = [g.concat([g.reshape(s, (1, *shape_of(s.type))) for s in states], 0) for states in finals]
    return (y, *stacked)


def _layer_state(ctx: ImportContext, state: SSAValue, k: int) -> SSAValue:
    """``state[k]``: one layer and direction's initial state ``(batch, size)``."""
    return ctx.b.reshape(ctx.b.slice(state, [k], [k + 1], [0]), shape_of(state.type)[1:])


def _direction(
    ctx: ImportContext,
    cell: str,
    x: SSAValue,
    weights: list[SSAValue],
    has_biases: bool,
    projected: bool,
    initial: list[SSAValue],
    reverse: bool,
) -> tuple[SSAValue, list[SSAValue]]:
    """One layer in one direction: its output sequence ``(T, B, P)`` and final states."""
    g = ctx.b
    w_ih, w_hh = weights[:2]
    b_ih, b_hh = weights[2:4] if has_biases else (None, None)
    width = shape_of(w_ih.type)[0]
    if b_hh is None:
        b_hh = ctx.constant(np.zeros(width, numpy_dtype(w_hh.type.element_type)))
    gates = g.dense(x, w_ih, b_ih)
    projection = g.transpose(weights[-1], [1, 0]) if projected else None
    state = initial[0] if len(initial) == 1 else g.concat(initial, 1)
    result = g.rnn(gates, g.transpose(w_hh, [1, 0]), b_hh, state, projection, cell=cell, reverse=reverse)
    output = shape_of(w_hh.type)[1]
    steps = shape_of(result.type)[0]
    y = g.slice(result, [0], [output], [2]) if CELLS[cell].has_cell_state else result
    last = [0, 1] if reverse else ([-1, None] if isinstance(steps, str) else [steps - 1, steps])
    final = g.reshape(g.slice(result, [last[0]], [last[1]], [0]), shape_of(result.type)[1:])
    sizes = [output, shape_of(result.type)[2] - output][: len(initial)]
    starts = [0, output]
    states = [final if len(initial) == 1 else g.slice(final, [start], [start + size], [1]) for start, size in zip(starts, sizes)]
    return y, states


__all__: list[str] = []
