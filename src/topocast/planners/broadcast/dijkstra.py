"""'Dijkstra' relay tree: add, one at a time, the host reachable with the largest bandwidth.

Reference: C.-M. Wang, C.-C. Wu, H.-M. Chang (Wang, Wu, Chang), "A novel data grid coherence
protocol using pipeline-based aggressive copy method", GPC 2007, pp. 484-495; as described
in the Stable Broadcast slides [S:SB-slides 15, 43]; docs/algorithms.md section 2.5.

Paper (as summarised by the slides): build the relaying structure greedily, adding one by one
the node reachable with the maximum bandwidth; slow nodes have little effect; some links are
used by many transfers and may become bottlenecks.

Ours ([I]):
* default ``variant="load-aware"``: a candidate hop u->v is worth
  ``min(rate[u], min_{e in route(u,v)} c(e) / (load(e) + 1))`` where ``load`` counts the hops
  already chosen that cross e; the best candidate is added (ties: lowest host order, parent
  first), then ``load`` is updated. Read literally with isolated bandwidths the greedy
  degenerates on trees (docs/algorithms.md 2.5), so the literal readings are options:
  ``"widest"`` (variant A, widest path ``min(key[u], bw(u,v))``) and ``"prim"`` (variant B,
  ``bw(u,v)``);
* every host forwards the whole message to all its children at once, pipelined, no caps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError
from ...plan import Broadcast, Plan, Transfer
from ..registry import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_dijkstra", "dijkstra_tree"]

VARIANTS = ("load-aware", "widest", "prim")


def _route_matrix(topology: Topology, hosts: Sequence[str]):
    """Padded directed-link ids of route(h_i, h_j) (pad = an extra link of infinite capacity)."""
    n_links = len(topology.links)
    routes = [[topology.route(u, v) if u != v else () for v in hosts] for u in hosts]
    lmax = max((len(r) for row in routes for r in row), default=1) or 1
    mat = np.full((len(hosts), len(hosts), lmax), n_links, dtype=np.int64)
    for i, row in enumerate(routes):
        for j, r in enumerate(row):
            if r:
                mat[i, j, : len(r)] = r
    return mat


def dijkstra_tree(
    topology: Topology, source: str, destinations: Sequence[str], variant: str = "load-aware"
) -> list[tuple[str, str]]:
    """Parent of every destination (host names) in insertion order: list of (parent, child)."""
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}", element="variant")
    hosts = [source] + list(destinations)
    h = len(hosts)
    mat = _route_matrix(topology, hosts)
    cap = np.append(topology.link_bandwidth, np.inf)
    load = np.zeros(len(cap))
    in_tree = np.zeros(h, dtype=bool)
    in_tree[0] = True
    rate = np.zeros(h)
    rate[0] = np.inf
    iso = cap[mat].min(axis=2)  # isolated bottleneck bw(u, v)
    key = np.zeros(h)
    key[0] = np.inf
    hops = []
    if variant != "load-aware":
        # step: classic Dijkstra/Prim over the overlay with isolated bandwidths
        best = np.full(h, -1.0)
        parent = np.full(h, -1)
        done = np.zeros(h, dtype=bool)
        best[0] = np.inf
        for _ in range(h):
            cand = np.where(done, -np.inf, best)
            u = int(np.argmax(cand))
            if cand[u] <= 0 and u != 0:
                break
            done[u] = True
            if u != 0:
                hops.append((hosts[parent[u]], hosts[u]))
            val = np.minimum(best[u], iso[u]) if variant == "widest" else iso[u].copy()
            upd = (~done) & (val > best)
            best[upd] = val[upd]
            parent[upd] = u
        return hops
    for _ in range(h - 1):
        share = (cap / (load + 1.0))[mat].min(axis=2)  # h x h
        cand = np.minimum(rate[:, None], share)
        cand[~in_tree, :] = -1.0
        cand[:, in_tree] = -1.0
        flat = int(np.argmax(cand))
        u, v = divmod(flat, h)
        in_tree[v] = True
        rate[v] = cand[u, v]
        r = mat[u, v]
        load[r[r < len(topology.links)]] += 1.0
        hops.append((hosts[u], hosts[v]))
    return hops


@register_planner(
    "broadcast",
    "dijkstra",
    summary="Dijkstra: greedy relay tree adding the host reachable with the largest (load-aware) bandwidth",
    reference="Wang, Wu, Chang. Pipeline-based aggressive copy for data grid coherence. GPC 2007, pp. 484-495",
)
def plan_dijkstra(
    topology: Topology, request: Broadcast, *, seed: int | None = None, variant: str = "load-aware"
) -> Plan:
    """Greedy widest relay tree; each host forwards to all its children concurrently (pipelined)."""
    dests = request.resolve(topology)
    hops = dijkstra_tree(topology, request.source, dests, variant=variant)
    whole = ((0, int(request.size)),)
    index_into: dict[str, int] = {}
    transfers = []
    for u, v in hops:
        transfers.append(Transfer(u, v, whole, pipelined=True, upstream=index_into.get(u), label="dijkstra"))
        index_into[v] = len(transfers) - 1
    return Plan.broadcast(
        request.source, request.size, dests, transfers, planner="dijkstra", params={"variant": variant}
    )
