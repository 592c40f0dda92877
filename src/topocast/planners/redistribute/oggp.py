"""OGGP — Optimized Generic Graph Peeling (Wagner & Jeannot, IPDPS 2004; INRIA RR-5077;
Cohen, Jeannot, Padoy & Wagner, IEEE TPDS 2006).

Which reading we implemented ([R]/[I], docs/algorithms.md 7.4): the same weight-regular
graph and peeling as :mod:`.ggp`, but every peel uses a *bottleneck* perfect matching — one
whose smallest weight is as large as possible — so each step removes more weight and the
schedule needs fewer steps (less beta). Implementation [I]: the exact threshold descent of
:func:`.ggp._bottleneck`, from ``min_v max_{e at v} w(e)`` (no perfect matching can do
better) down to the largest threshold ``t`` whose edges ``>= t`` hold a perfect matching.
Same guarantee as GGP (the argument does not depend on the matching); with ``beta = 0``
both reach ``eta``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan import Redistribution
from ...redistribute.kpbs import schedule_to_plan
from ..registration import register_planner
from .ggp import schedule_request

if TYPE_CHECKING:
    from ...plan import Plan
    from ...topology import Topology

__all__ = ["oggp"]


@register_planner(
    "redistribute",
    "oggp",
    summary="Optimized GGP: peels bottleneck perfect matchings (fewer steps, less set-up)",
    reference="Wagner & Jeannot, IPDPS 2004 / Cohen, Jeannot, Padoy, Wagner, TPDS 2006 (reconstruction, docs/algorithms.md 7.4)",
)
def oggp(
    topology: Topology, request: Redistribution, *, unit: int | None = None, barrier: str = "auto", merge: bool = True
) -> Plan:
    """OGGP schedule of ``request`` as a plan (``unit``: bytes per peeling unit, default beta * nic)."""
    sched, plat = schedule_request(topology, request, bottleneck=True, unit=unit, merge=merge)
    return schedule_to_plan(
        sched,
        request,
        nic=plat.nic,
        beta=request.beta,
        planner="oggp",
        params={"k": plat.k, "unit": sched.unit, "barrier": barrier, "merge": merge},
        barrier=barrier,
        notes={"peels": sched.info.get("peels"), "R": sched.info.get("R")},
    )
