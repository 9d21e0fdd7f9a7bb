"""The ``tensorkiln`` parser: one subcommand per module of ``commands/``, errors as one line."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

import tensorkiln as tk

from .commands import COMMANDS
from .common import USER_ERRORS, UserError

#: what a bare ``tensorkiln`` (or ``tensorkiln --models mlp``, the old form) runs
DEFAULT_COMMAND = "demo"

#: exit codes
OK, USER_ERROR, USAGE_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tensorkiln",
        description="tensorkiln, a deep-learning compiler: compile, run, benchmark, tune and draw models.",
        epilog="With no command, runs 'tensorkiln demo'. 'tensorkiln COMMAND --help' describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"tensorkiln {tk.__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", help="on an error, show the Python traceback")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(
            command.NAME, parents=[common], help=command.HELP, description=command.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    """A bare ``tensorkiln`` and the old ``tensorkiln --models mlp`` run the demo."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return [DEFAULT_COMMAND, *argv]
    return argv


def _one_line(error: BaseException) -> str:
    """The error's message on one line, after its type's name (but for our own UserError)."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, UserError) else f"{type(error).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 user error, 2 usage error).

    Example: ``main(["compile", "model.mlir", "-o", "model.tk"])``
    """
    args = build_parser().parse_args(_with_default_command(list(sys.argv[1:] if argv is None else argv)))
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("tensorkiln: interrupted", file=sys.stderr)
        return USER_ERROR
    except Exception as error:  # every failure is reported as one line; --traceback shows where
        if args.traceback:
            traceback.print_exc()
        else:
            hint = "" if isinstance(error, USER_ERRORS) else " (an internal error? rerun with --traceback and report it)"
            print(f"tensorkiln {args.command}: error: {_one_line(error)}{hint}", file=sys.stderr)
        return USER_ERROR
