import signal
import sys


def _terminated_while_loading(signum, frame):
    """SIGTERM before ``main`` installs its own handler (while the command line loads):
    nothing has started, nothing to clean up; said like any other termination."""
    print("topocast: terminated (SIGTERM)", file=sys.stderr)
    raise SystemExit(143)


def _interrupted_while_loading(signum, frame):
    """Ctrl-C before ``main`` installs its own handler: the same, said as ``main`` says it."""
    print("topocast: interrupted", file=sys.stderr)
    raise SystemExit(130)


signal.signal(signal.SIGTERM, _terminated_while_loading)
signal.signal(signal.SIGINT, _interrupted_while_loading)

from .cli.main import EXIT_INTERRUPTED, EXIT_TERMINATED, exit_now, main  # noqa: E402  (after the handlers)

code = main()
if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):  # see exit_now: a signal may have left an import lock held
    exit_now(code)
raise SystemExit(code)
