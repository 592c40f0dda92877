"""Topology-aware hierarchical broadcast (leaders per switch), after Subramoni et al.

Reference: H. Subramoni, K. Kandalla, J. Vienne, S. Sur, B. Barth, K. Tomko, R. McLay,
K. Schulz, D. K. Panda, "Design and Evaluation of Network Topology-/Speed-Aware Broadcast
Algorithms for InfiniBand Clusters", IEEE Cluster 2011. The design below
is our reconstruction (docs/algorithms.md 6) [I]:

1. (step 1) leaders: one per switch (the hosts attached to it, :func:`switch_groups`); the
   root leads its own switch, otherwise the first host on the switch;
2. (step 2) inter-switch phase: MPICH binomial tree over the switch leaders, the leaders
   ordered by a depth-first walk of the switch graph from the root's switch (switches under
   the same parent are contiguous, so tree edges cross few switches);
3. (step 3) intra-switch phase: each leader runs a binomial tree over its switch's hosts.

Large messages (``mode="ring"``): scatter + ring allgather with the ring ordered switch by
switch (each inter-switch link is crossed a minimal number of times). ``mode="auto"`` uses
the tree below MPICH's ``BCAST_SHORT_MSG_SIZE`` (12288 bytes) or with fewer than 8 hosts,
the ring otherwise [I]. There is no intra-node (shared memory) level: a host is a node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InputError
from ...plan import Broadcast, Plan
from .._collective import MPISchedule, binomial_bcast, participants, switch_groups
from ..registration import register_planner
from .scatter_allgather import build_scatter_allgather

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_topology_aware", "switch_order"]

SHORT_MSG_SIZE = 12288
MIN_PROCS = 8


def switch_order(topology: Topology, start: str, groups: dict) -> list[str]:
    """Group keys in depth-first order of the node graph from ``start`` (neighbours in link
    order); keys never reached come last in their original order."""
    seen, order = set(), []
    stack = [start]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in groups:
            order.append(x)
        nbrs = [n for n in topology.neighbors(x) if n not in seen and not (topology.is_host(n) and n not in groups)]
        stack.extend(reversed(nbrs))
    order += [k for k in groups if k not in seen]
    return order


@register_planner(
    "broadcast",
    "topology_aware",
    summary="Subramoni-style hierarchy: binomial over one leader per switch, then binomial inside each switch (ring switch by switch for large messages)",
    reference="Subramoni et al., Design and Evaluation of Network Topology-/Speed-Aware Broadcast Algorithms for InfiniBand Clusters, Cluster 2011 (reconstruction)",
)
def plan_topology_aware(
    topology: Topology, request: Broadcast, *, mode: str = "auto", short_msg_size: int = SHORT_MSG_SIZE
) -> Plan:
    source, hosts = participants(topology, request)
    size = request.size
    groups = switch_groups(topology, hosts)
    home = next(k for k, g in groups.items() if source in g)
    keys = switch_order(topology, home, groups)
    members = []
    for k in keys:  # step 1: the leader first inside each group
        g = groups[k]
        if k == home:
            g = [source] + [h for h in g if h != source]
        members.append(g)
    if mode == "auto":
        mode = "tree" if size < short_msg_size or len(hosts) < MIN_PROCS else "ring"
    sched = MPISchedule()
    if mode == "tree":
        binomial_bcast(sched, [g[0] for g in members], 0, [(0, size)], label="inter-switch")  # step 2
        for g in members:  # step 3
            binomial_bcast(sched, g, 0, [(0, size)], label="intra-switch")
    elif mode == "ring":
        ring = [h for g in members for h in g]
        build_scatter_allgather(sched, ring, 0, 0, size, "ring")
    else:
        raise InputError(f"mode must be auto, tree or ring, got {mode!r}", element="mode")
    return Plan.broadcast(
        source,
        size,
        [h for h in hosts if h != source],
        sched.transfers,
        planner="topology_aware",
        params={"mode": mode, "short_msg_size": short_msg_size},
        notes={"switch_groups": {k: groups[k] for k in keys}},
    )
