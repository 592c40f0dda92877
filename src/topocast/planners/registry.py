"""The planner registry: look-ups and listings over the table of :mod:`.registration`.

The built-in planners are found, not listed: every public module (no leading ``_``) of every
subpackage of :mod:`topocast.planners` (one per collective) is imported once a listing needs
them all, and registers its planners with :func:`~.registration.register_planner`. A
look-up by name first imports only the module of that name (``planners/broadcast/stable.py``
for ``stable``), then only the modules of that collective whose source text quotes the name
(``scatter_allgather.py`` for ``scatter_allgather_rdb``, ``depth_first.py`` for the alias
``dfs``), and all of them only if neither registered it; so a command that uses one planner
does not import them all. The registrations themselves are always the modules' own.

Listings follow one order whatever was imported first: built-in planners by collective
(``broadcast``, ``allreduce``, ``redistribute``), within a collective by module name, selectors
(``auto``) last so that listings show the algorithms first; then planners registered by the
caller, in registration order.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UnknownPlanner
from ..plan.model import COLLECTIVES
from .registration import ALIASES, REGISTERED, PlannerInfo, register_planner

if TYPE_CHECKING:
    from ..plan import Plan

__all__ = ["PlannerInfo", "register_planner", "get_planner", "available_planners", "planner_info"]

_all_loaded = False


def planner_modules() -> list[str]:
    """Every built-in planner module: the public modules of each collective's subpackage."""
    package = importlib.import_module(__package__)
    found = []
    for sub in pkgutil.iter_modules(package.__path__):
        if not sub.ispkg or sub.name.startswith("_"):
            continue
        subpackage = importlib.import_module(f"{__package__}.{sub.name}")
        found += [
            f"{subpackage.__name__}.{m.name}"
            for m in pkgutil.iter_modules(subpackage.__path__)
            if not m.ispkg and not m.name.startswith("_")
        ]
    return sorted(found)


def _ensure_loaded() -> None:
    """Import every built-in planner module (once), so that every planner is registered."""
    global _all_loaded
    if not _all_loaded:
        for module in planner_modules():
            importlib.import_module(module)
        _all_loaded = True


def _listing_key(entry: tuple[int, PlannerInfo]) -> tuple:
    seq, info = entry
    module = getattr(info.func, "__module__", "") or ""
    if not module.startswith(f"{__package__}."):
        return (1, seq)
    collective = COLLECTIVES.index(info.collective) if info.collective in COLLECTIVES else len(COLLECTIVES)
    return (0, collective, info.collective, "selector" in info.tags, module, seq)


def _lookup(collective: str, name: str) -> PlannerInfo | None:
    key = (collective, ALIASES.get((collective, name), name))
    return REGISTERED.get(key)


def _import_own_module(collective: str, name: str) -> None:
    """Import the module a built-in planner is named after, if there is one."""
    if not name.isidentifier():
        return
    module = f"{__package__}.{collective}.{name}"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name not in (module, f"{__package__}.{collective}"):
            raise


def _import_modules_quoting(collective: str, name: str) -> None:
    """Import the built-in planner modules of ``collective`` whose source quotes ``name``
    (as ``"name"`` or ``'name'``), in module order, until one registers it. Reading a few
    dozen small files costs far less than importing every planner and what they import.
    A package whose sources cannot be read (frozen, zipped) is left to ``_ensure_loaded``."""
    try:
        spec = importlib.util.find_spec(f"{__package__}.{collective}")
    except ModuleNotFoundError:
        return
    if spec is None or not spec.submodule_search_locations:
        return
    quoted = (f'"{name}"', f"'{name}'")
    for module in sorted(pkgutil.iter_modules(spec.submodule_search_locations), key=lambda m: m.name):
        if module.ispkg or module.name.startswith("_"):
            continue
        full = f"{spec.name}.{module.name}"
        origin = getattr(importlib.util.find_spec(full), "origin", None)
        try:
            text = Path(origin).read_text(encoding="utf-8") if origin else ""
        except (OSError, UnicodeDecodeError):
            continue
        if any(q in text for q in quoted):
            importlib.import_module(full)
            if _lookup(collective, name) is not None:
                return


def available_planners(collective: str | None = None, *, include_selectors: bool = True) -> list[PlannerInfo]:
    """Registered planners (optionally of one collective), in listing order (module doc)."""
    _ensure_loaded()
    ordered = sorted(enumerate(REGISTERED.values()), key=_listing_key)
    return [
        info
        for _, info in ordered
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
    if info is None and not _all_loaded:
        _import_modules_quoting(collective, name)
        info = _lookup(collective, name)
    if info is None:
        _ensure_loaded()
        info = _lookup(collective, name)
    if info is None:
        valid = sorted(n for (c, n) in REGISTERED if c == collective)
        if not valid:
            collectives = sorted({c for c, _ in REGISTERED})
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
