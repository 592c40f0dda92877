"""The probe's coordinator side: agents started as ``topocast run`` starts them, driven to
measure round-trip times and timed bulk transfers (the agents' side is
``topocast.runtime.probing``).

A :class:`ProbeSession` records every measurement it made (``log``), so a probe that fails
half-way can save what it had measured (``ProbeError.partial``).
"""

from __future__ import annotations

import queue
import secrets
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import TopocastError
from ..runtime.coordinator import _connect, _describe_exit, _reader, _send, _stderr_tail, _stop, _wait
from ..runtime.protocol import Msg

__all__ = ["ProbeSession", "ProbeError", "Flow"]

START_DELAY = 0.05  # s: transfers started together begin this long after the request (time to reach every agent)


class ProbeError(TopocastError):
    """The probe could not go on (a host unreachable, an agent died); ``partial`` holds the
    measurements made so far."""

    def __init__(self, message: str, partial: list | None = None):
        super().__init__(message)
        self.partial = partial or []


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str


@dataclass
class ProbeSession:
    """Agents on ``hosts`` (started by ``launcher``) serving measurements; use as a context
    manager. ``measurements`` counts every single measurement (one RTT series or one bulk
    transfer), ``log`` keeps each one's inputs and result."""

    hosts: list
    launcher: Any
    bulk_warmup: float = 0.3
    measurements: int = 0
    rounds: int = 0
    log: list = field(default_factory=list)

    def __enter__(self) -> ProbeSession:
        self.t_start = time.monotonic()
        self._events: queue.Queue = queue.Queue()
        self._procs: dict = {}
        self._conns: dict = {}
        self._dead: dict[str, str] = {}
        self._next_id = 0
        secret = secrets.token_bytes(32)
        self._listener, control_addr = self.launcher.control_listen()
        self._listener.settimeout(1.0)
        try:
            hello = _connect(
                self.launcher, self.hosts, self._procs, self._conns, self._listener, control_addr, secret, None
            )
        except TopocastError as exc:
            self._close()
            raise ProbeError(f"cannot start the agents: {exc}") from None
        except BaseException:
            self._close()
            raise
        self.shared_clock = bool(getattr(self.launcher, "shared_clock", False))
        peers = {h: [m["address"], int(m["port"])] for h, m in hello.items()}
        for h in self.hosts:
            self._conns[h].send_json({"type": Msg.PROBE, "peers": peers, "shared_clock": self.shared_clock})
            threading.Thread(target=_reader, args=(h, self._conns[h], self._events), daemon=True).start()
        ready: set = set()
        deadline = time.monotonic() + 30
        while len(ready) < len(self.hosts):
            h, msg = self._next_event(deadline, "getting ready")
            if msg.get("type") == Msg.READY:
                ready.add(h)
        return self

    def __exit__(self, *exc) -> None:
        self._close()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t_start

    # ---------------------------------------------------------------- measurements
    def rtt(self, a: str, b: str, count: int = 10) -> list[float]:
        """Round-trip times (s) of small frames from ``a`` to ``b`` and back."""
        (res,) = self._run([(a, {"op": "rtt", "peer": b, "count": count})], 5 + count)
        self.log.append({"kind": "rtt", "src": a, "dst": b, "rtts": res["rtts"]})
        return res["rtts"]

    def bulk(self, flows: list, duration: float) -> list[float]:
        """Start the timed transfers ``flows`` (``Flow`` or (src, dst)) together; each one's
        steady rate in bytes/s, in order."""
        flows = [Flow(*f) if not isinstance(f, Flow) else f for f in flows]
        at = time.monotonic() + START_DELAY
        ops = [
            (
                f.src,
                {
                    "op": "bulk",
                    "peer": f.dst,
                    "duration": duration,
                    "at": at,
                    "delay": START_DELAY,
                    "warmup": self.bulk_warmup,
                },
            )
            for f in flows
        ]
        results = self._run(ops, duration + 15)
        rates = [float(r["rate"]) for r in results]
        self.log.append(
            {"kind": "bulk", "duration": duration, "flows": [[f.src, f.dst] for f in flows], "rates": rates}
        )
        return rates

    def _run(self, ops: list, timeout: float) -> list[dict]:
        """Send every (host, request) at once; wait for all answers (in order)."""
        ids: dict[int, int] = {}
        for h, req in ops:
            self._alive(h)
            self._next_id += 1
            ids[self._next_id] = len(ids)
            _send(self._conns[h], {"type": Msg.MEASURE, "id": self._next_id, **req})
        out: list = [None] * len(ops)
        deadline = time.monotonic() + timeout
        while any(r is None for r in out):
            h, msg = self._next_event(deadline, f"measuring ({ops[0][1]['op']})")
            if msg.get("type") != Msg.MEASURED or msg.get("id") not in ids:
                continue
            k = ids[msg["id"]]
            if msg.get("error"):
                peer = ops[k][1]["peer"]
                raise ProbeError(
                    f"measurement {ops[k][1]['op']} from {ops[k][0]} to {peer} failed: {msg['error']} "
                    f"(is {peer} reachable from {ops[k][0]}?)",
                    self.log,
                )
            out[k] = msg
        self.measurements += len(ops)
        self.rounds += 1
        return out

    def _next_event(self, deadline: float, doing: str):
        while True:
            try:
                h, msg = self._events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise ProbeError(f"the agents did not answer within the time allowed ({doing})", self.log) from None
            if msg is None:
                p = self._procs[h]
                why = _describe_exit(p.returncode if _wait(p) else None)
                self._dead[h] = why
                raise ProbeError(
                    f"the agent on {h} stopped while {doing}: {why}{_stderr_tail(self._procs, [h])}", self.log
                )
            if msg.get("type") == Msg.FAILED:
                raise ProbeError(f"the agent on {h} failed: {msg.get('reason')}", self.log)
            return h, msg

    def _alive(self, h: str) -> None:
        if h in self._dead:
            raise ProbeError(f"the agent on {h} is gone: {self._dead[h]}", self.log)

    def _close(self) -> None:
        for h, c in self._conns.items():
            if h not in self._dead:
                _send(c, {"type": Msg.SHUTDOWN})
            c.close()
        self._listener.close()
        for p in self._procs.values():
            _stop(p, 3.0)
        self.launcher.close()


def robust_rtt(rtts: list[float]) -> float:
    """The round-trip estimate: the median of the lower half (the minimum is one lucky
    sample, the median carries the scheduler's delays on this shared VM)."""
    low = sorted(rtts)[: max(1, len(rtts) // 2)]
    return statistics.median(low)
