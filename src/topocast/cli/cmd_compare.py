"""``topocast compare``: several planners on one topology, against the max-flow bound."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..bounds import broadcast_bounds
from ..errors import TopocastError
from ..plan import Broadcast
from ..plan.check import check_plan
from ..planners import available_planners, get_planner
from ..planners.broadcast._compact import DEFAULT_RATE_TOLERANCE
from ..sim import simulate
from ..units import format_bandwidth, format_size, format_time
from .common import (
    PLOT_SUFFIXES,
    add_rate_tolerance_arg,
    add_topology_args,
    check_output,
    load_topology_arg,
    print_json,
    resolve_source,
    size_arg,
    time_arg,
)

if TYPE_CHECKING:
    from ..bounds import Bound
    from ..plan import Plan
    from ..planners.registry import PlannerInfo
    from ..results import Result
    from ..topology import Topology


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


def plan_with(
    info: PlannerInfo,
    topology: Topology,
    request: object,
    seed: int | None,
    rate_tolerance: float | None = None,
    evaluated: dict[str, tuple[Plan, Result] | str] | None = None,
) -> Plan:
    """Run a planner with the CLI's ``--seed`` and ``--rate-tolerance``, where it takes them;
    a selector (``auto``) that takes ``evaluated`` gets the other planners' plans and results."""
    import inspect

    params = inspect.signature(info.func).parameters
    kwargs: dict[str, object] = {"seed": seed} if "seed" in params else {}
    if rate_tolerance is not None and "rate_tolerance" in params:
        kwargs["rate_tolerance"] = rate_tolerance
    if evaluated is not None and "evaluated" in params:
        kwargs["evaluated"] = evaluated
    return info(topology, request, **kwargs)


def compare(
    topology: Topology,
    source: str,
    size: int,
    algorithms: Sequence[str] | None = None,
    destinations: Sequence[str] | None = None,
    *,
    chunk_size: int = 0,
    seed: int | None = 0,
    on_step: Callable[[str], object] | None = None,
    rate_tolerance: float | None = None,
    time_limit: float | None = None,
    on_progress: Callable[[str, int, int], object] | None = None,
) -> tuple[Bound, list[tuple[str, Result | str]]]:
    """Plan, check and simulate each algorithm; returns (bound, [(name, Result or error str)]).
    ``on_step(name)`` is called after each algorithm, ``on_progress(name, done, total)``
    while it is simulated (transfers; a progress display).

    ``time_limit`` (seconds, wall time): an algorithm whose planning and simulation take
    longer, or whose simulation is on course to take more than twice as long once a quarter
    of the limit has passed, is stopped; its entry says so (``OVER_LIMIT``) with the time
    the projection gives.

    Selectors (``auto``) run last and choose among the plans and predictions already made
    here (same seed, rate tolerance and chunk size) instead of planning everything again."""
    if algorithms is None:
        infos = available_planners("broadcast")
    else:
        infos = [get_planner("broadcast", a) for a in algorithms]
    request = Broadcast(source, size, tuple(destinations) if destinations else None)
    dests = request.resolve(topology)
    bound = broadcast_bounds(topology, source, dests)
    outcome: dict[str, Result | str] = {}
    evaluated: dict[str, tuple[Plan, Result] | str] = {}  # name -> (plan, result) or error, for the selectors
    # ``optimal`` compares other planners' default plans by their fluid prediction: it may
    # reuse ours when they are the same (no chunk, the default rate tolerance)
    reusable = not chunk_size and rate_tolerance in (None, DEFAULT_RATE_TOLERANCE)
    for info in sorted(infos, key=_run_order):  # stable: table order kept
        watch = _Watch(info.name, time_limit, on_progress)
        try:
            if "selector" in info.tags:
                # a selector adds its own predictions (the plan's chunk size) to its copy
                scratch = dict(evaluated)
                plan = plan_with(info, topology, request, seed, rate_tolerance, scratch)
                known = evaluated if chunk_size else scratch
                res = reused_prediction(plan, known) or _simulated(plan, topology, chunk_size, watch)
            else:
                plan = plan_with(info, topology, request, seed, rate_tolerance, evaluated if reusable else None)
                res = reused_prediction(plan, evaluated) or _simulated(plan, topology, chunk_size, watch)
                evaluated[info.name] = (plan, res)
            outcome[info.name] = res
        except _OverLimit as over:
            outcome[info.name] = evaluated[info.name] = str(over)
        except TopocastError as exc:
            if algorithms is not None and len(infos) == 1:
                raise
            outcome[info.name] = evaluated[info.name] = f"{type(exc).__name__}: {exc}"
        if on_step is not None:
            on_step(info.name)
    return bound, [(info.name, outcome[info.name]) for info in infos]


def _run_order(info: PlannerInfo) -> int:
    """Planners that can reuse other planners' predictions run after them; selectors last."""
    import inspect

    if "selector" in info.tags:
        return 2
    return 1 if "evaluated" in inspect.signature(info.func).parameters else 0


def _simulated(plan: Plan, topology: Topology, chunk_size: int, watch: _Watch) -> Result:
    check_plan(plan, topology)
    watch(0, len(plan.transfers))
    return simulate(plan, topology, chunk_size=chunk_size or None, on_progress=watch)


