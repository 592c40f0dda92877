"""Recursive-doubling allreduce (MPICH ``allreduce_intra_recursive_doubling.c``).

With ``pof2`` the largest power of two ``<= p`` and ``rem = p - pof2``: (step 1) among the
first ``2 rem`` ranks, each even rank sends its vector to rank + 1, which reduces it, and sits
out; (step 2) the ``pof2`` remaining ranks (new rank ``r/2`` or ``r - rem``) exchange their
whole vector with new rank ``newrank ^ mask`` for ``mask = 1, 2, 4, ...`` and both reduce;
(step 3) the odd ranks send the result back to the evens that sat out.
Hockney cost ``lg p (alpha + n beta + n gamma)`` (power of two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._collective import MPISchedule
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_recursive_doubling", "newrank_layout"]


def newrank_layout(p: int) -> tuple[int, int, dict[int, int], dict[int, int]]:
    """``(pof2, rem, rank -> newrank (or -1), newrank -> rank)`` as in MPICH."""
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    new, old = {}, {}
    for r in range(p):
        if r < 2 * rem:
            new[r] = -1 if r % 2 == 0 else r // 2
        else:
            new[r] = r - rem
        if new[r] >= 0:
            old[new[r]] = r
    return pof2, rem, new, old


@register_planner(
    "allreduce",
    "recursive_doubling",
    summary="recursive doubling: lg p exchanges of the whole vector (MPICH short messages)",
    reference="Thakur, Rabenseifner, Gropp, IJHPCA 2005; MPICH allreduce_intra_recursive_doubling.c",
)
def plan_recursive_doubling(topology: Topology, request: Allreduce | Broadcast) -> Plan:
    hosts = allreduce_hosts(topology, request)
    p, size = len(hosts), request.size
    whole = [(0, size)]
    sched = MPISchedule()
    pof2, rem, new, old = newrank_layout(p)
    for r in range(0, 2 * rem, 2):  # step 1
        sched.send(hosts[r], hosts[r + 1], whole, reduce=True, label="pre")
    mask = 1
    while mask < pof2:  # step 2
        ops = []
        for nr in range(pof2):
            partner = nr ^ mask
            ops.append((hosts[old[nr]], hosts[old[partner]], whole, True, f"exchange {mask}"))
        sched.step(ops)
        mask <<= 1
    for r in range(0, 2 * rem, 2):  # step 3
        sched.send(hosts[r + 1], hosts[r], whole, label="post")
    return allreduce_plan(hosts, size, sched.transfers, planner="recursive_doubling")
