"""The ``topocast`` command.

Each subcommand lives in its own module ``topocast.cli.cmd_<name>`` exposing
``register(subparsers)``, which adds its parser and sets ``func`` (called with the parsed
arguments, returns the exit status). Exit status: 0 when the command did what it was asked
(for ``run``: every destination holds verified bytes); 1 when it could not (a host that
could not be started, reached or heard from, a failed run or probe: :class:`RunFailure`);
2 for bad input (:class:`InputError` and the other errors a user can cause); 130 after
Ctrl-C and 143 after SIGTERM, both once the agents are stopped and temporary files removed.
Each error prints one line on stderr, never a traceback. A closed standard output (``topocast
... | true``) ends the command quietly with status 1 (its output was not delivered; the
status rich gives when a table meets a closed pipe).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import select
import signal
import sys
import threading
from typing import NoReturn

from ..errors import InputError, RunFailure, TopocastError

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


EXIT_FAILED = 1  # the input was fine, the command could not carry it out
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_STDOUT_CLOSED = EXIT_FAILED  # the output was not delivered (rich's status for it too)
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that the same
    clean-up runs (agents stopped, temporary directories removed)."""


# a signal came: whatever error follows is its consequence (a KeyboardInterrupt raised
# inside a C extension's import comes back as another error, numpy's "PyCapsule_Import
# could not import module ...")
_sigterm = threading.Event()
_sigint = threading.Event()


def _on_sigterm(signum, frame) -> None:
    _sigterm.set()
    raise Terminated()


def _on_sigint(signum, frame) -> None:
    _sigint.set()
    raise KeyboardInterrupt()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # the handler goes in before the parser is built (importing the subcommands takes a
    # while on a loaded machine), so that a SIGTERM at any moment after start-up says so
    in_main_thread = threading.current_thread() is threading.main_thread()
    _sigterm.clear()
    _sigint.clear()
    if in_main_thread:
        previous = signal.signal(signal.SIGTERM, _on_sigterm), signal.signal(signal.SIGINT, _on_sigint)
    try:
        command = argv[0] if argv and argv[0] in COMMAND_MODULES else None
        parser = build_parser(only=command)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_BAD_INPUT
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"topocast: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RunFailure as exc:
        print(f"topocast: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except TopocastError as exc:
        print(f"topocast: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Terminated:
        print("topocast: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("topocast: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:
        if _stdout_closed():  # the reader of our output is gone (``| head``): nothing to say
            _silence_stdout()
            return EXIT_STDOUT_CLOSED
        print(f"topocast: error: a connection or pipe closed unexpectedly ({exc})", file=sys.stderr)
        return EXIT_FAILED
    except Exception:
        if _sigterm.is_set():
            print("topocast: terminated (SIGTERM)", file=sys.stderr)
            return EXIT_TERMINATED
        if _sigint.is_set():
            print("topocast: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous[0])
            signal.signal(signal.SIGINT, previous[1])


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reading end is closed (``poll`` reports an
    error on the writing end): the one broken pipe that is the user's, not a failure."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit does not fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError):
        pass


def console_script() -> NoReturn:
    """The installed ``topocast`` command: :func:`main`, then :func:`exit_now` (the
    interpreter's module-by-module teardown costs tens of milliseconds with numpy and rich
    loaded, after the work is done). ``python -m topocast`` exits normally, so profilers that
    write at exit still can."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """The exit handlers and a flush of the standard streams, then the process ends without
    waiting for its other threads. After a signal this is the only safe end: the signal's
    exception may have landed inside an import (importlib's module locks are Python code), and
    a thread importing a module whose lock was left held would wait forever at exit."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader is gone: the output was not delivered
            code = code or EXIT_STDOUT_CLOSED
        except ValueError:  # stream closed
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