#: How compare's entry for an algorithm stopped by the time limit begins.
OVER_LIMIT = "over the time limit"


class _OverLimit(TopocastError):
    """An algorithm's planning and simulation would take longer than the time limit."""


class _Watch:
    """One algorithm's clock against ``limit`` (seconds, None: none), fed with the
    simulation's progress (transfers done, in all); passes it on to ``on_progress``."""

    def __init__(self, name: str, limit: float | None, on_progress: Callable[[str, int, int], object] | None):
        import time

        self.name, self.limit, self.on_progress = name, limit, on_progress
        self._clock = time.perf_counter
        self.start = self._clock()

    def __call__(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(self.name, done, total)
        if self.limit is None:
            return
        elapsed = self._clock() - self.start
        # the share of transfers done projects the whole simulation's time (nothing before the first ends)
        projected = elapsed * total / done if done else math.inf
        if elapsed > self.limit or (done and elapsed >= self.limit / 4 and projected > 2 * self.limit):
            where = (
                f"{done:,} of {total:,} transfers simulated, about {format_time(projected)} in all"
                if done
                else f"{total:,} transfers planned, none simulated yet"
            )
            raise _OverLimit(f"{OVER_LIMIT} ({format_time(self.limit)}): stopped after {format_time(elapsed)}, {where}")


def reused_prediction(plan: Plan, evaluated: dict[str, tuple[Plan, Result] | str]) -> Result | None:
    """The prediction already made on this input for ``plan``'s very transfers, holdings and
    chunk size, under ``plan``'s name: the plan a selector chose, or the structure ``optimal``
    returned (None: not made here)."""
    from dataclasses import replace

    for done in evaluated.values():
        if not isinstance(done, tuple):
            continue
        other, result = done
        same = other.transfers is plan.transfers or other.transfers == plan.transfers
        if (
            same
            and other.chunk_size == plan.chunk_size
            and other.initial == plan.initial
            and other.wanted == plan.wanted
        ):
            return replace(result, algorithm=plan.planner)
    return None


def run(args: argparse.Namespace) -> int:
    check_output(args.plot, "--plot", PLOT_SUFFIXES)
    topology = load_topology_arg(args)
    source = resolve_source(topology, args.source)
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()] if args.algorithms else None
    dests = [d.strip() for d in args.destinations.split(",")] if args.destinations else None
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


#: How many of the best algorithms the per-host panel of the compare plot shows.
PLOT_BEST = 4


def plot_compare(
    path: str | os.PathLike[str], topology: Topology, source: str, bound: Bound, results: Sequence[tuple[str, Result]]
) -> None:
    """Two panels that stay readable with any number of algorithms: (left) every algorithm's
    aggregate bandwidth as a fraction of the bound, best first, one labelled bar each; (right)
    per-host receive rates of the best few beside each host's bound, hosts sorted by bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ranked = sorted(results, key=lambda nr: -nr[1].aggregate_bandwidth)
    total = bound.aggregate_bandwidth
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, max(4.5, 0.32 * len(ranked) + 1.5)), gridspec_kw={"width_ratios": [1, 1.4]}
    )
    fracs = [r.aggregate_bandwidth / total if total > 0 else 0.0 for _, r in ranked]
    y = np.arange(len(ranked))
    left.barh(y, fracs, color=["tab:blue" if k < PLOT_BEST else "0.6" for k in range(len(ranked))])
    left.axvline(1.0, color="k", lw=1, ls="--")
    left.set_yticks(y, [name for name, _ in ranked], fontsize=8)
    left.invert_yaxis()
    for k, f in enumerate(fracs):
        left.text(min(f, 1.0) + 0.01, k, f"{100 * f:.1f} %", va="center", fontsize=7)
    left.set_xlim(0, 1.15)
    left.set_xlabel("aggregate bandwidth / bound (max-flow)")
    left.set_title("all algorithms, best first")

    hosts = sorted(bound.per_host_rate, key=lambda h: -bound.per_host_rate[h])
    x = np.arange(len(hosts))
    right.plot(x, [bound.per_host_rate[h] * 8e-6 for h in hosts], "k--", lw=1.5, label="bound (max-flow)")
    markers = "osD^"
    for k, (name, r) in enumerate(ranked[:PLOT_BEST]):
        right.plot(
            x, [r.per_host[h].rate * 8e-6 for h in hosts], marker=markers[k % len(markers)], ms=4, lw=1, label=name
        )
    if len(hosts) <= 40:
        right.set_xticks(x, hosts, rotation=60, ha="right", fontsize=7)
    else:
        right.set_xticks([])
    right.set_xlabel(f"{len(hosts)} destinations, sorted by bound")
    right.set_ylabel("receive rate (Mbit/s)")
    right.set_ylim(bottom=0)
    right.set_title(f"per host: the best {min(PLOT_BEST, len(ranked))}")
    right.legend(fontsize=8, loc="upper right", framealpha=0.9)
    fig.suptitle(f"{topology.name}: broadcast from {source}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
