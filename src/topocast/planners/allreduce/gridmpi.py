"""GridMPI's modified Rabenseifner allreduce: the inter-cluster step in the middle, over ``n``
parallel connections.

Reference: Matsuda, Kodama, Kudoh, Takano, Ishikawa, "Efficient MPI Collective Operations for
Clusters in Long-and-Fast Networks", IEEE Cluster 2006 (GridMPI slides;
docs/algorithms.md 5.6). Cost ``L + M/(nB) + M/B + M/B``.

Reconstruction [I] (two clusters; ``GridLayout`` in ``planners/_collective.py``):

1. (step 1) ring reduce-scatter inside each cluster so that relative rank ``r`` holds its
   cluster's sum of its superchunk; group members forward theirs to the group's selected
   host, which then holds the cluster sum of block ``i`` (nothing to forward when ``n = p``);
2. (step 2) selected ``a_i <-> b_i`` exchange block ``i`` in both directions and reduce:
   ``L + M/(nB)``;
3. (step 3) selected hosts hand each group member its (now global) superchunk; ring allgather
   of the superchunks inside each cluster.

``n = floor(C_wan / B_nic)`` limited to ``[1, min(pA, pB)]`` unless ``connections=`` is given.
Generalisations [I]: with more than two clusters the selected hosts of block ``i`` in every
cluster exchange block ``i`` all-to-all (``n`` is the smallest over the cluster pairs); with a
single cluster there is no inter-cluster step and the plan is a ring allreduce.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .._collective import GridLayout, MPISchedule, clusters_for, connections_for, ring_allgather, ring_reduce_scatter
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_gridmpi_allreduce"]


@register_planner(
    "allreduce",
    "gridmpi",
    summary="GridMPI modified Rabenseifner: reduce-scatter, n parallel inter-cluster exchanges in the middle, allgather",
    reference="Matsuda, Kodama, Kudoh, Takano, Ishikawa, Efficient MPI Collective Operations for Clusters in Long-and-Fast Networks, Cluster 2006",
)
def plan_gridmpi_allreduce(
    topology: Topology,
    request: Allreduce | Broadcast,
    *,
    clusters: str | Sequence[Sequence[str]] | None = None,
    connections: int | None = None,
) -> Plan:
    hosts = allreduce_hosts(topology, request)
    size = request.size
    groups = clusters_for(topology, hosts, clusters)
    how: Mapping[str, object]  # how the number of connections was chosen (plan params)
    n, how = (len(groups[0]), {"connections_rule": "single cluster"}) if len(groups) == 1 else (None, {})
    for x in range(len(groups)):
        for y in range(x + 1, len(groups)):
            k, h = connections_for(topology, groups[x], groups[y], connections)
            if n is None or k < n:
                n, how = k, h
    assert n is not None  # one cluster sets it, and two or more run the loop above
    layouts = [GridLayout(g, size, n) for g in groups]
    sched = MPISchedule()
    for lay in layouts:  # step 1
        p = len(lay.hosts)
        if p > 1:
            # rank r must end with superchunk r: ring reduce-scatter leaves chunk r+1 at r
            ring_reduce_scatter(sched, lay.hosts, [lay.superchunk[(j - 1) % p] for j in range(p)])
        if len(groups) > 1:
            lay.funnel(sched)
    if len(groups) > 1:  # step 2: block i exchanged among the selected hosts i of all clusters
        start = sched.join([lay.selected(i) for lay in layouts for i in range(n)])
        ops = []
        for i in range(n):
            for la in layouts:
                for lb in layouts:
                    if la is not lb:
                        ops.append((la.selected(i), lb.selected(i), la.blocks[i], True, f"wan {i}"))
        sched.step(ops, extra_after=start)
    for lay in layouts:  # step 3
        if len(groups) > 1:
            lay.unfunnel(sched)
        if len(lay.hosts) > 1:
            ring_allgather(sched, lay.hosts, 0, lay.superchunk)
    return allreduce_plan(
        hosts,
        size,
        sched.transfers,
        planner="gridmpi",
        params={k: v for k, v in (("clusters", clusters), ("connections", connections)) if v is not None},
        notes={
            "connections": n if len(groups) > 1 else 0,
            **how,
            "clusters": [list(g) for g in groups],
            "selected": [[lay.selected(i) for lay in layouts] for i in range(n)] if len(groups) > 1 else [],
        },
    )
