"""``topocast experiment NAME``: regenerate a published study (tables + figures in a folder)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import bandwidth_arg, check_output, help_of


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "experiment",
        help="reproduce a published study (table + figures into a folder)",
        description="Reproduce a published study with topocast's planners and simulator.",
    )
    esub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    sb = esub.add_parser(
        "stable-broadcast",
        help="the Stable Broadcast paper's simulation study (CCGrid 2008) and the stability test",
        description="8 bandwidth settings x 10/50/100 destinations x 10 draws on generated multi-cluster "
        "trees, 8 algorithms, speed-up over the flat tree; the 9-host slow-node stability test; and, with "
        "--data, every broadcast planner on the real topologies of a data folder.",
    )
    sb.add_argument(
        "--out", type=Path, default=Path("out/stable-broadcast"), help="output folder (default out/stable-broadcast)"
    )
    sb.add_argument("--quick", action="store_true", help="a small version (4 settings, 10/50 destinations, 2 draws)")
    sb.add_argument(
        "--data",
        type=Path,
        default=None,
        help="also run every planner on the SimGrid/Topology Zoo files of this folder (SimGrid's examples/platforms, Topology Zoo GraphML; docs/topology.md)",
    )
    sb.add_argument(
        "--default-bandwidth",
        type=bandwidth_arg,
        default=bandwidth_arg("1Gbps"),
        metavar="BW",
        help="bandwidth of Topology Zoo links without a speed (default 1Gbps)",
    )
    sb.add_argument("--skip-study", action="store_true", help="with --data: only the real-topology table")
    sb.add_argument(
        "--topology-seed", type=int, default=0, metavar="N", help="seed of the generated study topologies (default 0)"
    )
    sb.add_argument(
        "--clusters",
        type=int,
        default=10,
        metavar="N",
        help="clusters (switches) of the generated 200-host study topologies (default 10)",
    )
    sb.set_defaults(func=run_stable_broadcast)
    p.set_defaults(func=help_of(p))


def run_stable_broadcast(args: argparse.Namespace) -> int:
    check_output(args.out, "--out", folder=True)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ..experiments.stable_broadcast import real_topology_table, run_experiment

    console = Console(stderr=True)
    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*cols, console=console) as progress:
        summary = None
        if not args.skip_study:
            if args.clusters < 1:
                from ..errors import InputError

                raise InputError(f"--clusters must be >= 1, got {args.clusters}", element="clusters")
            summary = run_experiment(
                args.out,
                quick=args.quick,
                progress=progress,
                topology_seed=args.topology_seed,
                n_clusters=args.clusters,
            )
        if args.data is not None:
            real_topology_table(args.data, args.out, default_bandwidth=args.default_bandwidth, progress=progress)
    if summary is not None:
        print((args.out / "summary.md").read_text())
    if args.data is not None:
        print((args.out / "real_topologies.md").read_text())
    print(f"written to {args.out}/")
    return 0
