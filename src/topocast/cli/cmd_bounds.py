"""``topocast bounds``: per-host max-flow bounds of a broadcast and their sum, and where the
routes are fixed the route-aware bounds (``topocast.bounds.route``)."""

from __future__ import annotations

import argparse

from ..bounds import broadcast_bounds
from ..units import format_bandwidth
from .common import add_topology_args, destinations_arg, load_topology_arg, print_json, resolve_source


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bounds", help="per-host max-flow bound of a broadcast and their sum")
    add_topology_args(p)
    p.add_argument("-s", "--source", help="source host (default: the first host)")
    p.add_argument("--destinations", help="comma-separated destination hosts (default: all other hosts)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    topology = load_topology_arg(args)
    source = resolve_source(topology, args.source)
    dests = destinations_arg(args.destinations, topology, source)
    bound = broadcast_bounds(topology, source, dests)
    from ..bounds.route import reference_bound

    ref = reference_bound(topology, source, bound.per_host_rate)
    if args.json:
        out = {"topology": topology.name, "source": source, **bound.to_json(), "common_rate": bound.common_rate}
        out["reference"] = ref.to_json()
        if ref.route is not None:
            out["route_bound"] = ref.route_json()
        print_json(out)
        return 0
    from rich.table import Table

    from .common import console

    table = Table(title=f"max-flow bounds from {source} on {topology.name}")
    table.add_column("host")
    table.add_column("max-flow (bound on its rate)", justify="right")
    route = ref.route
    if route is not None:
        table.add_column("on its routes", justify="right")
    for h, r in bound.per_host_rate.items():
        table.add_row(h, format_bandwidth(r), *([format_bandwidth(route.per_host_rate[h])] if route else []))
    blank = [""] if route else []
    table.add_row(
        "[bold]sum = theoretical maximum aggregate[/bold]", format_bandwidth(bound.aggregate_bandwidth), *blank
    )
    if route is not None:
        table.add_row("[bold]route bound[/bold], aggregate metric (Σ size / T)", "", format_bandwidth(route.aggregate))
        table.add_row("[bold]route bound[/bold], steady rates (LP)", "", format_bandwidth(route.steady))
    table.add_row("min = bound on a common rate", format_bandwidth(bound.common_rate), *blank)
    console().print(table)
    return 0
