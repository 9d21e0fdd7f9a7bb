"""Build and time ONE kernel alone: the work a measurement worker does.

A request is a plain dict (it crosses process and machine boundaries by pickle)::

    {"module": text of a module holding the scheduled ``@kernel`` (and any micro-kernels),
     "target": "llvm", "args": [[shape, dtype], ...], "outputs": [indices],
     "seed": 0, "expected": [ndarray per output] or None,
     "number": 0 (auto), "repeat": 3, "min_repeat_ms": 50, "warmup": 1, "flush_cache": False}

and the answer is ``{"error": code, "message": str, "costs": [seconds per call, one per
repeat], "compile_s": float}``. Inputs are random (seeded, so every process makes the
same ones); outputs start from the same random values, so a candidate that skips an
element differs from the reference there. Each timing round places the buffers
elsewhere in their pages (see :func:`random_arguments`). An argument the schedule re-laid out
(``transform_layout``, what a model's packed constant weight gets) is passed permuted,
with the same values. Nothing here catches a crash or a hang: the
executor running this (``tuning/executor.py``) is the isolation.
"""

from __future__ import annotations

import ctypes
import time
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from .record import ErrorCode

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64, "i32": np.int32,
           "i8": np.int8, "i1": np.bool_, "i16": np.int16}

#: per process: (module text, target) -> compiled kernel, a few only
_COMPILED: dict[tuple[str, str], Any] = {}


#: cache lines in a 4 KiB page: where in its page an argument starts
_LINES_PER_PAGE = 64


def random_arguments(args: Sequence[tuple[Sequence[int], str]], seed: int, placement: int = 0) -> list[np.ndarray]:
    """One array per kernel argument: floats standard normal, integers zero (index
    inputs must stay in bounds), all from ``seed``.

    Every array starts on a cache line, at a line of its page that ``placement`` and
    the argument's index choose: a small kernel's speed can depend by 2x on where its
    buffers sit relative to each other in their pages (a store and a later load 4 KiB
    apart look dependent to the CPU), so the timing rounds use different placements
    and the record's median is the speed to expect wherever a model's memory plan puts
    the buffers."""
    rng = np.random.default_rng(seed)
    arrays = []
    for k, (shape, dtype) in enumerate(args):
        if dtype not in _DTYPES:
            raise ValueError(f"kernel argument of element type {dtype} is not supported by the measurer")
        np_type = _DTYPES[dtype]
        shape = tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(np_type).itemsize
        raw = np.empty(nbytes + 2 * 4096, np.uint8)
        line = (placement * 17 + k * 5) % _LINES_PER_PAGE  # 17, 5: odd strides reach every line
        start = -raw.ctypes.data % 4096 + 64 * line
        array = raw[start : start + nbytes].view(np_type).reshape(shape)
        if np.issubdtype(np_type, np.floating):
            array[...] = rng.standard_normal(shape)
        else:
            array[...] = 0
        arrays.append(array)
    return arrays


def compile_kernel(module_text: str, target: str) -> tuple[Any, Any]:
    """JIT the ``@kernel`` of a module text alone; returns (ctypes function, owner)."""
    key = (module_text, target)
    if key in _COMPILED:
        return _COMPILED[key]
    from ..backends.llvm.jit import jit_compile
    from ..driver import lower_to_llvm_dialect, parse_target
    from .task import KERNEL_SYMBOL, parse_kernel_module

    module, kernel = parse_kernel_module(module_text)
    n_args = len(kernel.function_type.inputs.data)
    lower_to_llvm_dialect(module, target=target)
    jit = jit_compile(module, parse_target(target).config)
    function = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n_args)(jit.address(KERNEL_SYMBOL))
    if len(_COMPILED) >= 4:
        _COMPILED.pop(next(iter(_COMPILED)))
    _COMPILED[key] = (function, jit)
    return function, jit


def _flush_cache(scratch: np.ndarray) -> None:
    scratch += 1.0


def time_calls(
    call, number: int, repeat: int, min_repeat_ms: float, warmup: int, flush_cache: bool,
    max_call_s: float | None = None,
) -> list[float]:
    """Seconds per call, one figure per repeat (each the mean over ``number`` calls).

    ``number=0`` picks it: enough calls that one repeat lasts ``min_repeat_ms``.
    ``max_call_s``: a warm-up call slower than this is the only figure (the candidate is
    clearly slower than the best known; timing it further wastes the session)."""
    for _ in range(max(0, warmup)):
        start = time.perf_counter()
        call()
        once = time.perf_counter() - start
        if max_call_s is not None and once > max_call_s:
            return [once]
    costs = []
    if number <= 0:
        start = time.perf_counter()
        call()
        once = max(time.perf_counter() - start, 1e-7)
        number = max(1, int(np.ceil(min_repeat_ms / 1e3 / once)))
        if number == 1 and not flush_cache:
            costs.append(once)  # a call longer than a round is a round of its own
    scratch = np.zeros(8 * 1024 * 1024, np.float32) if flush_cache else None  # 32 MiB > L3
    while len(costs) < max(1, repeat):
        if scratch is not None:
            _flush_cache(scratch)
        start = time.perf_counter()
        for _ in range(number):
            call()
        costs.append((time.perf_counter() - start) / number)
    return costs


