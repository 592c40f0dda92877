import signal
import sys


def _terminated_while_loading(signum, frame):
    """SIGTERM before ``main`` installs its own handler (while the command line loads):
    nothing has started, nothing to clean up; said like any other termination."""
    print("topocast: terminated (SIGTERM)", file=sys.stderr)
    raise SystemExit(143)


signal.signal(signal.SIGTERM, _terminated_while_loading)

from .cli.main import main  # noqa: E402  (after the handler: this import takes a while on a loaded machine)

raise SystemExit(main())
