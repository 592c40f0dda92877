"""Broadcast bounds that know the routes: what no plan can exceed when every transfer between
two hosts follows the topology's route (docs/design.md, "Bounds"; docs/algorithms.md 8).

Σ max-flow lets every destination pull its data over any path of the graph. Where the
platform fixes the host-to-host routes (declared routes, routes that cross a link twice,
links whose two directions share one capacity), a plan can only choose which hosts send to
which; the bytes then cross whatever the routes cross. Ours ([I]):

* **Mandatory links.** ``m_d(l)``: the fewest times a route into destination ``d`` crosses the
  directed link ``l``, over every possible sender (every other host); ``s_u(l)``: the same
  for the routes out of host ``u``. Every byte ``d`` receives crosses ``l`` at least
  ``m_d(l)`` times, every byte ``u`` sends at least ``s_u(l)`` times. A link counted for the
  receivers (some ``m_d(l) > 0``) is not counted again for the senders, so no transfer is
  counted twice on one link.
* **Steady bound** (a linear programme over rates, HiGHS)::

      maximise   Σ_d r_d
      subject to Σ_d a_d(R) r_d + Σ_u b_u(R) out_u <= cap(R)   every shared resource R
                 Σ_d r_d <= Σ_u out_u                          every byte received was sent
                 r_d <= out_S                                  every byte left the source once
                 0 <= r_d <= maxflow(S -> d),  out_u >= 0

  with ``a_d(R)`` the sum of ``m_d(l)`` over R's receiver-counted directions and ``b_u(R)``
  the sum of ``s_u(l)`` over the others. No plan whose hosts receive at constant rates beats it.
* **Aggregate bound** (valid for Σ_d size / T_d): a plan may finish hosts one after another,
  which a steady bound does not see. At the time ``T_(k)`` the k-th host completes, the
  average rates since the start satisfy the same programme (every constraint holds for the
  bytes moved up to any time), and the first k hosts alone received ``k`` x size; so
  ``size / T_(k) <= B / k`` with ``B`` the steady bound. Each host also stays below its own
  bound ``u_d = min(maxflow(S -> d), min_R cap(R) / a_d(R))``, and the k-th finisher's rate is
  at most the k-th largest ``u``. Hence ``Σ_d size / T_d <= Σ_k min(B / k, u_(k))``.

Mandatory links on a tree topology come from one walk per host (the links between a host and
the part of the tree where all its tree-routed peers are), plus the host's declared routes;
elsewhere from every host pair's route.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["RouteBound", "Reference", "route_bounds", "solve_route_bounds", "routes_are_fixed", "reference_bound"]


@dataclass(frozen=True)
class RouteBound:
    """The route-aware bounds of a broadcast (bytes/s)."""

    steady: float  # Σ_d r_d at constant rates (the LP)
    aggregate: float  # Σ_d size / T_d, any plan (hosts may finish one after another)
    per_host_rate: Mapping[str, float]  # u_d: each destination alone on its routes

    def to_json(self) -> dict:
        return {
            "steady_aggregate_bandwidth": self.steady,
            "aggregate_bandwidth": self.aggregate,
            "per_host_rate": dict(self.per_host_rate),
        }


def routes_are_fixed(topology: Topology) -> bool:
    """True where a transfer's path is its route: declared routes, or a tree of two-way links
    (one path per pair). Elsewhere a plan may give transfers other paths (docs/design.md)."""
    if topology.routes:
        return True
    return topology.is_two_way_tree()


class RootedTree:
    """The topology's tree rooted at node 0: parent, the links up and down, children, preorder
    intervals (node ``x`` is in the subtree of ``v`` iff ``tin[v] <= tin[x] < tout[v]``), hosts
    per subtree."""

    def __init__(self, topology: Topology) -> None:
        parent, _, up, down = topology._rooted_tree()
        n = topology.n_nodes
        self.parent, self.up, self.down = parent, up, down
        self.children: list[list[int]] = [[] for _ in range(n)]
        for v in range(n):
            if parent[v] >= 0:
                self.children[parent[v]].append(v)
        self.tin = [0] * n
        self.tout = [0] * n
        self.hosts_below = [0] * n
        n_hosts = len(topology.hosts)  # hosts are nodes 0 .. n_hosts - 1
        stack = [(0, False)]
        clock = 0
        while stack:
            v, done = stack.pop()
            if done:
                self.tout[v] = clock
                self.hosts_below[v] = (v < n_hosts) + sum(self.hosts_below[c] for c in self.children[v])
                continue
            self.tin[v] = clock
            clock += 1
            stack.append((v, True))
            stack.extend((c, False) for c in self.children[v])
        self.n_hosts = n_hosts

    def inside(self, v: int, x: int) -> bool:
        """True when node ``x`` is in the subtree of ``v``."""
        return self.tin[v] <= self.tin[x] < self.tout[v]

    def walk(self, h: int, skipped: list[int], towards_h: bool) -> Counter[int]:
        """Links every tree route between host ``h`` and its tree-routed peers (the other
        hosts but those at the preorder times ``skipped``, sorted) crosses, going into ``h``
        when ``towards_h``, else out of it: from ``h`` towards the part of the tree holding all
        those peers, up to where they part ways or to the first of them."""
        total = self.n_hosts - 1 - len(skipped)
        out: Counter[int] = Counter()
        if total <= 0:
            return out

        def peers_below(v: int) -> int:  # tree-routed peers in the subtree of v
            k = bisect.bisect_left(skipped, self.tout[v]) - bisect.bisect_left(skipped, self.tin[v])
            return self.hosts_below[v] - self.inside(v, h) - k

        x = h
        while x == h or x >= self.n_hosts or self._skipped(x, skipped):  # stop at a peer: its routes start there
            if self.parent[x] >= 0 and peers_below(x) == 0:  # every peer lies beyond the parent
                link, nxt = (self.down[x] if towards_h else self.up[x]), self.parent[x]
            else:  # every peer below one child, or they part ways here
                nxt = next((c for c in self.children[x] if peers_below(c) == total), -1)
                if nxt < 0:
                    break
                link = self.up[nxt] if towards_h else self.down[nxt]
            if link < 0:
                break
            out[link] += 1
            x = nxt
        return out

    def _skipped(self, x: int, skipped: list[int]) -> bool:
        i = bisect.bisect_left(skipped, self.tin[x])
        return i < len(skipped) and skipped[i] == self.tin[x]


def _mandatory(topology: Topology, into: bool) -> list[Counter[int]]:
    """Per host: link -> fewest crossings over its routes in (``into``) or out."""
    hosts = topology.hosts
    declared: dict[str, list[str]] = {h: [] for h in hosts}
    for u, v in topology.routes:
        if u in declared and v in declared and u != v:
            if into:
                declared[v].append(u)
            else:
                declared[u].append(v)
    tree = RootedTree(topology) if topology.is_tree() else None
    result: list[Counter[int]] = []
    for i, h in enumerate(hosts):
        peers = declared[h] if tree is not None else [p for p in hosts if p != h]
        common: Counter[int] | None = None
        for p in peers:
            route = Counter(topology.route(p, h) if into else topology.route(h, p))
            common = route if common is None else common & route
            if not common:
                break
        if tree is not None and len(peers) < len(hosts) - 1:
            skipped = sorted(tree.tin[topology.index(p)] for p in peers)
            walked = tree.walk(i, skipped, towards_h=into)
            common = walked if common is None else common & walked
        result.append(common or Counter())
    return result


def route_bounds(topology: Topology, source: str, per_host_maxflow: Mapping[str, float]) -> RouteBound:
    """The route-aware bounds of a broadcast from ``source`` to the hosts of
    ``per_host_maxflow`` (each destination's max-flow, as :func:`topocast.bounds.broadcast_bounds`
    gives it). Meaningful where :func:`routes_are_fixed`; never above Σ max-flow.

    On a tree of full-duplex links with the same capacity both ways and no declared route,
    Stable Broadcast's result (every destination can receive at its own max-flow at once,
    docs/algorithms.md 1) makes both bounds Σ max-flow and each host's bound its max-flow:
    no linear programme is solved there (its solver's import alone costs more than many
    simulations). :func:`solve_route_bounds` solves it anywhere; the tests check the two agree."""
    if _every_host_at_its_max_flow(topology):
        total = float(sum(per_host_maxflow.values()))
        return RouteBound(total, total, dict(per_host_maxflow))
    return solve_route_bounds(topology, source, per_host_maxflow)


def _every_host_at_its_max_flow(topology: Topology) -> bool:
    """A tree of full-duplex cables, each as fast both ways, routes the tree's own."""
    return (
        not topology.routes
        and topology.is_two_way_tree()
        and topology.is_symmetric()
        and all(pl.sharing == "duplex" for pl in topology.physical_links)
    )


