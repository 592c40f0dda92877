"""van de Geijn broadcast: binomial scatter + allgather (ring or recursive doubling).

Reference: Barnett, Gupta, Payne, Shuler, van de Geijn, Watts, "Interprocessor collective
communication library (InterCom)", SHPCC 1994; as implemented in MPICH
``bcast_intra_scatter_ring_allgather.c`` and
``bcast_intra_scatter_recursive_doubling_allgather.c`` (docs/algorithms.md 5.3).

1. (step 1) binomial scatter from the root: the message is cut into ``p`` chunks of
   ``ceil(n/p)`` bytes, relative rank ``i`` gets chunk ``i``;
2. (step 2) allgather of the chunks: ring (``p - 1`` shifts) or recursive doubling
   (``lg p`` exchanges, doubling the data; for non-powers of two MPICH's "haves send to the
   havenots" recursive halving after each step).

Hockney cost: ring ``(lg p + p - 1) alpha + 2 n (p-1)/p beta``; recursive doubling
``2 lg p alpha + 2 n (p-1)/p beta`` (power-of-two ``p``).

Our readings [I]: blocking sends/Sendrecv as in ``planners/_collective.py``; empty chunks
(when ``p`` does not divide ``n``) are not sent at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from .._collective import MPISchedule, binomial_scatter, mpich_chunks, participants, rdb_allgather, ring_allgather
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_scatter_ring", "plan_scatter_rdb", "build_scatter_allgather"]


def build_scatter_allgather(
    sched: MPISchedule, hosts: Sequence[str], root: int, offset: int, size: int, allgather: str
) -> None:
    """Append a van de Geijn broadcast of ``[offset, offset + size)`` over ``hosts``."""
    chunks = mpich_chunks(offset, size, len(hosts))
    binomial_scatter(sched, hosts, root, chunks)  # step 1
    if allgather == "ring":  # step 2
        ring_allgather(sched, hosts, root, chunks)
    else:
        rdb_allgather(sched, hosts, root, chunks)


def _plan(topology: Topology, request: Broadcast, allgather: str, name: str) -> Plan:
    source, hosts = participants(topology, request)
    sched = MPISchedule()
    build_scatter_allgather(sched, hosts, hosts.index(source), 0, request.size, allgather)
    return Plan.broadcast(source, request.size, [h for h in hosts if h != source], sched.transfers, planner=name)


@register_planner(
    "broadcast",
    "scatter_allgather_ring",
    summary="van de Geijn: binomial scatter of p chunks, then ring allgather (MPICH long messages)",
    reference="Barnett et al. (van de Geijn), InterCom, SHPCC 1994; MPICH bcast_intra_scatter_ring_allgather.c",
)
def plan_scatter_ring(topology: Topology, request: Broadcast) -> Plan:
    return _plan(topology, request, "ring", "scatter_allgather_ring")


@register_planner(
    "broadcast",
    "scatter_allgather_rdb",
    summary="van de Geijn: binomial scatter, then recursive-doubling allgather (MPICH medium messages)",
    reference="Barnett et al. (van de Geijn), InterCom, SHPCC 1994; MPICH bcast_intra_scatter_recursive_doubling_allgather.c",
)
def plan_scatter_rdb(topology: Topology, request: Broadcast) -> Plan:
    return _plan(topology, request, "rdb", "scatter_allgather_rdb")
