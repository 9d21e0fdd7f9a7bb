"""Every tensorkiln dialect and pass, for xdsl-opt and tensorkiln-opt (entry point ``xdsl.universe``)."""

from xdsl.universe import Universe


def _graph():
    from tensorkiln.dialects.graph import Graph

    return Graph


def _te():
    from tensorkiln.dialects.te import TE

    return TE


def _loop():
    from tensorkiln.dialects.loop import Loop

    return Loop


def _pass(module: str, cls: str):
    def load():
        import importlib

        return getattr(importlib.import_module(f"tensorkiln.{module}"), cls)

    return load


DIALECTS = {"graph": _graph, "te": _te, "loop": _loop}

#: pass name -> (module, class); the one list of our passes
PASSES = {
}

TENSORKILN_UNIVERSE = Universe(
    all_dialects=DIALECTS,
    all_passes={name: _pass(*where) for name, where in PASSES.items()},
)
