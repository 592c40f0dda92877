"""Brute force redistribution (Jeannot & Wagner, AINA 2006, section 3.1): no scheduling.

Every block is one transfer and all start at once; the transport layer (TCP, or the fluid
simulator's max-min sharing) manages the contention on the NICs and the backbone. The paper's
prediction of its time is :func:`topocast.redistribute.kpbs.brute_force_time` (recorded in
``plan.notes["predicted_time"]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan import Redistribution
from ...redistribute.kpbs import brute_force_plan, brute_force_time, fluid_lower_bound
from ...redistribute.matrix import resolve_platform
from ..registration import register_planner

if TYPE_CHECKING:
    from ...plan import Plan
    from ...topology import Topology

__all__ = ["brute_force"]


@register_planner(
    "redistribute",
    "brute_force",
    summary="Everything at once: one transfer per block, the transport shares the network",
    reference="Jeannot & Wagner, AINA 2006 (brute-force approach)",
    aliases=("brute-force", "bruteforce"),
)
def brute_force(topology: Topology, request: Redistribution) -> Plan:
    """One transfer per non-zero block, no ordering."""
    plat = resolve_platform(request, topology)
    send_cap = [x / plat.nic for x in plat.send_nic]
    recv_cap = [x / plat.nic for x in plat.recv_nic]
    notes = {
        "k": plat.k,
        "backbone_ratio": plat.ratio,
        "predicted_time": brute_force_time(
            request.matrix, plat.ratio, nic=plat.nic, send_cap=send_cap, recv_cap=recv_cap
        ),
        "lower_bound": fluid_lower_bound(request.matrix, plat.ratio * plat.nic, plat.send_nic, plat.recv_nic),
    }
    return brute_force_plan(request, "brute_force", notes)
