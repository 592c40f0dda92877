"""Performing plans for real: agents over TCP, launchers, the coordinator (docs/design.md,
"Performing plans").

``perform(plan, launcher=make_launcher("local"))`` runs a plan and returns a
:class:`RunOutcome` whose ``result`` has the shape of a prediction (``kind="measured"``).
"""

from .coordinator import DEFAULT_CHUNK, RunError, RunOutcome, perform
from .launchers import LAUNCHERS, LocalLauncher, SSHLauncher, TestbedLauncher, make_launcher

__all__ = [
    "perform",
    "RunOutcome",
    "RunError",
    "DEFAULT_CHUNK",
    "make_launcher",
    "LocalLauncher",
    "TestbedLauncher",
    "SSHLauncher",
    "LAUNCHERS",
]
