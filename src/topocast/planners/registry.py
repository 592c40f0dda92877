"""The planner registry: one table keyed by (collective, name).

The CLI listing (``topocast planners``), the docs table and the conformance tests are all
generated from this table, so the summary and reference live only here.

A planner is a callable ``planner(topology, request, **params) -> Plan``; tuning parameters
are keyword-only and any randomness goes through ``seed=``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from ..errors import UnknownPlanner

if TYPE_CHECKING:
    from ..plan import Plan
    from ..topology import Topology

#: A planner function: ``planner(topology, request, **params) -> Plan``.
_Planner = TypeVar("_Planner", bound="Callable[..., Plan]")

__all__ = ["PlannerInfo", "register_planner", "get_planner", "available_planners", "planner_info"]


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


_REGISTRY: dict[tuple[str, str], PlannerInfo] = {}
_ALIASES: dict[tuple[str, str], str] = {}


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
        if key in _REGISTRY or key in _ALIASES:
            raise ValueError(f"planner {collective}/{name} registered twice")
        info = PlannerInfo(collective, name, func, summary, reference, tuple(aliases), frozenset(tags))
        _REGISTRY[key] = info
        for a in aliases:
            _ALIASES[(collective, a)] = name
        func.planner_info = info
        return func

    return deco


_LISTED_IN_ORDER = False  # the registry follows _load_all's order (set once)


def _ensure_loaded() -> None:
    """Register every built-in planner (``_load_all`` imports each module) and put the
    registry in ``_load_all``'s order, whichever planner module a caller imported first."""
    global _LISTED_IN_ORDER
    from . import _load_all

    if _LISTED_IN_ORDER:
        return
    modules = [m.__name__ for m in vars(_load_all).values() if isinstance(m, ModuleType)]
    rank = {name: i for i, name in enumerate(modules)}
    ordered = sorted(_REGISTRY.items(), key=lambda item: rank.get(item[1].func.__module__, len(rank)))
    _REGISTRY.clear()
    _REGISTRY.update(ordered)
    _LISTED_IN_ORDER = True


def _lookup(collective: str, name: str) -> PlannerInfo | None:
    key = (collective, _ALIASES.get((collective, name), name))
    return _REGISTRY.get(key)


def _import_own_module(collective: str, name: str) -> None:
    """Import the module a built-in planner is named after, if there is one
    (``planners/broadcast/stable.py`` for ``stable``): a command that uses one planner does
    not import them all."""
    if not name.isidentifier():
        return
    module = f"{__package__}.{collective}.{name}"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name not in (module, f"{__package__}.{collective}"):
            raise


def available_planners(collective: str | None = None, *, include_selectors: bool = True) -> list[PlannerInfo]:
    """Registered planners (optionally of one collective), in registration order."""
    _ensure_loaded()
    return [
        info
        for info in _REGISTRY.values()
        if (collective is None or info.collective == collective) and (include_selectors or "selector" not in info.tags)
    ]


def get_planner(collective: str, name: str | Callable[..., Plan]) -> PlannerInfo:
    """Look up a planner by name or alias; a callable is wrapped and returned as is.

    Raises :class:`~topocast.errors.UnknownPlanner` listing the valid names.
    """
    if callable(name):
        return PlannerInfo(collective, getattr(name, "__name__", "custom"), name, "user-supplied planner", "")
    info = _lookup(collective, name)
    if info is None:
        _import_own_module(collective, name)
        info = _lookup(collective, name)
    if info is None:
        _ensure_loaded()
        info = _lookup(collective, name)
    if info is None:
        valid = sorted(n for (c, n) in _REGISTRY if c == collective)
        if not valid:
            collectives = sorted({c for c, _ in _REGISTRY})
            raise UnknownPlanner(
                f"no planners for collective {collective!r}; known collectives: {', '.join(collectives)}",
                element="collective",
            )
        close = difflib.get_close_matches(str(name), valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownPlanner(
            f"collective {collective!r} has no planner {name!r}{hint}; valid planners: {', '.join(valid)}",
            element="algorithm",
        )
    return info


def planner_info(collective: str, name: str) -> PlannerInfo:
    return get_planner(collective, name)
