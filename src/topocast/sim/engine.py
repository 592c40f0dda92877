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
  the ends of latency phases and the senders' next injections (those computed for a batch of
  flows in an agenda of sorted runs); stale entries are skipped.
* An event recomputes max-min rates only for the flows it can affect: those that started,
  changed constraints (cap, coupling) in a way their rate no longer meets or is no longer held
  by, or may gain from a saturated resource a flow left, grown through saturated resources to
  every flow that could lose its bottleneck (``_rebalance``; resources with slack stop the
  growth, so a broadcast tree whose flows all share links is not recomputed whole at every
  event). Past a share of the flowing transfers, all of them are recomputed at once
  (vectorised).
* Flows that start or end at one instant are booked together, with arrays (the hops of a
  pipeline that start with their upstream included); events touching a few flows work on
  Python scalars. The plan is read through its arrays (``Plan.arrays``), what a host holds is
  merged only when asked about, and hosts posing the same coverage problem share one answer.
  docs/performance.md, "Plans of millions of transfers", says what each of these saves.

Times are seconds, sizes bytes, rates bytes/s.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SimulationError
from ..intervals import IntervalSet, inside_grouped, merge_grouped, overlaps_grouped
from ..memory import BYTES_PER_RANGE, BYTES_PER_TRANSFER, check_fits, paused_gc
from ..plan import Plan, Transfer
from ..plan_graph import csr_rows
from ..results import Result, aggregate_from_times
from .maxmin import compact_ids, progressive_filling

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["simulate"]

# a local recomputation stops growing past a quarter of the flowing transfers, kept between
# these two numbers of flows (or past an eighth of them, if more): then every flowing transfer
# is recomputed in one vectorised pass
LOCAL_COMPONENT_MIN = 64
LOCAL_COMPONENT_LIMIT = 4096
# up to this many transfers, per-event bookkeeping works on Python scalars (numpy's per-call
# overhead would dominate)
SMALL = 8
# a resource crossed by more transfers than this in the whole plan keeps a set of the ones
# flowing over it; the others are looked up from the routes when needed (_resource_users)
BUSY = 64

PENDING, QUEUED, LATENCY, FLOWING, REDUCING, DONE = range(6)
# kinds of flow events (heap entries)
EV_DONE, EV_CATCH, EV_FREE, EV_UNBLOCK, EV_ACTIVATE = range(5)
_REL = 1e-12


