"""``topocast compare``: several planners on one topology, against the max-flow bound."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys

from ..evaluate.compare import OVER_LIMIT, compare, plot_compare
from ..planners import available_planners
from ..units import format_bandwidth, format_size, format_time
from .common import (
    PLOT_SUFFIXES,
    add_rate_tolerance_arg,
    add_topology_args,
    check_output,
    destinations_arg,
    load_topology_arg,
    print_json,
    resolve_source,
    size_arg,
    time_arg,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="plan, simulate and compare broadcast algorithms against the bound",
        description="Plan a broadcast with several algorithms, simulate each, and print aggregate "
        "bandwidth, makespan and the fraction of the max-flow bound.",
    )
    add_topology_args(p)
    p.add_argument("-s", "--source", help="source host (default: the first host)")
    p.add_argument("--size", type=size_arg, default=size_arg("1GB"), help="message size (default 1GB)")
    p.add_argument("-a", "--algorithms", help="comma-separated planner names (default: every broadcast planner)")
    p.add_argument("--destinations", help="comma-separated destination hosts (default: all other hosts)")
    p.add_argument(
        "--chunk-size", type=size_arg, default=0, help="pipelining chunk for the prediction (default 0 = fluid)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed for randomized planners (default 0)")
    add_rate_tolerance_arg(p)
    p.add_argument(
        "--json", action="store_true", help='print the JSON (docs/design.md, "Command line") instead of a table'
    )
    p.add_argument("--plot", metavar="FILE", help="write a plot of per-host predicted rates beside the bound")
    p.add_argument(
        "--time-limit",
        type=time_arg,
        default=None,
        metavar="TIME",
        help="stop a planner whose planning and simulation would take longer than this (e.g. 60s, 5min) "
        "and say so in its row (default: no limit)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_output(args.plot, "--plot", PLOT_SUFFIXES)
    topology = load_topology_arg(args)
    source = resolve_source(topology, args.source)
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()] if args.algorithms else None
    dests = destinations_arg(args.destinations, topology, source)
    n = len(algorithms) if algorithms else len(available_planners("broadcast"))
    with planner_progress(n, quiet=args.json) as (step, on_progress):
        bound, results = compare(
            topology,
            source,
            args.size,
            algorithms,
            dests,
            chunk_size=args.chunk_size,
            seed=args.seed,
            on_step=step,
            rate_tolerance=args.rate_tolerance,
            time_limit=args.time_limit,
            on_progress=on_progress,
        )
    from ..bounds.relay import relay_ceiling
    from ..bounds.route import reference_bound

    ceiling = relay_ceiling(topology, source, bound.per_host_rate)
    # the relay ceiling is shown only where it is tighter than the max-flow sum
    tighter = ceiling < bound.aggregate_bandwidth * (1 - 1e-9)
    ref = reference_bound(topology, source, bound.per_host_rate)
    if args.json:
        out = {
            "topology": topology.name,
            "source": source,
            "size_bytes": args.size,
            "bound": {**bound.to_json(), "kind": "sum of per-destination max-flows"},
            "ceiling": {"aggregate_bandwidth": ceiling, "kind": "relay ceiling (half-duplex links, LP)"},
            "reference": ref.to_json(),
            "results": [
                {
                    **r.to_json(),
                    "of_bound": _fraction(r.aggregate_bandwidth, bound.aggregate_bandwidth),
                    "of_ceiling": _fraction(r.aggregate_bandwidth, ceiling),
                    "of_reference": _fraction(r.aggregate_bandwidth, ref.aggregate_bandwidth),
                    **(
                        {"of_route_steady": _fraction(r.aggregate_bandwidth, ref.route.steady)}
                        if ref.route is not None
                        else {}
                    ),
                }
                for _, r in results
                if not isinstance(r, str)
            ],
            "errors": {name: r for name, r in results if isinstance(r, str)},
        }
        if ref.route is not None:
            out["route_bound"] = ref.route_json()
        print_json(out)
    else:
        _print_table(args, topology, source, bound, ref, ceiling, tighter, results)
    if args.plot:
        plot_compare(args.plot, topology, source, bound, [(n, r) for n, r in results if not isinstance(r, str)])
        if not args.json:
            print(f"plot written to {args.plot}")
    return 0


def _print_table(args, topology, source, bound, ref, ceiling: float, tighter: bool, results) -> None:
    """The comparison as a rich table: one row per planner (or the reason it has no result),
    then the bounds, with a fraction column for each bound tighter than Σ max-flow."""
    from rich.table import Table

    from .common import console

    table = Table(
        title=f"broadcast of {format_size(args.size)} from {source} on {topology.name} "
        f"({len(bound.per_host_rate)} destinations)",
    )
    # names are never cut: the column is as wide as the longest one
    table.add_column("algorithm", no_wrap=True, min_width=max(len(n) for n, _ in results))
    # where the routes are fixed and the route-aware bound is lower, the first fraction
    # is of that bound (valid for the aggregate metric), and one more of its steady form
    by_route = ref.kind != "sum of per-destination max-flows"
    # (the steady route bound counts the relay ceiling's constraints too: never above it)
    tighter = tighter and (ref.route is None or ceiling < ref.route.steady * (1 - 1e-9))
    steady_bound = ref.route.steady if ref.route is not None else math.inf
    steady = steady_bound < bound.aggregate_bandwidth * (1 - 1e-9)
    table.add_column("aggregate bandwidth", justify="right")
    table.add_column("of route bound" if by_route else "of Σ max-flow", justify="right")
    if steady:
        table.add_column("of steady route bound", justify="right")
    if tighter:
        table.add_column("of relay ceiling", justify="right")
    table.add_column("makespan", justify="right")
    table.add_column("slowest host rate", justify="right")
    n_extra = int(tighter) + int(steady)
    for name, r in results:
        if isinstance(r, str):
            cell = f"[yellow]{OVER_LIMIT} (below)[/yellow]" if r.startswith(OVER_LIMIT) else f"[red]{r}[/red]"
            table.add_row(name, cell, *[""] * (3 + n_extra))
            continue
        fracs = [_fraction(r.aggregate_bandwidth, ref.aggregate_bandwidth)]
        if steady:
            fracs.append(_fraction(r.aggregate_bandwidth, steady_bound))
        if tighter:
            fracs.append(_fraction(r.aggregate_bandwidth, ceiling))
        slowest = min((h.rate for h in r.per_host.values()), default=math.nan)
        table.add_row(
            name,
            format_bandwidth(r.aggregate_bandwidth),
            *[f"{100 * f:.1f} %" for f in fracs],
            format_time(r.makespan),
            format_bandwidth(slowest),
        )

    def bound_row(label: str, value: float, *cells: str) -> None:
        table.add_row(
            label, format_bandwidth(value), f"{100 * _fraction(value, ref.aggregate_bandwidth):.1f} %", *cells
        )

    bound_row(
        "[bold]bound[/bold] (Σ max-flow)",
        bound.aggregate_bandwidth,
        *[""] * n_extra,
        "",
        format_bandwidth(bound.common_rate),
    )
    if by_route:
        bound_row("[bold]route bound[/bold] (aggregate)", ref.aggregate_bandwidth, *[""] * (n_extra + 2))
    if steady:
        bound_row("[bold]route bound[/bold] (steady rates)", steady_bound, "100.0 %", *[""] * (n_extra + 1))
    if tighter:
        bound_row(
            "[bold]relay ceiling[/bold] (half-duplex)",
            ceiling,
            *([""] if steady else []),
            "100.0 %",
            "",
            "",
        )
    console().print(table)
    for name, r in results:
        if isinstance(r, str) and r.startswith(OVER_LIMIT):
            console().print(f"[yellow]{name}[/yellow]: {r}")


@contextlib.contextmanager
def planner_progress(total: int, *, quiet: bool = False):
    """Progress on stderr (a terminal only, not with ``--json``): the planners done, and the
    one being simulated with its transfers done and an estimate of its time left. Yields
    (``step(name)``, ``on_progress(name, done, total)``) for :func:`compare`."""
    if quiet or not sys.stderr.isatty():
        yield (lambda name="": None), None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        overall = bar.add_task("planners", total=total)
        current: dict[str, TaskID] = {}

        def step(name: str = "") -> None:
            bar.update(overall, advance=1)
            for task in current.values():
                bar.remove_task(task)
            current.clear()

        def on_progress(name: str, done: int, n: int) -> None:
            if name not in current:
                current[name] = bar.add_task(f"  {name}", total=n)
            bar.update(current[name], completed=done)

        yield step, on_progress


def _fraction(x: float, of: float) -> float:
    return x / of if of > 0 and math.isfinite(of) else math.nan
