"""Starting, reaching and stopping the agents: what ``topocast run`` (``coordinator``) and
``topocast probe`` (``topocast.probe.session``) share.

The launcher starts one agent process per host; each connects back to the control listener
and proves it knows the session's secret (``connect_agents``). Each control connection is
then read by one thread (``read_messages``) into a queue of ``(host, message)`` events, a
``None`` message meaning the agent is gone (``describe_exit`` says why, ``stderr_tail``
shows its last words). ``stop_agent`` waits for an agent to exit and kills it after a grace
period.
"""

from __future__ import annotations

import queue
import signal
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Protocol

from ..errors import InputError, RunFailure
from .protocol import Conn, Msg, ProtocolError, tune_tcp

if TYPE_CHECKING:
    from .launchers import Launcher

__all__ = [
    "RunError",
    "RunInputError",
    "connect_agents",
    "describe_exit",
    "read_messages",
    "send_quietly",
    "stderr_tail",
    "stop_agent",
    "wait_exit",
]

CONNECT_TIMEOUT = 30.0  # s: every agent must have connected back by then


class RunError(RunFailure):
    """The run could not be performed at all (an agent did not start, connect or get ready;
    a bad input file: :class:`RunInputError`)."""


class RunInputError(RunError, InputError):
    """A run refused for its input (the message file, ``--dest-dir``, the plan): bad input
    (exit status 2), not a failure to perform it."""


class AgentProcess(Protocol):
    """What a launcher's ``start`` returns: ``subprocess.Popen`` or the fork server's
    ``ForkedAgent`` (the part of ``Popen``'s interface the coordinator uses)."""

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdin(self) -> IO[bytes] | None: ...

    @property
    def stderr(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


def connect_agents(
    launcher: Launcher,
    hosts: Sequence[str],
    procs: dict[str, AgentProcess],
    conns: dict[str, Conn],
    listener: socket.socket,
    control_addr: str,
    secret: bytes,
    dest_dir: str | None,
    absent: dict[str, str] | None = None,
    fatal: Callable[[dict[str, str]], None] | None = None,
) -> dict[str, dict]:
    """Start one agent per host (``procs[host]``) and wait (30 s at most) until each has
    connected back (``conns[host]``) and proved it knows ``secret``; returns each host's hello
    (address, data port). With ``absent``, an agent that exits or does not connect in time is
    recorded there (host -> why) instead of failing the call, and ``fatal(absent)`` raises
    once the run cannot go on without those hosts (the wait for the others is then moot)."""
    boots = {
        h: dict(launcher.boot(h), host=h, secret=secret.hex(), control=control_addr, dest_dir=dest_dir) for h in hosts
    }
    procs.update(launcher.start_all(boots))
    listener.settimeout(0.1)  # an agent that exits is noticed between two waits
    hello: dict[str, dict] = {}
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while len(hello) + len(absent or ()) < len(hosts):
        if time.monotonic() > deadline:
            missing = [h for h in hosts if h not in hello and h not in (absent or ())]
            named = [f"{h} ({launcher.where(h)})" if launcher.where(h) else h for h in missing]
            if absent is not None and hello:  # some came: the run may go on without the others
                for h in missing:
                    where = launcher.where(h)
                    absent[h] = (
                        f"did not connect back within {CONNECT_TIMEOUT:.0f} s"
                        f"{' (' + where + ')' if where else ''}{stderr_tail(procs, [h])}"
                    )
                break
            raise RunError(
                f"agents did not connect back within {CONNECT_TIMEOUT:.0f} s: {', '.join(named)}"
                f"{stderr_tail(procs, missing)}"
            )
        for h, p in procs.items():
            if h not in hello and p.poll() is not None:
                where = launcher.where(h)
                if absent is not None:
                    if h not in absent:
                        absent[h] = (
                            f"exited before connecting ({where + '; ' if where else ''}"
                            f"{describe_exit(p.returncode)}){stderr_tail(procs, [h])}"
                        )
                        if fatal is not None:
                            fatal(absent)
                    continue
                raise RunError(
                    f"agent for {h} exited before connecting ({where + '; ' if where else ''}"
                    f"{describe_exit(p.returncode)}){stderr_tail(procs, [h])}"
                )
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            continue
        if sock.family == socket.AF_INET:
            # without TCP_NODELAY a control message sent while the previous one awaits its
            # (delayed) acknowledgement waits for it: up to 40 ms per START, TDONE or SHUTDOWN
            tune_tcp(sock)
        sock.settimeout(10)
        conn = Conn(sock)
        try:
            conn.auth_server(secret)
            msg = conn.recv_json()
        except (OSError, ProtocolError):
            conn.close()
            continue
        h = str(msg.get("host"))
        if msg.get("type") != Msg.HELLO or h not in procs or h in hello:
            conn.close()
            continue
        sock.settimeout(None)
        conns[h] = conn
        hello[h] = msg
    return hello


def read_messages(host: str, conn: Conn, events: queue.Queue) -> None:
    """Put every control message from ``host`` on ``events``; ``(host, None)`` when it is gone."""
    try:
        while True:
            events.put((host, conn.recv_json()))
    except (OSError, ProtocolError):
        events.put((host, None))


def send_quietly(conn: Conn, msg: dict) -> None:
    """Send a control message; an agent already gone is noticed by its reader, not here."""
    try:
        conn.send_json(msg)
    except OSError:
        pass


def describe_exit(code: int | None) -> str:
    """Why an agent stopped, from its exit status (None: still running)."""
    if code is None:
        return "lost contact with the agent (process still running)"
    if code < 0:
        try:
            return f"agent died (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"agent died (signal {-code})"
    return f"agent exited with status {code}"


def wait_exit(proc: AgentProcess, timeout: float = 2.0) -> bool:
    """Has ``proc`` exited within ``timeout`` seconds?"""
    try:
        proc.wait(timeout=timeout)
        return True
    except Exception:
        return False


def stop_agent(proc: AgentProcess, grace: float = 2.0) -> None:
    """Wait ``grace`` seconds for an agent to exit, then kill it."""
    if proc.poll() is None:
        try:
            proc.wait(timeout=grace)
        except Exception:
            pass
    if proc.poll() is None:
        try:
            proc.kill()
            proc.wait(timeout=2)
        except Exception:
            pass
    for f in (proc.stdin, proc.stderr):
        try:
            if f:
                f.close()
        except Exception:
            pass


def stderr_tail(procs: Mapping[str, AgentProcess], hosts: Iterable[str]) -> str:
    """The last lines each exited agent of ``hosts`` wrote to its stderr, for error messages."""
    out = []
    for h in hosts:
        p = procs[h]
        if p.poll() is not None and p.stderr:
            try:
                tail = p.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
            except Exception:
                tail = []
            if tail:
                out.append(f"{h}: " + " | ".join(tail))
    return (" [" + "; ".join(out) + "]") if out else ""