def solve_route_bounds(topology: Topology, source: str, per_host_maxflow: Mapping[str, float]) -> RouteBound:
    """:func:`route_bounds` by its linear programme, wherever the routes are fixed."""
    from ..lp import solve

    dests = list(per_host_maxflow)
    a_ub, b_ub, bounds, own = steady_lp(topology, source, per_host_maxflow)
    total = float(sum(per_host_maxflow.values()))
    if a_ub is None:
        return RouteBound(total, total, dict(zip(dests, own)))
    n_r = len(own)
    n_h = a_ub.shape[1] - n_r
    # r = out = 0 is feasible and every r_d is bounded: an optimum always exists
    res = solve(-np.r_[np.ones(n_r), np.zeros(n_h)], a_ub, b_ub, bounds, problem="route-aware bound")
    steady = min(total, float(-res.fun))
    ranked = sorted(own, reverse=True)
    aggregate = min(total, float(sum(min(steady / (k + 1), u) for k, u in enumerate(ranked))))
    return RouteBound(steady, aggregate, dict(zip(dests, own)))


def steady_lp(topology: Topology, source: str, per_host_maxflow: Mapping[str, float]):
    """The steady bound's linear programme (:func:`route_bounds`), for HiGHS: ``(A_ub, b_ub,
    bounds, own)`` over the variables ``r_d`` (the destinations of ``per_host_maxflow``, in
    order) then ``out_u`` (every host), and each destination's rate alone on its routes
    (``own``); ``A_ub`` is None where the bound is Σ max-flow itself (no destination, or an
    unbounded one)."""
    from scipy.sparse import coo_matrix, vstack

    dests = list(per_host_maxflow)
    hosts = list(topology.hosts)
    into = _mandatory(topology, into=True)
    out_of = _mandatory(topology, into=False)
    col_r = {h: k for k, h in enumerate(dests)}
    n_r, n_h = len(dests), len(hosts)
    receiver_counted = np.zeros(len(topology.links), dtype=bool)
    for h in dests:
        for lid in into[topology.index(h)]:
            receiver_counted[lid] = True
    res_cap = topology.resource_capacity
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []

    def add(lid: int, col: int, times: int) -> None:
        for res in (topology.link_resource[lid], topology.link_direction_resource[lid]):
            if res >= 0:
                rows.append(int(res))
                cols.append(col)
                vals.append(float(times))

    for h in dests:
        for lid, times in into[topology.index(h)].items():
            add(lid, col_r[h], times)
    for k, h in enumerate(hosts):
        for lid, times in out_of[k].items():
            if not receiver_counted[lid]:
                add(lid, n_r + k, times)
    a_res = coo_matrix((vals, (rows, cols)), shape=(len(res_cap), n_r + n_h)).tocsr()
    used = np.flatnonzero(a_res.getnnz(axis=1))
    # each destination alone: its max-flow and every resource its routes in must cross
    recv = a_res[:, :n_r].tocsc()
    own = []
    for k, h in enumerate(dests):
        lo, hi = recv.indptr[k], recv.indptr[k + 1]
        caps = res_cap[recv.indices[lo:hi]] / recv.data[lo:hi]
        own.append(min(float(per_host_maxflow[h]), float(caps.min()) if hi > lo else math.inf))
    total = float(sum(per_host_maxflow.values()))
    if not math.isfinite(total) or not dests:
        return None, None, None, own
    src_col = n_r + hosts.index(source)
    extra_rows = [np.r_[np.ones(n_r), -np.ones(n_h)]]  # received <= sent
    from_source = coo_matrix(
        (
            np.r_[np.ones(n_r), -np.ones(n_r)],
            (np.r_[np.arange(n_r), np.arange(n_r)], np.r_[np.arange(n_r), [src_col] * n_r]),
        ),
        shape=(n_r, n_r + n_h),
    )
    a_ub = vstack([a_res[used], coo_matrix(np.array(extra_rows)), from_source]).tocsr()
    b_ub = np.r_[res_cap[used], 0.0, np.zeros(n_r)]
    bounds = [(0.0, float(min(per_host_maxflow[h], own[k]))) for k, h in enumerate(dests)] + [(0.0, None)] * n_h
    return a_ub, b_ub, bounds, own


