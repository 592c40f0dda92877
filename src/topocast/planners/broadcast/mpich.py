"""MPICH's default broadcast selection (what ``MPI_Bcast`` does out of the box).

Reference: MPICH ``bcast_intra_auto`` and its cvars (docs/algorithms.md 5.3):
binomial if the message is shorter than ``BCAST_SHORT_MSG_SIZE`` = 12288 bytes or there are
fewer than ``BCAST_MIN_PROCS`` = 8 processes; otherwise scatter + recursive-doubling allgather
if the message is shorter than ``BCAST_LONG_MSG_SIZE`` = 524288 bytes and ``p`` is a power of
two; otherwise scatter + ring allgather.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from .._collective import is_pof2, participants
from ..registration import register_planner
from .binomial import plan_binomial
from .scatter_allgather import plan_scatter_rdb, plan_scatter_ring

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_mpich", "mpich_choice", "BCAST_SHORT_MSG_SIZE", "BCAST_LONG_MSG_SIZE", "BCAST_MIN_PROCS"]

BCAST_SHORT_MSG_SIZE = 12288
BCAST_LONG_MSG_SIZE = 524288
BCAST_MIN_PROCS = 8


def mpich_choice(
    size: int,
    p: int,
    *,
    short: int = BCAST_SHORT_MSG_SIZE,
    long: int = BCAST_LONG_MSG_SIZE,
    min_procs: int = BCAST_MIN_PROCS,
) -> str:
    """Name of the planner MPICH would use for ``size`` bytes on ``p`` processes."""
    if size < short or p < min_procs:
        return "binomial"
    if size < long and is_pof2(p):
        return "scatter_allgather_rdb"
    return "scatter_allgather_ring"


@register_planner(
    "broadcast",
    "mpich",
    summary="MPICH's MPI_Bcast selection: binomial / scatter+recursive doubling / scatter+ring by size and p",
    reference="MPICH bcast_intra_auto (BCAST_SHORT_MSG_SIZE=12288, BCAST_LONG_MSG_SIZE=524288, BCAST_MIN_PROCS=8)",
)
def plan_mpich(
    topology: Topology,
    request: Broadcast,
    *,
    short_msg_size: int = BCAST_SHORT_MSG_SIZE,
    long_msg_size: int = BCAST_LONG_MSG_SIZE,
    min_procs: int = BCAST_MIN_PROCS,
) -> Plan:
    _, hosts = participants(topology, request)
    choice = mpich_choice(request.size, len(hosts), short=short_msg_size, long=long_msg_size, min_procs=min_procs)
    inner = {
        "binomial": plan_binomial,
        "scatter_allgather_rdb": plan_scatter_rdb,
        "scatter_allgather_ring": plan_scatter_ring,
    }[choice]
    plan = inner(topology, request)
    return replace(
        plan,
        planner="mpich",
        params={"short_msg_size": short_msg_size, "long_msg_size": long_msg_size, "min_procs": min_procs},
        notes={"choice": choice, "processes": len(hosts)},
    )
