"""Recurrent layers kept as one loop over time: ``nn.LSTM``/``nn.GRU``/``nn.RNN`` import as
one ``graph.rnn`` per layer and direction (``frontends/torch/ops/recurrent.py``), lowered to
one kernel each (``lowering/rnn_kernel.py``). Compiled and interpreted results are compared
with torch eager on fresh inputs (odd sizes; one layer and two; bidirectional, batch first,
without biases, with proj_size, with and without initial states; several step counts; batch
sizes across the kernel's blocks and register tiles), symbolic sequence lengths and batch
sizes are compiled once and run at several sizes, and the kernel is the same for 4 steps and 150
(what the build costs does not grow with the sequence)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

torch = pytest.importorskip("torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects import loop  # noqa: E402
from tensorkiln.dialects.graph.recurrent import RNNOp  # noqa: E402
from tensorkiln.driver.cpu import lower_to_loops  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from tensorkiln.interpreter import interpret  # noqa: E402
from tensorkiln.lowering import rnn_kernel  # noqa: E402
from tensorkiln.schedule.strategies import apply_default_schedule  # noqa: E402
from tensorkiln.schedule.strategies import recurrent as rnn_strategy  # noqa: E402


def _flat(result) -> list[np.ndarray]:
    """torch's (output, h_n) / (output, (h_n, c_n)) as a list of arrays."""
    out, state = result
    states = state if isinstance(state, tuple) else (state,)
    return [t.detach().numpy() for t in (out, *states)]


def _inputs(model, steps: int, batch: int, with_state: bool, seed: int) -> tuple:
    gen = torch.Generator().manual_seed(seed)
    first = model.batch_first
    x = torch.randn((batch, steps, model.input_size) if first else (steps, batch, model.input_size), generator=gen)
    if not with_state:
        return (x,)
    layers = model.num_layers * (2 if model.bidirectional else 1)
    out = model.proj_size if getattr(model, "proj_size", 0) else model.hidden_size
    h = torch.randn(layers, batch, out, generator=gen)
    if isinstance(model, torch.nn.LSTM):
        return (x, (h, torch.randn(layers, batch, model.hidden_size, generator=gen)))
    return (x, h)


def _arrays(inputs: tuple) -> list[np.ndarray]:
    flat = []
    for a in inputs:
        flat += [t.numpy() for t in a] if isinstance(a, tuple) else [a.numpy()]
    return flat


