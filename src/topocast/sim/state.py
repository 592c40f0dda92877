"""The simulator's state machine: every transfer's status, its dependencies and route, and
the transitions of its life (docs/design.md, "Simulator")::

    PENDING --(deps done, data there)--> QUEUED at its sender
    QUEUED  --(sender injects it: Δ(src, dst), one at a time, plan order)--> LATENCY
    LATENCY --(sum of route latencies, no bandwidth used)--> FLOWING
    FLOWING --(all bytes delivered)--> [REDUCING for size·γ(dst) if reduce=True] --> DONE

* Data: a store-and-forward transfer is ready once its sender holds all its bytes (initial
  holdings or completed transfers). A pipelined transfer is ready once its upstream is flowing
  and has delivered its first chunk (``plan.chunk_size``; 0 = fluid); while flowing it never
  gets ahead of ``upstream delivered - chunk`` (everything once the upstream is done).
* Progress is kept lazily: a flowing transfer's bytes are ``sent0 + rate · (t - t0)``, written
  back only when its rate changes.
* Flows that start or end at one instant are booked together, with arrays (the hops of a
  pipeline that start with their upstream included); events touching a few flows work on
  Python scalars (``tuning.SMALL``).

``Transfers`` is a mixin of the simulator (``engine._Sim``): it owns the per-transfer arrays
and the senders' queues; it tells the coverage room (``_stale``, ``_received``), the rates
room (``started``, ``dirty``, ``freed``) and the agenda (``phase_heap``, ``inject_heap``,
``flow_heap``) what changed.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Collection
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from ..memory import BYTES_PER_RANGE, BYTES_PER_TRANSFER, check_fits
from ..plan import Plan, Transfer
from ..plan.graph import csr_rows
from . import tuning
from .room import Room

if TYPE_CHECKING:
    from ..topology import Topology

PENDING, QUEUED, LATENCY, FLOWING, REDUCING, DONE = range(6)
# kinds of flow events (agenda entries)
EV_DONE, EV_CATCH, EV_FREE, EV_UNBLOCK, EV_ACTIVATE = range(5)
# relative tolerance of the clock and of progress comparisons
REL = 1e-12


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array without NaN, by a sort: numpy's own imports
    ``numpy.ma`` at its first call, a cost a short simulation notices."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


class Transfers(Room):
    """Statuses, dependencies, routes and progress of every transfer (a mixin of ``_Sim``)."""

    def _init_transfers(self, plan: Plan, topology: Topology, chunk_size: int | None) -> None:
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
        self.flowing: set[int] = set()  # flowing transfers
        self._resource_users()

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

    def _dependencies(self) -> None:
        """Upstreams, and who waits for whom: ``after`` (dependents) and upstreams
        (downstream), as CSR rows in plan order."""
        n = self.n
        arrays = self.arrays
        self.upstream, base = arrays.upstreams()
        self.base = base.astype(float)
        owner = np.repeat(np.arange(n), np.diff(arrays.after_ptr))
        pairs = sorted_distinct(arrays.after_idx * n + owner)  # distinct (predecessor, dependent)
        before, after = pairs // n, pairs % n
        self.waiting = np.bincount(after, minlength=n)
        self.dep_ptr, self.dep_idx = np.searchsorted(before, np.arange(n + 1)), after
        behind = np.flatnonzero(self.upstream >= 0)
        behind = behind[np.argsort(self.upstream[behind], kind="stable")]
        self.down_ptr = np.searchsorted(self.upstream[behind], np.arange(n + 1))
        self.down_idx = behind

    def _resource_users(self) -> None:
        """Who crosses each resource. The transfers flowing over a busy resource (crossed by
        more than tuning.BUSY transfers in the whole plan) are kept in a set as they start and end;
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
        self.busy = users > tuning.BUSY
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

    def _downstream_of(self, i: int) -> list[int]:
        """``_downstream`` of one transfer, as a list."""
        return self.down_idx[self.down_ptr[i] : self.down_ptr[i + 1]].tolist()

    def _route_pairs(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(resource, transfer) for every resource on the routes of transfers ``idx``."""
        pos, lengths = csr_rows(self.res_ptr, self.route_of[idx])
        return self.res_idx[pos], np.repeat(idx, lengths)

    def _sent(self, i: int) -> float:
        return float(self.sent0[i] + self.rate[i] * (self.t - self.t0[i]))

    def _sent_vec(self, idx: np.ndarray) -> np.ndarray:
        return self.sent0[idx] + self.rate[idx] * (self.t - self.t0[idx])

    def _set_sent(self, i: int, value: float) -> None:
        self.sent0[i] = value
        self.t0[i] = self.t
        self._stale(i)

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
            elif su == FLOWING and (self.activated[i] or self._sent(u) >= self._activation(i) * (1 - REL)):
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
            while q and self.sender_free[src] <= self.t * (1 + REL) + 1e-300:
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
        if len(started) > tuning.SMALL:
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
        self.freed.update(sorted_distinct(res[self.usage[res] >= self.capacity[res] * (1 - 1e-9)]).tolist())
        np.add.at(self.usage, res, -self.rate[owner])
        np.add.at(self.n_users, res, -1)
        self.rate[arr] = 0.0
        self.cap_now[arr] = math.nan
        coupled = arr[self.coupled_now[arr] >= 0]
        if len(coupled):
            self._couple(coupled, np.full(len(coupled), -1, dtype=np.int64))
        self.flowing.difference_update(idx)
        if len(idx) > tuning.SMALL:
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
        if len(idx) > tuning.SMALL:
            self._stale_all(arr)
            np.add.at(self.done_in, dst, 1)
            np.add.at(self.unmerged_bytes, dst, self.size[arr])
            np.subtract.at(self.left_all, dst, 1)
            np.subtract.at(self.left_bytes, dst[self.size[arr] > 0], 1)
            deps = self.dep_idx[csr_rows(self.dep_ptr, arr)[0]]
            np.subtract.at(self.waiting, deps, 1)
            deps = sorted_distinct(deps)
            self.to_check.extend(deps[self.waiting[deps] == 0].tolist())
            self.to_check.extend(self._downstream(arr).tolist())
            self._received(sorted_distinct(dst).tolist())
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
