"""The subcommands, one module each: ``NAME``, ``HELP``, ``add_arguments(parser)``, ``run(args) -> int``."""

from . import bench, compile, demo, run, show, tune

#: in the order ``tensorkiln --help`` lists them
COMMANDS = [compile, run, bench, tune, show, demo]

__all__ = ["COMMANDS"]
