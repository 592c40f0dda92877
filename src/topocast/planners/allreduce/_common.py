"""Shared pieces of the allreduce planners: the participants of a request and the plan constructor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import PlanError
from ...plan import Allreduce, Plan, Transfer

if TYPE_CHECKING:
    from ...plan import Broadcast
    from ...topology import Topology

__all__ = ["allreduce_plan", "allreduce_hosts"]


def allreduce_hosts(topology: Topology, request: Allreduce | Broadcast) -> list[str]:
    """Participants of ``request``: an :class:`Allreduce`, or a broadcast request (its
    source plus destinations, so the generic CLI can pass one), in host order."""
    if isinstance(request, Allreduce):
        return request.resolve(topology)
    if hasattr(request, "resolve") and hasattr(request, "source"):
        dests = request.resolve(topology)
        members = set(dests) | {request.source}
        return [h for h in topology.hosts if h in members]
    raise PlanError(f"expected an allreduce request, got {type(request).__name__}", element="request")


def allreduce_plan(
    hosts: Iterable[str],
    size: int,
    transfers: Iterable[Transfer],
    *,
    planner: str,
    params: Mapping[str, Any] | None = None,
    notes: Mapping[str, Any] | None = None,
) -> Plan:
    whole = ((0, int(size)),)
    hosts = list(hosts)
    return Plan(
        collective="allreduce",
        size=int(size),
        transfers=tuple(transfers),
        initial={h: whole for h in hosts},
        wanted={h: whole for h in hosts},
        planner=planner,
        params=params or {},
        notes=notes or {},
    )
