"""``topocast plan``: make a broadcast or allreduce plan and write it as JSON (input of
``simulate`` and, for broadcasts, ``run``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..evaluate.compare import plan_with
from ..plan import Broadcast
from ..plan.check import check_plan
from ..planners import get_planner
from .common import (
    add_rate_tolerance_arg,
    add_topology_args,
    allreduce_hosts_arg,
    check_output,
    destinations_arg,
    load_topology_arg,
    resolve_source,
    size_arg,
)

if TYPE_CHECKING:
    from ..plan import Allreduce


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="make a broadcast or allreduce plan with one algorithm and write it as JSON")
    add_topology_args(p)
    p.add_argument(
        "--collective",
        choices=("broadcast", "allreduce"),
        default="broadcast",
        help="default broadcast; allreduce: every host (or --destinations) contributes --size bytes",
    )
    p.add_argument("-a", "--algorithm", required=True, help="planner name (see `topocast planners`)")
    p.add_argument("-s", "--source", help="broadcast source host (default: the first host)")
    p.add_argument("--size", type=size_arg, default=size_arg("1GB"), help="message size, e.g. 64MiB (default 1GB)")
    p.add_argument(
        "--destinations",
        help="comma-separated destination hosts (default: all other hosts); "
        "for allreduce, the participating hosts (default: all hosts)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for randomized planners (default 0)")
    add_rate_tolerance_arg(p)
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.output, "--output", (".json",))
    topology = load_topology_arg(args)
    info = get_planner(args.collective, args.algorithm)
    request: Allreduce | Broadcast
    if args.collective == "allreduce":
        from ..plan import Allreduce

        request = Allreduce(args.size, allreduce_hosts_arg(args.destinations, topology))
    else:
        source = resolve_source(topology, args.source)
        request = Broadcast(source, args.size, destinations_arg(args.destinations, topology, source))
    plan = plan_with(info, topology, request, args.seed, args.rate_tolerance)
    check_plan(plan, topology)
    text = plan.dumps()
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
        print(f"{len(plan.transfers)} transfers written to {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0
