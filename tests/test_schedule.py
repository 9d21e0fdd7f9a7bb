"""Schedule primitives on real kernels: compiled results equal numpy on odd sizes (not
multiples of the split factors nor of the vector width), traces round-trip through
JSON and replay to the same IR, and illegal schedules fail with a ScheduleError that
names the primitive and the loop, leaving the kernel as it was."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import tensorkiln as tk
from tensorkiln.build import jit_loops, lower_to_loops
from tensorkiln.dialects.functions import find_function
from tensorkiln.driver.pipelines import optimize_graph
from tensorkiln.passes.pipeline import PassContext
from tensorkiln.runtime.module import CompiledModule
from tensorkiln.schedule import PRIMITIVES, Schedule, ScheduleError, kernels, trace_from_json, trace_to_json
from tensorkiln.dialects.functions import signature_of

ScheduleFn = Callable[[Schedule], object]

# ---------------------------------------------------------------------------
# helpers


def loop_module(module: ModuleOp, fuse: bool = False) -> ModuleOp:
    """The graph module lowered to loops (after the O2 graph pipeline with ``fuse``)."""
    work = module.clone()
    if fuse:
        optimize_graph(work, PassContext(opt_level=2, dump_ir=False))
    return lower_to_loops(work)


def build_scheduled(
    module: ModuleOp, schedule: ScheduleFn | dict[str, ScheduleFn], fuse: bool = False
) -> CompiledModule:
    """Lower ``module`` to loops, schedule its kernels (one function for all, or one per
    ``tk.kernel`` tag), finish lowering and JIT; a callable like ``tk.build``'s."""
    signature = signature_of(find_function(module, "main"))
    loops = loop_module(module, fuse)
    for kernel in kernels(loops):
        tag = kernel.attributes["tk.kernel"].data
        fn = schedule.get(tag) if isinstance(schedule, dict) else schedule
        if fn is not None:
            fn(Schedule(kernel))
    return jit_loops(loops, signature)


def check(module: ModuleOp, schedule, arrays, expected, fuse: bool = False, rtol: float = 1e-5) -> None:
    got = build_scheduled(module, schedule, fuse)(*arrays)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-5)


def matmul_module(m: int, k: int, n: int) -> ModuleOp:
    b = tk.GraphBuilder()
    return b.finish(b.matmul(b.input("x", (m, k)), b.input("w", (k, n))))


def only_kernel(module: ModuleOp, fuse: bool = False):
    (kernel,) = kernels(loop_module(module, fuse))
    return kernel


def matmul_kernel(m: int = 17, k: int = 13, n: int = 31):
    return only_kernel(matmul_module(m, k, n))


# ---------------------------------------------------------------------------
# matmul: every primitive


MATMUL_SCHEDULES: dict[str, ScheduleFn] = {
    "split": lambda s: s.split("i0", 4),
    "split-twice": lambda s: (s.split("i1", 8), s.split("i1.inner", 3)),
    "split-reduction": lambda s: s.split("k0", 3),
    "reorder": lambda s: s.reorder("i1", "i0"),
    "fuse": lambda s: (s.fuse("i0", "i1"), s.split("i0.i1.fused", 7)),
    "tile": lambda s: s.tile("i0", "i1", 4, 16),
    "cache-write": lambda s: (
        s.tile("i0", "i1", 4, 16),
        s.cache_write("i1.outer"),
        s.split("k0", 4),
        s.reorder("i0.inner", "k0.inner"),
    ),
    "cache-write-whole-rows": lambda s: s.cache_write("i0"),
    "cache-read": lambda s: (s.tile("i0", "i1", 4, 16), s.cache_read(0, "i1.outer"), s.cache_read(1, "i1.outer")),
    "compute-at": lambda s: (
        s.tile("i0", "i1", 4, 16),
        s.cache_read(1, "i1.outer"),
        s.compute_at("arg1.local", "i0.outer"),
    ),
    "compute-inline": lambda s: (s.cache_read(0, "i0"), s.compute_inline("arg0.local")),
    "tensorize": lambda s: (s.tile("i0", "i1", 4, 16), s.cache_write("i1.outer"), s.tensorize("k0", "gemm_4x16")),
    "kinds": lambda s: (
        s.tile("i0", "i1", 4, 16),
        s.cache_write("i1.outer"),
        s.cache_read(1, "i1.outer"),
        s.unroll("i0.inner"),
        s.parallel("i0.outer"),
    ),
}


