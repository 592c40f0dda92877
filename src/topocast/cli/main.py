"""The ``topocast`` command.

Each subcommand lives in its own module ``topocast.cli.cmd_<name>`` exposing
``register(subparsers)``, which adds its parser and sets ``func`` (called with the parsed
arguments, returns the exit status). Errors a user can cause (:class:`TopocastError`) print
one line on stderr and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from typing import NoReturn

from ..errors import TopocastError

# Order = order in ``topocast --help``. A module that is missing is skipped, so a partial
# checkout still runs.
COMMAND_MODULES = (
    "topology",
    "planners",
    "plan",
    "simulate",
    "compare",
    "bounds",
    "sweep",
    "experiment",
    "redistribute",
    "run",
    "probe",
    "testbed",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: with that one subcommand only (what running a
    command needs: the other commands' modules are neither imported nor their options
    built)."""
    parser = argparse.ArgumentParser(
        prog="topocast",
        description="Plan, predict and perform collective data movement on heterogeneous networks.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"topocast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if only is None else (only,):
        try:
            mod = importlib.import_module(f"topocast.cli.cmd_{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"topocast.cli.cmd_{name}":
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in COMMAND_MODULES else None
    parser = build_parser(only=command)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except TopocastError as exc:
        print(f"topocast: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("topocast: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def console_script() -> NoReturn:
    """The installed ``topocast`` command: :func:`main`, then the exit handlers and a flush
    of the standard streams, then the process ends without the interpreter's module-by-module
    teardown (tens of milliseconds with numpy and rich loaded, after the work is done).
    ``python -m topocast`` exits normally, so profilers that write at exit still can."""
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # reader gone, or stream closed
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
