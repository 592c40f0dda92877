"""``topocast simulate``: predict a plan (from a file or a planner) on a topology."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..bounds import broadcast_bounds
from ..errors import PlanError
from ..evaluate.compare import plan_with, reused_prediction
from ..plan import Broadcast, Plan
from ..plan.check import check_plan
from ..planners import get_planner
from ..sim import simulate
from ..units import format_bandwidth, format_time
from .common import (
    add_rate_tolerance_arg,
    add_topology_args,
    destinations_arg,
    load_topology_arg,
    print_json,
    require_wanted,
    resolve_source,
    size_arg,
)

if TYPE_CHECKING:
    from ..results import Result


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("simulate", help="predict per-host completion times of one plan")
    add_topology_args(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--plan", help="plan JSON written by `topocast plan`")
    g.add_argument("-a", "--algorithm", help="planner name")
    p.add_argument("-s", "--source", help="source host (with --algorithm; default: the first host)")
    p.add_argument("--size", type=size_arg, default=size_arg("1GB"), help="message size, e.g. 64MiB (default 1GB)")
    p.add_argument("--chunk-size", type=size_arg, default=None, help="pipelining chunk (default: the plan's)")
    p.add_argument("--seed", type=int, default=0, help="seed for randomized planners (default 0)")
    add_rate_tolerance_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    topology = load_topology_arg(args)
    evaluated: dict[str, tuple[Plan, Result] | str] = {}  # what a planner simulated itself
    if args.plan:
        plan = Plan.load(args.plan)
        require_wanted(plan, args.plan)
    else:
        source = resolve_source(topology, args.source)
        destinations_arg(None, topology, source)  # a topology of one host: nothing to send
        plan = plan_with(
            get_planner("broadcast", args.algorithm),
            topology,
            Broadcast(source, args.size),
            args.seed,
            args.rate_tolerance,
            evaluated,
        )
    check_plan(plan, topology)
    known = evaluated if args.chunk_size in (None, plan.chunk_size) else {}
    result = reused_prediction(plan, known) or simulate(plan, topology, chunk_size=args.chunk_size)
    bound = ref = None
    if plan.collective == "broadcast":
        if plan.source is None:
            raise PlanError("a broadcast plan must name its source host", source=args.plan, element="source")
        bound = broadcast_bounds(topology, plan.source, plan.destinations)
        from ..bounds.route import reference_bound

        ref = reference_bound(topology, plan.source, bound.per_host_rate)
    if args.json:
        out = {"topology": topology.name, "source": plan.source, "size_bytes": plan.size, **result.to_json()}
        if bound and ref:
            out["bound"] = bound.to_json()
            out["reference"] = ref.to_json()
            out["of_reference"] = result.aggregate_bandwidth / ref.aggregate_bandwidth
            if ref.route is not None:
                out["route_bound"] = ref.route_json()
        print_json(out)
        return 0
    from rich.table import Table

    from .common import console

    table = Table(title=f"{plan.planner} on {topology.name}: predicted")
    for c in ("host", "completion", "rate", "bound"):
        table.add_column(c, justify="right" if c != "host" else "left")
    for h, r in result.per_host.items():
        b = format_bandwidth(bound.per_host_rate[h]) if bound else ""
        table.add_row(h, format_time(r.time), format_bandwidth(r.rate), b)
    table.add_row(
        "[bold]aggregate[/bold]",
        format_time(result.makespan),
        format_bandwidth(result.aggregate_bandwidth),
        format_bandwidth(bound.aggregate_bandwidth) if bound else "",
    )
    if ref is not None and ref.route is not None:
        of = result.aggregate_bandwidth / ref.aggregate_bandwidth
        table.add_row(
            "[bold]route bound[/bold] (aggregate)", "", f"{100 * of:.1f} %", format_bandwidth(ref.route.aggregate)
        )
        table.add_row("[bold]route bound[/bold] (steady)", "", "", format_bandwidth(ref.route.steady))
    console().print(table)
    return 0
