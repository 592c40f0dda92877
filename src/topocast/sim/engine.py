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
* Bandwidth: every event, max-min fair rates by progressive filling over shared resources,
  honouring ``rate_cap`` and fatpipe links (``sim.maxmin``).
* A host holds a byte from the moment any transfer delivers it; its completion time is when
  it holds every byte it wants. (For hosts that receive some bytes twice, e.g. relays of
  Stable Broadcast, this is found between events by bisection on the linear progress.)
* Deterministic: no randomness, ties broken by transfer index.

Times are seconds, sizes bytes, rates bytes/s.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SimulationError
from ..intervals import IntervalSet
from ..memory import BYTES_PER_RANGE, BYTES_PER_TRANSFER, check_fits
from ..plan import Plan
from ..plan_graph import find_upstream
from ..results import Result, aggregate_from_times
from .maxmin import progressive_filling

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["simulate"]

# flowing transfers from which max-min is recomputed per touched component (below: all at once,
# which is as exact and spares scipy's import on small runs)
LOCAL_RATES_FROM = 256

PENDING, QUEUED, LATENCY, FLOWING, REDUCING, DONE = range(6)
_REL = 1e-12


class _Sim:
    def __init__(self, plan: Plan, topology: Topology, chunk_size: int | None) -> None:
        self.plan = plan
        self.topo = topology
        self.chunk = float(plan.chunk_size if chunk_size is None else chunk_size)
        tr = plan.transfers
        n = self.n = len(tr)
        check_fits(
            n * BYTES_PER_TRANSFER + BYTES_PER_RANGE * sum(len(t.ranges) for t in tr),
            f"simulating a plan of {n:,} transfers",
            element="plan",
        )
        self.size = np.array([t.nbytes for t in tr], dtype=float)
        self.sent = np.zeros(n)
        self.rate = np.zeros(n)
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.flow_start = np.full(n, math.nan)
        self.t_done = np.full(n, math.nan)
        self.t_event = np.full(n, math.inf)  # end of LATENCY or REDUCING phase

        link_res = topology.link_resource
        link_bw = topology.link_bandwidth
        link_lat = topology.link_latency
        self.latency = np.zeros(n)
        self.flow_cap = np.full(n, math.inf)
        self.res_of: list[np.ndarray] = []
        route_cache: dict[tuple, tuple] = {}
        for i, t in enumerate(tr):
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
                route = (np.concatenate((res[~fat], extra[extra >= 0])), float(link_lat[ids].sum()), cap)
                route_cache[key] = route
            res, lat, cap = route
            self.res_of.append(res)
            self.latency[i] = lat
            self.flow_cap[i] = min(cap, t.rate_cap if t.rate_cap is not None else math.inf)
        self.capacity = topology.resource_capacity
        lengths = np.array([len(r) for r in self.res_of], dtype=np.int64)
        self.res_ptr = np.concatenate(([0], np.cumsum(lengths)))
        self.res_idx = np.concatenate(self.res_of) if self.res_of else np.zeros(0, dtype=np.int64)
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
        for i in range(n):
            if self.upstream[i] >= 0:
                self.downstream[int(self.upstream[i])].append(i)

        # Holdings and wanted bytes.
        self.holds: dict[str, IntervalSet] = defaultdict(IntervalSet)
        for h, rs in plan.initial.items():
            self.holds[h].add_ranges(rs)
        self.wanted = {h: rs for h, rs in plan.wanted.items()}
        self.wanted_bytes = {h: sum(l for _, l in rs) for h, rs in plan.wanted.items()}
        self.host_done: dict[str, float] = {}
        self.allreduce = plan.collective == "allreduce"
        incoming_bytes: dict[str, float] = defaultdict(float)
        incoming_set: dict[str, IntervalSet] = defaultdict(IntervalSet)
        for i, t in enumerate(tr):
            incoming_bytes[t.dst] += self.size[i]
            if t.dst in self.wanted:
                incoming_set[t.dst].add_ranges(t.ranges)

        def exact_once(h: str) -> bool:
            # every byte h receives is wanted, arrives once and is not held from the start:
            # then h completes exactly when its last incoming transfer does
            inc = incoming_set[h]
            if inc.total != incoming_bytes[h]:
                return False
            want, init = IntervalSet(self.wanted[h]), IntervalSet(plan.initial.get(h, ()))
            return all(want.covers(a, b) and init.missing(a, b) == [(a, b)] for a, b in inc)

        # Hosts that may be credited mid-transfer (bytes received twice, already held or
        # not wanted).
        self.redundant = {h for h in self.wanted if not self.allreduce and not exact_once(h)}
        # distinct wanted bytes of those hosts (a plan may want a range twice)
        self.wanted_distinct = {h: IntervalSet(self.wanted[h]).total for h in self.redundant}
        self._coverage: dict[str, tuple] = {}  # host -> (what its coverage time depends on, time)
        self.waiting_data: dict[str, set[int]] = defaultdict(set)
        self.queue: dict[str, list[int]] = defaultdict(list)
        self.busy_senders: set[str] = set()  # senders with a non-empty queue
        self.sender_free: dict[str, float] = defaultdict(float)
        self.waiting_upstream: set[int] = set()
        self.t = 0.0
        self.to_check: list[int] = []
        # what the last rate computation saw, to recompute only what changed (_rates)
        self._flowing_before = np.zeros(n, dtype=bool)
        self._users = np.zeros(len(self.capacity), dtype=np.int64)  # flowing transfers per resource
        self.timed: set[int] = set()  # transfers in LATENCY or REDUCING (see _due)
        self._cap_before = np.full(n, math.nan)
        self._coupled_before = np.full(n, -2, dtype=np.int64)

    # ----------------------------------------------------------------- readiness
    def _avail(self, i: int) -> float:
        """Bytes of transfer ``i``'s sequence its sender can send now."""
        u = self.upstream[i]
        if u < 0 or self.status[u] >= REDUCING:
            return self.size[i]
        a = self.sent[u] - self.base[i] - self.chunk
        return min(max(a, 0.0), self.size[i])

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
            elif su == FLOWING and self.sent[u] >= self._activation(i) * (1 - _REL):
                pass
            else:
                self.waiting_upstream.add(i)
                return
        elif not self.holds[t.src].covers_ranges(t.ranges):
            self.waiting_data[t.src].add(i)
            return
        self.waiting_upstream.discard(i)
        self.status[i] = QUEUED
        self.queue[t.src].append(i)
        self.busy_senders.add(t.src)

    def _avail_vec(self, idx: np.ndarray) -> np.ndarray:
        """``_avail`` for many transfers at once."""
        u = self.upstream[idx]
        size = self.size[idx]
        has = u >= 0
        uu = np.where(has, u, 0)
        free = ~has | (self.status[uu] >= REDUCING)
        a = np.clip(self.sent[uu] - self.base[idx] - self.chunk, 0.0, size)
        return np.where(free, size, a)

    def _lead(self, idx: np.ndarray, uu: np.ndarray) -> np.ndarray:
        """How far the upstream is past ``base + chunk`` (bytes; < 0: nothing to send yet)."""
        return self.sent[uu] - self.base[idx] - self.chunk + _REL * self.size[uu]

    def _activation(self, i: int) -> float:
        u = self.upstream[i]
        return min(self.base[i] + min(self.chunk, self.size[i]), self.size[u])

    def _inject(self) -> bool:
        """Let every free sender inject its queued transfers (plan order); True if any did."""
        injected = False
        for src in sorted(self.busy_senders):
            q = self.queue[src]
            q.sort()
            while q and self.sender_free[src] <= self.t * (1 + _REL) + 1e-300:
                i = q.pop(0)
                start = max(self.t, self.sender_free[src]) + self.inject[i]
                if self.inject[i] > 0:
                    self.sender_free[src] = start
                self.status[i] = LATENCY
                self.timed.add(i)
                self.t_event[i] = start + self.latency[i]
                injected = True
            if not q:
                self.busy_senders.discard(src)
        return injected

    # ----------------------------------------------------------------- completion
    def _complete(self, i: int) -> None:
        self.status[i] = DONE
        self.t_done[i] = self.t
        t = self.plan.transfers[i]
        hs = self.holds[t.dst]
        before = hs.total
        hs.add_ranges(t.ranges)
        for d in self.dependents[i]:
            self.waiting[d] -= 1
            if self.waiting[d] == 0:
                self.to_check.append(d)
        self.to_check.extend(self.downstream[i])
        if hs.total != before:
            pend = self.waiting_data.pop(t.dst, None)
            if pend:
                self.to_check.extend(sorted(pend))
        self._host_check(t.dst)

    def _host_check(self, h: str, when: float | None = None) -> None:
        if h in self.host_done or h not in self.wanted:
            return
        if self.allreduce:
            if all(self.status[j] == DONE for j in self.incoming[h]):
                self.host_done[h] = self.t
            return
        if self.holds[h].covers_ranges(self.wanted[h]):
            self.host_done[h] = self.t if when is None else when

    def _redundant_check(self, t0: float, sent0: np.ndarray) -> None:
        """Credit hosts that now hold everything through partial progress of transfers."""
        for h in list(self.redundant):
            if h in self.host_done:
                self.redundant.discard(h)
                continue
            live = [j for j in self.incoming[h] if self.status[j] == FLOWING]
            if not live:
                continue
            # Necessary condition, cheap: the union of what h holds and what its live
            # transfers delivered cannot exceed their sum. Skips the interval work for
            # every host that is still short of bytes (nearly all of them, nearly always).
            held = self.holds[h].total
            if held + float(self.sent[live].sum()) < self.wanted_distinct[h] * (1 - _REL):
                continue
            # the earliest coverage time depends only on what h holds and on which live
            # transfers progress at which rates: reuse it while those stay the same
            key = (tuple(live), self.rate[live].tobytes(), held)
            cached = self._coverage.get(h)
            if cached is not None and cached[0] == key:
                when = cached[1]
            else:
                when = self._coverage_time(h, live, t0, sent0)
                self._coverage[h] = (key, when)
            if when <= self.t:
                self.host_done[h] = when
                self.redundant.discard(h)

    def _coverage_time(self, h: str, live: list[int], t0: float, sent0: np.ndarray) -> float:
        """Earliest time >= ``t0`` at which ``h`` holds every wanted byte, its ``live``
        transfers progressing from ``sent0`` at their current rates (inf: never).

        A transfer delivers its ranges in order, so the byte just before position ``e`` of a
        range that starts at sequence offset ``c`` arrives when its progress reaches
        ``c + (e - start)``. On an elementary interval of the missing bytes (no range
        boundary inside), each covering transfer's arrival time grows with the position, so
        the interval is complete when its last byte arrives by the fastest transfer; the host
        is complete when its last interval is.
        """
        gaps = IntervalSet()
        for off, length in self.wanted[h]:
            for a, b in self.holds[h].missing(off, off + length):
                gaps.add(a, b)
        missing = list(zip(gaps.starts, gaps.ends))  # sorted, disjoint (start, end)
        if not missing:
            return t0
        p_start, p_end, p_shift, p_rate, p_sent = [], [], [], [], []
        for j in live:
            c = 0
            for off, length in self.plan.transfers[j].ranges:
                p_start.append(off)
                p_end.append(off + length)
                p_shift.append(c - off)  # sequence position of absolute position x: x + shift
                p_rate.append(self.rate[j])
                p_sent.append(sent0[j])
                c += length
        ms = np.asarray([a for a, _ in missing], dtype=float)
        me = np.asarray([b for _, b in missing], dtype=float)
        cuts = np.unique(np.concatenate((np.asarray(p_start, float), np.asarray(p_end, float), ms, me)))
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
        need = hi[interval] + (np.asarray(p_shift, float) - np.asarray(p_sent, float))[piece]
        rate = np.asarray(p_rate, float)[piece]
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(need <= 0, 0.0, np.where(rate > 0, need / rate, np.inf))
        arrival = np.full(len(hi), np.inf)
        np.minimum.at(arrival, interval, wait)
        arrival = arrival[inside]
        return t0 + float(arrival.max()) if arrival.size else t0

    # ----------------------------------------------------------------- main loop
    def run(self) -> Result:
        n = self.n
        self.to_check = list(range(n))
        for h in self.wanted:
            self._host_check(h)
        while True:
            # Instantaneous transitions at time t, until nothing changes.
            while True:
                changed = False
                if self.to_check:
                    todo, self.to_check = self.to_check, []
                    for i in todo:
                        self._consider(i)
                    changed = True
                due = self._due(LATENCY)
                for i in due:
                    self.status[i] = FLOWING
                    self.flow_start[i] = self.t
                    changed = True
                    # pipelined transfers waiting for this one may start now
                    self.to_check.extend(self.downstream[i])
                    if self.size[i] <= 0:
                        self._finish_flow(int(i))
                due = self._due(REDUCING)
                for i in due:
                    self._complete(int(i))
                    changed = True
                if changed or self.to_check:
                    continue
                # Inject only once every transfer that becomes ready at this instant is
                # known, so that transfers ready at the same time go in plan order.
                if not self._inject():
                    break
            if (self.status == DONE).all():
                break
            flowing = np.flatnonzero(self.status == FLOWING)
            self._rates(flowing)
            dt, hits = self._next_event(flowing)
            if not math.isfinite(dt):
                self._deadlock()
            t0 = self.t
            sent0 = self.sent.copy() if self.redundant else None
            self.sent[flowing] += self.rate[flowing] * dt
            self.t = t0 + dt
            if self.redundant:
                # before completions are processed, so a host covered mid-interval gets
                # its exact time rather than the time of the event
                assert sent0 is not None  # copied above whenever self.redundant
                self._redundant_check(t0, sent0)
            self._settle(flowing, hits)
        return self._result()

    def _due(self, phase: int) -> np.ndarray:
        """Transfers in ``phase`` (LATENCY or REDUCING) whose phase ends now, in index order.

        Looks only at the transfers in a timed phase (``self.timed``), not at every
        transfer: a deep pipeline starts one hop per pass at the same instant."""
        if not self.timed:
            return np.zeros(0, dtype=np.int64)
        cand = np.fromiter(self.timed, dtype=np.int64, count=len(self.timed))
        due = np.sort(cand[(self.status[cand] == phase) & (self.t_event[cand] <= self.t * (1 + _REL))])
        self.timed.difference_update(due.tolist())
        return due

    def _finish_flow(self, i: int) -> None:
        self.sent[i] = self.size[i]
        self.rate[i] = 0.0
        if self.reduce_delay[i] > 0:
            self.status[i] = REDUCING
            self.timed.add(i)
            self.t_event[i] = self.t + self.reduce_delay[i]
        else:
            self._complete(i)

    def _coupled(self, i: int) -> bool:
        """Pipelined and caught up with an upstream that is still flowing."""
        u = self.upstream[i]
        if u < 0 or self.status[u] != FLOWING:
            return False
        av = self._avail(i)
        return av < self.size[i] and self.sent[i] >= av - _REL * self.size[i]

    def _rates(self, flowing: np.ndarray) -> None:
        """Max-min rates of the flowing transfers, recomputed only where they can change.

        Max-min fair rates split over the connected components of the graph joining flows to
        the resources they cross (and coupled pipelined flows to their upstreams): a flow's
        rate depends only on its component. A component is recomputed when one of its flows
        started, ended (it freed its resources) or changed its constraints (cap, coupling);
        every other flow keeps its rate.
        """
        nf = len(flowing)
        was = self._flowing_before
        now = np.zeros(self.n, dtype=bool)
        now[flowing] = True
        ended = np.flatnonzero(was & ~now)
        self.rate[~now] = 0.0
        self._flowing_before = now
        self._count_users(np.flatnonzero(now & ~was), 1)
        self._count_users(ended, -1)
        if nf == 0:
            return
        caps = self.flow_cap[flowing]
        # coupled: pipelined, caught up, upstream still flowing
        u = self.upstream[flowing]
        has = u >= 0
        uu = np.where(has, u, 0)
        av = self._avail_vec(flowing)
        size = self.size[flowing]
        live = has & (self.status[uu] == FLOWING)
        coupled = live & (av < size) & (self.sent[flowing] >= av - _REL * size)
        # upstream not yet one chunk past our first byte (a range shorter than a chunk):
        # nothing to send yet, so no bandwidth until it is ("unblock" event)
        blocked = coupled & (self._lead(flowing, uu) < 0)
        if blocked.any():
            caps = np.where(blocked, 0.0, caps)
            coupled &= ~blocked
        coupled_to = np.where(coupled, u, -1)
        touched = (~was[flowing]) | (caps != self._cap_before[flowing]) | (coupled_to != self._coupled_before[flowing])
        self._cap_before[flowing] = caps
        self._coupled_before[flowing] = coupled_to
        if not touched.any() and (not len(ended) or not self._users[self._resources(ended)].any()):
            return  # nothing changed, or the flows that ended shared no resource with a flowing one
        pair_flow = np.repeat(np.arange(nf), self.res_ptr[flowing + 1] - self.res_ptr[flowing])
        pair_res = self._resources(flowing)
        pos = np.full(self.n, -1, dtype=np.int64)
        pos[flowing] = np.arange(nf)
        k_c = np.flatnonzero(coupled & (pos[np.where(coupled, u, 0)] >= 0))
        sub = self._touched_components(nf, pair_flow, pair_res, pos[u[k_c]], k_c, touched, ended)
        if sub is not None:
            keep = sub[pair_flow]
            new_index = np.cumsum(sub) - 1
            pair_flow, pair_res = new_index[pair_flow[keep]], pair_res[keep]
            caps = caps[sub]
            k_c = k_c[sub[k_c]]
            parents = new_index[pos[u[k_c]]]
            k_c = new_index[k_c]
            targets = flowing[sub]
        else:
            parents = pos[u[k_c]]
            targets = flowing
        children: list[list[int]] | None = None
        if len(k_c):
            children = [[] for _ in range(len(caps))]
            for p, k in zip(parents.tolist(), k_c.tolist()):
                children[p].append(k)
        self.rate[targets] = progressive_filling(pair_flow, pair_res, self.capacity, caps, children)

    def _resources(self, idx: np.ndarray) -> np.ndarray:
        """The resources the transfers ``idx`` cross (with repetitions)."""
        starts = self.res_ptr[idx]
        lengths = self.res_ptr[idx + 1] - starts
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return self.res_idx[offsets + np.arange(int(lengths.sum()))]

    def _count_users(self, idx: np.ndarray, step: int) -> None:
        if len(idx):
            np.add.at(self._users, self._resources(idx), step)

    def _touched_components(self, nf, pair_flow, pair_res, parents, kids, touched, ended):
        """Bool over the flowing transfers: in a component with a touched flow or a resource an
        ended flow freed (None: every flow is)."""
        if touched.all() or nf < LOCAL_RATES_FROM:
            return None
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        n_res = len(self.capacity)
        # nodes: flows 0..nf-1, then resources
        rows = np.concatenate((pair_flow, parents))
        cols = np.concatenate((nf + pair_res, kids))
        graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(nf + n_res, nf + n_res))
        _, label = connected_components(graph, directed=False)
        hit = np.zeros(nf + n_res, dtype=bool)
        hit[label[np.flatnonzero(touched)]] = True
        if len(ended):
            hit[label[nf + self._resources(ended)]] = True
        sub = hit[label[:nf]]
        return None if sub.all() else sub

    def _next_event(self, flowing: np.ndarray) -> tuple[float, list]:
        """Time to the next event and the events due then, as (dt, kind, transfer)."""
        groups: list[tuple[np.ndarray, str, np.ndarray]] = []  # (dt per item, kind, items)
        st = self.status
        phased = np.sort(np.fromiter(self.timed, dtype=np.int64, count=len(self.timed)))
        if len(phased):
            groups.append((self.t_event[phased] - self.t, "phase", phased))
        if self.busy_senders:
            senders = sorted(self.busy_senders)
            groups.append(
                (np.array([self.sender_free[x] - self.t for x in senders]), "inject", np.full(len(senders), -1))
            )
        if len(flowing):
            f = flowing
            r = self.rate[f]
            size = self.size[f]
            left = size - self.sent[f]
            u = self.upstream[f]
            has = u >= 0
            uu = np.where(has, u, 0)
            live_up = has & (st[uu] == FLOWING)
            av = self._avail_vec(f)
            free = ~live_up | (av >= size)
            with np.errstate(divide="ignore", invalid="ignore"):
                groups.append((np.where(free & (r > 0), left / r, np.inf), "done", f))
                if live_up.any():
                    ru = np.where(live_up, self.rate[uu], 0.0)
                    gap = av - self.sent[f]
                    # we reach the bytes the upstream has delivered
                    groups.append(
                        (np.where(~free & (gap > _REL * size) & (r > ru), gap / (r - ru), np.inf), "catch", f)
                    )
                    # the upstream passes the end of our bytes (plus one chunk): no longer bound
                    need = np.maximum(self.base[f] + size + self.chunk - self.sent[uu], 0.0)
                    groups.append((np.where(~free & (ru > 0), need / ru, np.inf), "free", f))
                    # the upstream passes base + chunk: a blocked transfer gets data to send
                    lead = self.sent[uu] - self.base[f] - self.chunk
                    blocked = ~free & (self._lead(f, uu) < 0) & (ru > 0)
                    groups.append((np.where(blocked, -lead / ru, np.inf), "unblock", f))
        if self.waiting_upstream:
            w = np.array(sorted(self.waiting_upstream), dtype=np.int64)
            u = self.upstream[w]
            ok = (st[u] == FLOWING) & (self.rate[u] > 0)
            if ok.any():
                act = np.minimum(self.base[w] + np.minimum(self.chunk, self.size[w]), self.size[u])  # _activation
                with np.errstate(divide="ignore", invalid="ignore"):
                    groups.append((np.where(ok, (act - self.sent[u]) / self.rate[u], np.inf), "activate", w))
        dt = math.inf
        for times, _, _ in groups:
            if len(times):
                dt = min(dt, float(times.min()))
        if not math.isfinite(dt):
            return math.inf, []
        dt = max(dt, 0.0)
        tol = dt * 1e-12 + 1e-300
        hits = []
        for times, kind, items in groups:
            for j in np.flatnonzero(times <= dt + tol):
                hits.append((float(times[j]), kind, int(items[j])))
        return dt, hits

    def _settle(self, flowing: np.ndarray, hits) -> None:
        """Snap values at the new time and fire the events that are due."""
        for _, kind, i in hits:
            if kind == "done":
                self.sent[i] = self.size[i]
            elif kind == "catch":
                self.sent[i] = self._avail(i)
            elif kind == "phase":
                self.t_event[i] = min(self.t_event[i], self.t)
            elif kind == "activate":
                self.to_check.append(i)
        if len(flowing):
            fin = flowing[self.sent[flowing] >= self.size[flowing] * (1 - _REL)]
            for i in fin:
                self._finish_flow(int(i))
            rest = flowing[self.status[flowing] == FLOWING]
            if len(rest):
                self.sent[rest] = np.minimum(self.sent[rest], self._avail_vec(rest))
        self.sender_free_snap()

    def sender_free_snap(self) -> None:
        for src in self.busy_senders:
            if self.sender_free[src] < self.t * (1 + _REL) and self.sender_free[src] > self.t:
                self.sender_free[src] = self.t

    def _deadlock(self) -> None:
        stuck = [i for i in range(self.n) if self.status[i] != DONE][:5]
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
    return _Sim(plan, topology, chunk_size).run()
