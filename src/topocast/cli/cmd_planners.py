"""``topocast planners``: what is registered, with summary and reference."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..planners import available_planners
from .common import print_json

if TYPE_CHECKING:
    from ..planners.registry import PlannerInfo


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("planners", help="list registered planners with summary and reference")
    p.add_argument("--collective", help="only this collective (broadcast, allreduce, redistribute)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--markdown", action="store_true", help="print the docs table (docs/planners.md)")
    p.set_defaults(func=run)


_COLLECTIVE_ORDER = {"broadcast": 0, "allreduce": 1, "redistribute": 2}


def sorted_infos(infos: Iterable[PlannerInfo]) -> list[PlannerInfo]:
    """Stable listing order (import order can differ): collective, algorithms by name, selectors last."""
    return sorted(
        infos, key=lambda i: (_COLLECTIVE_ORDER.get(i.collective, 9), i.collective, "selector" in i.tags, i.name)
    )


def markdown_table(infos: Iterable[PlannerInfo]) -> str:
    """The planner table of docs/planners.md, generated from the registry."""
    lines = [
        "# Planners",
        "",
        "Generated from the registry by `topocast planners --markdown > docs/planners.md`; do not edit by hand.",
        "",
        "| collective | name | summary | reference |",
        "|---|---|---|---|",
    ]
    for i in sorted_infos(infos):
        cells = [i.collective, f"`{i.name}`", i.summary, i.reference]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    infos = sorted_infos(available_planners(args.collective))
    if args.markdown:
        print(markdown_table(infos), end="")
        return 0
    if args.json:
        print_json(
            [
                {
                    "collective": i.collective,
                    "name": i.name,
                    "summary": i.summary,
                    "reference": i.reference,
                    "aliases": list(i.aliases),
                }
                for i in infos
            ]
        )
        return 0
    from rich.table import Table

    from .common import console

    table = Table(title="registered planners")
    for col in ("collective", "name", "summary", "reference"):
        table.add_column(col, overflow="fold")
    for i in infos:
        table.add_row(i.collective, i.name, i.summary, i.reference)
    console().print(table)
    return 0