def run_kernel(
    module_text: str, target: str, args, outputs: Sequence[int], seed: int, placement: int = 0
) -> tuple[list[np.ndarray], Any]:
    """Run the kernel once on the seeded inputs (placed as ``placement`` says, see
    :func:`random_arguments`); returns its output arrays and a closure calling it again
    on the same buffers."""
    function, _ = compile_kernel(module_text, target)
    arrays = random_arguments(args, seed, placement)
    for index, (permutation, block) in argument_layouts(module_text).items():
        arrays[index] = _relaid(arrays[index], permutation, block)
    pointers = [a.ctypes.data for a in arrays]

    def call(arrays: list[np.ndarray] = arrays) -> None:  # holds the buffers: the pointers stay valid
        function(*pointers)

    call()
    return [arrays[k] for k in outputs], call


def argument_layouts(module_text: str) -> dict[int, tuple[list[int], list[int] | None]]:
    """The arguments the scheduled kernel takes re-laid out (``transform_layout``: in a
    model, a constant weight packed at compile time): permutation and block of each."""
    from ..dialects import loop
    from ..schedule.layout import recorded_blocks, recorded_layouts
    from .task import parse_kernel_module

    if loop.LAYOUTS_ATTR not in module_text:  # cheap: most kernels take every argument as it is
        return {}
    kernel = parse_kernel_module(module_text)[1]
    blocks = recorded_blocks(kernel)
    return {k: (perm, blocks.get(k)) for k, perm in recorded_layouts(kernel).items()}


def _relaid(array: np.ndarray, permutation: Sequence[int], block: Sequence[int] | None = None) -> np.ndarray:
    """``array`` re-laid out as the kernel takes it, cache-line aligned (what the
    compiled model's packed weight is): the same values, so the outputs still match
    the unscheduled kernel's."""
    from ..runtime.graph_executor import aligned_bytes
    from ..schedule.strategies.packing import relaid_view

    packed = relaid_view(array, permutation, block)
    out = aligned_bytes(array.nbytes)[: array.nbytes].view(array.dtype).reshape(packed.shape)
    out[...] = packed  # the one copy, straight into the aligned buffer
    return out


def matches(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal up to float reassociation (reductions may be summed in another order)."""
    if not np.issubdtype(expected.dtype, np.floating):
        return bool(np.array_equal(got, expected))
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0))
    return bool(np.allclose(got, expected, rtol=1e-3, atol=1e-4 * scale, equal_nan=True))


def reference_outputs(request: dict[str, Any]) -> list[np.ndarray]:
    """The outputs of the unscheduled kernel (``request["module"]``) on the seeded inputs."""
    outputs, _ = run_kernel(request["module"], request["target"], request["args"], request["outputs"], request["seed"])
    return [o.copy() for o in outputs]


def measure_candidate(request: dict[str, Any]) -> dict[str, Any]:
    """Compile, check and time one scheduled kernel (see the module docstring)."""
    start = time.perf_counter()
    try:
        compile_kernel(request["module"], request["target"])
    except Exception as error:  # noqa: BLE001 - any failure to lower/JIT is this candidate's error
        return {"error": ErrorCode.COMPILE_ERROR.value, "message": _short(error), "costs": [], "compile_s": 0.0}
    compile_s = time.perf_counter() - start
    try:
        outputs, call = run_kernel(request["module"], request["target"], request["args"], request["outputs"], request["seed"])
    except Exception as error:  # noqa: BLE001
        return {"error": ErrorCode.RUNTIME_ERROR.value, "message": _short(error), "costs": [], "compile_s": compile_s}
    expected = request.get("expected")
    if expected is not None:
        for k, (got, want) in enumerate(zip(outputs, expected)):
            if not matches(got, want):
                worst = float(np.nanmax(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
                return {
                    "error": ErrorCode.WRONG_RESULT.value,
                    "message": f"output {k} differs from the reference (max abs diff {worst:.3g})",
                    "costs": [],
                    "compile_s": compile_s,
                }
    costs: list[float] = []
    for placement in range(max(1, int(request.get("repeat", 3)))):  # a round per buffer placement
        if placement:
            _, call = run_kernel(request["module"], request["target"], request["args"], request["outputs"],
                                 request["seed"], placement)
        rounds = time_calls(
            call,
            int(request.get("number", 0)),
            1,
            float(request.get("min_repeat_ms", 50.0)),
            int(request.get("warmup", 1)),
            bool(request.get("flush_cache", False)),
            request.get("max_call_s"),
        )
        costs += rounds[-1:]
        if len(rounds) == 1 and request.get("max_call_s") is not None and rounds[0] > request["max_call_s"]:
            break  # clearly slower than the best known: one figure is enough
    return {"error": ErrorCode.NO_ERROR.value, "message": "", "costs": costs, "compile_s": compile_s}


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    if len(text) > 500:
        text = text[:500] + "..."
    return text or traceback.format_exc(limit=2)
