"""GridMPI's modified van de Geijn broadcast: the inter-cluster step in the middle, over
``n`` parallel connections.

Reference: Matsuda, Kodama, Kudoh, Takano, Ishikawa, "Efficient MPI Collective Operations for
Clusters in Long-and-Fast Networks", IEEE Cluster 2006 (GridMPI slides;
docs/algorithms.md 5.6). Cost ``L + M/(nB) + M/B + M/B``; ``n`` is limited so the wide-area link
is not congested (10 Gbps up-link, 1 Gbps NICs: up to 10 connections).

Reconstruction [I] (two clusters A ∋ root and B; see ``GridLayout`` in
``planners/_collective.py``):

1. (step 1) binomial scatter in A: relative rank ``r`` gets its superchunk; members of each
   of the ``n`` groups forward theirs to the group's selected host, which then holds block i
   (no forwarding when ``n = pA``);
2. (step 2) selected ``a_i -> b_i`` send block ``i``, all ``n`` at once: ``L + M/(nB)``;
3. (step 3) in B the selected hosts hand each group member its superchunk; then both
   clusters run MPICH's ring allgather of the superchunks: ``~ M/B``.

``n = floor(C_wan / B_nic)`` limited to ``[1, min(pA, pB)]`` unless ``connections=`` is given.
Clusters are detected (``detect_clusters``) or given (``clusters=``). Generalisations [I]:
with more than two clusters, A's selected hosts serve the other clusters one after the other,
farthest first (``n`` is the smallest over the pairs); with a single cluster there is no
inter-cluster step and the plan is MPICH's scatter + ring allgather (van de Geijn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from .._collective import (
    GridLayout,
    MPISchedule,
    binomial_scatter,
    clusters_for,
    connections_for,
    participants,
    ring_allgather,
)
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_gridmpi_bcast"]


@register_planner(
    "broadcast",
    "gridmpi",
    summary="GridMPI modified van de Geijn: scatter, n parallel inter-cluster sends in the middle, ring allgather",
    reference="Matsuda, Kodama, Kudoh, Takano, Ishikawa, Efficient MPI Collective Operations for Clusters in Long-and-Fast Networks, Cluster 2006",
)
def plan_gridmpi_bcast(
    topology: Topology,
    request: Broadcast,
    *,
    clusters: str | Sequence[Sequence[str]] | None = None,
    connections: int | None = None,
) -> Plan:
    source, hosts = participants(topology, request)
    size = request.size
    groups = clusters_for(topology, hosts, clusters)
    a = next(g for g in groups if source in g)
    r = a.index(source)
    a = a[r:] + a[:r]  # relative order: the root is rank 0 of A
    others = [g for g in groups if source not in g]
    others.sort(key=lambda g: -topology.route_latency(source, g[0]))  # farthest first
    how: Mapping[str, object]  # how the number of connections was chosen (plan params)
    n, how = 1, {"connections_rule": "single cluster"}
    for g in others:
        k, h = connections_for(topology, a, g, connections)
        if g is others[0] or k < n:
            n, how = k, h
    la = GridLayout(a, size, n if others else len(a))
    layouts = [GridLayout(g, size, n) for g in others]
    sched = MPISchedule()
    binomial_scatter(sched, a, 0, la.superchunk)  # step 1
    if others:
        la.funnel(sched)
    for lb in layouts:  # step 2: n parallel inter-cluster sends per remote cluster
        sched.step([(la.selected(i), lb.selected(i), la.blocks[i], False, f"wan {i}") for i in range(n)])
    for lb in layouts:  # step 3
        lb.unfunnel(sched)
    ring_allgather(sched, a, 0, la.superchunk)
    for lb in layouts:
        ring_allgather(sched, lb.hosts, 0, lb.superchunk)
    return Plan.broadcast(
        source,
        size,
        [h for h in hosts if h != source],
        sched.transfers,
        planner="gridmpi",
        params={k: v for k, v in (("clusters", clusters), ("connections", connections)) if v is not None},
        notes={
            "connections": n if others else 0,
            **how,
            "clusters": [a] + [list(g) for g in others],
            "selected": [[la.selected(i)] + [lb.selected(i) for lb in layouts] for i in range(n)] if others else [],
        },
    )
