"""The cost model that decides which loop of a kernel runs in parallel and on how many
threads (``schedule/strategies/parallel.py``), checked for 2-, 4- and 16-core machines:
small kernels stay serial everywhere, large ones split into enough pieces for the cores,
and a loop's thread cap is what its work pays for, whatever the machine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from strategy_helpers import scheduled_loops

import tensorkiln as tk
from tensorkiln.dialects import loop
from tensorkiln.schedule import kernels
from tensorkiln.schedule.nest import static_trip_bound
from tensorkiln.schedule.strategies.parallel import (
    BALANCE_SLACK,
    COSTS,
    ELEMENT_NS,
    PIECES_PER_THREAD,
    PRODUCT_NS,
    ThreadCosts,
    assumed_cores,
    best_thread_count,
    break_even_work,
    fusion_depth,
    loop_time_ns,
    target_cores,
)

CORES = (2, 4, 16)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def parallel_loops(module) -> dict[str, list[tuple[int | None, int | None]]]:
    """Kernel name -> (trips, thread cap) of each of its parallel loops."""
    found = {}
    for kernel in kernels(module):
        loops = [op for op in kernel.walk() if isinstance(op, loop.ForOp) and op.kind.data == "parallel"]
        found[kernel.sym_name.data] = [(static_trip_bound(f), loop.max_threads(f)) for f in loops]
    return found


def schedule_for(module, cores: int):
    with assumed_cores(cores):
        return parallel_loops(scheduled_loops(module, cores=None))


# ---------------------------------------------------------------------------
# the model itself


def test_one_thread_is_the_serial_time_and_more_threads_pay_the_fork_join():
    assert loop_time_ns(50_000, 64, 1) == 50_000
    t2 = loop_time_ns(50_000, 64, 2)
    assert t2 == 25_000 + COSTS.launch_ns + 2 * COSTS.per_thread_ns
    # an uneven split: the busiest thread has 3 of 5 iterations
    assert loop_time_ns(5_000, 5, 2) == 3_000 + COSTS.launch_ns + 2 * COSTS.per_thread_ns


def test_break_even():
    """Just below the break-even work a kernel stays serial, just above it gets 2+ threads."""
    for ns in (PRODUCT_NS, ELEMENT_NS):
        work = break_even_work(ns)
        assert best_thread_count(0.9 * work * ns, 64) == 1
        assert best_thread_count(1.1 * work * ns, 64) >= 2


def test_threads_grow_with_work_and_never_exceed_trips():
    counts = [best_thread_count(ns, 1000) for ns in (1e3, 1e4, 1e5, 1e6, 1e7)]
    assert counts == sorted(counts) and counts[0] == 1 and counts[-1] >= 64
    for trips in (2, 3, 7, 16):
        assert best_thread_count(1e9, trips) <= trips
    # unknown work: as many as allowed
    assert best_thread_count(None, 16, most=8) == 8


def test_the_cap_is_the_point_where_another_thread_costs_more_than_it_saves():
    serial, trips = 20_000.0, 64
    n = best_thread_count(serial, trips)
    assert 2 <= n < 16  # a 20 us loop is not worth 16 threads
    assert loop_time_ns(serial, trips, n) <= loop_time_ns(serial, trips, n + 1)
    assert loop_time_ns(serial, trips, n) < loop_time_ns(serial, trips, n - 1)


def test_costlier_launches_make_fewer_loops_parallel():
    cheap, dear = ThreadCosts(launch_ns=500, per_thread_ns=100), ThreadCosts(launch_ns=5_000, per_thread_ns=1_000)
    assert best_thread_count(4_000, 64, cheap) >= 2 and best_thread_count(4_000, 64, dear) == 1
    assert best_thread_count(1e6, 1000, cheap) > best_thread_count(1e6, 1000, dear)


def test_assumed_cores():
    with assumed_cores(16):
        assert target_cores() == 16
        with assumed_cores(4):
            assert target_cores() == 4
        assert target_cores() == 16
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="core count"):
            with assumed_cores(bad):
                pass


# ---------------------------------------------------------------------------
# decisions on kernels, for 2, 4 and 16 cores


def _mlp_layer(rng):
    b = tk.GraphBuilder()
    return b.finish(b.relu(b.dense(b.input("x", (8, 784)), f32(rng, 512, 784))))


@pytest.mark.parametrize("cores", CORES)
def test_small_kernels_stay_serial_on_any_machine(rng, cores):
    b = tk.GraphBuilder()
    x = b.input("x", (8, 16))
    module = b.finish(b.relu(b.matmul(x, b.input("w", (16, 16)))))
    b = tk.GraphBuilder()
    small_conv = b.finish(b.relu(b.conv2d(b.input("x", (1, 8, 8, 8)), f32(rng, 8, 8, 3, 3), None, padding=1)))
    for m in (module, small_conv):
        assert all(not loops for loops in schedule_for(m, cores).values())


@pytest.mark.parametrize("cores", CORES)
def test_mlp_layer_at_batch_8_splits_rows_and_column_blocks(rng, cores):
    """dense 8x784 -> 512 (3.2M multiply-adds, ~80 us): the 8 column panels are enough
    pieces for 2 cores; for 4 and 16 they are fused with the 2 row blocks (16 pieces).
    Each loop is worth as many threads as it has pieces (the cap is not a machine's)."""
    (loops,) = [v for k, v in schedule_for(_mlp_layer(rng), cores).items() if k.startswith("dense")]
    ((trips, cap),) = loops
    assert trips == (8 if cores == 2 else 16) and cap == trips


@pytest.mark.parametrize("cores", CORES)
def test_depthwise_conv_gets_pieces_for_every_core(rng, cores):
    """MobileNet's first depthwise conv (32 channels on 112x112): the pixel loops are
    fused until each core has PIECES_PER_THREAD pieces."""
    b = tk.GraphBuilder()
    x = b.input("x", (1, 32, 112, 112))
    module = b.finish(b.relu(b.conv2d(x, f32(rng, 32, 1, 3, 3), None, padding=1, groups=32)))
    (loops,) = [v for k, v in schedule_for(module, cores).items() if k.startswith("conv2d")]
    ((trips, cap),) = loops
    assert trips >= PIECES_PER_THREAD * cores
    assert cap is None or cap >= cores


def test_more_cores_fuse_more_loops(rng):
    """An elementwise kernel on (3, 4, 50, 256): its outer loops fused until the pieces
    suffice: 3 x 4 = 12 for 2 cores (8 wanted), 3 x 4 x 50 for 4 (16 wanted) and 16
    (40 wanted: ~15 us of work is worth 10 threads)."""
    b = tk.GraphBuilder()
    x = b.input("x", (3, 4, 50, 256))
    module = b.finish(b.tanh(b.add(x, x)))
    trips = {c: next(iter(schedule_for(module, c).values()))[0][0] for c in CORES}
    assert trips == {2: 12, 4: 600, 16: 600}


@pytest.mark.parametrize("cores", CORES)
def test_a_mid_sized_kernel_is_capped_below_the_machine(rng, cores):
    """A ~15 us elementwise kernel pays for a few threads, not 16."""
    b = tk.GraphBuilder()
    x = b.input("x", (150, 1000))
    module = b.finish(b.relu(b.add(x, x)))
    ((trips, cap),) = next(iter(schedule_for(module, cores).values()))
    assert cap is not None and 2 <= cap < 16


def test_schedules_with_a_cap_give_the_same_results(rng):
    """The cap changes how many threads run, never what they compute."""
    module = _mlp_layer(rng)
    lib = tk.build(module)
    x = f32(rng, 8, 784)
    from tensorkiln.runtime.threads import num_threads

    results = []
    for n in (1, 2, 5):
        with num_threads(n):
            results.append(lib(x))
    for r in results[1:]:
        np.testing.assert_array_equal(results[0], r)


# ---------------------------------------------------------------------------
# balance: how the parallel loop's pieces share out among the threads


def test_fusion_depth_fuses_until_the_threads_are_balanced():
    # enough pieces and balanced: the outer loop alone
    assert fusion_depth([56, 10], 1e6, 2) == 1
    assert fusion_depth([14, 4, 3], 1e6, 2) == 1
    # 9 rows on 2 threads are 5 + 4: the column blocks join (36 pieces, 18 + 18)
    assert fusion_depth([9, 4], 1e6, 2) == 2
    # too few pieces for 4 threads: fused until 16 or more
    assert fusion_depth([14, 4, 3], 1e6, 4) == 2
    # an unknown extent ends the known loops; too few known pieces fuse it in
    assert fusion_depth([None, 4], 1e6, 2) == 1
    assert fusion_depth([3, None, 5], 1e6, 2) == 2
    assert fusion_depth([2, 3], 1e6, 2) == 2


def _dense_conv(rng, channels: int, out_channels: int, size: int, kernel: int, stride: int):
    b = tk.GraphBuilder()
    x = b.input("x", (1, channels, size, size))
    weight = f32(rng, out_channels, channels, kernel, kernel)
    return b.finish(b.relu(b.conv2d(x, weight, None, strides=stride, padding=kernel // 2)))


#: ResNet-style dense convs (channels, out channels, image size, kernel, stride), some
#: with odd image sizes
DENSE_CONVS = [
    (64, 64, 56, 3, 1),
    (64, 128, 56, 3, 2),
    (128, 128, 28, 3, 1),
    (64, 128, 56, 1, 2),
    (256, 256, 14, 3, 1),
    (128, 256, 28, 3, 2),
    (512, 512, 7, 3, 1),
    (96, 96, 17, 3, 1),
    (64, 80, 9, 3, 1),
]


def _busiest_over_mean(trips: int, threads: int) -> float:
    """The busiest thread's iterations over the mean, with the pool's even pieces."""
    return math.ceil(trips / threads) * threads / trips


@pytest.mark.parametrize("cores", (2, 4, 8, 16))
@pytest.mark.parametrize("shape", DENSE_CONVS, ids=lambda s: "x".join(map(str, s)))
def test_dense_convs_split_into_balanced_whole_tiles(rng, shape, cores):
    """A dense conv's (or 1x1 conv's dense) parallel loop gives every thread it runs on (its cap, at most the
    cores) the same work within a few percent (the 14 rows of a 14x14 image on 4 threads
    are 4, 4, 3, 3: the channel blocks join them),
    and it holds whole register tiles: the tile's unrolled rows and vectorized channels
    run inside it, never split between threads."""
    module = _dense_conv(rng, *shape)
    with assumed_cores(cores):
        scheduled = scheduled_loops(module, cores=None)
    # (a 1x1 conv is a dense layer on its pixels)
    (kernel,) = [k for k in kernels(scheduled) if k.sym_name.data.startswith(("conv2d", "dense"))]
    (parallel,) = [op for op in kernel.walk() if isinstance(op, loop.ForOp) and op.kind.data == "parallel"]
    trips, cap = static_trip_bound(parallel), loop.max_threads(parallel)
    threads = min(cap or cores, cores)
    assert trips >= min(threads * PIECES_PER_THREAD, trips)
    # within the slack of the best fusion, itself within a piece of even; unless every
    # loop outside the register tile is in the parallel loop already (no block loop left)
    blocks_left = [f for f in parallel.body.block.ops if isinstance(f, loop.ForOp) and f.loop_name.data.endswith("outer")]
    assert _busiest_over_mean(trips, threads) <= 1.05 + BALANCE_SLACK or not blocks_left, (trips, threads)
    inside = {op.kind.data for op in parallel.body.block.walk() if isinstance(op, loop.ForOp)}
    assert {"unrolled", "vectorized"} <= inside, inside
