"""Fluid, flow-level simulator of a Plan on a Topology (docs/design.md, "Simulator").

Life of a transfer::

    PENDING --(deps done, data there)--> QUEUED at its sender
    QUEUED  --(sender injects it: Δ(src, dst), one at a time, plan order)--> LATENCY
    LATENCY --(sum of route latencies, no bandwidth used)--> FLOWING
    FLOWING --(all bytes delivered)--> [REDUCING for size·γ(dst) if reduce=True] --> DONE

* Data: a store-and-forward transfer is ready once its sender holds all its bytes (initial
  holdings or completed transfers). A pipelined transfer is ready once its upstream is flowing
  and has delivered its first chunk (``plan.chunk_size``; 0 = fluid); while flowing it never
  gets ahead of ``upstream delivered - chunk`` (everything once the upstream is done). When it
  has caught up, its rate is capped by the upstream's (coupled in max-min).
* Bandwidth: max-min fair rates by progressive filling over shared resources, honouring
  ``rate_cap`` and fatpipe links (``sim.maxmin``).
* A host holds a byte from the moment any transfer delivers it; its completion time is when
  it holds every byte it wants. (For hosts that receive some bytes twice, e.g. relays of
  Stable Broadcast, this is found between events from the linear progress of the transfers.)
* Deterministic: no randomness, ties broken by transfer index.

Cost follows the work: an event costs what it changes, not the size of the plan.

* Progress is kept lazily: a flowing transfer's bytes are ``sent0 + rate · (t - t0)``, written
  back only when its rate changes.
* Each flowing transfer's next events (done, catching up with its upstream, freed from it,
  unblocked) are computed when its rate, or its upstream's, changes, and kept in a heap with
  the ends of latency phases and the senders' next injections; stale entries are skipped.
* An event recomputes max-min rates only for the flows it can affect: those that started,
  changed constraints (cap, coupling) or may gain from a saturated resource a flow left, grown
  through saturated resources to every flow that could lose its bottleneck (``_rebalance``;
  resources with slack stop the growth, so a broadcast tree whose flows all share links is
  not recomputed whole at every event). Past a share of the flowing transfers, all of them
  are recomputed at once (vectorised).
* Flows that start or end at one instant are booked together, with arrays; events touching
  a few flows work on Python scalars.

Times are seconds, sizes bytes, rates bytes/s.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SimulationError
from ..intervals import Holdings, IntervalSet, merge_grouped
from ..memory import BYTES_PER_RANGE, BYTES_PER_TRANSFER, check_fits
from ..plan import Plan
from ..plan_graph import find_upstream
from ..results import Result, aggregate_from_times
from .maxmin import progressive_filling

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["simulate"]

# a local recomputation stops growing past this many flows (or an eighth of the flowing ones,
# if more): then every flowing transfer is recomputed in one vectorised pass
LOCAL_COMPONENT_LIMIT = 4096
# up to this many transfers, per-event bookkeeping works on Python scalars (numpy's per-call
# overhead would dominate)
SMALL = 8

PENDING, QUEUED, LATENCY, FLOWING, REDUCING, DONE = range(6)
# kinds of flow events (heap entries)
EV_DONE, EV_CATCH, EV_FREE, EV_UNBLOCK, EV_ACTIVATE = range(5)
_REL = 1e-12


class _Sim:
    def __init__(self, plan: Plan, topology: Topology, chunk_size: int | None) -> None:
        self.plan = plan
        self.topo = topology
        self.chunk = float(plan.chunk_size if chunk_size is None else chunk_size)
        tr = plan.transfers
        n = self.n = len(tr)
        n_ranges = [len(t.ranges) for t in tr]
        check_fits(
            n * BYTES_PER_TRANSFER + BYTES_PER_RANGE * sum(n_ranges),
            f"simulating a plan of {n:,} transfers",
            element="plan",
        )
        # every transfer's ranges, as CSR: absolute offset, length, position in its sequence
        self.rng_ptr = np.concatenate(([0], np.cumsum(n_ranges))).astype(np.int64)
        flat = np.fromiter(
            itertools.chain.from_iterable(itertools.chain.from_iterable(t.ranges for t in tr)), dtype=np.int64
        )
        self.rng_off, self.rng_len = flat[0::2], flat[1::2]
        nbytes = np.zeros(n, dtype=np.int64)
        np.add.at(nbytes, np.repeat(np.arange(n), n_ranges), self.rng_len)
        before = np.cumsum(self.rng_len) - self.rng_len  # bytes of all earlier ranges
        self.rng_seq = before - np.repeat(np.cumsum(nbytes) - nbytes, n_ranges)
        self.size = nbytes.astype(float)
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.flow_start = np.full(n, math.nan)
        self.t_done = np.full(n, math.nan)
        self.t_event = np.full(n, math.inf)  # end of LATENCY or REDUCING phase
        # lazy progress: bytes sent at time t are sent0 + rate * (t - t0)
        self.sent0 = np.zeros(n)
        self.t0 = np.zeros(n)
        self.rate = np.zeros(n)
        # Set when a pipelined transfer's event fires: its upstream has passed the point the
        # event was computed for (first chunk delivered; our first byte plus a chunk; our last
        # byte plus a chunk). Upstream progress only grows, so the condition stays true; the
        # flag keeps a rounding error in the upstream's progress from undoing it (an event due
        # in less than the clock's resolution would otherwise fire again and again at one
        # instant).
        self.activated = np.zeros(n, dtype=bool)
        self.unblocked = np.zeros(n, dtype=bool)
        self.released = np.zeros(n, dtype=bool)

        self._routes(topology)
        self.inject = np.array([topology.injection(t.src, t.dst) for t in tr], dtype=float)
        self.reduce_delay = np.array([t.nbytes * topology.gamma(t.dst) if t.reduce else 0.0 for t in tr], dtype=float)

        # Dependencies and upstreams.
        self.incoming: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(tr):
            self.incoming[t.dst].append(i)
        self.upstream = np.full(n, -1, dtype=np.int64)
        self.base = np.zeros(n)
        for i, t in enumerate(tr):
            if t.pipelined:
                up, off = find_upstream(plan, i, self.incoming)
                if up is not None:
                    self.upstream[i] = up
                    self.base[i] = off
        self.waiting = np.array([len(set(t.after)) for t in tr], dtype=np.int64)
        self.dependents: list[list[int]] = [[] for _ in range(n)]
        for i, t in enumerate(tr):
            for a in set(t.after):
                self.dependents[a].append(i)
        self.downstream: list[list[int]] = [[] for _ in range(n)]
        for i in np.flatnonzero(self.upstream >= 0).tolist():
            self.downstream[int(self.upstream[i])].append(i)

        self._hosts(plan)

        # Scheduling state.
        self.waiting_data: dict[str, set[int]] = defaultdict(set)
        self.queue: dict[str, list[int]] = defaultdict(list)  # heap of transfer indices per sender
        self.busy_senders: set[str] = set()  # senders with a non-empty queue
        self.ready_senders: set[str] = set()  # busy senders that may inject now
        self.sender_free: dict[str, float] = defaultdict(float)
        self.waiting_upstream: set[int] = set()
        self.t = 0.0
        self.to_check: list[int] = []
        self.n_done = 0
        self._seq = itertools.count()
        self.ver = np.zeros(n, dtype=np.int64)  # version of each transfer's entries in flow_heap
        self.flow_heap: list[tuple] = []  # (time, seq, kind, transfer, version)
        self.phase_heap: list[tuple] = []  # (time, transfer, phase): end of LATENCY / REDUCING
        self.inject_heap: list[tuple] = []  # (time, sender): a busy sender's next injection
        self.phase_due: list[int] = []
        # Flowing transfers and what the last rate computation saw.
        self.flowing: set[int] = set()
        self.res_flows: list[set[int]] = [set() for _ in range(len(self.capacity))]
        self.n_users = np.zeros(len(self.capacity), dtype=np.int64)  # flowing transfers per resource
        self.usage = np.zeros(len(self.capacity))  # their summed rates
        self.freed: set[int] = set()  # saturated resources that flows have left
        self.cap_now = np.full(n, math.nan)  # cap in the last max-min (0 while blocked)
        self.coupled_now = np.full(n, -1, dtype=np.int64)  # upstream it was coupled to
        self.kids: dict[int, set[int]] = defaultdict(set)  # flows coupled to a flow
        self.started: list[int] = []
        self.dirty: set[int] = set()  # flows whose constraints or events may have changed

    def _routes(self, topology: Topology) -> None:
        """Resources, latency and fatpipe cap of every transfer's route (one lookup per route)."""
        tr = self.plan.transfers
        n = self.n
        link_res = topology.link_resource
        link_bw = topology.link_bandwidth
        link_lat = topology.link_latency
        self.latency = np.zeros(n)
        self.flow_cap = np.full(n, math.inf)
        route_cache: dict[tuple, tuple] = {}
        route_of: list[tuple] = []
        for t in tr:
            key = (t.src, t.dst) if t.path is None else t.path
            route = route_cache.get(key)
            if route is None:
                links = topology.route(t.src, t.dst) if t.path is None else topology.path_links(t.path)
                ids = np.asarray(links, dtype=np.int64)
                res = link_res[ids]
                fat = res < 0
                # fatpipe links cap each flow; the slow direction of an asymmetric shared
                # cable is a resource of its own (Topology.link_direction_resource)
                cap = float(link_bw[ids[fat]].min()) if fat.any() else math.inf
                extra = topology.link_direction_resource[ids]
                resources = tuple(np.concatenate((res[~fat], extra[extra >= 0])).tolist())
                route = (resources, float(link_lat[ids].sum()), cap)
                route_cache[key] = route
            route_of.append(route)
        self.route_res: list[tuple[int, ...]] = [r[0] for r in route_of]
        # routes that cross no resource twice (a flow crossing one twice uses it twice)
        self.route_simple = [len(set(r)) == len(r) for r in self.route_res]
        self.latency = np.array([r[1] for r in route_of], dtype=float)
        caps = np.array([r[2] for r in route_of], dtype=float)
        rate_cap = np.array([t.rate_cap if t.rate_cap is not None else math.inf for t in tr], dtype=float)
        self.flow_cap = np.minimum(caps, rate_cap)
        self.capacity = topology.resource_capacity
        lengths = np.array([len(r) for r in self.route_res], dtype=np.int64)
        self.res_ptr = np.concatenate(([0], np.cumsum(lengths)))
        self.res_idx = np.fromiter(
            itertools.chain.from_iterable(self.route_res), dtype=np.int64, count=int(lengths.sum())
        )

    def _hosts(self, plan: Plan) -> None:
        """Holdings, wanted bytes, and how each host's completion is detected."""
        tr = plan.transfers
        self.holds = Holdings(plan.initial)
        self.wanted = {h: rs for h, rs in plan.wanted.items()}
        self.wanted_bytes = {h: sum(ln for _, ln in rs) for h, rs in plan.wanted.items()}
        self.wanted_distinct = {h: IntervalSet(rs).total for h, rs in plan.wanted.items()}
        self.host_done: dict[str, float] = {}
        self.allreduce = plan.collective == "allreduce"
        # incoming transfers not yet done (all of them; those carrying bytes)
        self.left_all = {h: len(ix) for h, ix in self.incoming.items()}
        self.left_bytes = {h: sum(1 for i in ix if self.size[i] > 0) for h, ix in self.incoming.items()}

        names = sorted({t.dst for t in tr} | set(self.wanted))
        self.host_id = {h: k for k, h in enumerate(names)}
        self.host_name = names
        self.dst_id = np.array([self.host_id[t.dst] for t in tr], dtype=np.int64)
        # Hosts that may be credited mid-transfer (bytes received twice, already held or
        # not wanted).
        self.is_redundant = np.zeros(len(names), dtype=bool)
        if not self.allreduce:
            wanted_ids = np.array([self.host_id[h] for h in self.wanted], dtype=np.int64)
            self.is_redundant[wanted_ids] = ~self._exact_once(plan)[wanted_ids]
        self.redundant = {names[k] for k in np.flatnonzero(self.is_redundant).tolist()}
        self.host_ver = np.zeros(len(names), dtype=np.int64)
        self.live_in: list[set[int]] = [set() for _ in names]  # flowing transfers into each host
        self.stale_hosts: set[int] = set()
        self.cover_heap: list[tuple] = []  # (time, host id, version, exact)

    def _exact_once(self, plan: Plan) -> np.ndarray:
        """Per host id: every byte it receives is wanted, arrives once and is not held from
        the start; then it completes exactly when its last incoming transfer does."""
        n_hosts = len(self.host_name)
        inc_g = np.repeat(self.dst_id, self.rng_ptr[1:] - self.rng_ptr[:-1])
        inc_s, inc_e = self.rng_off, self.rng_off + self.rng_len
        received = np.bincount(inc_g, weights=self.rng_len, minlength=n_hosts)
        g, s, e = merge_grouped(inc_g, inc_s, inc_e)
        distinct = np.bincount(g, weights=e - s, minlength=n_hosts)
        ok = distinct == received
        span = int(max(e.max() if len(e) else 0, plan.size)) + 1

        def host_ranges(by_host):
            items = [
                (self.host_id[h], off, off + ln) for h, rs in by_host.items() if h in self.host_id for off, ln in rs
            ]
            arr = np.array(items, dtype=np.int64).reshape(-1, 3)
            return merge_grouped(arr[:, 0], arr[:, 1], arr[:, 2])

        # every received interval lies inside one wanted interval of its host
        wg, ws, we = host_ranges(self.wanted)
        k = np.searchsorted(wg * span + ws, g * span + s, side="right") - 1
        kk = np.clip(k, 0, None)
        inside = (k >= 0) & (wg[kk] == g) & (we[kk] >= e) if len(wg) else np.zeros(len(g), dtype=bool)
        # and meets none of the host's initial intervals
        ig, is_, ie = host_ranges(plan.initial)
        j = np.searchsorted(ig * span + ie, g * span + s, side="right")
        jj = np.clip(j, 0, max(len(ig) - 1, 0))
        meets = (j < len(ig)) & (ig[jj] == g) & (is_[jj] < e) if len(ig) else np.zeros(len(g), dtype=bool)
        bad = np.bincount(g[~inside | meets], minlength=n_hosts) > 0
        return ok & ~bad

    # ----------------------------------------------------------------- progress
    def _sent(self, i: int) -> float:
        return float(self.sent0[i] + self.rate[i] * (self.t - self.t0[i]))

    def _sent_vec(self, idx: np.ndarray) -> np.ndarray:
        return self.sent0[idx] + self.rate[idx] * (self.t - self.t0[idx])

    def _set_sent(self, i: int, value: float) -> None:
        self.sent0[i] = value
        self.t0[i] = self.t
        self._stale(i)

    def _stale(self, i: int) -> None:
        """Transfer ``i``'s progress changed: its receiver's coverage time must be recomputed."""
        h = self.dst_id[i]
        if self.is_redundant[h]:
            self.stale_hosts.add(int(h))

    # ----------------------------------------------------------------- readiness
    def _avail(self, i: int) -> float:
        """Bytes of transfer ``i``'s sequence its sender can send now."""
        u = self.upstream[i]
        if u < 0 or self.status[u] >= REDUCING or self.released[i]:
            return float(self.size[i])
        a = self._sent(u) - self.base[i] - self.chunk
        return float(min(max(a, 0.0), self.size[i]))

    def _consider(self, i: int) -> None:
        """Move transfer ``i`` from PENDING to its sender's queue when it can start."""
        if self.status[i] != PENDING or self.waiting[i] > 0:
            return
        t = self.plan.transfers[i]
        u = self.upstream[i]
        if u >= 0:
            su = self.status[u]
            if su >= REDUCING:
                pass
            elif su == FLOWING and (self.activated[i] or self._sent(u) >= self._activation(i) * (1 - _REL)):
                pass
            else:
                self.waiting_upstream.add(i)
                self._schedule_activation(i)
                return
        elif not self.holds.merged(t.src).covers_ranges(t.ranges):
            self.waiting_data[t.src].add(i)
            return
        self.waiting_upstream.discard(i)
        self.status[i] = QUEUED
        heapq.heappush(self.queue[t.src], i)
        self.busy_senders.add(t.src)
        self.ready_senders.add(t.src)

    def _activation(self, i: int) -> float:
        u = self.upstream[i]
        return float(min(self.base[i] + min(self.chunk, self.size[i]), self.size[u]))

    def _schedule_activation(self, w: int) -> None:
        """When pipelined transfer ``w``'s upstream will have delivered its first chunk."""
        u = self.upstream[w]
        if self.status[u] == FLOWING and self.rate[u] > 0:
            self.ver[w] += 1
            when = self.t + max((self._activation(w) - self._sent(u)) / self.rate[u], 0.0)
            heapq.heappush(self.flow_heap, (when, next(self._seq), EV_ACTIVATE, w, int(self.ver[w])))

    def _inject(self) -> bool:
        """Let every free sender inject its queued transfers (plan order); True if any did."""
        injected = False
        ready, self.ready_senders = self.ready_senders, set()
        for src in sorted(ready):
            q = self.queue[src]
            while q and self.sender_free[src] <= self.t * (1 + _REL) + 1e-300:
                i = heapq.heappop(q)
                start = max(self.t, self.sender_free[src]) + self.inject[i]
                if self.inject[i] > 0:
                    self.sender_free[src] = start
                self.status[i] = LATENCY
                self.t_event[i] = start + self.latency[i]
                heapq.heappush(self.phase_heap, (self.t_event[i], i, LATENCY))
                injected = True
            if q:
                heapq.heappush(self.inject_heap, (self.sender_free[src], src))
            else:
                self.busy_senders.discard(src)
        return injected

    # ----------------------------------------------------------------- state changes
    def _start_flows(self, idx: list[int]) -> None:
        """LATENCY -> FLOWING for the transfers ``idx`` (index order), at the current time."""
        arr = np.asarray(idx, dtype=np.int64)
        self.status[arr] = FLOWING
        self.flow_start[arr] = self.t
        self.sent0[arr] = 0.0
        self.t0[arr] = self.t
        self.rate[arr] = 0.0
        if len(idx) > SMALL:
            np.add.at(self.n_users, self._resources(arr), 1)
        else:
            for i in idx:
                for r in self.route_res[i]:
                    self.n_users[r] += 1
        for i in idx:
            self.flowing.add(i)
            for r in self.route_res[i]:
                self.res_flows[r].add(i)
            self.live_in[self.dst_id[i]].add(i)
            self._stale(i)
            # pipelined transfers waiting for this one may start now
            self.to_check.extend(self.downstream[i])
        self.started.extend(idx)
        empty = arr[self.size[arr] <= 0]
        if len(empty):
            self._finish_flows(empty.tolist())

    def _finish_flows(self, idx: list[int]) -> None:
        """FLOWING -> REDUCING or DONE for the transfers ``idx`` (index order): every byte sent."""
        arr = np.asarray(idx, dtype=np.int64)
        self.sent0[arr] = self.size[arr]
        self.t0[arr] = self.t
        self.ver[arr] += 1
        res = self._resources(arr)
        # a saturated resource they leave may let the flows left on it go faster
        self.freed.update(np.unique(res[self.usage[res] >= self.capacity[res] * (1 - 1e-9)]).tolist())
        lengths = self.res_ptr[arr + 1] - self.res_ptr[arr]
        np.add.at(self.usage, res, -np.repeat(self.rate[arr], lengths))
        np.add.at(self.n_users, res, -1)
        self.rate[arr] = 0.0
        self.cap_now[arr] = math.nan
        for i in idx:
            self._stale(i)
            self.flowing.discard(i)
            self.live_in[self.dst_id[i]].discard(i)
            for r in self.route_res[i]:
                self.res_flows[r].discard(i)
            p = self.coupled_now[i]
            if p >= 0:
                self.kids[int(p)].discard(i)
                self.coupled_now[i] = -1
            self.dirty.update(self.downstream[i])
            if self.reduce_delay[i] > 0:
                self.status[i] = REDUCING
                self.t_event[i] = self.t + self.reduce_delay[i]
                heapq.heappush(self.phase_heap, (self.t_event[i], i, REDUCING))
            else:
                self._complete(i)

    def _complete(self, i: int) -> None:
        self.status[i] = DONE
        self.t_done[i] = self.t
        self.n_done += 1
        self._stale(i)
        t = self.plan.transfers[i]
        h = t.dst
        self.holds.add(h, t.ranges, self.size[i])
        self.left_all[h] -= 1
        if self.size[i] > 0:
            self.left_bytes[h] -= 1
        for d in self.dependents[i]:
            self.waiting[d] -= 1
            if self.waiting[d] == 0:
                self.to_check.append(d)
        self.to_check.extend(self.downstream[i])
        if self.waiting_data.get(h):
            before = self.holds.merged_total(h)
            if self.holds.merged(h).total != before:
                self.to_check.extend(sorted(self.waiting_data.pop(h)))
        self._host_check(h)

    def _host_check(self, h: str) -> None:
        if h in self.host_done or h not in self.wanted:
            return
        if self.allreduce:
            if self.left_all.get(h, 0) == 0:
                self.host_done[h] = self.t
            return
        if h not in self.redundant:
            # every incoming byte is wanted and new: not covered before the last one arrives
            if self.left_bytes.get(h, 0) > 0:
                return
        elif self.holds.upper_total(h) < self.wanted_distinct[h] * (1 - _REL):
            return  # cannot hold every wanted byte yet
        if self.holds.merged(h).covers_ranges(self.wanted[h]):
            self.host_done[h] = self.t

    # ----------------------------------------------------------------- mid-transfer coverage
    def _schedule_coverage(self) -> None:
        """For the hosts whose incoming progress changed: when they may next be covered.

        A host cannot hold every wanted byte before what it holds plus what its flowing
        transfers deliver reaches its distinct wanted bytes; that lower bound is queued, and
        the exact time (``_coverage_time``) is computed only once the bound is passed."""
        if not self.stale_hosts:
            return
        hs = np.fromiter(self.stale_hosts, dtype=np.int64, count=len(self.stale_hosts))
        self.stale_hosts = set()
        self.host_ver[hs] += 1
        # the flowing transfers into each host, not all its incoming ones (a host of a ring
        # allgather has a thousand, one or two at a time under way)
        lives = [self.live_in[h] for h in hs.tolist()]
        n_live = np.array([len(x) for x in lives], dtype=np.int64)
        inc = np.fromiter(itertools.chain.from_iterable(lives), dtype=np.int64, count=int(n_live.sum()))
        group = np.repeat(np.arange(len(hs)), n_live)
        delivered = np.bincount(group, weights=self._sent_vec(inc), minlength=len(hs))
        speed = np.bincount(group, weights=self.rate[inc], minlength=len(hs))
        for k, h in enumerate(hs.tolist()):
            name = self.host_name[h]
            if n_live[k] == 0 or name in self.host_done:
                continue
            held = self.holds.upper_total(name)
            deficit = self.wanted_distinct[name] * (1 - _REL) - held - delivered[k]
            if deficit <= 0:
                when = self.t
            elif speed[k] > 0:
                when = self.t + deficit / speed[k]
            else:
                continue
            heapq.heappush(self.cover_heap, (when, h, int(self.host_ver[h]), False))

    def _credit_covered(self, t_prev: float) -> None:
        """Credit hosts that hold everything through partial progress, by time ``self.t``
        (the rates have not changed since ``t_prev``)."""
        while self.cover_heap and self.cover_heap[0][0] <= self.t:
            when, h, ver, exact = heapq.heappop(self.cover_heap)
            name = self.host_name[h]
            if ver != self.host_ver[h] or name in self.host_done:
                continue
            if not exact:
                live = sorted(self.live_in[h])
                if not live:
                    continue
                sent_prev = self.sent0[live] + self.rate[live] * (t_prev - self.t0[live])
                when = self._coverage_time(name, live, t_prev, sent_prev)
                if when > self.t:
                    if math.isfinite(when):
                        heapq.heappush(self.cover_heap, (when, h, ver, True))
                    continue
            self.host_done[name] = when

    def _coverage_time(self, h: str, live: list[int], t0: float, sent0: np.ndarray) -> float:
        """Earliest time >= ``t0`` at which ``h`` holds every wanted byte, its ``live``
        transfers progressing from ``sent0`` (aligned with ``live``) at their current rates
        (inf: never).

        A transfer delivers its ranges in order, so the byte just before position ``e`` of a
        range that starts at sequence offset ``c`` arrives when its progress reaches
        ``c + (e - start)``. On an elementary interval of the missing bytes (no range
        boundary inside), each covering transfer's arrival time grows with the position, so
        the interval is complete when its last byte arrives by the fastest transfer; the host
        is complete when its last interval is.
        """
        held = self.holds.merged(h)
        gaps = IntervalSet()
        for off, length in self.wanted[h]:
            for a, b in held.missing(off, off + length):
                gaps.add(a, b)
        missing = list(zip(gaps.starts, gaps.ends))  # sorted, disjoint (start, end)
        if not missing:
            return t0
        live_idx = np.asarray(live, dtype=np.int64)
        pos, counts = _slices(self.rng_ptr, live_idx)
        p_start = self.rng_off[pos].astype(float)
        p_end = p_start + self.rng_len[pos]
        p_shift = self.rng_seq[pos] - p_start  # sequence position of absolute position x: x + shift
        p_rate = np.repeat(self.rate[live_idx], counts)
        p_sent = np.repeat(np.asarray(sent0, dtype=float), counts)
        ms = np.asarray([a for a, _ in missing], dtype=float)
        me = np.asarray([b for _, b in missing], dtype=float)
        cuts = np.unique(np.concatenate((p_start, p_end, ms, me)))
        hi = cuts[1:]
        mid = 0.5 * (cuts[:-1] + hi)
        k = np.searchsorted(ms, mid, side="right") - 1
        inside = (k >= 0) & (mid < me[np.clip(k, 0, None)])
        # each range covers a run of elementary intervals (its ends are cuts); expand the
        # (interval, range) pairs of those runs and keep each interval's earliest arrival
        first = np.searchsorted(cuts, p_start)
        runs = np.searchsorted(cuts, p_end) - first
        piece = np.repeat(np.arange(len(first)), runs)
        interval = first[piece] + np.arange(len(piece)) - np.repeat(np.cumsum(runs) - runs, runs)
        need = hi[interval] + (p_shift - p_sent)[piece]
        rate = p_rate[piece]
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(need <= 0, 0.0, np.where(rate > 0, need / rate, np.inf))
        arrival = np.full(len(hi), np.inf)
        np.minimum.at(arrival, interval, wait)
        arrival = arrival[inside]
        return t0 + float(arrival.max()) if arrival.size else t0

    # ----------------------------------------------------------------- main loop
    def run(self) -> Result:
        self.to_check = list(range(self.n))
        for h in self.wanted:
            self._host_check(h)
        # every step at one instant fires an event that changes a transfer's state for good
        # (starts, catches up, is released, ends ...), so the number of steps without time
        # passing is bounded by a few per transfer; past that the engine is stuck
        still, still_limit = 0, 8 * self.n + 1000
        while True:
            self._instant()
            if self.n_done == self.n:
                break
            self._update_rates()
            dt, hits, phases, senders = self._next_events()
            if not math.isfinite(dt):
                self._deadlock()
            t_prev = self.t
            self.t = t_prev + dt
            still = still + 1 if self.t == t_prev else 0  # dt may be below the clock's resolution
            if still > still_limit:
                self._stuck(hits)
            if self.redundant:
                # before completions are processed, so a host covered mid-interval gets
                # its exact time rather than the time of the event
                self._credit_covered(t_prev)
            self._settle(hits, phases, senders)
        return self._result()

    def _instant(self) -> None:
        """Instantaneous transitions at time t, until nothing changes."""
        while True:
            changed = False
            if self.to_check:
                todo, self.to_check = self.to_check, []
                for i in todo:
                    self._consider(i)
                changed = True
            latency, reducing = self._due()
            if latency:
                self._start_flows(latency)
                changed = True
            for i in reducing:
                self._complete(i)
                changed = True
            if changed or self.to_check:
                continue
            # Inject only once every transfer that becomes ready at this instant is
            # known, so that transfers ready at the same time go in plan order.
            if not self._inject():
                break

    def _due(self) -> tuple[list[int], list[int]]:
        """Transfers whose LATENCY / REDUCING phase ends now, each in index order."""
        due = self.phase_due
        self.phase_due = []
        heap = self.phase_heap
        limit = self.t * (1 + _REL)
        while heap and heap[0][0] <= limit:
            due.append(heapq.heappop(heap)[1])
        latency = sorted({i for i in due if self.status[i] == LATENCY})
        reducing = sorted({i for i in due if self.status[i] == REDUCING})
        return latency, reducing

    def _update_rates(self) -> None:
        """Max-min rates after the changes since the last call, recomputed only where they can
        change, and the next events of every flow whose rate or constraints changed."""
        status = self.status
        started = [i for i in self.started if status[i] == FLOWING]
        self.started = []
        dirty = {i for i in self.dirty if status[i] == FLOWING}
        self.dirty = set()
        touched = set(started)
        check = sorted(dirty.union(started))
        if len(check) > SMALL:
            idx = np.array(check, dtype=np.int64)
            caps, coupled_to = self._constraints(idx)
            for k in np.flatnonzero((caps != self.cap_now[idx]) | (coupled_to != self.coupled_now[idx])).tolist():
                self._set_constraints(check[k], float(caps[k]), int(coupled_to[k]))
                touched.add(check[k])
        else:
            for f in check:
                cap, up = self._constraint_one(f)
                if cap != self.cap_now[f] or up != self.coupled_now[f]:
                    self._set_constraints(f, cap, up)
                    touched.add(f)
        # flows that may gain from what the ended flows freed on saturated resources
        for r in self.freed:
            touched.update(g for g in self.res_flows[r] if not self._pinned(g))
        self.freed = set()
        refresh = dirty.union(started)
        if touched:
            changed = self._rebalance(touched)
            refresh.update(changed.tolist())
            moved = dirty.union(changed.tolist())
        else:
            moved = dirty
        # the events of pipelined transfers depend on their upstream's progress
        for f in moved:
            for c in self.downstream[f]:
                sc = status[c]
                if sc == FLOWING:
                    refresh.add(c)
                elif sc == PENDING and c in self.waiting_upstream:
                    self._schedule_activation(c)
        if len(refresh) > SMALL:
            self._schedule(np.array(sorted(refresh), dtype=np.int64))
        else:
            for i in sorted(refresh):
                if status[i] == FLOWING:
                    self._schedule_one(i)
        if self.redundant:
            self._schedule_coverage()

    def _set_constraints(self, f: int, cap: float, up: int) -> None:
        old = int(self.coupled_now[f])
        if old != up:
            if old >= 0:
                self.kids[old].discard(f)
            if up >= 0:
                self.kids[up].add(f)
        self.cap_now[f] = cap
        self.coupled_now[f] = up

    def _upstream_state(self, i: int) -> tuple[bool, float, float]:
        """(free, ahead, upstream rate) of flowing transfer ``i``: not bound by an upstream;
        how far the upstream is past ``base + chunk`` (bytes); the upstream's rate."""
        u = self.upstream[i]
        if u < 0 or self.status[u] != FLOWING or self.released[i]:
            return True, math.inf, 0.0
        ahead = self._sent(u) - self.base[i] - self.chunk
        return bool(ahead >= self.size[i] * (1 - _REL)), float(ahead), float(self.rate[u])

    def _constraint_one(self, i: int) -> tuple[float, int]:
        """``_constraints`` of one transfer, without arrays (most events touch a few flows)."""
        free, ahead, _ = self._upstream_state(i)
        cap = float(self.flow_cap[i])
        size = self.size[i]
        if free or self._sent(i) < min(max(ahead, 0.0), size) - _REL * size:
            return cap, -1
        u = int(self.upstream[i])
        if ahead + _REL * self.size[u] < 0 and not self.unblocked[i]:
            return 0.0, -1  # blocked
        return cap, u

    def _constraints(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cap (0 while blocked) and coupled upstream (-1: none) of flowing transfers ``idx``.

        Coupled: pipelined, caught up with the bytes its upstream has delivered, upstream
        still flowing. Blocked: coupled while the upstream is not yet one chunk past our first
        byte (a range shorter than a chunk): nothing to send until it is."""
        caps = self.flow_cap[idx]
        u = self.upstream[idx]
        has = u >= 0
        uu = np.where(has, u, 0)
        size = self.size[idx]
        live = has & (self.status[uu] == FLOWING)
        ahead = self._sent_vec(uu) - self.base[idx] - self.chunk
        free = ~live | self.released[idx] | (ahead >= size * (1 - _REL))
        av = np.clip(ahead, 0.0, size)
        coupled = ~free & (self._sent_vec(idx) >= av - _REL * size)
        blocked = coupled & (ahead + _REL * self.size[uu] < 0) & ~self.unblocked[idx]
        caps = np.where(blocked, 0.0, caps)
        return caps, np.where(coupled & ~blocked, u, -1)

    def _close(self, flows: set[int]) -> set[int]:
        """``flows`` with every flow coupled to one of them, transitively (a coupled pair's
        rates are decided together)."""
        out = set(flows)
        stack = list(flows)
        coupled_now, kids = self.coupled_now, self.kids
        while stack:
            f = stack.pop()
            p = int(coupled_now[f])
            if p >= 0 and p not in out:
                out.add(p)
                stack.append(p)
            for k in kids.get(f, ()):
                if k not in out:
                    out.add(k)
                    stack.append(k)
        return out

    def _pinned(self, g: int) -> bool:
        """Flow ``g``'s rate is set by its own cap or its coupling, whatever else changes."""
        r = self.rate[g]
        if r >= self.cap_now[g] * (1 - _REL):
            return True
        p = self.coupled_now[g]
        return bool(p >= 0 and r >= self.rate[p] * (1 - _REL))

    def _resources(self, idx: np.ndarray) -> np.ndarray:
        """The resources the transfers ``idx`` cross (with repetitions)."""
        return self.res_idx[_slices(self.res_ptr, idx)[0]]

    def _rebalance(self, seeds: set[int]) -> np.ndarray:
        """Max-min rates after a change at flows ``seeds``; returns the flows whose rate
        changed, with their progress written back at the current time.

        Recomputes a set S of flows with every other flow fixed at its rate (S gets the
        capacity they leave), then grows S until the union is max-min fair: every flow keeps
        a bottleneck (its cap or coupling, or a saturated resource where no flow gets more).
        A flow outside S can lose its bottleneck only on a resource S crosses that is (or
        was) saturated, and only if it is not held by its own cap or coupling, or if it gets
        more there than a flow of S not held by its own either; such flows join S. Resources with slack never propagate
        a change, so a new flow costs what it touches even when every flow of the plan is
        connected to every other through shared links. Past a share of the flowing
        transfers, or once the growing rounds have together solved about twice as many flows
        as are flowing (a chain of saturated links grows S a few flows per round), all of them
        are recomputed at once."""
        limit = max(LOCAL_COMPONENT_LIMIT, len(self.flowing) // 8)
        budget = 2 * len(self.flowing) + 64
        group = self._close(seeds) if len(seeds) <= limit else set(self.flowing)
        if len(group) == 1:
            (f,) = group
            done = self._rebalance_one(f)
            if done is not None:
                return done
        solved = 0
        while True:
            if len(group) > limit or solved > budget:
                comp = np.array(sorted(self.flowing), dtype=np.int64)
                rates = self._solve(comp, residual=False)[0]
                break
            solved += len(group)
            comp = np.array(sorted(group), dtype=np.int64)
            rates, used, local, pair_flow = self._solve(comp, residual=True)
            more = self._unsettled(group, comp, rates, used, local, pair_flow)
            if not more:
                break
            group |= self._close(more)
        return self._apply(comp, rates)

    def _rebalance_one(self, f: int) -> np.ndarray | None:
        """``_rebalance`` of a single uncoupled flow, without arrays: its max-min rate is its
        cap or the least capacity the others leave on its route. None when flows beside it
        may lose their bottleneck (then the general case handles it)."""
        if not self.route_simple[f]:
            return None
        route = self.route_res[f]
        old = float(self.rate[f])
        usage, capacity = self.usage, self.capacity
        rate = float(self.cap_now[f])
        for r in route:
            rate = min(rate, max(capacity[r] - usage[r] + old, 0.0))
        if math.isinf(rate):
            return None  # unbounded: the general case reports it
        # at its cap, f needs no resource as its bottleneck (see _unsettled)
        low = math.inf if rate >= self.cap_now[f] * (1 - _REL) else rate * (1 + _REL)
        for r in route:
            sat = capacity[r] * (1 - 1e-9)
            if usage[r] >= sat or usage[r] - old + rate >= sat:
                for g in self.res_flows[r]:
                    if g != f and (self.rate[g] > low or not self._pinned(g)):
                        return None
        if rate == old:
            return np.zeros(0, dtype=np.int64)
        self.sent0[f] = self._sent(f)
        self.t0[f] = self.t
        for r in route:
            usage[r] += rate - old
        self.rate[f] = rate
        self._stale(f)
        return np.array([f], dtype=np.int64)

    def _solve(self, comp: np.ndarray, residual: bool) -> tuple:
        """Progressive filling over the flows ``comp`` (sorted, closed under coupling), on the
        capacity the other flowing transfers leave (``residual``) or on the whole of it."""
        lengths = self.res_ptr[comp + 1] - self.res_ptr[comp]
        pair_flow = np.repeat(np.arange(len(comp)), lengths)
        used, local = np.unique(self._resources(comp), return_inverse=True)
        if residual:
            own = np.bincount(local, weights=self.rate[comp][pair_flow], minlength=len(used))
            capacity = np.maximum(self.capacity[used] - self.usage[used] + own, 0.0)
        else:
            capacity = self.capacity[used]
        cp = self.coupled_now[comp]
        k_c = np.flatnonzero(cp >= 0)
        parents = np.searchsorted(comp, cp[k_c])
        parent = None
        if len(k_c):
            parent = np.full(len(comp), -1, dtype=np.int64)
            parent[k_c] = parents
        rates = progressive_filling(pair_flow, local, capacity, self.cap_now[comp], parent=parent)
        if len(k_c):
            # a coupled flow held below its upstream's rate by its own bottleneck falls
            # behind at once: it is uncoupled at the next event
            self.dirty.update(comp[k_c[rates[k_c] < rates[parents]]].tolist())
        return rates, used, local, pair_flow

    def _unsettled(self, group, comp, rates, used, local, pair_flow) -> set[int]:
        """Flows outside ``group`` that may lose their bottleneck with ``comp`` at ``rates``."""
        old = np.bincount(local, weights=self.rate[comp][pair_flow], minlength=len(used))
        new = np.bincount(local, weights=rates[pair_flow], minlength=len(used))
        capacity = self.capacity[used] * (1 - 1e-9)
        saturated = (self.usage[used] >= capacity) | (self.usage[used] - old + new >= capacity)
        shared = self.n_users[used] > np.bincount(local, minlength=len(used))
        # a flow of comp held by its cap or coupling needs no resource as its bottleneck; one
        # that is not must get the most on some saturated resource it crosses, so a flow
        # outside getting more than it there may have to give way
        free = ~self._pinned_at(comp, rates)[pair_flow]
        lowest = np.full(len(used), np.inf)
        np.minimum.at(lowest, local[free], rates[pair_flow[free]])
        more: set[int] = set()
        for k in np.flatnonzero(saturated & shared).tolist():
            low = lowest[k] * (1 + _REL)
            for g in self.res_flows[int(used[k])]:
                if g not in group and g not in more and (self.rate[g] > low or not self._pinned(g)):
                    more.add(g)
        return more

    def _pinned_at(self, comp: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """``_pinned`` of every flow of ``comp`` (sorted, closed under coupling) at ``rates``."""
        pinned = rates >= self.cap_now[comp] * (1 - _REL)
        cp = self.coupled_now[comp]
        k = np.flatnonzero(cp >= 0)
        pinned[k] |= rates[k] >= rates[np.searchsorted(comp, cp[k])] * (1 - _REL)
        return pinned

    def _apply(self, comp: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """Set the new rates of ``comp``; returns the flows whose rate changed."""
        changed = rates != self.rate[comp]
        idx = comp[changed]
        if len(idx):
            self.sent0[idx] = self._sent_vec(idx)
            self.t0[idx] = self.t
            lengths = self.res_ptr[idx + 1] - self.res_ptr[idx]
            delta = rates[changed] - self.rate[idx]
            np.add.at(self.usage, self._resources(idx), np.repeat(delta, lengths))
            self.rate[idx] = rates[changed]
            ids = self.dst_id[idx]
            self.stale_hosts.update(ids[self.is_redundant[ids]].tolist())
        return idx

    def _schedule(self, idx: np.ndarray) -> None:
        """Queue the next events of flowing transfers ``idx`` (their earlier entries go stale):
        done; catching up with the bytes the upstream has delivered; the upstream passing the
        end of our bytes plus one chunk (no longer bound); the upstream passing our first byte
        plus one chunk (a blocked transfer gets data to send)."""
        idx = idx[self.status[idx] == FLOWING]
        if not len(idx):
            return
        self.ver[idx] += 1
        r = self.rate[idx]
        size = self.size[idx]
        s = self._sent_vec(idx)
        u = self.upstream[idx]
        has = u >= 0
        uu = np.where(has, u, 0)
        live = has & (self.status[uu] == FLOWING)
        su = self._sent_vec(uu)
        ru = np.where(live, self.rate[uu], 0.0)
        ahead = su - self.base[idx] - self.chunk
        free = ~live | self.released[idx] | (ahead >= size * (1 - _REL))
        av = np.where(free, size, np.clip(ahead, 0.0, size))
        gap = av - s
        with np.errstate(divide="ignore", invalid="ignore"):
            kinds = (
                (EV_DONE, np.where(free & (r > 0), (size - s) / r, np.inf)),
                (EV_CATCH, np.where(~free & (gap > _REL * size) & (r > ru), gap / (r - ru), np.inf)),
                (EV_FREE, np.where(~free & (ru > 0), np.maximum(size - ahead, 0.0) / ru, np.inf)),
                (
                    EV_UNBLOCK,
                    np.where(
                        ~free & (ahead + _REL * self.size[uu] < 0) & ~self.unblocked[idx] & (ru > 0),
                        -ahead / ru,
                        np.inf,
                    ),
                ),
            )
        heap, seq, t = self.flow_heap, self._seq, self.t
        ver = self.ver[idx]
        for kind, dt in kinds:
            k = np.flatnonzero(np.isfinite(dt))
            for when, i, v in zip((t + np.maximum(dt[k], 0.0)).tolist(), idx[k].tolist(), ver[k].tolist()):
                heapq.heappush(heap, (when, next(seq), kind, i, v))
        if len(heap) > 4 * len(self.flowing) + 4096:
            self._compact_heap()

    def _schedule_one(self, i: int) -> None:
        """``_schedule`` of one flowing transfer, without arrays."""
        self.ver[i] += 1
        v = int(self.ver[i])
        r, size, s, t = float(self.rate[i]), float(self.size[i]), self._sent(i), self.t
        free, ahead, ru = self._upstream_state(i)
        heap, seq = self.flow_heap, self._seq
        if free:
            if r > 0:
                heapq.heappush(heap, (t + max((size - s) / r, 0.0), next(seq), EV_DONE, i, v))
            return
        gap = min(max(ahead, 0.0), size) - s
        if gap > _REL * size and r > ru:
            heapq.heappush(heap, (t + gap / (r - ru), next(seq), EV_CATCH, i, v))
        if ru > 0:
            heapq.heappush(heap, (t + max(size - ahead, 0.0) / ru, next(seq), EV_FREE, i, v))
            if ahead + _REL * self.size[self.upstream[i]] < 0 and not self.unblocked[i]:
                heapq.heappush(heap, (t - ahead / ru, next(seq), EV_UNBLOCK, i, v))

    def _compact_heap(self) -> None:
        """Drop stale entries (their transfer has newer ones, or is no longer flowing)."""
        ver, status = self.ver, self.status
        self.flow_heap = [
            e
            for e in self.flow_heap
            if e[4] == ver[e[3]] and (status[e[3]] == FLOWING or (e[2] == EV_ACTIVATE and status[e[3]] == PENDING))
        ]
        heapq.heapify(self.flow_heap)

    def _valid(self, entry: tuple) -> bool:
        _, _, kind, i, v = entry
        if v != self.ver[i]:
            return False
        if kind == EV_ACTIVATE:
            return bool(self.status[i] == PENDING) and i in self.waiting_upstream
        return bool(self.status[i] == FLOWING)

    def _next_events(self) -> tuple[float, list[tuple], list[int], list[str]]:
        """Time to the next event, and the events due then: flow events, phase ends, senders
        that may inject. Events within 1e-12 (relative) of the first are taken together."""
        fh, ph, ih = self.flow_heap, self.phase_heap, self.inject_heap
        while fh and not self._valid(fh[0]):
            heapq.heappop(fh)
        while ph and self.status[ph[0][1]] != ph[0][2]:
            heapq.heappop(ph)
        while ih and ih[0][1] not in self.busy_senders:
            heapq.heappop(ih)
        first = min(fh[0][0] if fh else math.inf, ph[0][0] if ph else math.inf, ih[0][0] if ih else math.inf)
        if not math.isfinite(first):
            return math.inf, [], [], []
        dt = max(first - self.t, 0.0)
        limit = self.t + dt + dt * 1e-12 + 1e-300
        hits = []
        while fh and fh[0][0] <= limit:
            e = heapq.heappop(fh)
            if self._valid(e):
                hits.append(e)
        phases = []
        while ph and ph[0][0] <= limit:
            _, i, phase = heapq.heappop(ph)
            if self.status[i] == phase:
                phases.append(i)
        senders = []
        while ih and ih[0][0] <= limit:
            _, src = heapq.heappop(ih)
            if src in self.busy_senders:
                senders.append(src)
        return dt, hits, phases, senders

    def _settle(self, hits: list[tuple], phases: list[int], senders: list[str]) -> None:
        """Snap values at the new time and fire the events that are due."""
        finished = []
        for _, _, kind, i, _ in hits:
            if kind == EV_DONE:
                finished.append(i)
            elif kind == EV_CATCH:
                self._set_sent(i, self._avail(i))
                self.dirty.add(i)
                if self.sent0[i] >= self.size[i] * (1 - _REL):
                    finished.append(i)
            elif kind == EV_ACTIVATE:
                self.activated[i] = True
                self.to_check.append(i)
            else:
                (self.released if kind == EV_FREE else self.unblocked)[i] = True
                self.dirty.add(i)
        for i in phases:
            self.t_event[i] = min(self.t_event[i], self.t)
        self.phase_due.extend(phases)
        for src in senders:
            if self.sender_free[src] < self.t * (1 + _REL):
                self.sender_free[src] = min(self.sender_free[src], self.t)
            self.ready_senders.add(src)
        finished = [i for i in sorted(set(finished)) if self.status[i] == FLOWING]
        if finished:
            self._finish_flows(finished)

    def _deadlock(self) -> None:
        stuck = np.flatnonzero(self.status != DONE)[:5].tolist()
        tr = self.plan.transfers
        why = []
        for i in stuck:
            t = tr[i]
            if self.waiting[i] > 0:
                reason = "waits for transfers in 'after' that never complete"
            elif self.upstream[i] >= 0:
                reason = f"waits for its upstream transfer {int(self.upstream[i])}"
            elif self.status[i] == FLOWING:
                reason = "gets no bandwidth"
            else:
                reason = f"its sender {t.src!r} never holds its bytes"
            why.append(f"transfer {i} ({t.src}->{t.dst}) {reason}")
        raise SimulationError(
            f"plan of {self.plan.planner or 'unnamed planner'} cannot complete at t={self.t:.6g} s: " + "; ".join(why)
        )

    def _stuck(self, hits: list[tuple]) -> None:
        kinds = ("done", "catch up", "released", "unblocked", "activated")
        events = ", ".join(f"transfer {i} {kinds[k]}" for _, _, k, i, _ in hits[:5]) or "phase ends"
        raise SimulationError(
            f"plan of {self.plan.planner or 'unnamed planner'}: the simulator makes no progress at "
            f"t={self.t:.9g} s (events {events} keep recurring); this is a bug in topocast's "
            "simulator, please report it with the plan and topology"
        )

    def _result(self) -> Result:
        times = {}
        for h in self.wanted:
            times[h] = self.host_done.get(h, math.inf)
        per_host, makespan, aggregate = aggregate_from_times(self.wanted_bytes, times)
        transfer_times = tuple(zip(self.flow_start.tolist(), self.t_done.tolist()))
        return Result(
            algorithm=self.plan.planner,
            per_host=per_host,
            makespan=makespan,
            aggregate_bandwidth=aggregate,
            kind="predicted",
            transfer_times=transfer_times,
        )


def _slices(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the CSR rows ``idx`` (``ptr[i]:ptr[i + 1]`` each, concatenated) and the
    length of each row."""
    starts = ptr[idx]
    lengths = ptr[idx + 1] - starts
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum())), lengths


def simulate(plan: Plan, topology: Topology, *, chunk_size: int | None = None) -> Result:
    """Predict how ``plan`` runs on ``topology`` (fluid max-min model; docs/design.md "Simulator").

    Parameters
    ----------
    plan : Plan
    topology : Topology
    chunk_size : int, optional
        Pipelining granularity in bytes (overrides ``plan.chunk_size``; 0 = ideal fluid).

    Returns
    -------
    Result
        Per host: time (s) it held every wanted byte, and rate = wanted bytes / time (bytes/s);
        makespan; aggregate bandwidth (sum of per-host rates).

    Raises
    ------
    SimulationError
        When the plan cannot complete (dependency deadlock, a sender that never gets its data).
    """
    # The simulator allocates millions of small objects and makes no reference cycles: the
    # cyclic collector would rescan the whole plan again and again for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Sim(plan, topology, chunk_size).run()
    finally:
        if enabled:
            gc.enable()
