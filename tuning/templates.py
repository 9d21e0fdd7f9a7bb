"""AutoTVM-style templates: knobs declared over a kernel's loop structure, applied
with the schedule primitives, so every config is a schedule trace.

A :class:`Template` declares its knobs on a :class:`ConfigSpace` from a task's loops
(``define``), turns a config into primitives on a :class:`Schedule` (``apply``) and
names the config equal to the default strategy's choices (``default_values``), the
fallback when a task is untuned. Templates are registered in ``TEMPLATES`` with a
priority; :func:`template_for` picks the first that matches a task::

    tmpl = template_for(task)
    space = tmpl.space(task, lanes=16)
    trace = tmpl.trace(task, space[123], lanes=16)     # [{"primitive": "tile", ...}, ...]

``tile2d`` fits any kernel whose loops start with a chain of output loops ``i0..``
(matrix products, convolutions, pooling, elementwise): two output axes are tiled, the
tile accumulated in registers over the reductions (cache_write), an input optionally
packed (cache_read) at a tile loop, rows unrolled, columns vectorized, the outermost
loop optionally parallel. ``matmul`` is the same template whose default config is the
GEMM register tile of ``schedule/strategies.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..dialects import loop
from ..schedule import Schedule, ScheduleError
from ..schedule.nest import static_trip_bound
from ..schedule.padding import padded_arguments
from ..schedule.strategies.analysis import first_reduction, output_loops, tile_factor
from .space import Config, ConfigSpace
from .strategy_templates import strategy_templates
from .task import Task


@dataclass
class LoopInfo:
    """The loops of an unscheduled kernel: output loops (role ``spatial``, te-to-loop's
    ``i*``) and its first reduction's (role ``reduction``, ``k*``) with their trip counts, and the number of input buffers."""

    outputs: list[str]
    extents: dict[str, int]
    reductions: list[str]
    n_inputs: int
    #: inputs read through bounds-checked window taps (a padded conv's data)
    padded: tuple[int, ...] = ()

    @staticmethod
    def of(task: Task) -> LoopInfo:
        s = Schedule(task.kernel())
        outputs, reductions = output_loops(s.kernel), first_reduction(s.kernel)
        extents = {n: s.extent(n) or 0 for n in outputs + reductions}
        n_inputs = len(task.arg_shapes) - len(task.outputs)
        return LoopInfo(outputs, extents, reductions, n_inputs, tuple(padded_arguments(s.kernel)))


def _tile_axes(info: LoopInfo) -> list[list[int]]:
    """Pairs of output axes to tile: the last two, and (channel, last) for rank >= 3."""
    n = len(info.outputs)
    pairs = [[n - 2, n - 1]]
    if n >= 3:
        pairs.append([1, n - 1])
    return pairs


