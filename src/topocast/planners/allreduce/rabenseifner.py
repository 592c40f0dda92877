"""Rabenseifner's allreduce: reduce-scatter by recursive halving + allgather by recursive
doubling (MPICH ``allreduce_intra_reduce_scatter_allgather.c``, docs/algorithms.md 5.4).

(step 1) non-powers of two as MPICH: among the first ``2 rem`` ranks the evens send their
vector to rank + 1 (reduce) and sit out; (step 2) reduce-scatter: with the ``pof2`` blocks
(``n/pof2`` rounded, remainder to the first), at distance ``mask = 1, 2, 4, ...`` a process
and its partner split their current block range in halves; the lower new rank keeps the lower
half, sends the upper half and reduces what it receives; (step 3) allgather by recursive
doubling in the reverse order; (step 4) odd ranks send the result to the evens that sat out.
Hockney cost ``2 lg p alpha + 2 n (p-1)/p beta + n (p-1)/p gamma`` (power of two).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._collective import MPISchedule, balanced_counts, counts_to_ranges, merge_ranges
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan
from .recursive_doubling import newrank_layout

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_rabenseifner", "build_rabenseifner"]


def build_rabenseifner(sched: MPISchedule, hosts: Sequence[str], size: int, label: str = "") -> None:
    p = len(hosts)
    if p < 2:
        return
    whole = [(0, size)]
    pof2, rem, new, old = newrank_layout(p)
    blocks = counts_to_ranges(0, balanced_counts(size, pof2))

    def span(a, b):
        return merge_ranges(*blocks[a:b])

    for r in range(0, 2 * rem, 2):  # step 1
        sched.send(hosts[r], hosts[r + 1], whole, reduce=True, label=f"{label}pre")
    lo = {nr: 0 for nr in range(pof2)}
    hi = {nr: pof2 for nr in range(pof2)}
    mask = 1
    history = []
    while mask < pof2:  # step 2: recursive halving
        ops = []
        new_lo, new_hi = {}, {}
        for nr in range(pof2):
            partner = nr ^ mask
            a, b = lo[nr], hi[nr]
            mid = (a + b) // 2
            if nr < partner:
                send, keep = (mid, b), (a, mid)
            else:
                send, keep = (a, mid), (mid, b)
            ops.append((hosts[old[nr]], hosts[old[partner]], span(*send), True, f"{label}reduce-scatter {mask}"))
            new_lo[nr], new_hi[nr] = keep
        sched.step(ops)
        history.append((mask, dict(lo), dict(hi)))
        lo, hi = new_lo, new_hi
        mask <<= 1
    for mask, plo, phi in reversed(history):  # step 3: recursive doubling
        ops = []
        for nr in range(pof2):
            partner = nr ^ mask
            ops.append((hosts[old[nr]], hosts[old[partner]], span(lo[nr], hi[nr]), False, f"{label}allgather {mask}"))
        sched.step(ops)
        lo, hi = plo, phi
    for r in range(0, 2 * rem, 2):  # step 4
        sched.send(hosts[r + 1], hosts[r], whole, label=f"{label}post")


@register_planner(
    "allreduce",
    "rabenseifner",
    summary="Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather (MPICH long messages)",
    reference="Rabenseifner, Optimization of collective reduction operations, ICCS 2004; MPICH allreduce_intra_reduce_scatter_allgather.c",
)
def plan_rabenseifner(topology: Topology, request: Allreduce | Broadcast) -> Plan:
    hosts = allreduce_hosts(topology, request)
    sched = MPISchedule()
    build_rabenseifner(sched, hosts, request.size)
    return allreduce_plan(hosts, request.size, sched.transfers, planner="rabenseifner")
