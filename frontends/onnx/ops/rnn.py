"""Recurrent layers: RNN, GRU, LSTM (forward, reverse, bidirectional; sequence lengths,
clipping, every activation ONNX names), unrolled over the static sequence length.

The input projections of all time steps are one matrix product; each step adds the
recurrent product of the previous hidden state. A batch entry past its sequence length
keeps its state and outputs zeros.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxImportError, OnnxNode, refuse
from ..registry import converter
from .activations import _softplus

Activation = Callable[[SSAValue], SSAValue]


def activation(ctx: OnnxContext, name: str, alpha: float | None, beta: float | None) -> Activation:
    """ONNX's recurrent activation functions by name (with their alpha/beta)."""
    g = ctx.b

    def s(v: float, like: SSAValue) -> SSAValue:
        return ctx.scalar(v, like)

    table: dict[str, Activation] = {
        "Relu": g.relu,
        "Tanh": g.tanh,
        "Sigmoid": g.sigmoid,
        "Affine": lambda x: g.add(g.mul(x, s(alpha if alpha is not None else 1.0, x)), s(beta or 0.0, x)),
        "LeakyRelu": lambda x: g.where(g.compare(x, s(0, x), "lt"), g.mul(x, s(alpha if alpha is not None else 0.01, x)), x),
        "ThresholdedRelu": lambda x: g.where(g.compare(x, s(alpha if alpha is not None else 1.0, x), "gt"), x, s(0, x)),
        "ScaledTanh": lambda x: g.mul(g.tanh(g.mul(x, s(beta if beta is not None else 1.0, x))), s(alpha if alpha is not None else 1.0, x)),
        "HardSigmoid": lambda x: g.min(g.max(g.add(g.mul(x, s(alpha if alpha is not None else 0.2, x)), s(beta if beta is not None else 0.5, x)), s(0, x)), s(1, x)),
        "Elu": lambda x: g.where(g.compare(x, s(0, x), "lt"), g.mul(g.expm1(x), s(alpha if alpha is not None else 1.0, x)), x),
        "Softsign": lambda x: g.div(x, g.add(g.abs(x), s(1, x))),
        "Softplus": lambda x: _softplus(ctx, x),
    }
    key = next((k for k in table if k.lower() == name.lower()), None)
    if key is None:
        raise refuse(f"activation '{name}'")
    return table[key]


