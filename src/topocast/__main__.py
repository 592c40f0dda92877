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

from .cli.main import main  # noqa: E402  (after the handler: this import takes a while on a loaded machine)

raise SystemExit(main())
