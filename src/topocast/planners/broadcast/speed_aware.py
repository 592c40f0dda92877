"""Speed-aware binomial broadcast: fast hosts where the tree sends most, slow hosts at leaves.

Reference: Subramoni et al., "Design and Evaluation of Network Topology-/Speed-Aware
Broadcast Algorithms for InfiniBand Clusters", IEEE Cluster 2011 (on mixed
SDR 8 Gbps / DDR 16 Gbps / QDR 36 Gbps clusters). Reconstruction [I] (docs/algorithms.md 6):

1. (step 1) sort the non-root hosts by access-link speed (fastest first), then by switch
   (locality), then by host order;
2. (step 2) sort the positions of MPICH's binomial tree (relative ranks ``1..p-1``) by subtree
   size, largest first (rank ``r`` roots ``min(lowbit(r), p - r)`` hosts; odd ranks are
   leaves);
3. (step 3) put the k-th fastest host at the k-th position and run the binomial broadcast:
   slow hosts become leaves and each parent serves its largest (fastest) subtree first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from .._collective import MPISchedule, binomial_bcast, lowbit, nic_bandwidth, participants, switch_groups
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_speed_aware", "speed_rank_order"]


def speed_rank_order(topology: Topology, source: str, hosts: Sequence[str]) -> list[str]:
    """Hosts in relative-rank order for the speed-aware tree (``[0]`` is the source)."""
    p = len(hosts)
    groups = switch_groups(topology, hosts)
    where = {h: gi for gi, g in enumerate(groups.values()) for h in g}
    order = {h: i for i, h in enumerate(hosts)}
    others = sorted(
        (h for h in hosts if h != source), key=lambda h: (-nic_bandwidth(topology, h), where[h], order[h])
    )  # step 1
    positions = sorted(range(1, p), key=lambda r: (-min(lowbit(r), p - r), r))  # step 2
    rel = [source] + [""] * (p - 1)
    for pos, h in zip(positions, others):  # step 3
        rel[pos] = h
    return rel


@register_planner(
    "broadcast",
    "speed_aware",
    summary="binomial tree with the fastest hosts at the positions that send most and slow hosts at the leaves",
    reference="Subramoni et al., Design and Evaluation of Network Topology-/Speed-Aware Broadcast Algorithms for InfiniBand Clusters, Cluster 2011 (reconstruction)",
)
def plan_speed_aware(topology: Topology, request: Broadcast) -> Plan:
    source, hosts = participants(topology, request)
    rel = speed_rank_order(topology, source, hosts)
    sched = MPISchedule()
    binomial_bcast(sched, rel, 0, [(0, request.size)], label="speed-aware")
    return Plan.broadcast(
        source,
        request.size,
        [h for h in hosts if h != source],
        sched.transfers,
        planner="speed_aware",
        notes={"rank_order": rel},
    )