class _Cell:
    """What the three layers share: inputs in (seq, batch, input) order, attributes,
    per-direction weights, and the step loop."""

    def __init__(self, ctx: OnnxContext, node: OnnxNode, gates: int, default_activations: list[str]):
        g = ctx.b
        self.ctx, self.node, self.gates = ctx, node, gates
        x = node.input(0)
        self.layout = node.attr("layout", 0)
        if self.layout:
            x = g.transpose(x, [1, 0, 2])
        self.x = x
        seq, batch, _ = ctx.shape(x)
        if not isinstance(seq, int):
            raise refuse(f"a symbolic sequence length ({seq})")
        self.seq, self.batch = seq, batch
        self.hidden = node.attr("hidden_size") or ctx.shape(node.input(2))[2]
        direction = node.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise OnnxImportError(f"node '{node.name}' ({node.op_type}): direction '{direction}'")
        self.directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        self.clip = node.attr("clip")
        names = node.attr("activations") or default_activations * len(self.directions)
        alphas, betas = node.attr("activation_alpha", []), node.attr("activation_beta", [])
        per = len(default_activations)
        self.activations = [
            [
                activation(ctx, names[d * per + k], *(v[d * per + k] if d * per + k < len(v) else None for v in (alphas, betas)))
                for k in range(per)
            ]
            for d in range(len(self.directions))
        ]
        lengths = node.input(4)
        self.lengths = None if lengths is None else ctx.cast(lengths, np.int64)

    def direction_input(self, k: int, d: int) -> SSAValue | None:
        """Input ``k``'s slice for direction ``d`` (its leading num_directions axis dropped)."""
        value = self.node.input(k)
        if value is None:
            return None
        g = self.ctx.b
        if k in (5, 6) and self.layout:  # initial states are (batch, num_directions, hidden) with layout 1
            value = g.transpose(value, [1, 0, 2])
        part = g.slice(value, [d], [d + 1], [0])
        return g.reshape(part, self.ctx.shape(part)[1:])

    def projections(self, d: int) -> list[SSAValue]:
        """Per time step: x_t W^T + Wb + Rb, (batch, gates*hidden)."""
        g, ctx = self.ctx.b, self.ctx
        w, r_bias = self.direction_input(1, d), None
        seq, batch = self.seq, self.batch
        rows = g.reshape(self.x, (seq * batch, ctx.shape(self.x)[2]))
        bias = self.direction_input(3, d)
        size = self.gates * self.hidden
        if bias is not None:
            r_bias = g.slice(bias, [size], [2 * size])
            bias = g.add(g.slice(bias, [0], [size]), r_bias)
        projected = g.reshape(g.dense(rows, w, bias), (seq, batch, size))
        return [g.reshape(g.slice(projected, [t], [t + 1], [0]), (batch, size)) for t in range(seq)]

    def gate(self, value: SSAValue, k: int) -> SSAValue:
        return self.ctx.b.slice(value, [k * self.hidden], [(k + 1) * self.hidden], [1])

    def clipped(self, value: SSAValue) -> SSAValue:
        if self.clip is None:
            return value
        g = self.ctx.b
        return g.min(g.max(value, self.ctx.scalar(-self.clip, value)), self.ctx.scalar(self.clip, value))

    def initial(self, k: int, d: int, like: SSAValue) -> SSAValue:
        given = self.direction_input(k, d)
        if given is not None:
            return given
        return self.ctx.constant(np.zeros((self.batch, self.hidden), self.ctx.dtype(like)))

    def active(self, t: int, like: SSAValue) -> SSAValue | None:
        """Booleans (batch, 1): the batch entries whose sequence reaches step ``t``."""
        if self.lengths is None:
            return None
        g = self.ctx.b
        return g.reshape(g.compare(self.ctx.scalar(t, self.lengths), self.lengths, "lt"), (self.batch, 1))

    def run(self, step: Callable[..., tuple[SSAValue, ...]], n_states: int) -> tuple[SSAValue, ...]:
        """Run ``step(d, projection, *states) -> new states`` (hidden first) over time in
        each direction; returns Y and the final states, stacked over directions."""
        g, ctx = self.ctx.b, self.ctx
        outputs, finals = [], [[] for _ in range(n_states)]
        for d, direction in enumerate(self.directions):
            inputs = self.projections(d)
            states = [self.initial(5 + k, d, inputs[0]) for k in range(n_states)]
            ys: list[SSAValue | None] = [None] * self.seq
            order = range(self.seq) if direction == "forward" else reversed(range(self.seq))
            for t in order:
                new = step(d, inputs[t], *states)
                active = self.active(t, new[0])
                if active is not None:
                    ys[t] = g.where(active, new[0], ctx.scalar(0, new[0]))
                    new = tuple(g.where(active, n, s) for n, s in zip(new, states))
                else:
                    ys[t] = new[0]
                states = list(new)
            outputs.append(g.concat([g.reshape(y, (1, 1, self.batch, self.hidden)) for y in ys], 0) if self.seq > 1 else g.reshape(ys[0], (1, 1, self.batch, self.hidden)))
            for k in range(n_states):
                finals[k].append(g.reshape(states[k], (1, self.batch, self.hidden)))
        y = outputs[0] if len(outputs) == 1 else g.concat(outputs, 1)
        final = [f[0] if len(f) == 1 else g.concat(f, 0) for f in finals]
        if self.layout:
            y = g.transpose(y, [2, 0, 1, 3])
            final = [g.transpose(f, [1, 0, 2]) for f in final]
        return (y, *final)


