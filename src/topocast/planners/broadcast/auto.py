"""``auto``: plan with every registered broadcast planner, check and predict each with the
simulator, keep the best.

The criterion is the predicted makespan (``by="makespan"``, smallest wins) or the aggregate
bandwidth (``by="aggregate_bandwidth"``, largest wins); ties (within 0.1 %, less than
any real run can tell apart) go to the better other criterion, then to the name. Planners that fail on the input (for
example ``gridmpi`` without two clusters) are skipped and the reason is recorded. The chosen
plan comes back unchanged except that ``planner`` is ``"auto"`` and ``notes`` say what was
chosen, the runner-up, every candidate's score and the skipped planners.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import InputError, TopocastError
from ...plan import Broadcast, Plan
from ..registration import PlannerInfo, register_planner
from ..registry import available_planners

if TYPE_CHECKING:
    from ...results import Result
    from ...topology import Topology

__all__ = ["plan_auto", "choose"]

CRITERIA = ("makespan", "aggregate_bandwidth")
TIE = 1e-3  # relative difference below which two scores tie


def choose(
    collective: str,
    topology: Topology,
    request: object,
    *,
    by: str = "makespan",
    candidates: str | Sequence[str] | None = None,
    chunk_size: int | None = None,
    evaluated: dict[str, tuple[Plan, Result] | str] | None = None,
) -> tuple[Plan, dict[str, object]]:
    """Run every non-selector planner of ``collective``; return (best plan, notes).

    ``evaluated``: name -> (plan, simulated result) or an error string, for planners a caller
    has already planned, checked and simulated on this input (``topocast compare``): they are
    taken as they are instead of being planned again. When it is a dict, the planners
    evaluated here are added to it, so that the caller need not simulate the chosen plan
    again."""
    if by not in CRITERIA:
        raise InputError(f"by must be one of {', '.join(CRITERIA)}, got {by!r}", element="by")
    infos = available_planners(collective, include_selectors=False)
    if candidates is not None:
        wanted = [c.strip() for c in (candidates.split(",") if isinstance(candidates, str) else candidates)]
        infos = [i for i in infos if i.name in wanted]
    scored, skipped = [], {}
    if evaluated is None:
        evaluated = {}
    for info in infos:
        done = evaluated.get(info.name)
        if isinstance(done, str):
            skipped[info.name] = done
            continue
        try:
            if done is not None:
                plan, result = done
            else:
                plan, result = _evaluate(info, topology, request, chunk_size)
                evaluated[info.name] = (plan, result)
        except TopocastError as exc:
            skipped[info.name] = str(exc)
            continue
        except (ValueError, KeyError, ZeroDivisionError, NotImplementedError) as exc:  # planner limits
            skipped[info.name] = f"{type(exc).__name__}: {exc}"
            continue
        primary = result.makespan if by == "makespan" else -result.aggregate_bandwidth
        secondary = -result.aggregate_bandwidth if by == "makespan" else result.makespan
        scored.append(((primary, secondary), info.name, plan, result))
    if not scored:
        raise InputError(f"no {collective} planner could handle this input: {skipped}", element="algorithm")
    # Plans whose primary score ties (within TIE, relative) are ranked by the other
    # criterion, then by name: on a topology where one slow host sets every plan's makespan,
    # the makespan alone cannot tell a plan at 9% of the bound from one at 93% (and a plan
    # 0.5 ms later on 80 s, from a hop latency, must not lose to one with 40% less bandwidth).
    best_primary = min(s[0][0] for s in scored)
    tol = TIE * abs(best_primary) if math.isfinite(best_primary) else 0.0
    scored.sort(
        key=lambda x: (x[0][0] > best_primary + tol, x[0][0] if x[0][0] > best_primary + tol else 0.0, x[0][1], x[1])
    )
    best = scored[0]
    notes: dict[str, object] = {
        "criterion": by,
        "choice": best[1],
        "runner_up": scored[1][1] if len(scored) > 1 else None,
        "scores": {
            name: {"makespan": res.makespan, "aggregate_bandwidth": res.aggregate_bandwidth}
            for _, name, _, res in scored
        },
        "skipped": skipped,
    }
    return best[2], notes


def _evaluate(info: PlannerInfo, topology: Topology, request: object, chunk_size: int | None) -> tuple[Plan, Result]:
    """(plan, simulated result) of one planner on ``request``, the plan checked first."""
    from ...plan.check import check_plan
    from ...sim import simulate

    plan = info(topology, request)
    check_plan(plan, topology)
    return plan, simulate(plan, topology, chunk_size=chunk_size)


@register_planner(
    "broadcast",
    "auto",
    summary="tries every registered broadcast planner in the simulator and keeps the best (makespan or aggregate bandwidth)",
    reference="topocast (selection by predicted time, as docs/design.md 'Planners')",
    tags=("selector",),
)
def plan_auto(
    topology: Topology,
    request: Broadcast,
    *,
    by: str = "makespan",
    candidates: str | Sequence[str] | None = None,
    evaluated: dict[str, tuple[Plan, Result] | str] | None = None,
) -> Plan:
    """The best plan of the registered planners (``evaluated``: see :func:`choose`)."""
    plan, notes = choose("broadcast", topology, request, by=by, candidates=candidates, evaluated=evaluated)
    return replace(
        plan,
        planner="auto",
        params={"by": by, **({"candidates": candidates} if candidates else {})},
        notes={**notes, "chosen_params": dict(plan.params), "chosen_notes": dict(plan.notes)},
    )