#: How the CLI names each bound (``kind`` in its JSON).
MAXFLOW_KIND = "sum of per-destination max-flows"
ROUTE_KIND = "route-aware (fixed routes), valid for the aggregate metric"
STEADY_KIND = "route-aware (fixed routes), steady rates (LP)"


@dataclass(frozen=True)
class Reference:
    """What a result is measured against: the tighter valid bound for Σ_d size / T_d (Σ
    max-flow, or the route-aware aggregate bound where routes are fixed and it is lower), and
    the route-aware bounds themselves (None where routes are not fixed)."""

    aggregate_bandwidth: float
    kind: str
    route: RouteBound | None

    def to_json(self) -> dict:
        return {"aggregate_bandwidth": self.aggregate_bandwidth, "kind": self.kind}

    def route_json(self) -> dict | None:
        if self.route is None:
            return None
        return {**self.route.to_json(), "kind": ROUTE_KIND, "steady_kind": STEADY_KIND}


def reference_bound(topology: Topology, source: str, per_host_maxflow: Mapping[str, float]) -> Reference:
    """The :class:`Reference` of a broadcast from ``source`` (see :func:`route_bounds`)."""
    total = float(sum(per_host_maxflow.values()))
    if not routes_are_fixed(topology) or not per_host_maxflow:
        return Reference(total, MAXFLOW_KIND, None)
    rb = route_bounds(topology, source, per_host_maxflow)
    if rb.aggregate < total * (1 - 1e-9):
        return Reference(rb.aggregate, ROUTE_KIND, rb)
    return Reference(total, MAXFLOW_KIND, rb)
