"""Physical upper bounds for a broadcast (docs/algorithms.md section 8).

No plan can give destination ``d`` more than ``maxflow(S -> d)`` over the directed link
capacities (a unicast flow needs no duplication, so this holds even though switches cannot
copy data; every node, switch or host, may be crossed). The sum over destinations is the
*theoretical maximum aggregate bandwidth* of the Stable Broadcast paper.

Capacities per policy: a ``duplex`` direction has its own bandwidth; a ``shared`` (half
duplex) cable gives each direction the full bandwidth (a single-commodity flow never needs
both directions of one cable); a ``fatpipe`` link does not limit the sum of flows at all
(each flow is capped by it, but a plan may open several), so it counts as unbounded.

Speed: nodes hanging off the rest of the network by a single cable (cluster hosts, whole
tree topologies) are peeled off first; ``maxflow(S -> v) = min(c(u -> v), maxflow(S -> u))``
for a node ``v`` whose only neighbour is ``u``. Max-flow (networkx preflow-push) runs only on
what remains, so a tree of 10,000 hosts needs no max-flow computation at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import PlanError

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["Bound", "broadcast_bounds", "maxflow_from"]


@dataclass(frozen=True)
class Bound:
    """Per-destination max-flow bound (bytes/s) and their sum."""

    source: str
    per_host_rate: Mapping[str, float]
    aggregate_bandwidth: float

    @property
    def common_rate(self) -> float:
        """``min_d maxflow(S -> d)``: the bound for schemes that give everyone one rate."""
        return min(self.per_host_rate.values()) if self.per_host_rate else math.inf

    def to_json(self) -> dict:
        return {"aggregate_bandwidth": self.aggregate_bandwidth, "per_host_rate": dict(self.per_host_rate)}


def maxflow_from(topology: Topology, source: str, targets: Iterable[str] | None = None) -> dict[str, float]:
    """``maxflow(source -> v)`` in bytes/s for every node ``v`` in ``targets`` (default: all hosts)."""
    topo = topology
    targets = list(topo.hosts if targets is None else targets)
    n = topo.n_nodes
    s = topo.index(source)

    # Directed capacity per ordered node pair; fatpipe = unbounded.
    cap: dict[tuple[int, int], float] = {}
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for lid, link in enumerate(topo.links):
        u, v = int(topo.link_src[lid]), int(topo.link_dst[lid])
        cap[(u, v)] = math.inf if link.sharing == "fatpipe" else link.bandwidth
        nbrs[u].add(v)
        nbrs[v].add(u)

    # Step 1: peel nodes of degree 1 (never the source), remembering their only neighbour.
    degree = [len(x) for x in nbrs]
    removed = [False] * n
    parent = [-1] * n
    order: list[int] = []
    stack = [v for v in range(n) if degree[v] == 1 and v != s]
    while stack:
        v = stack.pop()
        if removed[v] or degree[v] != 1 or v == s:
            continue
        removed[v] = True
        order.append(v)
        (u,) = [w for w in nbrs[v] if not removed[w]]
        parent[v] = u
        degree[u] -= 1
        if degree[u] == 1 and u != s:
            stack.append(u)

    # Step 2: max-flow on the core for the core nodes we need.
    needed: set[int] = set()
    for t in targets:
        v = topo.index(t)
        while removed[v]:
            v = parent[v]
        needed.add(v)
    value = [0.0] * n
    value[s] = math.inf
    core = [v for v in range(n) if not removed[v]]
    needed.discard(s)
    if needed:
        import networkx as nx  # only when a core remains (not for trees)

        g = nx.DiGraph()
        g.add_nodes_from(core)
        for (u, v), c in cap.items():
            if not removed[u] and not removed[v]:
                if math.isinf(c):
                    g.add_edge(u, v)  # no capacity attribute = unbounded in networkx
                else:
                    g.add_edge(u, v, capacity=c)
        for v in sorted(needed):
            try:
                value[v] = float(nx.maximum_flow_value(g, s, v, capacity="capacity"))
            except nx.NetworkXUnbounded:
                value[v] = math.inf

    # Step 3: peeled nodes, parents first.
    for v in reversed(order):
        u = parent[v]
        value[v] = min(cap.get((u, v), 0.0), value[u])
    return {t: value[topo.index(t)] for t in targets}


def broadcast_bounds(topology: Topology, source: str, destinations: Iterable[str] | None = None) -> Bound:
    """Per-destination max-flow bound and its sum for a broadcast from ``source``."""
    topology.require_host(source, element="source", error=PlanError)
    dests = [h for h in (topology.hosts if destinations is None else destinations) if h != source]
    per_host = maxflow_from(topology, source, dests)
    return Bound(source, per_host, float(sum(per_host.values())))
