"""The default strategies (``schedule/strategies``) as templates: each registered
strategy's tunable ``decisions`` become knobs, its keyword defaults the fallback config.

A strategy may re-lay out a constant argument (``transform_layout``: the model passes
the weight packed at compile time); the measurement passes that argument permuted.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from ..schedule import Schedule, ScheduleError
from .space import Config, ConfigSpace
from .task import Task

#: a strategy's unset decision (``vectors=None``: the strategy chooses) is knob value None
_UNSET = None


def _registry():
    try:
        from ..schedule.strategies import STRATEGIES, kernel_info, strategies_for
    except ImportError:  # an older schedule package without the registry
        return None
    return STRATEGIES, kernel_info, strategies_for


@dataclass
class StrategyTemplate:
    """A registered strategy with decisions, as a template (same interface as
    :class:`~tensorkiln.tuning.templates.Template`)."""

    strategy: Any
    priority: int

    @property
    def name(self) -> str:
        return f"strategy:{self.strategy.name}"

    def _info(self, task: Task, kernel=None):
        _, kernel_info, _ = _registry()
        from .defaults import lanes_of

        return kernel_info(kernel if kernel is not None else task.kernel(), lanes_of(task.target),
                           frozenset(task.constants))

    def space(self, task: Task, lanes: int) -> ConfigSpace:
        space = ConfigSpace()
        for name, values in self.strategy.decisions.items():
            default = self._defaults().get(name)
            choices = list(values) + ([default] if default not in values else [])
            space.define_knob(name, choices)
        return space

    def _defaults(self) -> dict[str, Any]:
        parameters = inspect.signature(self.strategy.schedule).parameters
        return {n: p.default for n, p in parameters.items() if n in self.strategy.decisions}

    def default_config(self, space: ConfigSpace, lanes: int) -> Config | None:
        return space.from_values(self._defaults())

    def trace(self, task: Task, cfg: Config) -> list[dict[str, Any]]:
        kernel = task.kernel()
        s = Schedule(kernel)
        self.strategy.schedule(s, self._info(task, kernel), **dict(cfg.values))
        return s.trace


def strategy_templates(task: Task) -> list[StrategyTemplate]:
    """Templates of the strategies with decisions that serve and apply to ``task``."""
    registry = _registry()
    if registry is None:
        return []
    _, kernel_info, strategies_for = registry
    from .defaults import lanes_of

    try:
        info = kernel_info(task.kernel(), lanes_of(task.target), frozenset(task.constants))
        found = strategies_for(info)
    except Exception:  # noqa: BLE001 - the registry is someone else's moving code: no templates then
        return []
    out = []
    for strategy in found:
        if not strategy.decisions:
            continue
        template = StrategyTemplate(strategy, priority=5)
        try:
            space = template.space(task, info.lanes)
            template.trace(task, template.default_config(space, info.lanes))
        except (ScheduleError, ValueError, KeyError, TypeError):
            continue
        out.append(template)
    return out
