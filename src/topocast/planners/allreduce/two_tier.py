"""Two-tier allreduce: reduce inside each cluster, exchange between the cluster roots,
broadcast inside each cluster.

Reference: the "existing" grid allreduce (MPICH-G2 / MagPIe / PACX-MPI) as summarised by
Matsuda et al., Cluster 2006 (GridMPI slides; docs/algorithms.md 5.5): (step 1) reduce
in both clusters, (step 2) the roots exchange data and reduce, (step 3) broadcast in each
cluster. Cost ``L + M/B + (M/B + M/B) + (M/B + M/B)``.

Our readings [I]: the intra-cluster reduce is Rabenseifner-style (ring reduce-scatter, then
every member sends its reduced chunk to the cluster root, one receive after the other), the
broadcast is van de Geijn (binomial scatter + ring allgather); the root of a cluster is its
first host; with ``k > 2`` clusters every root sends its cluster's sum to every other root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._collective import (
    MPISchedule,
    balanced_counts,
    binomial_scatter,
    clusters_for,
    counts_to_ranges,
    mpich_chunks,
    ring_allgather,
    ring_reduce_scatter,
)
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_two_tier", "intra_reduce"]


def intra_reduce(sched: MPISchedule, hosts: Sequence[str], size: int) -> None:
    """Reduce the cluster's vectors into ``hosts[0]``: ring reduce-scatter + gather."""
    p = len(hosts)
    if p < 2:
        return
    chunks = counts_to_ranges(0, balanced_counts(size, p))
    ring_reduce_scatter(sched, hosts, chunks, label="intra reduce-scatter")
    for k in range(1, p):  # gather: rank k holds chunk (k + 1) mod p, fully reduced
        sched.send(hosts[k], hosts[0], chunks[(k + 1) % p], label="intra gather")


def intra_bcast(sched: MPISchedule, hosts: Sequence[str], size: int) -> None:
    """van de Geijn broadcast from ``hosts[0]`` (binomial scatter + ring allgather)."""
    if len(hosts) < 2:
        return
    chunks = mpich_chunks(0, size, len(hosts))
    binomial_scatter(sched, hosts, 0, chunks, label="intra scatter")
    ring_allgather(sched, hosts, 0, chunks, label="intra allgather")


@register_planner(
    "allreduce",
    "two_tier",
    summary="grid allreduce: reduce in each cluster, roots exchange and reduce over one wide-area connection, broadcast in each cluster",
    reference="MPICH-G2/MagPIe-style two-tier allreduce as described by Matsuda et al., Cluster 2006 (GridMPI)",
)
def plan_two_tier(
    topology: Topology, request: Allreduce | Broadcast, *, clusters: str | Sequence[Sequence[str]] | None = None
) -> Plan:
    hosts = allreduce_hosts(topology, request)
    size = request.size
    groups = clusters_for(topology, hosts, clusters)
    sched = MPISchedule()
    for g in groups:  # step 1
        intra_reduce(sched, g, size)
    roots = [g[0] for g in groups]
    if len(roots) > 1:  # step 2: every root sends its cluster sum to every other root
        start = sched.join(roots)
        sched.step(
            [(a, b, [(0, size)], True, "root exchange") for a in roots for b in roots if a != b], extra_after=start
        )
    for g in groups:  # step 3
        intra_bcast(sched, g, size)
    return allreduce_plan(
        hosts,
        size,
        sched.transfers,
        planner="two_tier",
        params={"clusters": clusters} if clusters is not None else {},
        notes={"clusters": [list(g) for g in groups]},
    )
