"""``auto`` allreduce: plan with every registered allreduce planner, predict each with the
simulator, keep the best (makespan, or aggregate bandwidth with ``by=``). Planners that fail
on the input are skipped with the reason recorded in ``notes``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..broadcast.auto import choose
from ..registration import register_planner

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_auto_allreduce"]


@register_planner(
    "allreduce",
    "auto",
    summary="tries every registered allreduce planner in the simulator and keeps the best",
    reference="topocast (selection by predicted time)",
    tags=("selector",),
)
def plan_auto_allreduce(
    topology: Topology,
    request: Allreduce | Broadcast,
    *,
    by: str = "makespan",
    candidates: str | Sequence[str] | None = None,
) -> Plan:
    plan, notes = choose("allreduce", topology, request, by=by, candidates=candidates)
    return replace(
        plan,
        planner="auto",
        params={"by": by, **({"candidates": candidates} if candidates else {})},
        notes={**notes, "chosen_params": dict(plan.params), "chosen_notes": dict(plan.notes)},
    )