@converter("RNN", since=7)
def rnn(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    cell = _Cell(ctx, node, 1, ["Tanh"])
    g = ctx.b

    def step(d: int, projection: SSAValue, h: SSAValue) -> tuple[SSAValue]:
        r = cell.direction_input(2, d)
        (f,) = cell.activations[d]
        return (f(cell.clipped(g.add(projection, g.dense(h, r)))),)

    return cell.run(step, 1)


@converter("GRU", since=7)
def gru(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    cell = _Cell(ctx, node, 3, ["Sigmoid", "Tanh"])
    g = ctx.b
    linear_before_reset = node.attr("linear_before_reset", 0)

    def step(d: int, projection: SSAValue, h: SSAValue) -> tuple[SSAValue]:
        f, act = cell.activations[d]
        r_weights = cell.direction_input(2, d)  # (3*hidden, hidden): z, r, h
        bias = cell.direction_input(3, d)
        recurrent = g.dense(h, g.slice(r_weights, [0], [2 * cell.hidden]))
        z = f(cell.clipped(g.add(cell.gate(projection, 0), cell.gate(recurrent, 0))))
        r = f(cell.clipped(g.add(cell.gate(projection, 1), cell.gate(recurrent, 1))))
        rh_weights = g.slice(r_weights, [2 * cell.hidden], [3 * cell.hidden])
        rh_bias = g.slice(bias, [5 * cell.hidden], [6 * cell.hidden]) if bias is not None else None
        xh = cell.gate(projection, 2)
        if rh_bias is not None:
            xh = g.sub(xh, rh_bias)  # the projection holds Wb + Rb; Rbh goes where the mode says
        if linear_before_reset:
            candidate = g.add(xh, g.mul(r, g.dense(h, rh_weights, rh_bias)))
        else:
            candidate = g.add(xh, g.dense(g.mul(r, h), rh_weights, rh_bias))
        candidate = act(cell.clipped(candidate))
        one = ctx.scalar(1, z)
        return (g.add(g.mul(g.sub(one, z), candidate), g.mul(z, h)),)

    return cell.run(step, 1)


@converter("LSTM", since=7)
def lstm(ctx: OnnxContext, node: OnnxNode) -> tuple[SSAValue, ...]:
    cell = _Cell(ctx, node, 4, ["Sigmoid", "Tanh", "Tanh"])
    g = ctx.b
    input_forget = node.attr("input_forget", 0)

    def peephole(d: int, k: int) -> SSAValue | None:
        p = cell.direction_input(7, d)
        return None if p is None else g.slice(p, [k * cell.hidden], [(k + 1) * cell.hidden])

    def with_peephole(value: SSAValue, d: int, k: int, c: SSAValue) -> SSAValue:
        p = peephole(d, k)
        return value if p is None else g.add(value, g.mul(p, c))

    def step(d: int, projection: SSAValue, h: SSAValue, c: SSAValue) -> tuple[SSAValue, SSAValue]:
        f, act, out_act = cell.activations[d]
        gates = g.add(projection, g.dense(h, cell.direction_input(2, d)))  # i, o, f, c
        i = f(cell.clipped(with_peephole(cell.gate(gates, 0), d, 0, c)))
        if input_forget:
            forget = g.sub(ctx.scalar(1, i), i)
        else:
            forget = f(cell.clipped(with_peephole(cell.gate(gates, 2), d, 2, c)))
        candidate = act(cell.clipped(cell.gate(gates, 3)))
        c_new = g.add(g.mul(forget, c), g.mul(i, candidate))
        o = f(cell.clipped(with_peephole(cell.gate(gates, 1), d, 1, c_new)))
        return g.mul(o, out_act(c_new)), c_new

    return cell.run(step, 2)
