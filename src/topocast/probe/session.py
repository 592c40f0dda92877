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

from ..errors import InputError, RunFailure, TopocastError
from ..runtime.agents import (
    connect_agents,
    describe_exit,
    read_messages,
    send_quietly,
    stderr_tail,
    stop_agent,
    wait_exit,
)
from ..runtime.probing import DEFAULT_MIN_BYTES, DEFAULT_MIN_WINDOW, DEFAULT_TOLERANCE, EstimateHistory, steady
from ..runtime.protocol import Msg

__all__ = ["ProbeSession", "ProbeError", "Flow", "TotalWatch"]

START_DELAY = 0.03  # s: transfers started together begin this long after the last request was sent
STOP_DELAY = 0.015  # s: and stop this long after the coordinator decided to stop them


class ProbeError(RunFailure):
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
    bulk_settings: dict = field(default_factory=dict)  # warmup, min_window, tolerance (runtime.probing)
    measurements: int = 0
    rounds: int = 0
    log: list = field(default_factory=list)
    send_cost: float = 0.002  # s to send one request, measured on every round (many agents, a loaded machine)

    def __enter__(self) -> ProbeSession:
        self.t_start = time.monotonic()
        self._events: queue.Queue = queue.Queue()
        self._procs: dict = {}
        self._conns: dict = {}
        self._dead: dict[str, str] = {}
        self._next_id = 0
        self._early: dict[int, dict] = {}
        secret = secrets.token_bytes(32)
        self._listener, control_addr = self.launcher.control_listen()
        self._listener.settimeout(1.0)
        try:
            hello = connect_agents(
                self.launcher, self.hosts, self._procs, self._conns, self._listener, control_addr, secret, None
            )
        except InputError:
            self._close()
            raise
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
            threading.Thread(target=read_messages, args=(h, self._conns[h], self._events), daemon=True).start()
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

    def bulk(self, flows: list, duration: float, below: list | None = None, totals: list | None = None) -> list[float]:
        """Start the timed transfers ``flows`` (``Flow`` or (src, dst)) together and stop them
        together once every receiver's rate estimate has converged, ``duration`` seconds at
        most; each one's rate in bytes/s, in order. ``below``: per transfer, a rate (bytes/s)
        under which its receiver need not read it finer (``runtime.probing.RateWatch``), or
        None. ``totals``: sets of transfers (their indices) of which only the total is read:
        such a set has converged once its total has (``TotalWatch``), whatever each
        transfer's share."""
        flows = [Flow(*f) if not isinstance(f, Flow) else f for f in flows]
        bounds = list(below) if below is not None else [None] * len(flows)
        summed = {k for ks in totals or [] for k in ks}
        t0 = time.monotonic()
        # every request must reach its agent before the common start: the start is set
        # past the time the requests take to send, twice the last round's cost per request
        at = t0 + 2 * self.send_cost * len(flows) + START_DELAY
        common = {"op": "bulk", "at": at, "max": duration, **self.bulk_settings}
        ids = self._send_all(
            [
                (f.src, {**common, "peer": f.dst, "below": b, "report": k in summed})
                for k, (f, b) in enumerate(zip(flows, bounds))
            ]
        )
        t_sent = time.monotonic()
        self.send_cost = (t_sent - t0) / max(1, len(flows))
        watches = [TotalWatch([ids[k] for k in ks], self.bulk_settings) for ks in totals or []]
        waiting = self._await_convergence(ids, at + duration + START_DELAY, watches)
        t_stop = time.monotonic()
        stop = {"op": "stop", "at": t_stop + STOP_DELAY, "delay": STOP_DELAY}
        for mid, f in zip(ids, flows):
            send_quietly(self._conns[f.src], {"type": Msg.MEASURE, "id": mid, **stop})
        results = self._collect(ids, [(f.src, f.dst, "bulk") for f in flows], duration + 15)
        rates = [float(r["rate"]) for r in results]
        self.log.append(
            {
                "kind": "bulk",
                "duration": duration,
                "flows": [[f.src, f.dst] for f in flows],
                "rates": rates,
                # where the round's time went: requests sent; transfers running until every
                # receiver converged (or the longest); stopped and every answer collected
                "seconds": {
                    "send": round(t_sent - t0, 4),
                    "run": round(t_stop - t_sent, 4),
                    "stop_collect": round(time.monotonic() - t_stop, 4),
                },
                "unconverged": [k for k, mid in enumerate(ids) if mid in waiting],
            }
        )
        return rates

    def _send_all(self, ops: list) -> list[int]:
        """Send every (host, request) at once; their ids, in order. A request for a common
        instant ``at`` also says how far ahead it lies when sent (``delay``), for agents that do
        not share the coordinator's clock."""
        ids = []
        for h, req in ops:
            self._alive(h)
            self._next_id += 1
            ids.append(self._next_id)
            if "at" in req:
                req = {**req, "delay": max(0.0, req["at"] - time.monotonic())}
            send_quietly(self._conns[h], {"type": Msg.MEASURE, "id": self._next_id, **req})
        return ids

    def _await_convergence(self, ids: list[int], deadline: float, watches: list | None = None) -> set:
        """Wait until every transfer's receiver said ``converged`` (or, for the transfers of
        a ``TotalWatch``, its total settled), or ``deadline``, or one transfer has ended (at
        its longest, or failed: its result is kept for ``_collect``); the ids of those that
        had not converged."""
        watches = watches or []
        mine = set(ids)
        waiting = mine - {i for w in watches for i in w.ids}
        while (waiting or not all(w.done for w in watches)) and time.monotonic() < deadline:
            got = self._next_event(deadline, "measuring (bulk)", allow_timeout=True)
            if got is None:
                break
            _, msg = got
            if msg.get("type") == Msg.CONVERGED:
                waiting.discard(msg.get("id"))
            elif msg.get("type") == Msg.COUNTED and msg.get("id") in mine:
                for w in watches:
                    w.report(msg["id"], float(msg["span"]), float(msg["bytes"]), time.monotonic())
            elif msg.get("type") == Msg.MEASURED and msg.get("id") in mine:
                # a transfer that ended at its longest (or failed): the others need not go on
                self._early[msg["id"]] = msg
                break
        return waiting | {i for w in watches if not w.done for i in w.ids}

    def _run(self, ops: list, timeout: float) -> list[dict]:
        """Send every (host, request) at once; wait for all answers (in order)."""
        ids = self._send_all(ops)
        return self._collect(ids, [(h, req["peer"], req["op"]) for h, req in ops], timeout)

    def _collect(self, ids: list[int], what: list, timeout: float) -> list[dict]:
        """Wait for the ``measured`` answer of every id; ``what``: (src, dst, op) of each."""
        index = {mid: k for k, mid in enumerate(ids)}
        out: list = [self._early.pop(mid, None) for mid in ids]
        deadline = time.monotonic() + timeout
        while True:
            for k, msg in enumerate(out):
                if msg is not None and msg.get("error"):
                    src, peer, op = what[k]
                    raise ProbeError(
                        f"measurement {op} from {src} to {peer} failed: {msg['error']} (is {peer} reachable from {src}?)",
                        self.log,
                    )
            if all(r is not None for r in out):
                break
            h, msg = self._next_event(deadline, f"measuring ({what[0][2]})")
            if msg.get("type") == Msg.MEASURED and msg.get("id") in index:
                out[index[msg["id"]]] = msg
        self.measurements += len(ids)
        self.rounds += 1
        return out

    def _next_event(self, deadline: float, doing: str, allow_timeout: bool = False):
        while True:
            try:
                h, msg = self._events.get(timeout=max(0.001, deadline - time.monotonic()))
            except queue.Empty:
                if allow_timeout:
                    return None
                raise ProbeError(f"the agents did not answer within the time allowed ({doing})", self.log) from None
            if msg is None:
                p = self._procs[h]
                why = describe_exit(p.returncode if wait_exit(p) else None)
                self._dead[h] = why
                raise ProbeError(
                    f"the agent on {h} stopped while {doing}: {why}{stderr_tail(self._procs, [h])}", self.log
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
                send_quietly(c, {"type": Msg.SHUTDOWN})
            c.close()
        self._listener.close()
        for p in self._procs.values():
            stop_agent(p, 3.0)
        self.launcher.close()


class TotalWatch:
    """Whether the total rate of a set of transfers has settled, from their receivers'
    ``counted`` reports (bytes counted in the window, the window's length): the shortest
    window is at least ``min_window`` long, the windows hold ``min_bytes`` together, and the
    totals computed over the last ``min_window / 2`` (at least three) lie within
    ``tolerance`` of the current one: ``runtime.probing.RateWatch``'s rule, on the sum. A
    link shared by the set's transfers splits between them unevenly and the split wavers
    (TCP), while their total, which is what the link carries, settles."""

    def __init__(self, ids: list[int], settings: dict):
        self.ids = set(ids)
        self.min_window = float(settings.get("min_window", DEFAULT_MIN_WINDOW))
        self.tolerance = float(settings.get("tolerance", DEFAULT_TOLERANCE))
        self.min_bytes = int(settings.get("min_bytes", DEFAULT_MIN_BYTES))
        self.latest: dict[int, tuple[float, float]] = {}
        self.history = EstimateHistory()
        self.done = not ids

    def report(self, mid: int, span: float, nbytes: float, now: float) -> None:
        if mid not in self.ids or self.done or span <= 0:
            return
        self.latest[mid] = (span, nbytes)
        if len(self.latest) < len(self.ids) or min(s for s, _ in self.latest.values()) < self.min_window / 2:
            return
        total = sum(n / s for s, n in self.latest.values())
        self.history.add(now, total)
        if min(s for s, _ in self.latest.values()) < self.min_window or total <= 0:
            return
        if sum(n for _, n in self.latest.values()) < self.min_bytes:
            return
        self.done = steady(self.history.since(now - self.min_window / 2), total, self.tolerance)


def robust_rtt(rtts: list[float]) -> float:
    """The round-trip estimate: the median of the lower half (the minimum is one lucky
    sample, the median carries the scheduler's delays on this shared VM)."""
    low = sorted(rtts)[: max(1, len(rtts) // 2)]
    return statistics.median(low)
