"""Sender-side fair sharing of a host's links ("fair uplink"), so a run shares bandwidth the
way the simulator says (max-min) even on plain FIFO links.

Why: TCP flows that share one FIFO queue do not split it max-min fairly over a run of a few
seconds (docs/experiments/runtime.md compares FIFO and per-flow fair links). An agent knows, from
the topology the coordinator hands it, the links its own transfers cross; it then

* paces all its transfers that leave over one access link (the first hop, its *uplink*)
  together at ``HEADROOM`` x that link's goodput and hands out chunk-sized turns
  **round-robin among the
  transfers that are ready** (:class:`RoundRobin`, :class:`Pacer`). A transfer that is not
  ready - waiting for bytes from upstream, for its own rate cap, or blocked in ``send``
  because its (small, ``SO_SNDBUF``) socket buffer is full since a link further on is
  slower - holds no turn, so the others take its share: max-min, not an equal split;
* caps each transfer at its max-min share of the contended links *after* the first hop,
  computed over this agent's own active transfers (:func:`down_caps`), because a FIFO further on (the
  inter-switch link of ``hetero-2switch``) would otherwise split unevenly as well. Only this
  agent's transfers are counted: where other senders share such a link the cap is loose and
  TCP decides, as before;
* stands aside where there is nothing to share (a transfer alone on its link, or the plan's
  own rate caps already fit in it), and sets small send buffers only on transfers that share
  a link with a sibling (:func:`pacing_config`).

Everything here is pure scheduling logic (clock passed in) except :class:`Pacer`, the
thread-safe wrapper the agent's sender threads call.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..plan import Plan
    from ..topology import Topology

HEADROOM = 0.98  # a link shared by several of an agent's transfers is paced this far below its goodput
# A pacer's bucket holds at least this many seconds of its rate: with only a few milliseconds'
# worth, a sender thread woken a few ms late on a busy machine loses credit and the link stays
# under-used (docs/experiments/runtime.md, "fair uplink").
PACER_SLACK = 0.02


def pacer_burst(rate: float, chunk: int) -> float:
    """Burst of a link's pacer: two chunks, or ``PACER_SLACK`` seconds at ``rate``."""
    return max(2.0 * chunk, rate * PACER_SLACK)


__all__ = [
    "HEADROOM",
    "PACER_SLACK",
    "pacer_burst",
    "RoundRobin",
    "Pacer",
    "TokenBucket",
    "max_min",
    "down_caps",
    "pacing_config",
]


class RoundRobin:
    """Aggregate token bucket at ``rate`` bytes/s (burst ``burst`` bytes) whose turns go to
    the ready transfers in round-robin order.

    A transfer announces one chunk at a time with :meth:`ready`; :meth:`poll` grants the
    transfer at the head of the queue once the bucket holds its bytes (a chunk larger than
    the burst waits for a full bucket and drives it negative). A transfer asks again only
    after it sent the chunk it was granted, so it rejoins at the back: with equal chunks each
    ready transfer gets the same share, and one that is not ready is simply not in the queue.
    """

    def __init__(self, rate: float, burst: float, now: float):
        if not rate > 0:
            raise ValueError("rate must be > 0")
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.t = now
        self.queue: deque = deque()  # (tid, nbytes), one entry per ready transfer
        self.granted_bytes: dict = {}

    def ready(self, tid: int, nbytes: int) -> None:
        if any(q[0] == tid for q in self.queue):
            raise ValueError(f"transfer {tid!r} already waits for a turn")
        self.queue.append((tid, int(nbytes)))

    def withdraw(self, tid: int) -> None:
        self.queue = deque(q for q in self.queue if q[0] != tid)

    def _refill(self, now: float) -> None:
        if now > self.t:
            self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
            self.t = now

    def poll(self, now: float) -> tuple[int | None, float]:
        """``(tid, 0.0)`` when the head of the queue may send now (its bytes are taken from
        the bucket), else ``(None, seconds to wait)`` (``inf`` when nobody is ready)."""
        self._refill(now)
        if not self.queue:
            return None, math.inf
        tid, n = self.queue[0]
        need = min(float(n), self.burst)
        if self.tokens >= need:
            self.tokens -= n
            self.queue.popleft()
            self.granted_bytes[tid] = self.granted_bytes.get(tid, 0) + n
            return tid, 0.0
        return None, (need - self.tokens) / self.rate