@dataclass
class Template:
    """A named schedule template; see the module docstring."""

    name: str
    matches: Callable[[Task, LoopInfo], bool]
    priority: int = 0
    default_overrides: dict[str, Any] = field(default_factory=dict)

    def space(self, task: Task, lanes: int) -> ConfigSpace:
        info = LoopInfo.of(task)
        space = ConfigSpace()
        rank = len(info.outputs)
        space.define_knob("axes", _tile_axes(info) if rank >= 2 else [[0, 0]])
        space.define_knob("tile_rows", [1, 2, 3, 4, 6, 8] if rank >= 2 else [1])
        space.define_knob("tile_cols", sorted({max(1, lanes * m // 2) for m in (1, 2, 4, 6, 8, 12, 16)}))
        space.define_knob("order", ["rows_outer", "cols_outer"] if rank >= 2 else ["rows_outer"])
        space.define_knob("cache_write", [True, False] if info.reductions else [False])
        packs: list[Any] = [None]
        if info.reductions:
            packs += [[b, where] for b in range(min(2, info.n_inputs)) for where in ("outer", "inner")]
        space.define_knob("pack", packs)
        space.define_knob("unroll_rows", [True, False] if rank >= 2 else [False])
        space.define_knob("vectorize_cols", [True, False])
        space.define_knob("parallel", [False, True])
        return space

    def default_values(self, space: ConfigSpace, lanes: int) -> dict[str, Any]:
        """The fallback config: the default strategy's register tile."""
        values = {name: list(knob.choices)[0] for name, knob in space.knobs.items()}
        values = {k: (list(v) if isinstance(v, tuple) else v) for k, v in values.items()}
        # the default strategy's tile: 6 x 4 vectors with 32 vector registers (AVX-512)
        values.update({"tile_rows": 6 if lanes >= 16 else 4, "tile_cols": 4 * lanes})
        values.update(self.default_overrides)
        return {k: v for k, v in values.items() if k in space.knobs and _has_choice(space, k, v)}

    def default_config(self, space: ConfigSpace, lanes: int) -> Config | None:
        values = self.default_values(space, lanes)
        if set(values) != set(space.knobs):
            return None
        return space.from_values(values)

    def apply(self, s: Schedule, cfg: Config, info: LoopInfo) -> None:
        """The primitives of ``cfg`` on the kernel (raises ScheduleError if illegal)."""
        if len(info.outputs) < 2:
            self._apply_1d(s, cfg, info)
            return
        a, b = (info.outputs[k] for k in cfg["axes"])
        if a == b:
            raise ValueError("tile2d: the two tiled axes must differ")
        tile_full(s, a, b, cfg["tile_rows"], cfg["tile_cols"])
        first, second = (f"{a}.outer", f"{b}.outer") if cfg["order"] == "rows_outer" else (f"{b}.outer", f"{a}.outer")
        if cfg["order"] == "cols_outer":
            s.reorder(first, second)
        if cfg["pack"] is not None:
            buffer, where = cfg["pack"]
            s.cache_read(buffer, first if where == "outer" else second)
        if cfg["cache_write"]:
            s.cache_write(second)
        if cfg["unroll_rows"]:
            s.unroll(f"{a}.inner")
        if cfg["vectorize_cols"]:
            _vectorize_innermost(s, b)
        if cfg["parallel"]:
            _parallel_outermost(s)

    def _apply_1d(self, s: Schedule, cfg: Config, info: LoopInfo) -> None:
        (x,) = info.outputs
        s.split(x, cfg["tile_cols"])
        if cfg["cache_write"]:
            s.cache_write(f"{x}.outer")
        if cfg["vectorize_cols"]:
            _vectorize_innermost(s, x)
        if cfg["parallel"]:
            _parallel_outermost(s)

    def trace(self, task: Task, cfg: Config) -> list[dict[str, Any]]:
        """The schedule trace of ``cfg`` on ``task``'s kernel."""
        s = Schedule(task.kernel())
        self.apply(s, cfg, LoopInfo.of(task))
        return s.trace


def tile_full(s: Schedule, a: str, b: str, rows: int, cols: int) -> None:
    """``tile(a, b, rows, cols)`` with full tiles where the size is known: a size the
    factor does not divide gets a shifted last tile (as the default strategies do), so
    the register tile keeps constant trip counts; the guarded tail where shifting is
    illegal. Loops ``a.outer, b.outer, a.inner, b.inner``."""
    for axis, want in ((a, rows), (b, cols)):
        factor, tail = tile_factor(s.extent(axis), want)
        try:
            s.split(axis, factor, tail=tail)
        except ScheduleError:
            if tail == "guard":
                raise
            s.split(axis, factor)
    s.reorder(f"{a}.outer", f"{b}.outer", f"{a}.inner", f"{b}.inner")


def _has_choice(space: ConfigSpace, name: str, value: Any) -> bool:
    try:
        space.knobs[name].index_of(value)
    except KeyError:
        return False
    return True


def _vectorize_innermost(s: Schedule, axis: str) -> None:
    """Vectorize ``axis.inner`` and its cache_write copies where they are innermost
    (without cache_write, a reduction inside keeps the tile loop scalar)."""
    for name in (f"{axis}.inner", f"{axis}.inner.init", f"{axis}.inner.write"):
        if name in s.loops():
            try:
                s.vectorize(name)
            except ScheduleError:
                pass


def _parallel_outermost(s: Schedule) -> None:
    """Parallelize the outermost loop with more than one iteration, going down the
    outer band (a loop alone in its parent) only."""
    nests = [op for op in s.kernel.body.block.ops if isinstance(op, loop.ForOp)]
    while len(nests) == 1:
        extent = static_trip_bound(nests[0])
        if extent is None or extent > 1:
            s.parallel(nests[0].loop_name.data)
            return
        nests = [op for op in nests[0].body.block.ops if isinstance(op, loop.ForOp)]


def _is_matrix_product(task: Task, info: LoopInfo) -> bool:
    anchor = loop.kernel_anchor(task.kernel())
    return anchor is not None and anchor.op in ("matmul", "batch_matmul", "dense") and bool(info.reductions)


def _has_output_loops(task: Task, info: LoopInfo) -> bool:
    return bool(info.outputs)


#: registered templates, tried by descending priority
TEMPLATES: list[Template] = [
    Template("matmul", _is_matrix_product, priority=10),
    Template("tile2d", _has_output_loops, priority=0, default_overrides={"cache_write": False, "vectorize_cols": False,
                                                                         "unroll_rows": False}),
]


def register_template(template: Template) -> None:
    """Add a template (a higher priority wins over the built-in ones)."""
    TEMPLATES.append(template)


def template_for(task: Task):
    """The highest-priority template matching ``task``: the built-in ones and the
    default strategies with decisions (``strategy_templates.py``)."""
    info = LoopInfo.of(task)
    found = [t for t in TEMPLATES if t.matches(task, info)] + strategy_templates(task)
    return max(found, key=lambda t: t.priority) if found else None
