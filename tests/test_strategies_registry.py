"""The strategy registry: the highest plevel that applies wins, a strategy whose
primitives fail hands over to the next, and a kernel no strategy fits keeps its plain
loops; strategies are tuner-visible (named decisions)."""

from __future__ import annotations

import inspect

import pytest

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.schedule import ScheduleError, kernels
from tensorkiln.schedule.strategies import (
    STRATEGIES,
    apply_default_schedule,
    kernel_info,
    register_strategy,
    strategies_for,
)


@pytest.fixture
def registry():
    """The registry as it was, restored after the test."""
    saved = dict(STRATEGIES)
    yield STRATEGIES
    STRATEGIES.clear()
    STRATEGIES.update(saved)


def matmul_kernel(m=8, k=8, n=32):
    b = tk.GraphBuilder()
    loops = lower_to_loops(b.finish(b.matmul(b.input("x", (m, k)), b.input("y", (k, n)))))
    return kernels(loops)[0]


def test_highest_plevel_that_applies_wins(registry):
    calls = []

    @register_strategy("test_low", ops=("matmul",), plevel=100)
    def low(s, info):
        calls.append("low")

    @register_strategy("test_high_not_applying", ops=("matmul",), plevel=300, applies=lambda info: False)
    def never(s, info):
        calls.append("never")

    @register_strategy("test_high", ops=("matmul",), plevel=200)
    def high(s, info):
        calls.append("high")
        s.vectorize("k0")

    kernel = matmul_kernel()
    names = [s.name for s in strategies_for(kernel_info(kernel, 16))]
    assert names[:2] == ["test_high", "test_low"] and "test_high_not_applying" not in names
    assert apply_default_schedule(kernel, 16).name == "test_high"
    assert calls == ["high"]


def test_failing_strategy_hands_over_and_leaves_no_trace(registry):
    @register_strategy("test_broken", ops=("matmul",), plevel=500)
    def broken(s, info):
        s.vectorize("k0")
        s.split("no_such_loop", 4)  # fails after a primitive succeeded

    kernel = matmul_kernel()
    module = kernel.parent_op()
    chosen = apply_default_schedule(kernel, 16)
    assert chosen.name == "gemm_register_tile"
    (scheduled,) = kernels(module)
    assert "vectorized name(\"k0\")" not in str(scheduled)
    assert scheduled.attributes["tk.strategy"].data == "gemm_register_tile"


def test_no_strategy_keeps_plain_loops(registry):
    STRATEGIES.clear()
    kernel = matmul_kernel()
    before = str(kernel)
    assert apply_default_schedule(kernel, 16) is None
    assert str(kernel) == before


def test_op_kinds_and_families():
    info = kernel_info(matmul_kernel(), 16)
    assert info.anchor == "matmul" and info.family == "reduce"
    assert info.kinds == {"matmul", "reduce", "any"}
    assert info.output_loops == ["i0", "i1"] and info.reduction_loops == ["k0"]
    assert info.work == 8 * 8 * 32


def test_register_needs_an_op_kind():
    with pytest.raises(ValueError, match="op kind"):
        register_strategy("nothing", ops=(), plevel=1)


def test_strategies_are_tuner_visible():
    """Each strategy is a plain function whose decisions are keyword parameters."""
    for strategy in STRATEGIES.values():
        parameters = inspect.signature(strategy.schedule).parameters
        assert list(parameters)[:2] == ["s", "info"], strategy.name
        for decision, values in strategy.decisions.items():
            assert decision in parameters and values, (strategy.name, decision)


def test_a_decision_changes_the_schedule():
    gemm = STRATEGIES["gemm_register_tile"]
    from tensorkiln.schedule import Schedule

    kernel = matmul_kernel(16, 8, 64)
    s = Schedule(kernel)
    gemm.schedule(s, kernel_info(kernel, 16), rows=2, vectors=1)
    tile = next(step for step in s.trace if step["primitive"] == "split" and step["args"]["loop"] == "i1")
    assert tile["args"]["factor"] == 16
    rows = next(step for step in s.trace if step["primitive"] == "split" and step["args"]["loop"] == "i0")
    assert rows["args"]["factor"] == 2


def test_a_bad_strategy_bubbles_up_as_schedule_error(registry):
    @register_strategy("test_raises", ops=("matmul",), plevel=500)
    def raises(s, info):
        raise ScheduleError("test_raises", "does not fit")

    assert apply_default_schedule(matmul_kernel(), 16).name == "gemm_register_tile"
