"""Flat tree broadcast: the source sends the whole message to every destination directly.

Reference: the baseline of every broadcast study; named "Flat tree" in Takahashi et al.,
"A Stable Broadcast Algorithm", CCGrid 2008 (slide 15), where the source's outgoing link is
the bottleneck. All sends start at once and share the source's links (max-min fair); with an
injection time Δ the source injects them one after the other in destination order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan, Transfer
from ..registration import register_planner

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_flat"]


@register_planner(
    "broadcast",
    "flat",
    summary="the source sends the whole message to every destination directly, all at once",
    reference="Takahashi, Saito, Shibata, Taura, A Stable Broadcast Algorithm, CCGrid 2008 (baseline 'Flat tree')",
)
def plan_flat(topology: Topology, request: Broadcast) -> Plan:
    """One store-and-forward transfer ``source -> d`` of ``[0, size)`` per destination ``d``."""
    dests = request.resolve(topology)
    transfers = [Transfer.of(request.source, d, 0, request.size, label="flat") for d in dests]
    return Plan.broadcast(request.source, request.size, dests, transfers, planner="flat")