@pytest.mark.parametrize(
    "shape", [(17, 13, 31), (1, 7, 13), (7, 1, 17), (31, 17, 1)], ids=lambda s: "x".join(map(str, s))
)
@pytest.mark.parametrize("name", list(MATMUL_SCHEDULES))
def test_matmul(name: str, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
    m, k, n = shape
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    check(matmul_module(m, k, n), MATMUL_SCHEDULES[name], [x, w], x @ w)


def test_register_tile_vectorized(rng: np.random.Generator) -> None:
    """The micro-kernel shape strategies want: a 4x16 tile in registers, the inner tile
    loop vectorized (16 f32 lanes: 31 columns leave a remainder)."""
    x = rng.standard_normal((17, 13)).astype(np.float32)
    w = rng.standard_normal((13, 31)).astype(np.float32)

    def schedule(s: Schedule) -> None:
        s.tile("i0", "i1", 4, 16)
        s.cache_write("i1.outer")
        s.unroll("i0.inner")
        s.vectorize("i1.inner")
        s.vectorize("i1.inner.init")
        s.vectorize("i1.inner.write")

    check(matmul_module(17, 13, 31), schedule, [x, w], x @ w)


# ---------------------------------------------------------------------------
# conv2d (padding: clamped reads + select), softmax pieces, elementwise + broadcast


def conv_module(x_shape, w_shape, stride, pad, groups=1) -> ModuleOp:
    b = tk.GraphBuilder()
    y = b.conv2d(b.input("x", x_shape), b.input("w", w_shape), None, strides=stride, padding=pad, groups=groups)
    return b.finish(y)


CONV_SCHEDULES: dict[str, ScheduleFn] = {
    "tile-cache-write": lambda s: (s.tile("i2", "i3", 2, 3), s.cache_write("i3.outer")),
    "cache-write-channels": lambda s: (s.split("i3", 3), s.cache_write("i1")),
    "cache-read-input": lambda s: (s.tile("i2", "i3", 2, 3), s.cache_read(0, "i3.outer")),
    "cache-read-weight": lambda s: s.cache_read(1, "i1"),
    "compute-at": lambda s: (s.cache_read(0, "i1"), s.compute_at("arg0.local", "i2")),
    "reorder-fuse": lambda s: (s.reorder("i3", "i1", "i2"), s.fuse("i3", "i1"), s.split("i3.i1.fused", 5)),
    "split-reduction": lambda s: (s.split("k0", 2), s.reorder("k1", "k0.inner")),
    "tensorize": lambda s: (s.tile("i2", "i3", 2, 3), s.cache_write("i3.outer"), s.tensorize("k0", "conv_tile")),
}

CONV_CASES = {
    "stride2-pad1": ((1, 3, 9, 7), (4, 3, 3, 3), 2, 1, 1),
    "groups2-pad1": ((2, 4, 7, 5), (6, 2, 3, 3), 1, 1, 2),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
@pytest.mark.parametrize("name", list(CONV_SCHEDULES))
def test_conv2d(name: str, case: str, rng: np.random.Generator) -> None:
    x_shape, w_shape, stride, pad, groups = CONV_CASES[case]
    module = conv_module(x_shape, w_shape, stride, pad, groups)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    expected = tk.create_executor("interpreter", module).evaluate()(x, w)
    check(module, CONV_SCHEDULES[name], [x, w], expected)


def _rows_or(rows: ScheduleFn, plain: ScheduleFn) -> ScheduleFn:
    """``rows`` for softmax as one kernel of row stages (its max and sum loops k0, k1_0
    inside the row loop i0), ``plain`` for its normalization kernel (rows of one element
    are four kernels: max, exp, sum, normalization)."""
    return lambda s: rows(s) if "k0" in s.loops() else plain(s)


SOFTMAX_SCHEDULES: dict[str, dict[str, ScheduleFn]] = {
    "split": {
        "softmax_max": lambda s: s.split("k0", 4),
        "softmax_sum": lambda s: (s.split("i0", 3), s.cache_write("i0.outer")),
        "softmax": _rows_or(
            lambda s: (s.split("i0", 3), s.split("k0", 4), s.split("k1_0", 5), s.split("i1", 8)),
            lambda s: (s.split("i1", 8), s.cache_write("i1.outer")),
        ),
    },
    "cache": {
        "softmax_exp": lambda s: (s.cache_read(1, "i0"), s.cache_read(0, "i0")),
        "softmax_sum": lambda s: (s.cache_read(0, "i0"), s.cache_write("i0")),
        "softmax": _rows_or(
            lambda s: (s.cache_read(0, "i0"), s.split("i1", 8)),
            lambda s: (s.fuse("i0", "i1"), s.split("i0.i1.fused", 8), s.cache_read(0, "i0.i1.fused.outer")),
        ),
    },
    "kinds": {
        "softmax_max": lambda s: (s.vectorize("k0"), s.parallel("i0")),
        "softmax_sum": lambda s: (s.split("k0", 8), s.vectorize("k0.inner")),
        "softmax": _rows_or(
            lambda s: (s.vectorize("k0"), s.split("k1_0", 8), s.vectorize("k1_0.inner"), s.vectorize("i1"), s.parallel("i0")),
            lambda s: (s.split("i1", 8), s.vectorize("i1.inner"), s.parallel("i0")),
        ),
    },
}


@pytest.mark.parametrize("shape", [(7, 13), (1, 17), (5, 1)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(SOFTMAX_SCHEDULES))
def test_softmax(name: str, shape: tuple[int, int], rng: np.random.Generator) -> None:
    b = tk.GraphBuilder()
    module = b.finish(b.softmax(b.input("x", shape), 1))
    x = rng.standard_normal(shape).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    check(module, SOFTMAX_SCHEDULES[name], [x], e / e.sum(axis=1, keepdims=True))


ELEMENTWISE_SCHEDULES: dict[str, ScheduleFn] = {
    "split-vectorize": lambda s: (s.split("i1", 4), s.vectorize("i1.inner"), s.parallel("i0")),
    "fuse-split": lambda s: (s.fuse("i0", "i1"), s.split("i0.i1.fused", 16), s.vectorize("i0.i1.fused.inner")),
    "reorder": lambda s: s.reorder("i1", "i0"),
    "tile": lambda s: s.tile("i0", "i1", 2, 8),
    "cache-write": lambda s: s.cache_write("i0"),
    "cache-read-broadcast": lambda s: (s.split("i1", 8), s.cache_read(1, "i1.outer"), s.cache_read(0, "i0")),
    "unroll": lambda s: (s.split("i1", 3), s.unroll("i1.inner")),
}


@pytest.mark.parametrize("shapes", [((5, 13), (13,)), ((1, 7), (1, 1)), ((17, 31), (17, 1))], ids=str)
@pytest.mark.parametrize("name", list(ELEMENTWISE_SCHEDULES))
def test_elementwise_broadcast(name: str, shapes, rng: np.random.Generator) -> None:
    b = tk.GraphBuilder()
    x, y = b.input("x", shapes[0]), b.input("y", shapes[1])
    module = b.finish(b.mul(b.add(x, y), x))
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    c = rng.standard_normal(shapes[1]).astype(np.float32)
    check(module, ELEMENTWISE_SCHEDULES[name], [a, c], (a + c) * a, fuse=True)


def test_fused_dense_symbolic_batch(rng: np.random.Generator) -> None:
    """dense + bias + relu fused in one kernel, batch dim symbolic: the bias and relu run
    in the tile's write-back; the packed input is clamped at the runtime batch size."""
    weight = rng.standard_normal((13, 31)).astype(np.float32)
    bias = rng.standard_normal(13).astype(np.float32)
    b = tk.GraphBuilder()
    module = b.finish(b.relu(b.dense(b.input("x", ("n", 31)), weight, bias)))

    def schedule(s: Schedule) -> None:
        s.tile("i0", "i1", 4, 8)
        s.cache_write("i1.outer")
        s.cache_read(0, "i1.outer")
        s.cache_read(1, "i1.outer")
        s.fuse("i0.outer", "i1.outer")
        s.parallel("i0.outer.i1.outer.fused")

    lib = build_scheduled(module, schedule, fuse=True)
    for n in (1, 7, 13):
        x = rng.standard_normal((n, 31)).astype(np.float32)
        np.testing.assert_allclose(lib(x), np.maximum(x @ weight.T + bias, 0), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# random schedules (what a tuner does): legal ones compute the same, replay is exact


def random_step(s: Schedule, r: random.Random) -> tuple[str, dict]:
    loops = s.loops()
    n_args = len(s.kernel.body.block.args)
    primitive = r.choice(
        ["split", "split", "reorder", "fuse", "tile", "cache_write", "cache_read", "compute_at", "compute_inline"]
        + ["unroll", "parallel", "tensorize"]
    )
    pick = lambda: r.choice(loops)
    if primitive == "split":
        return primitive, {"loop": pick(), "factor": r.choice([1, 2, 3, 4, 5, 8, 16])}
    if primitive == "reorder":
        return primitive, {"loops": r.sample(loops, r.randint(2, min(4, len(loops))))}
    if primitive == "fuse":
        return primitive, {"outer": pick(), "inner": pick()}
    if primitive == "tile":
        return primitive, {"x": pick(), "y": pick(), "x_factor": r.choice([2, 3, 4]), "y_factor": r.choice([2, 5, 8])}
    if primitive == "cache_write":
        return primitive, {"at_loop": pick()}
    if primitive == "cache_read":
        return primitive, {"buffer": r.randrange(n_args), "at_loop": pick()}
    if primitive == "compute_at":
        return primitive, {"stage": f"arg{r.randrange(n_args)}.local", "at_loop": pick()}
    if primitive == "compute_inline":
        return primitive, {"stage": f"arg{r.randrange(n_args)}.local"}
    if primitive == "tensorize":
        return primitive, {"loop": pick(), "microkernel": f"micro_{r.randrange(10**6)}"}
    return primitive, {"loop": pick()}


RANDOM_CASES = {
    "matmul": lambda: matmul_module(17, 13, 31),
    "conv2d": lambda: conv_module((2, 4, 7, 5), (6, 2, 3, 3), (2, 1), 1, 2),
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("case", list(RANDOM_CASES))
def test_random_schedules(case: str, seed: int, rng: np.random.Generator) -> None:
    module = RANDOM_CASES[case]()
    r = random.Random(seed)
    scheduled = loop_module(module)
    s = Schedule(kernels(scheduled)[0])
    for _ in range(10):
        if len(s.loops()) < 2:
            break
        try:
            s.apply(*random_step(s, r))
        except ScheduleError as error:
            assert "internal error" not in str(error)
    replayed = loop_module(module)
    Schedule.replay(kernels(replayed)[0], s.to_json())
    assert str(replayed) == str(scheduled)

    arrays = [rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in find_function(module).args]
    expected = tk.create_executor("interpreter", module).evaluate()(*arrays)
    check(module, lambda t: Schedule.replay(t.kernel, s.trace), arrays, expected)


# ---------------------------------------------------------------------------
# traces


FULL_TRACE = [
    ("simplify_indices", {}),
    ("tile", {"x": "i0", "y": "i1", "x_factor": 4, "y_factor": 16}),
    ("cache_write", {"at_loop": "i1.outer"}),
    ("overcompute", {"loop": "i0.inner.init"}),
    ("split", {"loop": "k0", "factor": 4}),
    ("reorder", {"loops": ["i0.inner", "k0.inner"]}),
    ("cache_read", {"buffer": 1, "at_loop": "i1.outer"}),
    ("compute_at", {"stage": "arg1.local", "at_loop": "i0.outer"}),
    ("cache_read", {"buffer": 0, "at_loop": "i1.outer"}),
    ("compute_inline", {"stage": "arg0.local"}),
    ("fuse", {"outer": "i0.inner.write", "inner": "i1.inner.write"}),
    ("unroll", {"loop": "i1.inner.init"}),
    ("vectorize", {"loop": "arg1.local.c1"}),
    ("parallel", {"loop": "i0.outer"}),
    ("flush_denormals", {}),
    ("tensorize", {"loop": "k0.outer", "microkernel": "gemm_tile"}),
]


def test_trace_round_trip_and_replay() -> None:
    kernel = matmul_kernel()
    s = Schedule(kernel)
    for primitive, args in FULL_TRACE:
        s.apply(primitive, args)
    assert [step["primitive"] for step in s.trace] == [p for p, _ in FULL_TRACE]
    text = s.to_json()
    assert trace_from_json(text) == s.trace
    assert json.loads(trace_to_json(s.trace, indent=2)) == s.trace

    fresh = matmul_kernel()
    replayed = Schedule.replay(fresh, text)
    assert str(fresh) == str(kernel)
    assert str(fresh.parent_op()) == str(kernel.parent_op())  # the outlined micro-kernel too
    assert replayed.to_json() == text
    again = matmul_kernel()
    Schedule.replay(again, s.trace)  # a list of steps works as well as its JSON text
    assert str(again) == str(kernel)


def test_every_primitive_is_in_the_trace_vocabulary() -> None:
    # (transform_layout changes the kernel's signature: tests/test_strategies_primitives.py;
    # accumulate_dots is the low-precision GEMMs' primitive: tests/test_quant*.py, tests/test_bf16*.py)
    traced = {p for p, _ in FULL_TRACE}
    assert traced <= set(PRIMITIVES) and set(PRIMITIVES) - traced <= {"bind", "transform_layout", "accumulate_dots"}


def test_scheduled_module_parses_back() -> None:
    """A scheduled module is IR like any other: print, parse, print gives the same text."""
    module = loop_module(matmul_module(17, 13, 31))
    s = Schedule(kernels(module)[0])
    for primitive, args in FULL_TRACE:
        s.apply(primitive, args)
    text = str(module)
    assert str(tk.parse_module(text)) == text


def test_methods_record_the_trace() -> None:
    s = Schedule(matmul_kernel())
    assert s.loops() == ["i0", "i1", "k0"]
    assert [s.extent(name) for name in s.loops()] == [17, 31, 13]
    assert s.split("i0", 4) == ("i0.outer", "i0.inner")
    assert s.extent("i0.outer") == 5 and s.extent("i0.inner") == 4
    s.reorder("i1", "i0.inner")
    s.parallel("i0.outer")
    assert s.loops() == ["i0.outer", "i1", "i0.inner", "k0"]
    assert s.kind("i0.outer") == "parallel"
    assert s.trace == [
        {"primitive": "split", "args": {"loop": "i0", "factor": 4}},
        {"primitive": "reorder", "args": {"loops": ["i1", "i0.inner"]}},
        {"primitive": "parallel", "args": {"loop": "i0.outer"}},
    ]


def test_tensorize_reuses_an_existing_microkernel() -> None:
    """Kernels with the same nest tensorized under one name share the outlined function;
    a different nest under that name is refused."""
    b = tk.GraphBuilder()
    x, y, z, w = (b.input(name, (8, 8)) for name in "xyzw")
    module = loop_module(b.finish(b.matmul(b.add(b.matmul(x, y), b.matmul(z, w)), x)))
    first, second, _, third = kernels(module)
    for kernel in (first, second):
        s = Schedule(kernel)
        s.tile("i0", "i1", 4, 4)
        s.tensorize("i0.inner", "mm_4x4")
    assert [op.sym_name.data for op in module.ops].count("mm_4x4") == 1
    module.verify()
    s = Schedule(third)
    s.tile("i0", "i1", 2, 4)
    assert_fails(s, lambda: s.tensorize("i0.inner", "mm_4x4"), "tensorize:", "different nest")
    assert_fails(s, lambda: s.tensorize("k0", "mm_4x4"), "tensorize:", "needs")


# ---------------------------------------------------------------------------
# errors: named, and the kernel is left as it was


def assert_fails(s: Schedule, call: Callable[[], object], *fragments: str) -> None:
    before, trace = str(s.kernel), list(s.trace)
    with pytest.raises(ScheduleError) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    assert str(s.kernel) == before, "a failed primitive changed the kernel"
    assert s.trace == trace


def test_unknown_loop() -> None:
    s = Schedule(matmul_kernel())
    assert_fails(s, lambda: s.split("i9", 4), "split:", "'i9'", "matmul_0", "loops: i0, i1, k0")
    assert_fails(s, lambda: s.vectorize("j"), "vectorize:", "'j'")
    assert_fails(s, lambda: s.reorder("i0", "nope"), "reorder:", "'nope'")


@pytest.mark.parametrize("factor", [0, -2, 2.5, True, "4"])
def test_bad_split_factor(factor) -> None:
    s = Schedule(matmul_kernel())
    assert_fails(s, lambda: s.split("i0", factor), "split:", "factor", repr(factor))


def test_reorder_errors() -> None:
    s = Schedule(matmul_kernel())
    # k0 sits under the accumulator's alloc and init: not perfectly nested with i1
    assert_fails(s, lambda: s.reorder("k0", "i1"), "reorder:", "'k0'", "not perfectly nested", "loop.alloc")
    s.split("i0", 4)
    assert_fails(s, lambda: s.reorder("i0.inner", "i0.outer"), "bounds of loop 'i0.inner' depend on loop 'i0.outer'")
    s.tile("i0.inner", "i1", 2, 8)
    s.cache_write("i1.outer")
    assert_fails(s, lambda: s.reorder("i0.inner.inner.init", "k0"), "not nested in each other")
    assert_fails(s, lambda: s.reorder("i1.inner", "i1.inner"), "named twice")


def test_fuse_split_kind_errors() -> None:
    s = Schedule(matmul_kernel())
    assert_fails(s, lambda: s.fuse("i0", "k0"), "fuse:", "'k0' is not perfectly nested directly inside loop 'i0'")
    s.split("i0", 4)
    assert_fails(s, lambda: s.fuse("i0.outer", "i0.inner"), "depend on loop 'i0.outer'")
    assert_fails(s, lambda: s.parallel("k0"), "parallel:", "'k0'", "loop-carried")
    s.parallel("i0.outer")
    assert_fails(s, lambda: s.split("i0.outer", 2), "split:", "'i0.outer' is parallel")
    assert_fails(s, lambda: s.parallel("i1"), "nested with parallel loop 'i0.outer'")
    assert_fails(s, lambda: s.vectorize("i1"), "vectorize:", "not innermost")
    assert_fails(s, lambda: s.bind("i1", "warp.x"), "unknown thread axis")
    assert_fails(s, lambda: s.tile("k0", "i1", 2, 2), "tile:")


def test_dynamic_trip_counts() -> None:
    b = tk.GraphBuilder()
    kernel = only_kernel(b.finish(b.exp(b.input("x", ("n", 13)))))
    s = Schedule(kernel)
    assert s.extent("i0") is None
    assert_fails(s, lambda: s.unroll("i0"), "unroll:", "'i0'", "split it first")
    assert_fails(s, lambda: s.cache_write("i1"), "cache_write:")  # nothing nested in i1
    s.split("i0", 4)
    s.unroll("i0.inner")  # at most 4 iterations


def test_cache_errors() -> None:
    s = Schedule(matmul_kernel())
    assert_fails(s, lambda: s.cache_read(2, "i0"), "cache_read:", "written by the kernel")
    assert_fails(s, lambda: s.cache_read(5, "i0"), "cache_read:", "argument number")
    assert_fails(s, lambda: s.compute_at("arg0.local", "i0"), "compute_at:", "no cache_read stage", "stages: none")
    assert_fails(s, lambda: s.cache_write("i1"), "cache_write:", "one nest of output loops")
    s.cache_read(0, "i0")
    assert_fails(s, lambda: s.cache_read(0, "i1"), "already cached")
    s2 = Schedule(matmul_kernel(4, 2, 300_000))
    assert_fails(s2, lambda: s2.cache_write("i0"), "cache_write:", "bytes (limit")


TRIANGLE = """
func.func @tri(%x: memref<8x8xf32>, %y: memref<8xf32>) attributes {tk.kernel = "tri"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  loop.for %o = %c0 to %c8 step %c2 name("o") {
    loop.for %i = %c0 to %c2 step %c1 name("i") {
      %row = arith.addi %o, %i : index
      %acc = loop.alloc() {scope = "local"} : memref<f32>
      loop.store %zero, %acc[] : memref<f32>
      loop.for %k = %c0 to %row step %c1 name("k") {
        %v = loop.load %x[%row, %k] : memref<8x8xf32>
        %s = loop.load %acc[] : memref<f32>
        %n = arith.addf %s, %v : f32
        loop.store %n, %acc[] : memref<f32>
      }
      %r = loop.load %acc[] : memref<f32>
      loop.store %r, %y[%row] : memref<8xf32>
    }
  }
  func.return
}
"""


def test_failure_after_partial_rewrite_restores_the_kernel() -> None:
    """A triangular reduction (bound depends on the output loop) is found illegal only
    after cache_write began rewriting; the kernel comes back unchanged."""
    s = Schedule(tk.parse_module(TRIANGLE).ops.first)
    assert_fails(s, lambda: s.cache_write("o"), "cache_write:", "reduction loop 'k'", "depend on the output loops")
    s.kernel.verify()


def test_primitives_on_a_throwaway_copy_keep_no_backup(monkeypatch) -> None:
    """Inside schedule_on_clone a failing primitive drops the whole copy, so primitives
    clone the kernel once (the copy), not once each as a backup; a failure the strategy
    catches and goes on from is rolled back by transaction(): the same partial rewrite
    of cache_write as above, then the strategy's next step applies to the intact kernel."""
    from xdsl.dialects import func

    from tensorkiln.schedule.nest import transaction
    from tensorkiln.schedule.schedule import schedule_on_clone

    kernel = tk.parse_module(TRIANGLE).ops.first
    clones = []
    original_clone = func.FuncOp.clone
    monkeypatch.setattr(func.FuncOp, "clone", lambda self, *a, **k: clones.append(1) or original_clone(self, *a, **k))
    before = str(kernel)

    def strategy(s: Schedule) -> None:
        intact = str(s.kernel)
        with pytest.raises(ScheduleError, match="cache_write"):
            with transaction():
                s.cache_write("o")
        assert str(s.kernel) == intact
        s.split("i", 2)
        s.unroll("i.inner")

    trial = schedule_on_clone(kernel, strategy)
    assert len(clones) == 2  # the copy, and the backup of the one transaction
    assert str(kernel) == before and "i.inner" in str(trial)
    trial.verify()


def test_replay_errors() -> None:
    kernel = matmul_kernel()
    with pytest.raises(ScheduleError, match="not JSON"):
        Schedule.replay(kernel, "[{")
    with pytest.raises(ScheduleError, match="unknown primitive 'spilt'"):
        Schedule.replay(kernel, [{"primitive": "spilt", "args": {}}])
    with pytest.raises(ScheduleError, match="bad arguments"):
        Schedule.replay(kernel, [{"primitive": "split", "args": {"loop": "i0"}}])
    with pytest.raises(ScheduleError, match="step 1"):
        Schedule.replay(kernel, [{"primitive": "split", "args": {"loop": "i0", "factor": 2}}, {"primitive": "x"}])
    with pytest.raises(ScheduleError, match=r"replaying step 1.*'i0'"):
        Schedule.replay(
            kernel,
            [
                {"primitive": "split", "args": {"loop": "i0", "factor": 2}},
                {"primitive": "split", "args": {"loop": "i0", "factor": 2}},
            ],
        )


def test_fuse_outer_loops_after_tile_keeps_tail_bounds_inside(rng: np.random.Generator) -> None:
    """Fusing the loops around a tiled pair moves only the ops between those two loops:
    the tiles' tail bounds (computed from the tile loops) stay inside them."""
    b = tk.GraphBuilder()
    module = b.finish(b.broadcast_to(b.input("x", (3, 1, 7, 1)), (3, 5, 7, 9)))
    data = rng.standard_normal((3, 1, 7, 1)).astype(np.float32)

    def schedule(s: Schedule) -> None:
        s.tile("i2", "i3", 4, 4)
        s.fuse("i0", "i1")

    check(module, schedule, [data], np.broadcast_to(data, (3, 5, 7, 9)))


def test_deferred_verification_gives_the_same_kernel() -> None:
    """Without a verify after each step (the tuner's instantiation) the same trace gives
    the same kernel, and a failing primitive still leaves the kernel as it was."""
    from tensorkiln.schedule.nest import deferred_verification

    def steps(s: Schedule) -> None:
        s.tile("i0", "i1", 4, 16)
        s.cache_write("i1.outer")
        s.unroll("i0.inner")
        s.vectorize("i1.inner")

    checked = Schedule(matmul_kernel())
    steps(checked)
    deferred = Schedule(matmul_kernel())
    with deferred_verification():
        steps(deferred)
        assert_fails(deferred, lambda: deferred.split("i9", 4), "split:", "'i9'")
    deferred.kernel.verify()
    assert str(deferred.kernel) == str(checked.kernel)
    assert deferred.trace == checked.trace
