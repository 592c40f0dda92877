"""MPICH's binomial-tree broadcast (relative ranks).

Reference: MPICH ``src/mpi/coll/bcast/bcast_intra_binomial.c`` (docs/algorithms.md 5.2):
relative rank ``r = (rank - root) mod p`` receives from ``r`` minus its lowest set bit, then
sends the whole message to ``r + mask`` for decreasing masks (largest subtree first) with
blocking sends. Hockney cost ``ceil(lg p) (alpha + n beta)``.

Our readings [I]: ranks are the topology's host order restricted to the source and the
destinations; each send waits for the sender's previous send and the receiver's previous
operation (blocking ``MPI_Send``/``MPI_Recv``, see ``planners/_collective.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from .._collective import MPISchedule, binomial_bcast, participants
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_binomial"]


@register_planner(
    "broadcast",
    "binomial",
    summary="MPICH's binomial tree over relative ranks, blocking sends, largest subtree first",
    reference="MPICH bcast_intra_binomial.c; Thakur, Rabenseifner, Gropp, IJHPCA 2005",
)
def plan_binomial(topology: Topology, request: Broadcast) -> Plan:
    """Binomial tree over the participants in host order, rooted at the source."""
    source, hosts = participants(topology, request)
    sched = MPISchedule()
    binomial_bcast(sched, hosts, hosts.index(source), [(0, request.size)])
    return Plan.broadcast(source, request.size, [h for h in hosts if h != source], sched.transfers, planner="binomial")
