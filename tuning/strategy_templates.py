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
from ..schedule.strategies import strategies_for
from .defaults import kernel_facts
from .space import Config, ConfigSpace
from .task import Task


@dataclass
class StrategyTemplate:
    """A registered strategy with decisions, as a template (same interface as
    :class:`~tensorkiln.tuning.templates.Template`)."""

    strategy: Any
    priority: int

    @property
    def name(self) -> str:
        return f"strategy:{self.strategy.name}"

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
        self.strategy.schedule(s, kernel_facts(task, kernel), **dict(cfg.values))
        return s.trace


def strategy_templates(task: Task) -> list[StrategyTemplate]:
    """Templates of the strategies with decisions that serve and apply to ``task``."""
    info = kernel_facts(task)
    out = []
    for strategy in strategies_for(info):
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