class Pacer:
    """Thread-safe :class:`RoundRobin` for one link of capacity ``capacity`` (bytes/s of
    goodput), paced at ``capacity x headroom``: ``acquire(tid, n, stop)`` blocks until
    ``tid`` may send ``n`` bytes (False when ``stop`` was set first). Transfers ``join`` (with
    their own cap, if any) when they start sending and ``leave`` when done.

    The pacer stands aside (no waiting) when there is nothing to share: one transfer alone on
    the link (TCP alone reaches the goodput), or transfers whose own caps - the plan's rate
    caps - fit in the link together (the plan already decided the shares, as ``stable`` does).
    Otherwise it paces ``headroom`` below the goodput: paced at exactly the goodput, any
    slack (the goodput factor varies by a few tenths of a percent) builds a standing queue,
    and the kernel FIFO decides the shares again."""

    def __init__(
        self, capacity: float, burst: float, headroom: float = HEADROOM, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self.capacity = float(capacity)
        self.core = RoundRobin(capacity * headroom, burst, clock())
        self.cond = threading.Condition()
        self.granted: set = set()
        self.members: dict = {}  # transfers sending over this link now -> own cap or None

    def join(self, tid: int, cap: float | None = None) -> None:
        with self.cond:
            self.members[tid] = cap
            self.cond.notify_all()

    def leave(self, tid: int) -> None:
        with self.cond:
            self.members.pop(tid, None)
            self.core.withdraw(tid)
            self.cond.notify_all()

    def free(self) -> bool:
        """True when there is nothing to share (see the class notes); call with the lock."""
        if len(self.members) <= 1:
            return True
        caps = list(self.members.values())
        return all(c is not None for c in caps) and sum(caps) <= self.capacity * (1 + 1e-9)

    def acquire(self, tid: int, nbytes: int, stop: threading.Event) -> bool:
        """Wait for ``tid``'s turn (round-robin among the transfers waiting now)."""
        with self.cond:
            if self.free() and not self.core.queue:
                return True
            self.core.ready(tid, nbytes)
            while True:
                if tid in self.granted:
                    self.granted.discard(tid)
                    return True
                if stop.is_set() or self.free():
                    self.core.withdraw(tid)
                    self.cond.notify_all()
                    return not stop.is_set()
                got, wait = self.core.poll(self.clock())
                if got is not None:
                    self.granted.add(got)
                    if got != tid:
                        self.cond.notify_all()
                    continue
                self.cond.wait(min(wait, 0.25))


def down_caps(flows: dict, capacity: dict, own: dict, headroom: float = HEADROOM) -> dict:
    """Cap of every active flow on the links after its first hop: its max-min share among
    this agent's active ``flows`` (flow -> resources after the first hop), with its ``own``
    cap (rate cap, fatpipe) as a bound.

    Only *contended* resources count: two or more of the flows cross it and their own caps
    do not already fit in it together (then the plan decided the shares). A contended
    resource counts ``headroom`` x its capacity (see :class:`Pacer`), the others their whole
    capacity (they still bound their flow, which leaves more to the flows it shares a
    contended resource with). A flow that crosses no
    contended resource gets only its own cap (None when it has none): capping it at its
    links' goodput would protect no sibling and could only slow it."""
    users: dict = {}
    for f, res in flows.items():
        for r in set(res):
            users.setdefault(r, []).append(f)
    contended = set()
    for r, fs in users.items():
        caps = [own.get(f) for f in fs]
        bounded = [c for c in caps if c is not None]
        if len(fs) >= 2 and not (len(bounded) == len(caps) and sum(bounded) <= capacity[r] * (1 + 1e-9)):
            contended.add(r)
    cap = {r: c * (headroom if r in contended else 1.0) for r, c in capacity.items()}
    shares = max_min(flows, cap, own)
    out = {}
    for f, res in flows.items():
        if any(r in contended for r in res):
            out[f] = shares[f] if math.isfinite(shares[f]) else None
        else:
            out[f] = own.get(f)
    return out


def max_min(flows: dict, capacity: dict, caps: dict | None = None) -> dict:
    """Max-min fair rates by progressive filling (the simulator's
    :func:`topocast.sim.maxmin.progressive_filling`, keyed by name).

    ``flows``: flow id -> resources it crosses; ``capacity``: resource -> bytes/s;
    ``caps``: flow id -> own upper bound (None/absent: none). A flow that crosses no resource
    and has no cap gets ``inf``."""
    import numpy as np

    from ..sim.maxmin import progressive_filling

    caps = caps or {}
    rate = {f: math.inf for f, res in flows.items() if not res and caps.get(f) is None}
    bounded = [f for f in flows if f not in rate]
    if not bounded:
        return rate
    names = list(capacity)
    index = {r: k for k, r in enumerate(names)}
    pairs = [(n, index[r]) for n, f in enumerate(bounded) for r in flows[f]]
    pair_flow = np.array([p[0] for p in pairs], dtype=np.int64)
    pair_res = np.array([p[1] for p in pairs], dtype=np.int64)
    cap = np.array([math.inf if caps.get(f) is None else float(caps[f]) for f in bounded])
    got = progressive_filling(pair_flow, pair_res, np.array([float(capacity[r]) for r in names]), cap)
    rate.update({f: float(x) for f, x in zip(bounded, got)})
    return rate


def pacing_config(plan: Plan, topology: Topology, goodput: float, sndbuf: int, headroom: float = HEADROOM) -> dict:
    """Per host, what its agent needs to pace its outgoing transfers: ``{host: {"sndbuf",
    "headroom", "capacity": {resource: bytes/s}, "transfers": {index: {"uplink", "down",
    "cap", "sndbuf"}}}}`` (a transfer's ``sndbuf`` is None when it shares no link with
    another transfer of its sender: it keeps the kernel's autotuned send buffer).

    Resources are the simulator's (``Topology.link_resource``: one per link direction, one
    per cable for shared links, plus the slow direction of an asymmetric shared cable);
    capacities are scaled by ``goodput`` (TCP goodput / link rate). Fatpipe links are no
    shared resource: they cap each flow. ``uplink`` is the resource of the transfer's first
    hop (None when that hop is a fatpipe)."""
    import numpy as np

    out: dict = {}
    link_res = topology.link_resource
    extra = topology.link_direction_resource
    cap_of = topology.resource_capacity
    for i, t in enumerate(plan.transfers):
        if t.src not in topology.hosts or t.dst not in topology.hosts:
            continue
        ids = np.asarray(
            topology.route(t.src, t.dst) if t.path is None else topology.path_links(t.path), dtype=np.int64
        )
        if len(ids) == 0:
            continue
        res = [int(r) for r in link_res[ids]]
        fat = [float(topology.link_bandwidth[ids[k]]) for k, r in enumerate(res) if r < 0]
        uplink = res[0] if res[0] >= 0 else None
        down = [r for r in res[1:] if r >= 0] + [int(x) for x in extra[ids] if x >= 0]
        down = [r for r in dict.fromkeys(down) if r != uplink]
        h = out.setdefault(t.src, {"sndbuf": int(sndbuf), "capacity": {}, "transfers": {}})
        h["headroom"] = headroom
        for r in ([uplink] if uplink is not None else []) + down:
            h["capacity"][str(r)] = float(cap_of[r]) * goodput
        fat_cap = min(fat) * goodput if fat else None
        own = [c for c in (t.rate_cap, fat_cap) if c]
        h["transfers"][str(i)] = {
            "uplink": None if uplink is None else str(uplink),
            "down": [str(r) for r in down],
            "cap": fat_cap,
            "own": min(own) if own else None,
        }
    # Small send buffers only where the agent may have to share: a transfer that crosses a
    # link with another transfer of the same sender (whose own caps do not already fit in
    # it). Elsewhere the kernel's autotuned buffer stays: a small one makes a lone fast relay
    # sensitive to being descheduled for a few ms on a busy machine.
    for h in out.values():
        users: dict = {}
        for k, tp in h["transfers"].items():
            for r in ([tp["uplink"]] if tp["uplink"] is not None else []) + tp["down"]:
                users.setdefault(r, []).append(k)
        shared = set()
        for r, ks in users.items():
            caps = [h["transfers"][k]["own"] for k in ks]
            if len(ks) >= 2 and not (all(c is not None for c in caps) and sum(caps) <= h["capacity"][r] * (1 + 1e-9)):
                shared.update(ks)
        for k, tp in h["transfers"].items():
            tp["sndbuf"] = h["sndbuf"] if k in shared else None
            del tp["own"]
    return out


class TokenBucket:
    """Pace to ``rate`` bytes/s with a burst of ``burst`` bytes (``rate=None``: no pacing).

    ``set_rate`` may be called from another thread (fair uplink: when transfers start or
    end) while ``take`` waits: both work under a lock and ``take`` reads the rate afresh on
    every round, so a rate that becomes None ends the wait."""

    def __init__(self, rate: float | None, burst: int):
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.t = time.monotonic()
        self.lock = threading.Lock()

    def set_rate(self, rate: float | None) -> None:
        """Change the rate from now on (tokens earned so far are kept)."""
        with self.lock:
            now = time.monotonic()
            if self.rate:
                self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
            else:
                self.tokens = self.burst
            self.t = now
            self.rate = rate

    def take(self, n: int, stop: threading.Event) -> None:
        while True:
            with self.lock:
                rate = self.rate
                if not rate:
                    return
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.t) * rate)
                self.t = now
                if self.tokens >= n or (self.tokens >= self.burst and n > self.burst):
                    self.tokens -= n
                    return
                wait = min(1.0, (n - self.tokens) / rate)
            if stop.wait(min(wait, 0.1)):
                return
