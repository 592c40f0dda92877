"""Repair: an agent whose incoming transfer broke fetches the missing bytes from other hosts.

When a sender dies, a connection stalls or is reset, or (after any failure anywhere) a host
makes no progress for the stall timeout, the agent asks the coordinator who holds the bytes it
lacks and fetches them, most complete holder first, until it holds them, or gives up after
``repair_timeout`` and reports which bytes it could not get and why (docs/design.md,
"Failures").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from .protocol import T_END, Conn, Msg, ProtocolError, connect

if TYPE_CHECKING:
    from .agent_interface import RepairSide

__all__ = ["Repair", "serve_fetch"]


class Repair:
    """The repair side of one agent (``agent`` gives the store, the peers and the control
    connection)."""

    def __init__(self, agent: RepairSide) -> None:
        self.agent = agent
        self.lock = threading.Lock()
        self.needed = IntervalSet()
        self.event = threading.Event()
        self.reasons: list[str] = []
        self.replies: dict[int, list] = {}
        self.replies_cond = threading.Condition()
        self.req = 0

    def start(self) -> None:
        threading.Thread(target=self.loop, daemon=True).start()
        threading.Thread(target=self.watchdog, daemon=True).start()

    def need(self, ranges: Iterable[Sequence[int]], reason: str) -> None:
        """Bytes ``ranges`` must be fetched again because of ``reason``."""
        with self.lock:
            for off, length in ranges:
                self.needed.add(off, off + length)
            self.reasons.append(reason)
        self.agent.failure_seen = True
        self.agent.send({"type": Msg.BROKEN, "reason": reason})
        self.event.set()

    def on_holders(self, msg: dict) -> None:
        with self.replies_cond:
            self.replies[int(msg["req"])] = list(msg["hosts"])
            self.replies_cond.notify_all()

    def watchdog(self) -> None:
        """After any failure, a host that makes no progress for ``stall`` s repairs all it lacks."""
        a = self.agent
        while not a.stop.wait(1.0):
            if a.reported_complete or not a.failure_seen or not a.wanted:
                continue
            if time.monotonic() - a.store.last_new > a.stall:
                missing = a.store.missing_ranges(a.wanted)
                if missing:
                    self.need(missing, f"no progress for {a.stall:g} s after a failure")
                    a.store.last_new = time.monotonic()

    def ask_holders(self, ranges: Iterable[Sequence[int]]) -> list[str]:
        with self.replies_cond:
            self.req += 1
            req = self.req
        self.agent.send({"type": Msg.NEED, "req": req, "ranges": [list(r) for r in ranges]})
        with self.replies_cond:
            self.replies_cond.wait_for(lambda: req in self.replies or self.agent.stop.is_set(), timeout=10)
            return self.replies.pop(req, [])

    def fetch(self, host: str, ranges: Iterable[Sequence[int]]) -> None:
        a = self.agent
        addr, port = a.peers[host]
        conn = connect(f"tcp:{addr}:{port}", a.secret, timeout=3, user_timeout=a.stall + 4)
        try:
            conn.send_json({"type": Msg.FETCH, "ranges": [list(r) for r in ranges]})
            conn.settimeout(a.stall)
            a.receive_frames(conn, None)
        finally:
            conn.close()

    def loop(self) -> None:
        a = self.agent
        first_fail = None
        errors: dict[str, str] = {}
        while not a.stop.is_set():
            if not self.event.wait(1.0) and first_fail is None:
                continue
            self.event.clear()
            with self.lock:
                need_iv = list(self.needed)
            need = a.store.missing_ranges([(s, e - s) for s, e in need_iv])
            if not need:
                first_fail = None
                continue
            for host in self.ask_holders(need):
                if host == a.host or host in a.dead:
                    continue
                try:
                    self.fetch(host, need)
                except (OSError, ProtocolError) as exc:
                    errors[host] = str(exc) or type(exc).__name__
                need = a.store.missing_ranges(need)
                if not need:
                    break
            if not need:
                first_fail = None
                continue
            first_fail = first_fail or time.monotonic()
            if time.monotonic() - first_fail > a.repair_timeout and not a.reported_complete:
                self.give_up(errors)
                return
            self.event.set()
            time.sleep(1.0)

    def give_up(self, errors: dict[str, str]) -> None:
        a = self.agent
        missing = sum(length for _, length in a.store.missing_ranges(a.wanted))
        why = "; ".join(dict.fromkeys(self.reasons))
        errs = "; ".join(f"{h}: {e}" for h, e in errors.items()) or "no live host holds them"
        a.send(
            {"type": Msg.FAILED, "reason": f"{missing} bytes missing after {why}; fetching them again failed ({errs})"}
        )
        a.reported_complete = True


def serve_fetch(agent: RepairSide, conn: Conn, hdr: dict) -> None:
    """Answer a repairing peer: every byte it asks for that this agent holds, then END."""
    ranges = hdr.get("ranges")
    if not isinstance(ranges, list) or len(ranges) > 100000:
        raise ProtocolError("fetch needs a list of ranges")
    store = agent.store
    scratch = bytearray(agent.chunk)
    for r in ranges:
        off, length = int(r[0]), int(r[1])
        if off < 0 or length < 0 or off + length > store.size:
            raise ProtocolError("fetch range outside the message")
        for a, b in store.held_parts(off, off + length):
            for x in range(a, b, agent.chunk):
                store.send_frame(conn, x, min(x + agent.chunk, b), scratch)
    conn.send_simple(T_END)