CASES = {
    "lstm": lambda: torch.nn.LSTM(5, 7),
    "lstm-2-layers-bidirectional-batch-first": lambda: torch.nn.LSTM(6, 9, num_layers=2, bidirectional=True, batch_first=True),
    "lstm-proj-size": lambda: torch.nn.LSTM(5, 11, num_layers=2, proj_size=3),
    "gru-2-layers-bidirectional": lambda: torch.nn.GRU(5, 13, num_layers=2, bidirectional=True),
    "gru-no-bias": lambda: torch.nn.GRU(4, 6, bias=False),
    "rnn-tanh-bidirectional": lambda: torch.nn.RNN(5, 7, bidirectional=True),
    "rnn-relu-no-bias-batch-first": lambda: torch.nn.RNN(3, 10, nonlinearity="relu", bias=False, batch_first=True),
}


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
@pytest.mark.parametrize("case", list(CASES))
def test_layers_match_torch(case, with_state):
    torch.manual_seed(len(case))
    model = CASES[case]().eval()
    steps, batch = (9, 3) if with_state else (1, 2)
    module = from_exported_program(torch.export.export(model, _inputs(model, steps, batch, with_state, 0)))
    assert sum(isinstance(op, RNNOp) for op in module.walk()) == model.num_layers * (1 + model.bidirectional)
    lib = tk.build(module)
    reference = interpret(module)
    fresh = _inputs(model, steps, batch, with_state, 1)
    with torch.no_grad():
        want = _flat(model(*fresh))
    got = lib(*_arrays(fresh))
    for g, i, w in zip(got, reference(*_arrays(fresh)), want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(i, w, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("steps,batch", [(23, 19), (4, 8), (40, 1)])
def test_batches_across_blocks_and_tiles(cell, steps, batch):
    """Batch sizes around the kernel's blocks of 8 rows and register tiles of 4 (19: two
    full blocks and three rows; 8: one block of two tiles), hidden sizes around its 64
    columns (80 = 64 + 16, LSTM's 4*48 = 3 tiles), a constant weight packed in panels."""
    torch.manual_seed(steps)
    hidden = {"LSTM": 48, "GRU": 33, "RNN": 80}[cell]
    model = getattr(torch.nn, cell)(17, hidden).eval()
    x = torch.randn(steps, batch, 17)
    lib = tk.build(from_exported_program(torch.export.export(model, (x,))))
    fresh = torch.randn(steps, batch, 17)
    with torch.no_grad():
        want = _flat(model(fresh))
    for g, w in zip(lib(fresh.numpy()), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_weights_as_inputs_and_float64():
    """Weights given at each call (keep_params_as_input: not packed) and a float64 model."""
    torch.manual_seed(3)
    model = torch.nn.LSTM(6, 20, num_layers=2).double().eval()
    x = torch.randn(7, 10, 6, dtype=torch.float64)
    module, params = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=True)
    lib = tk.build(module)
    with torch.no_grad():
        want = _flat(model(x))
    got = lib(x.numpy(), *params.values())
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_symbolic_batch_from_torch():
    """Compiled once for a symbolic batch size (torch.export specializes the sequence
    length of its recurrent modules), run at several, across the kernel's row blocks."""
    torch.manual_seed(4)
    model = torch.nn.GRU(5, 12, num_layers=2, bidirectional=True).eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(model, (torch.randn(6, 3, 5),), dynamic_shapes=({1: batch},))
    lib = tk.build(from_exported_program(ep))
    for size in (2, 11, 20):
        x = torch.randn(6, size, 5)
        with torch.no_grad():
            want = _flat(model(x))
        for g, w in zip(lib(x.numpy()), want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("cell", ["lstm", "gru", "tanh", "relu"])
def test_symbolic_steps_and_batch(rng, cell):
    """graph.rnn with a symbolic number of steps and batch (what an ONNX model with a
    dynamic sequence gives), both directions, compiled once and run at several sizes,
    against its numpy reference."""
    gates, carried = {"lstm": (4, 2), "gru": (3, 1)}.get(cell, (1, 1))
    hidden, width = 9, 9 * gates
    b = tk.GraphBuilder()
    x = b.input("x", ("steps", "batch", width))
    init = b.input("h", ("batch", hidden * carried))
    w = (rng.standard_normal((hidden, width)) / 3).astype(np.float32)
    bias = rng.standard_normal(width).astype(np.float32)
    module = b.finish(*(b.rnn(x, w, bias, init, cell=cell, reverse=reverse) for reverse in (False, True)))
    lib, reference = tk.build(module), interpret(module)
    for steps, batch in [(1, 1), (13, 10), (3, 5)]:
        args = [rng.standard_normal(s).astype(np.float32) for s in ((steps, batch, width), (batch, hidden * carried))]
        for g, w in zip(lib(*args), reference(*args), strict=True):
            assert g.shape == (steps, batch, hidden * carried)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _rnn_kernels(steps: int) -> list:
    model = torch.nn.LSTM(8, 16).eval()
    module = from_exported_program(torch.export.export(model, (torch.randn(steps, 2, 8),)))
    return loop.kernels(lower_to_loops(module))


def test_kernels_do_not_grow_with_the_number_of_steps():
    """What is compiled for 4 steps and for 150 is the same: as many kernels, and the
    recurrence's kernel has as many ops (one loop over time, the cell inside)."""
    short, long = _rnn_kernels(4), _rnn_kernels(150)
    assert len(short) == len(long)
    sizes = [[sum(1 for _ in k.walk()) for k in kernels if loop.kernel_tag(k) == "rnn"] for kernels in (short, long)]
    assert sizes[0] == sizes[1] and len(sizes[0]) == 1
    (kernel,) = [k for k in long if loop.kernel_tag(k) == "rnn"]
    assert len(loop.loops_with_role(kernel, "scan")) == 1


def test_the_strategy_knows_the_kernels_tiles():
    assert rnn_strategy.PANEL == rnn_kernel.PANEL
    assert rnn_strategy.ROWS == rnn_kernel.ROWS


def test_training_dropout_is_refused():
    model = torch.nn.LSTM(4, 5, num_layers=2, dropout=0.5).train()
    ep = torch.export.export(model, (torch.randn(3, 2, 4),))
    with pytest.raises(TorchImportError, match=r"dropout=0.5 in training mode: export the model in eval\(\)"):
        from_exported_program(ep)


def test_graph_op_checks_its_operands():
    b = tk.GraphBuilder()
    gates = b.input("g", (5, 2, 28))
    w, bias = np.zeros((7, 28), np.float32), np.zeros(28, np.float32)
    with pytest.raises(VerifyException, match=r"graph.rnn: initial must be \(batch, 7 \+ 7\)"):
        b.rnn(gates, w, bias, np.zeros((2, 7), np.float32), cell="lstm")
    with pytest.raises(VerifyException, match="a positive multiple of 3 for a 'gru' cell"):
        b.rnn(gates, w, bias, np.zeros((2, 7), np.float32), cell="gru")
    with pytest.raises(VerifyException, match="cell must be one of lstm, gru, tanh, relu, got 'elman'"):
        b.rnn(gates, w, bias, np.zeros((2, 7), np.float32), cell="elman")
    with pytest.raises(VerifyException, match=r"weight's 5 rows must be the hidden size 7 \(without a projection\)"):
        b.rnn(gates, np.zeros((5, 28), np.float32), bias, np.zeros((2, 12), np.float32), cell="lstm")


def _parallel_loops(cell: str, hidden: int, batch: int, steps: int = 50) -> list[str]:
    """The names of the parallel loops of a graph.rnn kernel after the default schedule."""
    gates = {"lstm": 4, "gru": 3}.get(cell, 1)
    b = tk.GraphBuilder()
    x = b.input("x", (steps, batch, gates * hidden))
    state = np.zeros((batch, hidden * (2 if cell == "lstm" else 1)), np.float32)
    module = b.finish(b.rnn(x, np.zeros((hidden, gates * hidden), np.float32), np.zeros(gates * hidden, np.float32), state, cell=cell))
    loops = lower_to_loops(module)
    (kernel,) = [k for k in loop.kernels(loops) if loop.kernel_tag(k) == "rnn"]
    apply_default_schedule(kernel, 16)
    (kernel,) = [k for k in loop.kernels(loops) if loop.kernel_tag(k) == "rnn"]
    return [f.loop_name.data for f in kernel.walk() if isinstance(f, loop.ForOp) and f.kind.data == "parallel"]


def test_threads_go_to_row_blocks_or_to_each_steps_units():
    """Many batch rows: their blocks in parallel; one row with a large hidden size: each
    step's tiles of units in parallel; small layers: serial (a launch would cost more)."""
    assert _parallel_loops("lstm", 64, 64) == ["i0"]
    assert _parallel_loops("lstm", 256, 1) == ["u0"]
    assert _parallel_loops("lstm", 32, 1) == []
    assert _parallel_loops("gru", 16, 3) == []
