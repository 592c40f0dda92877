"""A run's planner, run again: for the hosts that are there when some never came
(:mod:`.absent`), or on a changed topology for every destination (``--adapt``, :mod:`.adapt`).
The new plan gets the run's rate-cap scaling and chunk size, as the first one did."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UnknownPlanner
from ..evaluate.compare import plan_with
from ..plan import Broadcast
from ..planners import get_planner
from .calibration import scale_caps

if TYPE_CHECKING:
    from ..plan import Plan
    from ..topology import Topology

__all__ = ["make_replanner"]


def make_replanner(
    plan: Plan,
    topology: Topology | None,
    algorithm: str,
    goodput: float,
    chunk: int,
    rate_tolerance: float | None,
    whole: bool = False,
) -> Callable[..., Plan] | None:
    """``replan(missing)``: the broadcast planner ``algorithm`` run again on ``topology`` for
    ``plan``'s destinations that are not ``missing`` (None: not a broadcast, no topology, or
    no such planner; the runtime then splices the missing hosts out). ``whole``: instead a
    function of a topology, planning for every destination."""
    if topology is None or plan.collective != "broadcast" or plan.source is None:
        return None
    try:
        info = get_planner("broadcast", algorithm)
    except UnknownPlanner:
        return None

    source = plan.source

    def replan(missing: frozenset[str], on: Topology = topology) -> Plan:
        dests = tuple(d for d in plan.destinations if d not in missing)
        new = plan_with(info, on, Broadcast(source, plan.size, dests), None, rate_tolerance)
        return scale_caps(new, goodput).with_chunk_size(chunk)

    if whole:
        return lambda changed: replan(frozenset(), changed)
    return replan
