"""Mateescu & Taylor: extended single-source shortest path tree + vertex labelling.

Reference: G. Mateescu, R. Taylor, "Efficient Broadcast on Computational Grids", slides of
12 May 2003 (docs/algorithms.md 4). The hosts form a complete graph; edge ``(u, v)``
has latency ``w(u, v)`` (here: the sum of link latencies of ``route(u, v)``) and injection
time ``Δ(u, v)`` (``topology.injection(u, v)``); a sender injects one message at a time.

* step 1 (E-SSSP, slides 8-10): Dijkstra where relaxing ``v`` from ``u`` compares
  ``dist[v] > dist[u] + w(u,v) + Δ(u,v)`` and, on success, also adds ``Δ(u,v)`` to
  ``dist[u]`` (u is busy one more injection);
* step 2 (labelling, slides 11-14): ``label(u) = max_i label(v_i) + w(u,v_i) + Σ_{j<=i} Δ(u,v_j)``
  with children sorted by decreasing ``label(v) + w(u, v)``;
* step 3 (slide 15): every host receives from its parent, then sends to its children in
  label order.

Our readings [I]: neighbours are visited in host order; a re-parented vertex does not give
back the injection time it cost its former parent (as the slides' pseudo-code does); for
per-child injection costs the label uses the prefix sum of Δ (exact) instead of ``i·Δ``.
Sends are non-blocking by default (the sender is busy Δ per send, then the next send may
start: the model of the slides); ``blocking=True`` chains each send after the previous one
(``MPI_Send`` as in their implementation, which the slides say makes large messages slow).
``bandwidth=True`` adds ``size / route bandwidth`` to ``w`` (the slides' "future work:
include the bandwidth in the model").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan, Transfer
from .._collective import participants
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_essp", "essp_tree", "label_tree"]


def essp_tree(
    hosts: Sequence[str], root: str, w: Callable[[str, str], float], delta: Callable[[str, str], float]
) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Extended SSSP (step 1). ``w(u, v)``, ``delta(u, v)`` in seconds.

    Returns ``(parent, children)``; ``children[u]`` in attachment order.
    """
    dist = {h: math.inf for h in hosts}
    dist[root] = 0.0
    parent: dict[str, str | None] = {root: None}
    queue = set(hosts)
    order = {h: i for i, h in enumerate(hosts)}
    while queue:
        u = min(queue, key=lambda h: (dist[h], order[h]))  # dequeue_min
        queue.discard(u)
        if math.isinf(dist[u]):
            break
        for v in hosts:  # get_next_neighbor: complete graph, host order
            if v == u or v not in queue:
                continue
            cand = dist[u] + w(u, v) + delta(u, v)
            if dist[v] > cand:
                dist[v] = cand  # decrease_key
                dist[u] = dist[u] + delta(u, v)  # u injects one more message
                parent[v] = u
    children: dict[str, list[str]] = {h: [] for h in hosts}
    for v in hosts:
        p = parent.get(v)
        if p is not None:
            children[p].append(v)
    return parent, children


def label_tree(
    root: str,
    children: Mapping[str, Sequence[str]],
    w: Callable[[str, str], float],
    delta: Callable[[str, str], float],
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Vertex labelling (step 2): ``(label, ordered children)``; post-order, no recursion."""
    label: dict[str, float] = {}
    ordered: dict[str, list[str]] = {}
    stack = [(root, False)]
    while stack:
        u, done = stack.pop()
        if not done:
            stack.append((u, True))
            stack.extend((c, False) for c in children[u])
            continue
        kids = sorted(children[u], key=lambda v: -(label[v] + w(u, v)))  # stable on ties
        ordered[u] = kids
        best, busy = 0.0, 0.0
        for v in kids:
            busy += delta(u, v)
            best = max(best, label[v] + w(u, v) + busy)
        label[u] = best
    return label, ordered


@register_planner(
    "broadcast",
    "essp",
    summary="Mateescu-Taylor: extended shortest-path tree with injection time Δ, children served in label order",
    reference="Mateescu, Taylor, Efficient Broadcast on Computational Grids, slides, NRC/Carleton 2003",
)
def plan_essp(topology: Topology, request: Broadcast, *, blocking: bool = False, bandwidth: bool = False) -> Plan:
    """E-SSSP tree over the participants; ``blocking`` and ``bandwidth`` see module doc."""
    source, hosts = participants(topology, request)
    size = request.size

    def w(u, v):
        x = topology.route_latency(u, v)
        if bandwidth:
            x += size / topology.route_bandwidth(u, v)
        return x

    delta = topology.injection
    parent, children = essp_tree(hosts, source, w, delta)
    label, ordered = label_tree(source, children, w, delta)
    transfers: list[Transfer] = []
    # step 3: breadth-first from the root, each host's sends in label order
    frontier = [source]
    while frontier:
        nxt = []
        for u in frontier:
            prev = None
            for v in ordered[u]:
                after = (prev,) if (blocking and prev is not None) else ()
                transfers.append(Transfer.of(u, v, 0, size, after=after, label=f"essp {u}"))
                prev = len(transfers) - 1
                nxt.append(v)
        frontier = nxt
    return Plan.broadcast(
        source,
        size,
        [h for h in hosts if h != source],
        transfers,
        planner="essp",
        params={"blocking": blocking, "bandwidth": bandwidth},
        notes={"predicted_time_model": label[source], "parent": {h: p for h, p in parent.items() if p is not None}},
    )