class _Sim:
    def __init__(self, plan: Plan, topology: Topology, chunk_size: int | None) -> None:
        self.plan = plan
        self.topo = topology
        self.chunk = float(plan.chunk_size if chunk_size is None else chunk_size)
        arrays = self.arrays = plan.arrays
        n = self.n = arrays.n
        check_fits(
            n * BYTES_PER_TRANSFER + BYTES_PER_RANGE * len(arrays.seq_off),
            f"simulating a plan of {n:,} transfers",
            element="plan",
        )
        # each byte sequence's ranges: position of each range in its sequence
        before = np.cumsum(arrays.seq_len) - arrays.seq_len  # bytes of all earlier ranges
        self.seq_pos = before - np.repeat(before[arrays.seq_ptr[:-1]], np.diff(arrays.seq_ptr))
        self.size = arrays.nbytes.astype(float)
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.flow_start = np.full(n, math.nan)
        self.t_done = np.full(n, math.nan)
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
        reduce = np.fromiter(map(attrgetter("reduce"), plan.transfers), dtype=bool, count=n)
        self.reduce_delay = np.zeros(n)
        for i in np.flatnonzero(reduce).tolist():
            self.reduce_delay[i] = self.size[i] * topology.gamma(arrays.host_name[arrays.dst[i]])
        self._dependencies()
        # what lets a pipelined transfer start at the instant its upstream does (_starting_with)
        prompt = np.bincount(arrays.src, weights=self.inject > 0, minlength=len(arrays.host_name)) == 0
        self.starts_at_once = (self.upstream >= 0) & (self.base == 0) & (self.size > 0) & (self.chunk == 0)
        self.starts_at_once &= (self.latency == 0) & prompt[arrays.src]
        self._hosts(plan)

        # Scheduling state.
        self.waiting_data: dict[int, set[int]] = defaultdict(set)  # per sender id
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
        self.flow_agenda = _Agenda()  # the same, pushed a batch at a time by _schedule
        self.phase_heap: list[tuple] = []  # (time, transfer, phase): end of LATENCY / REDUCING
        self.inject_heap: list[tuple] = []  # (time, sender): a busy sender's next injection
        self.phase_due: list[int] = []
        # Flowing transfers and what the last rate computation saw.
        self.flowing: set[int] = set()
        self._resource_users()
        self.n_users = np.zeros(len(self.capacity), dtype=np.int64)  # flowing transfers per resource
        self.usage = np.zeros(len(self.capacity))  # their summed rates
        self.freed: set[int] = set()  # saturated resources that flows have left
        self.cap_now = np.full(n, math.nan)  # cap in the last max-min (0 while blocked)
        self.coupled_now = np.full(n, -1, dtype=np.int64)  # upstream it was coupled to
        self.n_coupled = np.zeros(n, dtype=np.int64)  # flows coupled to each flow
        self.started: list[int] = []
        self.dirty: set[int] = set()  # flows whose constraints or events may have changed

    def _dependencies(self) -> None:
        """Upstreams, and who waits for whom: ``after`` (dependents) and upstreams
        (downstream), as CSR rows in plan order."""
        n = self.n
        arrays = self.arrays
        self.upstream, base = arrays.upstreams()
        self.base = base.astype(float)
        owner = np.repeat(np.arange(n), np.diff(arrays.after_ptr))
        pairs = np.unique(arrays.after_idx * n + owner)  # distinct (predecessor, dependent)
        before, after = pairs // n, pairs % n
        self.waiting = np.bincount(after, minlength=n)
        self.dep_ptr, self.dep_idx = np.searchsorted(before, np.arange(n + 1)), after
        behind = np.flatnonzero(self.upstream >= 0)
        behind = behind[np.argsort(self.upstream[behind], kind="stable")]
        self.down_ptr = np.searchsorted(self.upstream[behind], np.arange(n + 1))
        self.down_idx = behind

    def _resource_users(self) -> None:
        """Who crosses each resource. The transfers flowing over a busy resource (crossed by
        more than BUSY transfers in the whole plan) are kept in a set as they start and end;
        over the others, they are found from the routes when asked (``_flows_on``), so that
        starting or ending flows by the million does not update sets by the million."""
        n_routes, n_res = len(self.res_ptr) - 1, len(self.capacity)
        order = np.argsort(self.route_of, kind="stable")
        self.route_users_ptr = np.searchsorted(self.route_of[order], np.arange(n_routes + 1))
        self.route_users = order
        route_of_pair = np.repeat(np.arange(n_routes), np.diff(self.res_ptr))
        order = np.argsort(self.res_idx, kind="stable")
        self.res_routes_ptr = np.searchsorted(self.res_idx[order], np.arange(n_res + 1))
        self.res_routes = route_of_pair[order]
        users = np.bincount(self.res_idx, weights=np.diff(self.route_users_ptr)[route_of_pair], minlength=n_res)
        self.busy = users > BUSY
        self.res_flows: dict[int, set[int]] = {r: set() for r in np.flatnonzero(self.busy).tolist()}

    def _flows_on(self, r: int) -> Collection[int]:
        """The transfers flowing over resource ``r``."""
        if self.busy[r]:
            return self.res_flows[r]
        routes = self.res_routes[self.res_routes_ptr[r] : self.res_routes_ptr[r + 1]]
        users = self.route_users[csr_rows(self.route_users_ptr, routes)[0]]
        return users[self.status[users] == FLOWING].tolist()

    def _downstream(self, idx: np.ndarray) -> np.ndarray:
        """The transfers pipelined behind any of ``idx``."""
        return self.down_idx[csr_rows(self.down_ptr, idx)[0]]

    def _routes(self, topology: Topology) -> None:
        """Resources, latency, fatpipe cap and injection time of every transfer's route, looked
        up once per pair of hosts (or explicit path)."""
        arrays = self.arrays
        tr = self.plan.transfers
        key = arrays.src * len(arrays.host_name) + arrays.dst
        paths: dict[tuple[str, ...], int] = {}
        for i in np.flatnonzero(arrays.has_path).tolist():
            key[i] = -1 - paths.setdefault(tr[i].path, len(paths))  # type: ignore[arg-type]
        _, first, self.route_of = np.unique(key, return_index=True, return_inverse=True)
        routes = [self._route(topology, tr[i]) for i in first.tolist()]
        resources = [r[0] for r in routes]
        lengths = np.array([len(r) for r in resources], dtype=np.int64)
        self.res_ptr = np.concatenate(([0], np.cumsum(lengths)))
        self.res_idx = np.fromiter(itertools.chain.from_iterable(resources), dtype=np.int64, count=int(lengths.sum()))
        # per transfer, for the scalar paths (references to the routes' tuples)
        of = self.route_of.tolist()
        self.route_res: list[tuple[int, ...]] = [resources[k] for k in of]
        # routes that cross no resource twice (a flow crossing one twice uses it twice)
        simple = [len(set(r)) == len(r) for r in resources]
        self.route_simple = [simple[k] for k in of]
        self.latency = np.array([r[1] for r in routes], dtype=float)[self.route_of]
        self.flow_cap = np.minimum(np.array([r[2] for r in routes], dtype=float)[self.route_of], arrays.rate_cap)
        self.inject = np.array([topology.injection(tr[i].src, tr[i].dst) for i in first.tolist()])[self.route_of]
        self.capacity = topology.resource_capacity

    @staticmethod
    def _route(topology: Topology, t: Transfer) -> tuple[tuple[int, ...], float, float]:
        """(resources, latency, fatpipe cap) of transfer ``t``'s route."""
        links = topology.route(t.src, t.dst) if t.path is None else topology.path_links(t.path)
        ids = np.asarray(links, dtype=np.int64)
        res = topology.link_resource[ids]
        fat = res < 0
        # fatpipe links cap each flow; the slow direction of an asymmetric shared cable is a
        # resource of its own (Topology.link_direction_resource)
        cap = float(topology.link_bandwidth[ids[fat]].min()) if fat.any() else math.inf
        extra = topology.link_direction_resource[ids]
        resources = tuple(np.concatenate((res[~fat], extra[extra >= 0])).tolist())
        return resources, float(topology.link_latency[ids].sum()), cap

    def _hosts(self, plan: Plan) -> None:
        """Holdings, wanted bytes, and how each host's completion is detected."""
        arrays = self.arrays
        self.wanted = dict(plan.wanted)
        self.wanted_bytes = {h: sum(ln for _, ln in rs) for h, rs in plan.wanted.items()}
        self.host_done: dict[str, float] = {}
        self.allreduce = plan.collective == "allreduce"
        self.host_id = arrays.host_id
        self.host_name = names = arrays.host_name
        self.dst_id = arrays.dst
        wanted_ids = np.array([self.host_id[h] for h in self.wanted], dtype=np.int64)
        self.wants = np.zeros(len(names), dtype=bool)
        self.wants[wanted_ids] = True
        self.is_done = np.zeros(len(names), dtype=bool)
        distinct = {rs: IntervalSet(rs).total for rs in set(plan.wanted.values())}
        self.wanted_distinct = np.zeros(len(names))
        self.wanted_distinct[wanted_ids] = [distinct[rs] for rs in self.wanted.values()]
        self._holdings(plan)
        # incoming transfers not yet done, per host id (all of them; those carrying bytes)
        self.left_all = np.bincount(self.dst_id, minlength=len(names))
        self.left_bytes = np.bincount(self.dst_id[self.size > 0], minlength=len(names))
        # Hosts that may be credited mid-transfer (bytes received twice, already held or
        # not wanted).
        self.is_redundant = np.zeros(len(names), dtype=bool)
        if not self.allreduce:
            self.is_redundant[wanted_ids] = ~self._exact_once(plan, wanted_ids)
        self.redundant = {names[k] for k in np.flatnonzero(self.is_redundant).tolist()}
        self.host_ver = np.zeros(len(names), dtype=np.int64)
        self.stale_hosts: set[int] = set()
        self.cover_agenda = _Agenda()  # (time, host id, version, exact)

    def _holdings(self, plan: Plan) -> None:
        """What each host holds, merged when asked about (``_held``): completing a transfer
        only counts it, so a batch of completions costs arrays, not interval merges."""
        n_hosts = len(self.host_name)
        self.held = [IntervalSet(plan.initial.get(h, ())) for h in self.host_name]
        self.held_total = np.array([held.total for held in self.held], dtype=float)  # distinct bytes merged
        self.unmerged_bytes = np.zeros(n_hosts)  # bytes of completed transfers not merged yet
        self.done_in = np.zeros(n_hosts, dtype=np.int64)  # completed incoming transfers
        self.merged_in = np.zeros(n_hosts, dtype=np.int64)  # of those, merged
        self.is_merged = np.zeros(self.n, dtype=bool)

    def _exact_once(self, plan: Plan, hosts: np.ndarray) -> np.ndarray:
        """Per host of ``hosts`` (ids): every byte it receives is wanted, arrives once and is
        not held from the start; then it completes exactly when its last incoming transfer
        does. A host receiving more bytes than it wants is not one; the others' deliveries
        are merged."""
        arrays = self.arrays
        n_hosts = len(self.host_name)
        received = np.bincount(self.dst_id, weights=self.size, minlength=n_hosts)
        candidates = hosts[received[hosts] <= self.wanted_distinct[hosts]]
        into = arrays.incoming_idx[csr_rows(arrays.incoming_ptr, candidates)[0]]
        pos, counts = csr_rows(arrays.seq_ptr, arrays.seq_of[into])
        g = np.repeat(self.dst_id[into], counts)
        g, s, e = merge_grouped(g, arrays.seq_off[pos], arrays.seq_off[pos] + arrays.seq_len[pos])
        ok = np.bincount(g, weights=e - s, minlength=n_hosts) == received

        def host_ranges(by_host):
            names = (self.host_name[h] for h in candidates.tolist())
            items = [(self.host_id[h], off, off + ln) for h in names for off, ln in by_host.get(h, ())]
            arr = np.array(items, dtype=np.int64).reshape(-1, 3)
            return merge_grouped(arr[:, 0], arr[:, 1], arr[:, 2])

        # every received interval lies inside one wanted interval of its host, and meets none
        # of the host's initial intervals
        bad = ~inside_grouped(g, s, e, host_ranges(self.wanted)) | overlaps_grouped(g, s, e, host_ranges(plan.initial))
        ok &= np.bincount(g[bad], minlength=n_hosts) == 0
        exact = np.zeros(n_hosts, dtype=bool)
        exact[candidates] = ok[candidates]
        return exact[hosts]

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
        elif not self._held(int(self.arrays.src[i])).covers_ranges(t.ranges):
            self.waiting_data[int(self.arrays.src[i])].add(i)
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
                heapq.heappush(self.phase_heap, (start + self.latency[i], i, LATENCY))
                injected = True
            if q:
                heapq.heappush(self.inject_heap, (self.sender_free[src], src))
            else:
                self.busy_senders.discard(src)
        return injected

    # ----------------------------------------------------------------- state changes
    def _start_flows(self, idx: list[int]) -> None:
        """LATENCY -> FLOWING for the transfers ``idx`` (index order), at the current time, with
        every pipelined transfer that starts with them (``_starting_with``)."""
        arr = self._starting_with(np.asarray(idx, dtype=np.int64))
        if len(arr) > len(idx):
            self.waiting_upstream.difference_update(arr.tolist())
        self.status[arr] = FLOWING
        self.flow_start[arr] = self.t
        self.sent0[arr] = 0.0
        self.t0[arr] = self.t
        self.rate[arr] = 0.0
        started = arr.tolist()
        self.flowing.update(started)
        if len(started) > SMALL:
            res, owner = self._route_pairs(arr)
            np.add.at(self.n_users, res, 1)
            busy = self.busy[res]
            _update_sets(self.res_flows, res[busy], owner[busy], add=True)
            self._stale_all(arr)
            # pipelined transfers waiting for these may start now
            kids = self._downstream(arr)
            self.to_check.extend(kids[self.status[kids] == PENDING].tolist())
        else:
            for i in started:
                for r in self.route_res[i]:
                    self.n_users[r] += 1
                    if self.busy[r]:
                        self.res_flows[r].add(i)
                self._stale(i)
                self.to_check.extend(self._downstream_of(i))
        self.started.extend(started)
        empty = arr[self.size[arr] <= 0]
        if len(empty):
            self._finish_flows(empty.tolist())

    def _starting_with(self, idx: np.ndarray) -> np.ndarray:
        """``idx`` (sorted) and every transfer that starts at this instant because one of them
        does (sorted): pipelined behind it, waiting for nothing else, its first byte the
        upstream's first with fluid chunks, sent by a host that never waits to inject, over a
        route without latency. Found a generation at a time down the pipelines instead of
        queueing each at its sender, one round of the instant's loop per hop."""
        found = [idx]
        kids = self._downstream(idx)
        while len(kids):
            kids = kids[self.starts_at_once[kids] & (self.status[kids] == PENDING) & (self.waiting[kids] == 0)]
            found.append(kids)
            kids = self._downstream(kids)
        return np.sort(np.concatenate(found)) if len(found) > 2 else idx

    def _finish_flows(self, idx: list[int]) -> None:
        """FLOWING -> REDUCING or DONE for the transfers ``idx`` (index order): every byte sent."""
        arr = np.asarray(idx, dtype=np.int64)
        self.sent0[arr] = self.size[arr]
        self.t0[arr] = self.t
        self.ver[arr] += 1
        res, owner = self._route_pairs(arr)
        # a saturated resource they leave may let the flows left on it go faster
        self.freed.update(np.unique(res[self.usage[res] >= self.capacity[res] * (1 - 1e-9)]).tolist())
        np.add.at(self.usage, res, -self.rate[owner])
        np.add.at(self.n_users, res, -1)
        self.rate[arr] = 0.0
        self.cap_now[arr] = math.nan
        coupled = arr[self.coupled_now[arr] >= 0]
        if len(coupled):
            self._couple(coupled, np.full(len(coupled), -1, dtype=np.int64))
        self.flowing.difference_update(idx)
        if len(idx) > SMALL:
            busy = self.busy[res]
            _update_sets(self.res_flows, res[busy], owner[busy], add=False)
            self._stale_all(arr)
            self.dirty.update(self._downstream(arr).tolist())
        else:
            for i in idx:
                for r in self.route_res[i]:
                    if self.busy[r]:
                        self.res_flows[r].discard(i)
                self._stale(i)
                self.dirty.update(self._downstream_of(i))
        reducing = self.reduce_delay[arr] > 0
        for i in arr[reducing].tolist():
            self.status[i] = REDUCING
            heapq.heappush(self.phase_heap, (self.t + self.reduce_delay[i], i, REDUCING))
        self._complete(arr[~reducing].tolist())

    def _complete(self, idx: list[int]) -> None:
        """REDUCING or FLOWING -> DONE for the transfers ``idx`` (index order): their receivers
        hold their bytes; what waited for them may start."""
        if not idx:
            return
        arr = np.asarray(idx, dtype=np.int64)
        self.status[arr] = DONE
        self.t_done[arr] = self.t
        self.n_done += len(idx)
        dst = self.dst_id[arr]
        if len(idx) > SMALL:
            self._stale_all(arr)
            np.add.at(self.done_in, dst, 1)
            np.add.at(self.unmerged_bytes, dst, self.size[arr])
            np.subtract.at(self.left_all, dst, 1)
            np.subtract.at(self.left_bytes, dst[self.size[arr] > 0], 1)
            deps = self.dep_idx[csr_rows(self.dep_ptr, arr)[0]]
            np.subtract.at(self.waiting, deps, 1)
            deps = np.unique(deps)
            self.to_check.extend(deps[self.waiting[deps] == 0].tolist())
            self.to_check.extend(self._downstream(arr).tolist())
            self._received(np.unique(dst).tolist())
            return
        for i, h in zip(idx, dst.tolist()):
            self._stale(i)
            self.done_in[h] += 1
            self.unmerged_bytes[h] += self.size[i]
            self.left_all[h] -= 1
            self.left_bytes[h] -= int(self.size[i] > 0)
            for d in self.dep_idx[self.dep_ptr[i] : self.dep_ptr[i + 1]].tolist():
                self.waiting[d] -= 1
                if self.waiting[d] == 0:
                    self.to_check.append(d)
            self.to_check.extend(self._downstream_of(i))
        self._received(sorted(set(dst.tolist())))

    def _received(self, hosts: list[int]) -> None:
        """Hosts (ids, ascending) that received bytes: transfers waiting for their data may
        start, and they may be complete."""
        for h in [h for h in hosts if h in self.waiting_data]:
            before = self.held_total[h]
            if self._held(h).total != before:
                self.to_check.extend(sorted(self.waiting_data.pop(h)))
        self._check_hosts(np.asarray(hosts, dtype=np.int64))

    def _held(self, h: int) -> IntervalSet:
        """What host ``h`` (id) holds: its initial bytes and those of every completed transfer
        into it, the completions since the last call merged now."""
        held = self.held[h]
        if self.done_in[h] > self.merged_in[h]:
            into = self.arrays.incoming(h)
            new = into[(self.status[into] == DONE) & ~self.is_merged[into]]
            self.is_merged[new] = True
            sequences = self.arrays.sequences
            held.add_ranges(list(itertools.chain.from_iterable(sequences[k] for k in self.arrays.seq_of[new].tolist())))
            self.merged_in[h] = self.done_in[h]
            self.held_total[h] = held.total
            self.unmerged_bytes[h] = 0.0
        return held

    def _check_hosts(self, hosts: np.ndarray) -> None:
        """Of ``hosts`` (ids), credit those that now hold every byte they want."""
        hosts = hosts[self.wants[hosts] & ~self.is_done[hosts]]
        if self.allreduce:
            for h in hosts[self.left_all[hosts] == 0].tolist():
                self._credit(h, self.t)
            return
        # a host that receives every byte once is not covered before its last one arrives;
        # the others cannot be before they may hold every wanted byte
        may = np.where(
            self.is_redundant[hosts],
            self.held_total[hosts] + self.unmerged_bytes[hosts] >= self.wanted_distinct[hosts] * (1 - _REL),
            self.left_bytes[hosts] == 0,
        )
        for h in hosts[may].tolist():
            if self._held(h).covers_ranges(self.wanted[self.host_name[h]]):
                self._credit(h, self.t)

    def _credit(self, h: int, when: float) -> None:
        """Host ``h`` (id) holds every byte it wants from time ``when``."""
        self.host_done[self.host_name[h]] = when
        self.is_done[h] = True

    def _route_pairs(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(resource, transfer) for every resource on the routes of transfers ``idx``."""
        pos, lengths = csr_rows(self.res_ptr, self.route_of[idx])
        return self.res_idx[pos], np.repeat(idx, lengths)

    def _downstream_of(self, i: int) -> list[int]:
        """``_downstream`` of one transfer, as a list."""
        return self.down_idx[self.down_ptr[i] : self.down_ptr[i + 1]].tolist()

    def _stale_all(self, idx: np.ndarray) -> None:
        """``_stale`` of every transfer of ``idx``."""
        h = self.dst_id[idx]
        self.stale_hosts.update(h[self.is_redundant[h]].tolist())

    # ----------------------------------------------------------------- mid-transfer coverage
    def _schedule_coverage(self) -> None:
        """For the hosts whose incoming progress changed: when they may next be covered.

        A host cannot hold every wanted byte before what it holds plus what its flowing
        transfers deliver reaches its distinct wanted bytes; that lower bound is queued, and
        the exact time (``_coverage_times``) is computed only once the bound is passed."""
        if not self.stale_hosts:
            return
        hs = np.fromiter(self.stale_hosts, dtype=np.int64, count=len(self.stale_hosts))
        self.stale_hosts = set()
        self.host_ver[hs] += 1
        hs = hs[~self.is_done[hs]]
        live, owner = self._flowing_into(hs)
        delivered = np.bincount(owner, weights=self._sent_vec(live), minlength=len(hs))
        speed = np.bincount(owner, weights=self.rate[live], minlength=len(hs))
        held = self.held_total[hs] + self.unmerged_bytes[hs]
        deficit = self.wanted_distinct[hs] * (1 - _REL) - held - delivered
        with np.errstate(divide="ignore", invalid="ignore"):
            when = np.where(deficit <= 0, self.t, self.t + deficit / speed)
        due = (np.bincount(owner, minlength=len(hs)) > 0) & ((deficit <= 0) | (speed > 0))
        self.cover_agenda.push(when[due], hs[due], self.host_ver[hs[due]], np.zeros(int(due.sum()), dtype=bool))

    def _flowing_into(self, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flowing transfers into ``hosts`` (ids), each host's in plan order, and the
        position in ``hosts`` of each one's receiver."""
        pos, counts = csr_rows(self.arrays.incoming_ptr, hosts)
        into = self.arrays.incoming_idx[pos]
        flowing = self.status[into] == FLOWING
        return into[flowing], np.repeat(np.arange(len(hosts)), counts)[flowing]

    def _credit_covered(self, t_prev: float) -> None:
        """Credit hosts that hold everything through partial progress, by time ``self.t``
        (the rates have not changed since ``t_prev``)."""
        due = self.cover_agenda.pop_until(self.t)
        if due is None:
            return
        when, hosts, ver, exact = due
        valid = (ver == self.host_ver[hosts]) & ~self.is_done[hosts]
        for h, w in zip(hosts[valid & exact].tolist(), when[valid & exact].tolist()):
            self._credit(h, w)
        hosts = hosts[valid & ~exact]
        if not len(hosts):
            return
        times = self._coverage_times(hosts, t_prev)
        covered = times <= self.t
        for h, w in zip(hosts[covered].tolist(), times[covered].tolist()):
            self._credit(h, w)
        later = ~covered & np.isfinite(times)
        self.cover_agenda.push(times[later], hosts[later], self.host_ver[hosts[later]], np.ones(int(later.sum()), bool))

    def _coverage_times(self, hosts: np.ndarray, t0: float) -> np.ndarray:
        """Per host of ``hosts`` (ids): the earliest time >= ``t0`` at which it holds every
        wanted byte, its flowing transfers progressing from where they were at ``t0`` at their
        current rates (inf: never; nan: no transfer into it is flowing).

        Hosts that miss the same bytes and receive the same sequences at the same progress and
        rates get the same time, computed once: the hops of a pipelined tree progress alike,
        so thousands of hosts often pose a handful of distinct problems."""
        live, owner = self._flowing_into(hosts)
        sent = self.sent0[live] + self.rate[live] * (t0 - self.t0[live])
        # each host's flowing transfers (in plan order) as bytes: sequence, progress and rate
        rows = np.stack((self.arrays.seq_of[live], sent.view(np.int64), self.rate[live].view(np.int64)), axis=1)
        ends = np.searchsorted(owner, np.arange(len(hosts) + 1))
        times = np.full(len(hosts), np.nan)
        solved: dict[tuple, float] = {}
        for k in np.flatnonzero(ends[1:] > ends[:-1]).tolist():
            a, b = ends[k], ends[k + 1]
            missing = self._missing(int(hosts[k]))
            problem = (tuple(missing), rows[a:b].tobytes())
            if problem not in solved:
                solved[problem] = self._coverage_time(missing, live[a:b], t0, sent[a:b])
            times[k] = solved[problem]
        return times

    def _coverage_time(self, missing: list[tuple], live: np.ndarray, t0: float, sent0: np.ndarray) -> float:
        """Earliest time >= ``t0`` at which a host missing the bytes ``missing`` (sorted,
        disjoint (start, end)) holds them all, its ``live`` transfers progressing from
        ``sent0`` (aligned with ``live``) at their current rates (inf: never).

        A transfer delivers its ranges in order, so the byte just before position ``e`` of a
        range that starts at sequence offset ``c`` arrives when its progress reaches
        ``c + (e - start)``. On an elementary interval of the missing bytes (no range
        boundary inside), each covering transfer's arrival time grows with the position, so
        the interval is complete when its last byte arrives by the fastest transfer; the host
        is complete when its last interval is.
        """
        if not missing:
            return t0
        pos, counts = csr_rows(self.arrays.seq_ptr, self.arrays.seq_of[live])
        p_start = self.arrays.seq_off[pos].astype(float)
        p_end = p_start + self.arrays.seq_len[pos]
        p_shift = self.seq_pos[pos] - p_start  # sequence position of absolute position x: x + shift
        p_rate = np.repeat(self.rate[live], counts)
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

    def _missing(self, h: int) -> list[tuple]:
        """The wanted bytes host ``h`` (id) does not hold, as sorted disjoint (start, end)."""
        held = self._held(h)
        gaps = IntervalSet()
        for off, length in self.wanted[self.host_name[h]]:
            for a, b in held.missing(off, off + length):
                gaps.add(a, b)
        return list(zip(gaps.starts, gaps.ends))

    # ----------------------------------------------------------------- main loop
    def run(self) -> Result:
        # a transfer behind an upstream is looked at when its upstream starts or ends
        self.to_check = np.flatnonzero((self.waiting == 0) & (self.upstream < 0)).tolist()
        self._check_hosts(np.flatnonzero(self.wants))
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
            if reducing:
                self._complete(reducing)
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
        started = self._still_flowing(self.started)
        self.started = []
        dirty = set(self._still_flowing(self.dirty))
        self.dirty = set()
        # flows whose constraints changed, unless their rate still meets them and is held by them
        touched = set(started)
        check = sorted(dirty.union(started))
        if len(check) > SMALL:
            idx = np.array(check, dtype=np.int64)
            caps, coupled_to = self._constraints(idx)
            moved = np.flatnonzero((caps != self.cap_now[idx]) | (coupled_to != self.coupled_now[idx]))
            idx, caps, coupled_to = idx[moved], caps[moved], coupled_to[moved]
            self.cap_now[idx] = caps
            self._couple(idx, coupled_to)
            upstream_rate = np.where(coupled_to >= 0, self.rate[coupled_to], np.inf)
            touched.update(idx[~_keeps_rate(self.rate[idx], caps, upstream_rate)].tolist())
        else:
            for f in check:
                cap, up = self._constraint_one(f)
                if cap != self.cap_now[f] or up != self.coupled_now[f]:
                    self.cap_now[f] = cap
                    self._couple_one(f, up)
                    if not _keeps_rate(self.rate[f], cap, self.rate[up] if up >= 0 else math.inf):
                        touched.add(f)
        touched.update(self._gaining())
        refresh = dirty.union(started)
        if touched:
            changed = self._rebalance(touched).tolist()
            refresh.update(changed)
            dirty.update(changed)
        # the events of pipelined transfers depend on their upstream's progress
        refresh.update(self._behind_moved(dirty))
        if len(refresh) > SMALL:
            self._schedule(np.array(sorted(refresh), dtype=np.int64))
        else:
            for i in sorted(refresh):
                if self.status[i] == FLOWING:
                    self._schedule_one(i)
        if len(self.flow_heap) > 4 * len(self.flowing) + 4096:
            self._compact_heap()
        if self.redundant:
            self._schedule_coverage()

    def _couple(self, idx: np.ndarray, upstream: np.ndarray) -> None:
        """Flows ``idx`` are now coupled to ``upstream`` (-1: to none)."""
        old = self.coupled_now[idx]
        np.subtract.at(self.n_coupled, old[old >= 0], 1)
        np.add.at(self.n_coupled, upstream[upstream >= 0], 1)
        self.coupled_now[idx] = upstream

    def _couple_one(self, f: int, upstream: int) -> None:
        """``_couple`` of one flow, without arrays."""
        old = self.coupled_now[f]
        if old >= 0:
            self.n_coupled[old] -= 1
        if upstream >= 0:
            self.n_coupled[upstream] += 1
        self.coupled_now[f] = upstream

    def _still_flowing(self, flows: Collection[int]) -> list[int]:
        """The flowing ones among ``flows`` (in their order)."""
        if len(flows) > SMALL:
            arr = np.fromiter(flows, dtype=np.int64, count=len(flows))
            return arr[self.status[arr] == FLOWING].tolist()
        return [i for i in flows if self.status[i] == FLOWING]

    def _gaining(self) -> list[int]:
        """Flows that may gain from what ended flows freed on saturated resources: those on
        them not held by their cap or coupling."""
        freed, self.freed = self.freed, set()
        on = list(itertools.chain.from_iterable(self._flows_on(r) for r in freed))
        if len(on) <= SMALL:
            return [g for g in on if not self._pinned(g)]
        arr = np.array(on, dtype=np.int64)
        rate, up = self.rate[arr], self.coupled_now[arr]
        pinned = (rate >= self.cap_now[arr] * (1 - _REL)) | ((up >= 0) & (rate >= self.rate[up] * (1 - _REL)))
        return arr[~pinned].tolist()

    def _behind_moved(self, moved: set[int]) -> list[int]:
        """Flowing transfers pipelined behind the flows ``moved`` (their events follow their
        upstream's progress); pending ones waiting for their upstream's first chunk get that
        event rescheduled."""
        if len(moved) > SMALL:
            kids = self._downstream(np.fromiter(moved, dtype=np.int64, count=len(moved)))
        else:
            kids = np.array([c for f in moved for c in self._downstream_of(f)], dtype=np.int64)
        status = self.status[kids]
        for c in kids[status == PENDING].tolist():
            if c in self.waiting_upstream:
                self._schedule_activation(c)
        return kids[status == FLOWING].tolist()

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
        coupled_now = self.coupled_now
        while stack:
            f = stack.pop()
            p = int(coupled_now[f])
            if p >= 0 and p not in out:
                out.add(p)
                stack.append(p)
            if self.n_coupled[f]:
                for k in self._downstream_of(f):
                    if coupled_now[k] == f and k not in out:
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
        return self._route_pairs(idx)[0]

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
        limit = _local_limit(len(self.flowing))
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
                for g in self._flows_on(r):
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
        pos, lengths = csr_rows(self.res_ptr, self.route_of[comp])
        pair_flow = np.repeat(np.arange(len(comp)), lengths)
        used, local = compact_ids(self.res_idx[pos], len(self.capacity))
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
        crowded = np.flatnonzero(saturated & shared)
        if not len(crowded):
            return set()
        # a flow of comp held by its cap or coupling needs no resource as its bottleneck; one
        # that is not must get the most on some saturated resource it crosses, so a flow
        # outside getting more than it there may have to give way
        free = ~self._pinned_at(comp, rates)[pair_flow]
        lowest = np.full(len(used), np.inf)
        np.minimum.at(lowest, local[free], rates[pair_flow[free]])
        more: set[int] = set()
        for k in crowded.tolist():
            low = lowest[k] * (1 + _REL)
            for g in self._flows_on(int(used[k])):
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
            res, owner = self._route_pairs(idx)
            np.add.at(self.usage, res, rates[changed][np.searchsorted(idx, owner)] - self.rate[owner])
            self.rate[idx] = rates[changed]
            self._stale_all(idx)
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
        due = [np.flatnonzero(np.isfinite(dt)) for _, dt in kinds]
        when = np.concatenate([self.t + np.maximum(dt[k], 0.0) for (_, dt), k in zip(kinds, due)])
        kind = np.repeat([k for k, _ in kinds], [len(k) for k in due])
        i = idx[np.concatenate(due)]
        seq = self._seqs(len(when)) + np.arange(len(when))
        self.flow_agenda.push(when, seq, kind, i, self.ver[i])
        if len(self.flow_agenda) > 4 * len(self.flowing) + 4096:
            self.flow_agenda.compact(self._valid_entries)

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

    def _seqs(self, k: int) -> int:
        """Reserve ``k`` consecutive entry numbers (entries due at one time fire in number
        order); returns the first."""
        first = next(self._seq)
        self._seq = itertools.count(first + k)
        return first

    def _valid_entries(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """Which entries of ``flow_agenda`` (columns: time, seq, kind, transfer, version) are
        current: their transfer is flowing and has no newer entries."""
        i, v = columns[3], columns[4]
        return (self.ver[i] == v) & (self.status[i] == FLOWING)

    def _valid(self, entry: tuple) -> bool:
        _, _, kind, i, v = entry
        if v != self.ver[i]:
            return False
        if kind == EV_ACTIVATE:
            return bool(self.status[i] == PENDING) and i in self.waiting_upstream
        return bool(self.status[i] == FLOWING)

    def _next_events(self) -> tuple[float, np.ndarray, list[int], list[str]]:
        """Time to the next event, and the events due then: flow events (kinds and transfers,
        in firing order), phase ends, senders that may inject. Events within 1e-12
        (relative) of the first are taken together."""
        fh, ph, ih = self.flow_heap, self.phase_heap, self.inject_heap
        while fh and not self._valid(fh[0]):
            heapq.heappop(fh)
        while ph and self.status[ph[0][1]] != ph[0][2]:
            heapq.heappop(ph)
        while ih and ih[0][1] not in self.busy_senders:
            heapq.heappop(ih)
        first = min(
            fh[0][0] if fh else math.inf,
            self.flow_agenda.first(self._valid_entries),
            ph[0][0] if ph else math.inf,
            ih[0][0] if ih else math.inf,
        )
        if not math.isfinite(first):
            return math.inf, np.zeros((2, 0), dtype=np.int64), [], []
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
        return dt, self._flow_hits(hits, limit), phases, senders

    def _flow_hits(self, from_heap: list[tuple], limit: float) -> np.ndarray:
        """The current flow events due by ``limit``, those popped from the heap and those of
        the agenda, as (kinds, transfers) in firing order (time, then entry number)."""
        due = self.flow_agenda.pop_until(limit)
        if due is None and not from_heap:
            return np.zeros((2, 0), dtype=np.int64)
        columns = [np.array(c) for c in zip(*from_heap)] if from_heap else []
        if due is not None:
            valid = self._valid_entries(due)
            due = [c[valid] for c in due]
            columns = [np.concatenate(pair) for pair in zip(columns, due)] if columns else due
        when, seq, kind, i, _ = columns
        order = np.lexsort((seq, when))
        return np.stack((kind[order], i[order])).astype(np.int64)

    def _settle(self, hits: np.ndarray, phases: list[int], senders: list[str]) -> None:
        """Snap values at the new time and fire the events that are due (``hits``: kinds and
        transfers of the flow events, in firing order)."""
        kinds, idx = np.reshape(hits, (2, -1))
        finished = idx[kinds == EV_DONE].tolist()
        # the others in order: a transfer caught up reads its upstream's state
        others = kinds != EV_DONE
        for kind, i in zip(kinds[others].tolist(), idx[others].tolist()):
            if kind == EV_CATCH:
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
                # released having sent every byte (caught up with an upstream that ends now):
                # it ends now too, before its sender injects what this instant made ready
                if kind == EV_FREE and self._sent(i) >= self.size[i] * (1 - _REL):
                    finished.append(i)
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

    def _stuck(self, hits: np.ndarray) -> None:
        kinds = ("done", "catch up", "released", "unblocked", "activated")
        fired = np.reshape(hits, (2, -1))[:, :5].tolist()
        events = ", ".join(f"transfer {i} {kinds[k]}" for k, i in zip(*fired)) or "phase ends"
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


def _local_limit(flowing: int) -> int:
    """The most flows a local recomputation may hold before every flowing transfer is
    recomputed instead. A group of a quarter of them costs about what the whole does (per
    solve, numpy's fixed costs dominate below a few thousand flows), and one that large has
    usually met saturated resources that grow it round after round (a flow ending on a link
    that dozens of exchanges share frees every one of them)."""
    share = min(max(flowing // 4, LOCAL_COMPONENT_MIN), LOCAL_COMPONENT_LIMIT)
    return max(share, flowing // 8)


def _keeps_rate(rate, cap, upstream_rate):
    """A flow at ``rate`` whose cap or coupling changed (now ``cap``, coupled to a flow at
    ``upstream_rate``, inf when uncoupled) keeps its max-min rate: the rate meets both, and
    one of them still holds it there, whatever the other flows do (arrays or scalars)."""
    meets = (rate <= cap * (1 + _REL)) & (rate <= upstream_rate * (1 + _REL))
    return meets & ((rate >= cap * (1 - _REL)) | (rate >= upstream_rate * (1 - _REL)))


class _Agenda:
    """Entries (a time, then columns) pushed many at a time and taken out when due: each
    push is one run sorted by time, and a heap holds the runs by their earliest entry not yet
    taken, so a thousand entries cost a few array operations, not a thousand heap pushes.
    Entries due at one time come out in no particular order."""

    def __init__(self) -> None:
        self._runs: list[tuple] = []  # (earliest time not taken, push number, its position, run)
        self._pushes = itertools.count()
        self._size = 0  # entries not taken

    def __len__(self) -> int:
        return self._size

    def push(self, when: np.ndarray, *columns: np.ndarray) -> None:
        """Add entries: their times ``when`` and as many columns."""
        if len(when):
            order = np.argsort(when, kind="stable")
            self._add((when[order], *(c[order] for c in columns)), 0)
            self._size += len(when)

    def _add(self, run: tuple, start: int) -> None:
        """(Re)insert ``run``, its entries from ``start`` on not taken yet."""
        if start < len(run[0]):
            heapq.heappush(self._runs, (float(run[0][start]), next(self._pushes), start, run))

    def first(self, valid: Callable[[Sequence[np.ndarray]], np.ndarray]) -> float:
        """Time of the earliest entry that ``valid`` (columns -> bools) keeps, dropping the
        entries before it (inf: none)."""
        window = 16
        while self._runs:
            _, _, start, run = self._runs[0]
            end = min(start + window, len(run[0]))
            keep = valid([c[start:end] for c in run])
            if keep[0]:
                return float(run[0][start])
            skip = int(np.argmax(keep)) if keep.any() else end - start
            heapq.heappop(self._runs)
            self._size -= skip
            self._add(run, start + skip)
            window = 16 if keep.any() else 2 * window
        return math.inf

    def pop_until(self, limit: float) -> list[np.ndarray] | None:
        """Every entry due by ``limit`` (time <= limit), as columns (time first); None if none."""
        parts = []
        while self._runs and self._runs[0][0] <= limit:
            _, _, start, run = heapq.heappop(self._runs)
            end = start + int(np.searchsorted(run[0][start:], limit, side="right"))
            parts.append([c[start:end] for c in run])
            self._size -= end - start
            self._add(run, end)
        return [np.concatenate(c) for c in zip(*parts)] if parts else None

    def compact(self, valid: Callable[[Sequence[np.ndarray]], np.ndarray]) -> None:
        """Drop every entry ``valid`` rejects, merging the others into one run."""
        runs, self._runs = self._runs, []
        if runs:
            columns = [np.concatenate(c) for c in zip(*([c[start:] for c in run] for _, _, start, run in runs))]
            keep = valid(columns)
            self._size = 0
            self.push(*(c[keep] for c in columns))


def _grouped(keys: np.ndarray, values: np.ndarray) -> list[tuple[int, list[int]]]:
    """``(key, values with that key)`` per distinct key, keys ascending, values in order."""
    if not len(keys):
        return []
    if len(keys) == 1:
        return [(int(keys[0]), values.tolist())]
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    cut = (np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist()
    vals = values.tolist()
    return [(k, vals[a:b]) for k, a, b in zip(keys[[0, *cut]].tolist(), [0, *cut], [*cut, len(vals)])]


def _update_sets(sets: dict[int, set[int]], keys: np.ndarray, values: np.ndarray, *, add: bool) -> None:
    """``sets[k]`` gains (``add``) or loses every value paired with key ``k``: one set
    operation per distinct key, not per value."""
    for k, vals in _grouped(keys, values):
        if add:
            sets[k].update(vals)
        else:
            sets[k].difference_update(vals)


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
    with paused_gc():
        return _Sim(plan, topology, chunk_size).run()
