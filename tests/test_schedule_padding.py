"""cache_read(pad=True): a padded input's window copied with its padding (the fill
value outside the buffer), so the window taps read it without bounds checks.

Numerics of scheduled kernels against the interpreter on fresh random inputs (odd
sizes, strides, dilation, asymmetric padding, groups, a symbolic batch; zero fill for
convolutions and average pooling, -inf for max pooling), the IR it leaves, the errors
it gives, and the conv strategy's choice of where (and whether) to pad.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith

import tensorkiln as tk
from tensorkiln.dialects import loop
from tensorkiln.schedule import Schedule, ScheduleError, kernels
from tensorkiln.schedule.padding import match_padded_read, padded_arguments

from strategy_helpers import scheduled_loops
from test_schedule import ScheduleFn, assert_fails, check, matmul_kernel, only_kernel


def conv(x_shape, w_shape, stride=1, padding=1, dilation=1, groups=1):
    b = tk.GraphBuilder()
    x = b.input("x", x_shape)
    return b.finish(b.conv2d(x, b.input("w", w_shape), None, strides=stride, padding=padding, dilation=dilation,
                             groups=groups))


def pool(kind, x_shape, kernel=3, stride=2, padding=1):
    b = tk.GraphBuilder()
    x = b.input("x", x_shape)
    return b.finish(getattr(b, kind)(x, kernel=kernel, strides=stride, padding=padding))


CONVS = {
    "stride2-pad3-7x7": (conv, ((2, 3, 13, 11), (5, 3, 7, 7)), {"stride": 2, "padding": 3}),
    "pad1-3x3": (conv, ((1, 4, 9, 7), (6, 4, 3, 3)), {}),
    "asymmetric-dilated": (conv, ((1, 2, 8, 9), (3, 2, 3, 3)), {"padding": (2, 1, 0, 3), "dilation": 2}),
    "groups2": (conv, ((2, 4, 7, 5), (6, 2, 3, 3)), {"groups": 2}),
}
POOLS = {
    "max-pool": (pool, ("max_pool2d", (2, 3, 9, 11)), {}),
    "avg-pool": (pool, ("avg_pool2d", (1, 4, 7, 8)), {"kernel": 2, "padding": 1}),
}

SCHEDULES: dict[str, ScheduleFn] = {
    "image": lambda s: s.cache_read(0, "i0", pad=True),
    "row": lambda s: s.cache_read(0, "i2", pad=True),
    "tile": lambda s: (s.tile("i2", "i3", 2, 3), s.cache_read(0, "i3.outer", pad=True)),
    "fused-rows": lambda s: (s.fuse("i2", "i3"), s.split("i2.i3.fused", 4), s.cache_read(0, "i2.i3.fused.outer", pad=True)),
    "compute-at": lambda s: (s.cache_read(0, "i1", pad=True), s.compute_at("arg0.local", "i2")),
    "inline-again": lambda s: (s.cache_read(0, "i1", pad=True), s.compute_inline("arg0.local")),
    "register-tile": lambda s: (
        s.tile("i2", "i3", 2, 4),
        s.cache_write("i3.outer"),
        s.cache_read(0, "i2.outer", pad=True),
        s.vectorize("i3.inner"),
    ),
}


def _inputs(module, rng):
    from tensorkiln.dialects.functions import find_function
    from tensorkiln.dialects.functions import signature_of

    specs = signature_of(find_function(module, "main")).inputs
    return [rng.standard_normal(spec.shape).astype(np.float32) for spec in specs]


@pytest.mark.parametrize("case", list(CONVS) + list(POOLS))
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_padded_copy_numerics(case: str, name: str, rng: np.random.Generator) -> None:
    make, args, kwargs = {**CONVS, **POOLS}[case]
    module = make(*args, **kwargs)
    arrays = _inputs(module, rng)
    expected = tk.create_executor("interpreter", module).evaluate()(*arrays)
    check(module, SCHEDULES[name], arrays, expected)


def test_symbolic_batch(rng: np.random.Generator) -> None:
    module = conv(("n", 3, 10, 9), (4, 3, 5, 5), stride=2, padding=2)
    for n in (1, 3):
        x = rng.standard_normal((n, 3, 10, 9)).astype(np.float32)
        w = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
        expected = tk.create_executor("interpreter", module).evaluate()(x, w)
        check(module, SCHEDULES["row"], [x, w], expected)


def _selects_in(op) -> int:
    return sum(isinstance(o, arith.SelectOp) for o in op.walk())


def test_taps_lose_their_checks() -> None:
    kernel = only_kernel(conv((1, 3, 9, 8), (4, 3, 3, 3)))
    assert padded_arguments(kernel) == [0]
    s = Schedule(kernel)
    reduction = next(f for f in kernel.walk() if isinstance(f, loop.ForOp) and f.loop_name.data == "k0")
    assert _selects_in(reduction) == 1
    assert s.cache_read(0, "i0", pad=True) == "arg0.local"
    (local,) = [op for op in kernel.walk() if isinstance(op, loop.AllocOp) and "tk.stage" in op.attributes]
    # the padded window: 9 + 2 rows, 8 + 2 columns, 3 channels (NCHW: dims 2 and 3 padded)
    assert local.results[0].type.get_shape() == (1, 3, 11, 10)
    assert [d.value.data for d in local.attributes["tk.pad_dims"].data] == [2, 3]
    reduction = next(f for f in kernel.walk() if isinstance(f, loop.ForOp) and f.loop_name.data == "k0")
    assert _selects_in(reduction) == 0
    assert not any(match_padded_read(op) for op in kernel.walk() if isinstance(op, loop.LoadOp))
    assert s.trace[-1] == {"primitive": "cache_read", "args": {"buffer": 0, "at_loop": "i0", "pad": True}}
    # replaying the trace gives the same kernel; inlining gives the checks back
    again = Schedule.replay(only_kernel(conv((1, 3, 9, 8), (4, 3, 3, 3))), s.trace)
    assert str(again.kernel) == str(kernel)
    s.compute_inline("arg0.local")
    assert padded_arguments(kernel) == [0]


def test_errors() -> None:
    s = Schedule(matmul_kernel())
    assert_fails(s, lambda: s.cache_read(0, "i0", pad=True), "cache_read:", "pad=True", "not a bounds-checked window tap")
    s = Schedule(only_kernel(conv((1, 3, 9, 8), (4, 3, 3, 3))))
    assert_fails(s, lambda: s.apply("cache_read", {"buffer": 0, "at_loop": "i0", "pad": "yes"}), "pad must be true or false")
    assert_fails(s, lambda: s.cache_read(1, "i0", pad=True), "not a bounds-checked window tap")
    big = Schedule(only_kernel(conv((1, 64, 130, 130), (4, 64, 3, 3))))
    assert_fails(big, lambda: big.cache_read(0, "i0", pad=True), "limit")


# ---------------------------------------------------------------------------
# the conv strategy: where the copy pays


def _padded_stage(module) -> list[str]:
    """The kernels (tk.kernel tags) of the default schedule that copy a padded window."""
    out = []
    for k in kernels(scheduled_loops(module)):
        if any(isinstance(op, loop.AllocOp) and "tk.pad_dims" in op.attributes for op in k.walk()):
            out.append(k.attributes["tk.kernel"].data)
    return out


def test_strategy_pads_where_it_pays() -> None:
    stem = conv((2, 3, 32, 32), (8, 3, 7, 7), stride=2, padding=3)
    assert _padded_stage(stem) == ["conv2d"]
    # depthwise: each element is read 9 times with no reuse across vectors; the copy costs more
    depthwise = conv((1, 32, 28, 28), (32, 1, 3, 3), groups=32)
    assert _padded_stage(depthwise) == []


@pytest.mark.parametrize("case", ["stem", "3x3", "depthwise", "strided"])
def test_strategy_numerics(case: str, rng: np.random.Generator) -> None:
    shapes = {
        "stem": ((2, 3, 33, 31), (8, 3, 7, 7), 2, 3, 1),
        "3x3": ((1, 16, 15, 13), (24, 16, 3, 3), 1, 1, 1),
        "depthwise": ((1, 16, 14, 9), (16, 1, 3, 3), 1, 1, 16),
        "strided": ((3, 8, 11, 11), (16, 8, 3, 3), 2, 1, 1),
    }
    x_shape, w_shape, stride, padding, groups = shapes[case]
    b = tk.GraphBuilder()
    w = rng.standard_normal(w_shape).astype(np.float32)
    bias = rng.standard_normal(w_shape[0]).astype(np.float32)
    y = b.relu(b.conv2d(b.input("x", x_shape), w, bias, strides=stride, padding=padding, groups=groups))
    module = b.finish(y)
    x = rng.standard_normal(x_shape).astype(np.float32)
    expected = tk.create_executor("interpreter", module).evaluate()(x)
    np.testing.assert_allclose(tk.build(module)(x), expected, rtol=1e-4, atol=1e-4)


def test_symbolic_image_size(rng: np.random.Generator) -> None:
    """Padded dims of run-time size: the checks compare with ``loop.dim``; the copied
    window of a tile stays static (2 rows x 4 columns of output, 3x3 taps)."""
    module = conv((1, 3, "h", "w"), (4, 3, 3, 3))
    assert padded_arguments(only_kernel(module)) == [0]

    def tile_and_pad(s: Schedule) -> None:
        s.split("i2", 2)
        s.split("i3", 4)
        s.reorder("i0", "i1", "i2.outer", "i3.outer", "i2.inner", "i3.inner")
        s.cache_read(0, "i3.outer", pad=True)

    for h, w in ((9, 7), (5, 12), (1, 2)):
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        expected = tk.create_executor("interpreter", module).evaluate()(x, weight)
        check(module, tile_and_pad, [x, weight], expected)
