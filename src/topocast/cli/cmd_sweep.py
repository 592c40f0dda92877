"""``topocast sweep``: predicted time against message size for chosen planners (like the
source papers' plots: MPICH/Mateescu time vs size, GridMPI throughput vs size).

Sizes go from ``--min`` to ``--max`` multiplying by ``--step``. ``--throughput`` plots
GridMPI's normalised throughput instead of the time (broadcast: size x hosts / time;
allreduce: size x hosts^2 / time). ``--option NAME=VALUE`` passes a parameter to every
planner that takes it (for example ``connections=1`` for ``gridmpi``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import InputError
from ..evaluate.sweep import COLLECTIVES, SweepResult, SweepRow, plot_sweep, sizes_between, sweep
from ..units import format_mbit, format_size, format_time
from .common import (
    PLOT_SUFFIXES,
    add_rate_tolerance_arg,
    add_topology_args,
    check_output,
    load_topology_arg,
    print_json,
    progress,
    size_arg,
)

if TYPE_CHECKING:
    from rich.table import Table


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep",
        help="predicted time vs message size for several planners (table, plot, JSON)",
        description="Simulate each planner for message sizes from --min to --max and print/plot "
        "the predicted time (or GridMPI's normalised throughput).",
    )
    add_topology_args(p)
    p.add_argument("-s", "--source", help="broadcast source (default: the first host)")
    p.add_argument("--collective", choices=COLLECTIVES, default="broadcast", help="default broadcast")
    p.add_argument("-a", "--algorithms", required=True, help="comma-separated planner names")
    p.add_argument(
        "--min", dest="min_size", type=size_arg, default=None, help="smallest size (default 1KiB, or --max if smaller)"
    )
    p.add_argument(
        "--max", dest="max_size", type=size_arg, default=size_arg("1GiB"), help="largest size (default 1GiB)"
    )
    p.add_argument("--step", type=float, default=4.0, help="size ratio between points (default 4)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="planner parameter, passed to the planners that accept it (repeatable)",
    )
    add_rate_tolerance_arg(p)
    p.add_argument("--throughput", action="store_true", help="plot GridMPI's normalised throughput instead of time")
    p.add_argument("--plot", metavar="FILE", help="write the plot (PNG/PDF/SVG by extension)")
    p.add_argument("--title", help="plot title")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def _parse_options(items: Iterable[str]) -> dict[str, object]:
    opts: dict[str, object] = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"expected NAME=VALUE, got {item!r}", element="--option")
        k, text = item.split("=", 1)
        k, text = k.strip(), text.strip()
        value: int | float | str = text
        for conv in (int, float):
            try:
                value = conv(text)
                break
            except ValueError:
                continue
        opts[k] = value
    return opts


def _cells(row: SweepRow, n_sizes: int, throughput: bool) -> list[str]:
    """A planner's figures per size: predicted time, or throughput in Mbit/s ("-": it failed)."""
    if row["times"] is None or row["throughput"] is None:
        return ["-"] * n_sizes
    if throughput:
        return [format_mbit(x) for x in row["throughput"]]
    return [format_time(t) for t in row["times"]]


def sweep_tables(data: SweepResult, *, throughput: bool = False, width: int = 80) -> list[Table]:
    """The sweep as tables of at most ``width`` columns: one row per planner (its whole
    name), one column per size; the sizes are spread over as many tables as it takes, so
    neither a name nor a figure is ever cut."""
    from rich.table import Table

    names = [row["algorithm"] for row in data["results"]]
    sizes = [format_size(s, binary=True) for s in data["sizes"]]
    cells = [_cells(row, len(sizes), throughput) for row in data["results"]]
    name_width = max(len("planner"), *(len(n) for n in names))
    # a rich table with padding 1 and one border per column: 1 + sum(width + 3)
    groups: list[list[int]] = [[]]
    used = 1 + name_width + 3
    for k, label in enumerate(sizes):
        need = max(len(label), *(len(c[k]) for c in cells)) + 3
        if groups[-1] and used + need > width:
            groups.append([])
            used = 1 + name_width + 3
        groups[-1].append(k)
        used += need
    what = "throughput (Mbit/s)" if throughput else "predicted time"
    tables = []
    for g, cols in enumerate(groups):
        title = f"{data['collective']} on {data['topology']}: {what}"
        if len(groups) > 1:
            title += f" ({g + 1}/{len(groups)})"
        table = Table(title=title)
        table.add_column("planner", no_wrap=True, min_width=name_width)
        for k in cols:
            table.add_column(sizes[k], justify="right", no_wrap=True)
        for name, row_cells in zip(names, cells):
            table.add_row(name, *(row_cells[k] for k in cols))
        tables.append(table)
    return tables


def run(args: argparse.Namespace) -> int:
    check_output(args.plot, "--plot", PLOT_SUFFIXES)
    topology = load_topology_arg(args)
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if not algorithms:
        raise InputError("give at least one planner name", element="--algorithms")
    lo = min(size_arg("1KiB"), args.max_size) if args.min_size is None else args.min_size
    sizes = sizes_between(lo, args.max_size, args.step)
    with progress(len(algorithms) * len(sizes), "simulating", quiet=args.json) as step:
        data = sweep(
            topology,
            args.collective,
            algorithms,
            sizes,
            source=args.source,
            options=_parse_options(args.option)
            | ({} if args.rate_tolerance is None else {"rate_tolerance": args.rate_tolerance}),
            on_step=step,
        )
    if args.plot:
        plot_sweep(data, args.plot, throughput=args.throughput, title=args.title)
    if args.json:
        print_json(data)
        return 0
    from rich.console import Console

    console = Console()
    for table in sweep_tables(data, throughput=args.throughput, width=console.width):
        console.print(table)
    for row in data["results"]:
        if row["error"]:
            Console(stderr=True).print(f"{row['algorithm']}: skipped ({row['error']})")
    if args.plot:
        Console(stderr=True).print(f"plot written to {args.plot}")
    return 0
