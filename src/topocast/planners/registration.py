"""The planner table: :class:`PlannerInfo` and the :func:`register_planner` decorator.

Every planner module registers its planners here when it is imported; the registry
(:mod:`.registry`) finds the modules, imports them and answers look-ups. This module imports
no planner and not the registry, so a planner module can import it without a cycle.

The CLI listing (``topocast planners``), the docs table and the conformance tests are all
generated from this table, so the summary and reference live only here.

A planner is a callable ``planner(topology, request, **params) -> Plan``; tuning parameters
are keyword-only and any randomness goes through ``seed=``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..plan import Plan
    from ..topology import Topology

#: A planner function: ``planner(topology, request, **params) -> Plan``.
_Planner = TypeVar("_Planner", bound="Callable[..., Plan]")

__all__ = ["PlannerInfo", "register_planner"]


@dataclass(frozen=True)
class PlannerInfo:
    collective: str
    name: str
    func: Callable[..., Plan]
    summary: str
    reference: str
    aliases: tuple[str, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, topology: Topology, request: object, **params: object) -> Plan:
        return self.func(topology, request, **params)


#: Every registered planner by (collective, name), in registration order.
REGISTERED: dict[tuple[str, str], PlannerInfo] = {}
#: (collective, alias) -> name.
ALIASES: dict[tuple[str, str], str] = {}


def register_planner(
    collective: str,
    name: str,
    *,
    summary: str,
    reference: str,
    aliases: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
) -> Callable[[_Planner], _Planner]:
    """Decorator: register ``func`` as planner ``name`` for ``collective``.

    ``tags`` are free labels; ``"selector"`` marks planners such as ``auto`` that choose among
    the others (so ``auto`` does not recurse into itself).
    """

    def deco(func):  # unannotated: it sets func.planner_info, which no Callable type declares
        key = (collective, name)
        if key in REGISTERED or key in ALIASES:
            raise ValueError(f"planner {collective}/{name} registered twice")
        info = PlannerInfo(collective, name, func, summary, reference, tuple(aliases), frozenset(tags))
        REGISTERED[key] = info
        for a in aliases:
            ALIASES[(collective, a)] = name
        func.planner_info = info
        return func

    return deco
