"""What probing and repair use of an agent (``runtime.agent.Agent``), as typing protocols:
they depend on this narrow interface, not on the agent module, which imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import socket
    import threading

    from .protocol import Conn
    from .store import Store

__all__ = ["ControlSide", "RunningSide", "RepairSide"]


class ControlSide(Protocol):
    """An agent as a measuring peer (``runtime.probing``): its identity, its control
    connection to the coordinator and its data listener."""

    host: str
    secret: bytes  # the run's secret: every connection proves it knows it
    stop: threading.Event  # set when the agent stops
    listener: socket.socket  # accepts data connections from peers
    ctrl: Conn | None  # the control connection (None until the coordinator was reached)

    def send(self, msg: dict) -> None:
        """Send a control message to the coordinator."""
        ...


class RunningSide(ControlSide, Protocol):
    """An agent that runs a plan and knows its peers (a targeted probe's measurements,
    ``runtime.probing.measure_in_run``)."""

    peers: dict[str, tuple[str, int]]  # host -> data address


class RepairSide(RunningSide, Protocol):
    """An agent as a repairing receiver and as a holder serving fetches (``runtime.repair``)."""

    dead: set[str]  # hosts whose agents are gone
    wanted: list[tuple[int, int]]  # (offset, length) ranges this host must hold at the end
    store: Store
    chunk: int
    stall: float  # s without progress before a host repairs (after a failure)
    repair_timeout: float  # s of failed fetching before it gives up
    failure_seen: bool  # some transfer broke somewhere during the run
    reported_complete: bool  # completion (or giving up) was reported

    def receive_frames(self, conn: Conn, transfer: int | None) -> None:
        """Store every data frame of ``conn`` until its END."""
        ...
