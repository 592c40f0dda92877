"""Ring allreduce: ring reduce-scatter then ring allgather.

Reference: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", JPDC 2009; MPICH ``allreduce_intra_ring.c``. The message is cut into ``p``
chunks (``n/p`` rounded, remainder to the first ones); (step 1) in ``p - 1`` steps rank ``r``
sends chunk ``(r - i) mod p`` to ``r + 1``, which reduces it; rank ``r`` then holds chunk
``(r + 1) mod p`` fully reduced; (step 2) ring allgather of the reduced chunks.
Hockney cost ``2(p-1) alpha + 2 n (p-1)/p beta + n (p-1)/p gamma``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._collective import MPISchedule, balanced_counts, counts_to_ranges, ring_allgather, ring_reduce_scatter
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_ring", "build_ring_allreduce"]


def build_ring_allreduce(sched: MPISchedule, hosts: Sequence[str], size: int) -> None:
    p = len(hosts)
    if p < 2:
        return
    chunks = counts_to_ranges(0, balanced_counts(size, p))
    ring_reduce_scatter(sched, hosts, chunks)  # step 1
    ring_allgather(sched, hosts, 0, [chunks[(r + 1) % p] for r in range(p)])  # step 2


@register_planner(
    "allreduce",
    "ring",
    summary="ring reduce-scatter + ring allgather (bandwidth optimal, 2(p-1) steps)",
    reference="Patarasuk, Yuan, JPDC 2009; MPICH allreduce_intra_ring.c",
)
def plan_ring(topology: Topology, request: Allreduce | Broadcast) -> Plan:
    hosts = allreduce_hosts(topology, request)
    sched = MPISchedule()
    build_ring_allreduce(sched, hosts, request.size)
    return allreduce_plan(hosts, request.size, sched.transfers, planner="ring")
