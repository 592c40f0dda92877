"""Far-first broadcast: send to the other cluster(s) first, then broadcast inside each cluster.

Reference: the "existing" grid broadcast of MPICH-G2 / MagPIe / PACX-MPI as summarised by
Matsuda, Kodama, Kudoh, Takano, Ishikawa, "Efficient MPI Collective Operations for Clusters
in Long-and-Fast Networks", Cluster 2006 (GridMPI slides; docs/algorithms.md 5.5):
(step 1) the root sends the data to the other cluster, (step 2) broadcast in each cluster.
Cost ``L + M/B + (M/B + M/B)``.

Our readings [I]: with more than two clusters the root sends to every other cluster's
leader (its first host) one after the other, farthest (largest route latency) first; the
bracketed ``M/B + M/B`` is an intra-cluster van de Geijn broadcast (scatter + ring allgather,
``intra="scatter_allgather_ring"``; ``"binomial"`` also accepted); the root's own cluster
starts after the root's wide-area sends (so they do not share its NIC). Clusters come from
:func:`topocast.planners._collective.detect_clusters` unless ``clusters=`` is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import InputError
from ...plan import Broadcast, Plan
from .._collective import MPISchedule, binomial_bcast, clusters_for, participants
from ..registration import register_planner
from .scatter_allgather import build_scatter_allgather

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_far_first", "intra_bcast"]

INTRA = ("scatter_allgather_ring", "scatter_allgather_rdb", "binomial")


def intra_bcast(sched: MPISchedule, hosts: Sequence[str], root: int, size: int, intra: str) -> None:
    if intra == "binomial":
        binomial_bcast(sched, hosts, root, [(0, size)])
    elif intra == "scatter_allgather_ring":
        build_scatter_allgather(sched, hosts, root, 0, size, "ring")
    elif intra == "scatter_allgather_rdb":
        build_scatter_allgather(sched, hosts, root, 0, size, "rdb")
    else:
        raise InputError(f"intra must be one of {', '.join(INTRA)}, got {intra!r}", element="intra")


@register_planner(
    "broadcast",
    "far_first",
    summary="grid broadcast: root sends to each other cluster first (farthest first), then van de Geijn in each cluster",
    reference="MPICH-G2/MagPIe-style far-first bcast as described by Matsuda et al., Cluster 2006 (GridMPI)",
)
def plan_far_first(
    topology: Topology,
    request: Broadcast,
    *,
    clusters: str | Sequence[Sequence[str]] | None = None,
    intra: str = "scatter_allgather_ring",
) -> Plan:
    source, hosts = participants(topology, request)
    size = request.size
    groups = clusters_for(topology, hosts, clusters)
    home = next(g for g in groups if source in g)
    others = [g for g in groups if g is not home]
    others.sort(key=lambda g: -topology.route_latency(source, g[0]))  # farthest first
    sched = MPISchedule()
    for g in others:  # step 1: the root sends the whole message to each remote leader
        sched.send(source, g[0], [(0, size)], label="far-first wan")
    intra_bcast(sched, home, home.index(source), size, intra)  # step 2
    for g in others:
        intra_bcast(sched, g, 0, size, intra)
    return Plan.broadcast(
        source,
        size,
        [h for h in hosts if h != source],
        sched.transfers,
        planner="far_first",
        params={"intra": intra, **({"clusters": [list(g) for g in groups]} if clusters is not None else {})},
        notes={"clusters": [list(g) for g in groups]},
    )
