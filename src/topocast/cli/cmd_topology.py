"""``topocast topology show|convert|generate``: inspect, convert and generate topologies."""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from ..errors import TopologyError
from ..units import format_bandwidth, format_time
from .common import add_topology_args, bandwidth_arg, help_of, load_topology_with_default, print_json, time_arg

if TYPE_CHECKING:
    from ..topology import Topology


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("topology", help="show, convert or generate topologies")
    p.set_defaults(func=help_of(p))
    tsub = p.add_subparsers(dest="topology_command", metavar="ACTION")

    s = tsub.add_parser(
        "show",
        help="summary of a topology (hosts, links, bandwidths, tree?, symmetric?); builtin:list lists examples",
    )
    add_topology_args(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=run_show)

    c = tsub.add_parser("convert", help="convert between formats (output format from the extension: .yaml/.json/.xml)")
    c.add_argument("input", help="topology file (.yaml/.json/.xml/.conf/.graphml) or builtin:NAME")
    c.add_argument("output", help="output file: .yaml/.yml/.json (topocast) or .xml (SimGrid v4.1)")
    c.add_argument(
        "--default-bandwidth",
        type=bandwidth_arg,
        default=None,
        metavar="BW",
        help="bandwidth for links the input gives none (GraphML), e.g. 1Gbps",
    )
    c.add_argument(
        "--simgrid-routing",
        default="auto",
        choices=["auto", "Full", "Floyd", "Dijkstra", "DijkstraCache"],
        metavar="ROUTING",
        help="routing of a SimGrid .xml output: auto, Full, Floyd, Dijkstra or DijkstraCache (auto: Full "
        "with every host pair's route up to 100 hosts, else Floyd/DijkstraCache)",
    )
    c.add_argument(
        "--simgrid-exact",
        action="store_true",
        help="SimGrid input: map clusters as SimGrid routes them (intra-cluster traffic crosses the "
        "backbone; one-way links, not a tree) instead of a tree",
    )
    c.add_argument(
        "--geo-latency",
        action="store_true",
        help="GraphML: link latency = great-circle distance between PoPs / 2e8 m/s",
    )
    c.set_defaults(func=run_convert)

    _register_generate(tsub)


def _register_generate(tsub) -> None:
    """``topology generate KIND``: one subparser per generator, with the options they share."""
    g = tsub.add_parser(
        "generate", help="generate a topology (multi-cluster, two-cluster, fat-tree, random-tree, multi-site)"
    )
    gsub = g.add_subparsers(dest="kind", metavar="KIND")
    g.set_defaults(func=help_of(g))

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--seed", type=int, default=0, help="random seed (same seed, same topology)")
        q.add_argument("-o", "--output", help="output file (.yaml/.json/.xml); default: YAML on stdout")
        q.add_argument("--name", help="topology name")
        q.set_defaults(func=run_generate)

    from ..topology.generators import MULTI_CLUSTER_SETTINGS

    m = gsub.add_parser(
        "multi-cluster", help="clusters of hosts under switches joined in a random tree (Stable Broadcast study)"
    )
    m.add_argument("--hosts", type=int, default=100, help="number of hosts (default 100)")
    m.add_argument("--clusters", type=int, default=10, help="number of clusters, one switch each (default 10)")
    m.add_argument(
        "--bandwidth",
        default="mixed",
        choices=list(MULTI_CLUSTER_SETTINGS),
        metavar="SETTING",
        help=f"bandwidth setting in Mbit/s: {', '.join(MULTI_CLUSTER_SETTINGS)} (default: mixed = 100 or 1000)",
    )
    m.add_argument("--asymmetric", action="store_true", help="draw each direction separately")
    m.add_argument("--latency", type=time_arg, default=0.0, help="latency of every link, e.g. 2ms (default 0)")
    common(m)

    t = gsub.add_parser("two-cluster", help="two clusters joined by one wide-area link")
    t.add_argument("--hosts-per-cluster", type=int, default=8, metavar="N", help="hosts in each cluster (default 8)")
    t.add_argument("--nic", default="1Gbps", help="every host's link (default 1Gbps)")
    t.add_argument("--wan", default="10Gbps", help="the wide-area link between the clusters (default 10Gbps)")
    t.add_argument("--wan-latency", default="10ms", help="latency of the wide-area link (default 10ms)")
    t.add_argument("--lan-latency", default="50us", help="latency of every host link (default 50us)")
    t.add_argument("--slow-hosts", type=int, default=0, help="number of hosts (chosen with --seed) with --slow-nic")
    t.add_argument("--slow-nic", default="100Mbps", help="link of the slow hosts (default 100Mbps)")
    common(t)

    f = gsub.add_parser("fat-tree", help="k-ary fat-tree (k^3/4 hosts)")
    f.add_argument("--k", type=int, default=4, help="switch radix, even (default 4: 16 hosts)")
    f.add_argument(
        "--bandwidth", default="1Gbps", help="e.g. 1Gbps, or uniform-100-1000 / mixed-100-1000 (Mbit/s, random)"
    )
    f.add_argument("--latency", type=time_arg, default=0.0, help="latency of every link (default 0)")
    common(f)

    r = gsub.add_parser("random-tree", help="random tree of switches and hosts with random bandwidths")
    r.add_argument("--hosts", type=int, default=20, help="number of hosts (default 20)")
    r.add_argument(
        "--switches",
        type=int,
        default=5,
        help="number of switches, in a random tree (default 5; 0: hosts form the tree)",
    )
    r.add_argument("--min-mbit", type=int, default=10, help="lowest link bandwidth in Mbit/s, inclusive (default 10)")
    r.add_argument(
        "--max-mbit", type=int, default=1000, help="highest link bandwidth in Mbit/s, inclusive (default 1000)"
    )
    r.add_argument("--asymmetric", action="store_true", help="draw each direction's bandwidth separately")
    r.add_argument("--hosts-anywhere", action="store_true", help="hosts may be inner nodes (relays), not only leaves")
    r.add_argument(
        "--shape",
        choices=("recursive", "chain", "star", "hub"),
        default="recursive",
        metavar="SHAPE",
        help="switch tree: random recursive (default), chain, star (hub without hosts) or hub (with hosts)",
    )
    r.add_argument("--switch-mbit", help="LO-HI: links between switches in this range (Mbit/s; default as hosts')")
    r.add_argument(
        "--asymmetric-switch-links", action="store_true", help="draw each direction of links between switches apart"
    )
    r.add_argument("--latency", type=time_arg, default=0.0, help="latency of every link (default 0)")
    common(r)

    ms = gsub.add_parser(
        "multi-site",
        help="SimGrid multi-site platform: Floyd zones, routes up to the site gateway and back, shared links",
    )
    ms.add_argument("--hosts", type=int, help="number of hosts (default: drawn in 300-1500 with --seed)")
    ms.add_argument("--sites", type=int, help="number of sites (default: drawn in 2-8 with --seed)")
    common(ms)


# ---------------------------------------------------------------------- show
class Stats(TypedDict):
    """Smallest, median and largest of some values."""

    min: float
    median: float
    max: float


class TopologyInfo(TypedDict):
    """What ``topology show`` reports (units: bytes/s, seconds)."""

    name: str
    source: str | None
    hosts: int
    switches: int
    links: int
    directed_links: int
    one_way_links: int
    connectors: int
    bandwidth: Stats | None
    latency: Stats | None
    tree: bool
    symmetric: bool
    sharing: dict[str, int]
    explicit_routes: int
    injection_time: bool
    reduction_cost: bool
    first_hosts: list[str]
    notes: list[str]
    links_without_speed: NotRequired[int]
    edges_without_speed: NotRequired[list[str]]


def _stats(values: Sequence[float]) -> Stats | None:
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def topology_info(
    topology: Topology, *, speeds_from: Iterable[float] | None = None, missing: Sequence[str] | None = None
) -> TopologyInfo:
    """Summary dict of a topology (units: bytes/s, seconds).

    ``speeds_from``: bandwidths (bytes/s) to summarise instead of the links' (GraphML files
    loaded with a placeholder speed); ``missing``: edges without a speed.
    """
    t = topology
    # connector edges of imported SimGrid route graphs are not network links
    is_conn = [(t.physical_links[l.physical].name or "").startswith("connector:") for l in t.links]
    real = [l for l, c in zip(t.links, is_conn) if not c]
    bws = [l.bandwidth for l in real] if speeds_from is None else list(speeds_from)
    lats = [l.latency for l in real]
    sharing: dict[str, int] = {}
    for pl in t.physical_links:
        sharing[pl.sharing] = sharing.get(pl.sharing, 0) + 1
    info: TopologyInfo = {
        "name": t.name,
        "source": t.source,
        "hosts": len(t.hosts),
        "switches": len(t.switches),
        "links": len(t.physical_links),
        "directed_links": len(t.links),
        "one_way_links": sum(1 for pl in t.physical_links if pl.directed),
        "connectors": sum(1 for pl in t.physical_links if (pl.name or "").startswith("connector:")),
        "bandwidth": _stats(bws),
        "latency": _stats(lats),
        "tree": t.is_tree(),
        "symmetric": t.is_symmetric(),
        "sharing": sharing,
        "explicit_routes": len(t.routes),
        "injection_time": bool(t.injection_time or t.injection_pair),
        "reduction_cost": bool(t.reduction_cost),
        "first_hosts": list(t.hosts[:5]),
        "notes": list(t.notes),
    }
    if missing is not None:
        info["links_without_speed"] = len(missing)
        info["edges_without_speed"] = list(missing)
    return info


def _load_for_show(args: argparse.Namespace) -> tuple[Topology, TopologyInfo]:
    spec = args.topology
    if str(spec).lower().endswith(".graphml") and args.default_bandwidth is None:
        from ..topology.graphml import graphml_summary, load_graphml

        summary = graphml_summary(spec)
        missing = summary["edges_without_speed"]
        if missing:
            # Structure only: a placeholder speed for the edges without one, statistics over
            # the edges that have a speed.
            t = load_graphml(spec, default_bandwidth=1.0)
            speeds: list[float] = []
            for pl in t.physical_links:
                if pl.bandwidth != 1.0:
                    speeds += [pl.bandwidth, pl.reverse_bandwidth]
            return t, topology_info(t, speeds_from=speeds, missing=missing)
        t = load_graphml(spec)
        return t, topology_info(t, missing=[])
    t = load_topology_with_default(spec, args.default_bandwidth)
    return t, topology_info(t)


class _BuiltinRow(TypedDict):
    name: str
    hosts: int
    switches: int
    links: int
    summary: str


def _show_builtins(args: argparse.Namespace) -> int:
    from ..topology.builtin import builtin_names, builtin_summary, builtin_topology

    rows: list[_BuiltinRow] = []
    for n in builtin_names():
        t = builtin_topology(n)
        rows.append(
            {
                "name": f"builtin:{n}",
                "hosts": len(t.hosts),
                "switches": len(t.switches),
                "links": len(t.physical_links),
                "summary": builtin_summary(n),
            }
        )
    if args.json:
        print_json(rows)
        return 0
    from rich.table import Table

    from .common import console

    table = Table(title="built-in topologies (first host = natural source)")
    for col in ("name", "hosts", "switches", "links", "summary"):
        table.add_column(
            col,
            justify="right" if col in ("hosts", "switches", "links") else "left",
            no_wrap=col == "name",
            min_width=max(len(r["name"]) for r in rows) if col == "name" else None,
            # a word longer than the summary column (a dotted function name) folds, never cut
            overflow="fold" if col == "summary" else "ellipsis",
        )
    for r in rows:
        table.add_row(r["name"], str(r["hosts"]), str(r["switches"]), str(r["links"]), r["summary"])
    console().print(table)
    return 0


def run_show(args: argparse.Namespace) -> int:
    if args.topology == "builtin:list":
        return _show_builtins(args)
    _, info = _load_for_show(args)
    if args.json:
        print_json(info)
        return 0
    from rich.table import Table

    from .common import console

    table = Table(
        title=f"topology {info['name']}" + (f"  ({info['source']})" if info["source"] else ""), show_header=False
    )
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("hosts", f"{info['hosts']}  (first: {', '.join(info['first_hosts'])})")
    table.add_row("switches", str(info["switches"]))
    links = f"{info['links']} ({info['directed_links']} directed)"
    if info["one_way_links"]:
        links += f", {info['one_way_links']} one-way"
    if info["connectors"]:
        links += f", of which {info['connectors']} route connectors (not counted below)"
    table.add_row("links", links)
    if info.get("links_without_speed"):
        shown = ", ".join(info["edges_without_speed"][:8]) + (", ..." if info["links_without_speed"] > 8 else "")
        table.add_row(
            "links without a speed",
            f"[yellow]{info['links_without_speed']}[/yellow]: {shown} (pass --default-bandwidth to use this file)",
        )
    elif "links_without_speed" in info:
        table.add_row("links without a speed", "0")
    for key, st, fmt in (
        ("bandwidth", info["bandwidth"], format_bandwidth),
        ("latency", info["latency"], format_time),
    ):
        table.add_row(
            f"{key} min / median / max",
            "-" if st is None else f"{fmt(st['min'])} / {fmt(st['median'])} / {fmt(st['max'])}",
        )
    table.add_row("tree", "yes" if info["tree"] else "no")
    table.add_row("symmetric", "yes" if info["symmetric"] else "no")
    table.add_row("sharing", ", ".join(f"{k}: {v}" for k, v in sorted(info["sharing"].items())))
    table.add_row("explicit routes", str(info["explicit_routes"]))
    if info["injection_time"] or info["reduction_cost"]:
        table.add_row(
            "injection / reduction",
            f"{'yes' if info['injection_time'] else 'no'} / {'yes' if info['reduction_cost'] else 'no'}",
        )
    for note in info["notes"]:  # what the importer left out or changed
        table.add_row("[yellow]import note[/yellow]", note)
    console().print(table)
    return 0


# ---------------------------------------------------------------------- convert / generate
def _mbit_range(text: str | None) -> tuple[int, int] | None:
    """``--switch-mbit LO-HI`` as integers (a clear error otherwise)."""
    if text is None:
        return None
    parts = text.split("-")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise TopologyError(f"--switch-mbit: expected LO-HI in Mbit/s (e.g. 100-1000), got {text!r}")
    return int(parts[0]), int(parts[1])


def _emit(topology: Topology, output: str | None) -> int:
    """A generated topology written to ``output`` (its format from the suffix), or as YAML on
    standard output."""
    if output:
        _write(topology, output)
        links = len(topology.physical_links)
        print(f"wrote {output}: {len(topology.hosts)} hosts, {len(topology.switches)} switches, {links} links")
    else:
        from ..topology.io import dumps

        sys.stdout.write(dumps(topology))
    return 0


def _write(topology: Topology, output: str, simgrid_routing: str = "auto") -> None:
    suffix = Path(output).suffix.lower()
    if suffix in (".yaml", ".yml", ".json"):
        from ..topology.io import save_file

        save_file(topology, output)
    elif suffix == ".xml":
        from ..topology.simgrid import save_simgrid

        save_simgrid(topology, output, routing=simgrid_routing)
    else:
        raise TopologyError("unknown output format (expected .yaml, .yml, .json or .xml for SimGrid)", source=output)


def run_convert(args: argparse.Namespace) -> int:
    if args.simgrid_exact:
        if not str(args.input).lower().endswith(".xml"):
            raise TopologyError("--simgrid-exact applies to SimGrid .xml files only", source=args.input)
        from ..topology.simgrid import load_simgrid

        t = load_simgrid(args.input, exact=True)
    elif args.geo_latency:
        if not str(args.input).lower().endswith(".graphml"):
            raise TopologyError("--geo-latency applies to GraphML (Topology Zoo) files only", source=args.input)
        from ..topology.graphml import load_graphml

        t = load_graphml(args.input, default_bandwidth=args.default_bandwidth, geo_latency=True)
    else:
        t = load_topology_with_default(args.input, args.default_bandwidth)
    _write(t, args.output, args.simgrid_routing)
    print(f"wrote {args.output}: {len(t.hosts)} hosts, {len(t.switches)} switches, {len(t.physical_links)} links")
    return 0


def _generate_multi_site(args: argparse.Namespace) -> int:
    """A ``.xml`` output is the platform file itself (Floyd zones and declared routes, not the
    export's flat zone); any other output is the topology ``load_simgrid`` reads from it."""
    from ..topology.multisite import multi_site_platform, multi_site_xml

    if args.output and Path(args.output).suffix.lower() == ".xml":
        text = multi_site_xml(args.hosts, seed=args.seed, n_sites=args.sites, name=args.name)
        Path(args.output).write_text(text)
        print(f"wrote {args.output}: SimGrid platform, {text.count('<host ')} hosts")
        return 0
    t = multi_site_platform(args.hosts, seed=args.seed, n_sites=args.sites, name=args.name)
    return _emit(t, args.output)


def run_generate(args: argparse.Namespace) -> int:
    from ..topology import generators as g

    kind = args.kind
    extra = {"name": args.name} if args.name else {}
    if kind == "multi-cluster":
        t = g.multi_cluster_tree(
            args.hosts,
            n_clusters=args.clusters,
            bandwidth=args.bandwidth,
            asymmetric=args.asymmetric,
            latency=args.latency,
            seed=args.seed,
            **extra,
        )
    elif kind == "two-cluster":
        t = g.two_cluster_grid(
            args.hosts_per_cluster,
            nic=args.nic,
            wan=args.wan,
            wan_latency=args.wan_latency,
            lan_latency=args.lan_latency,
            slow_hosts=args.slow_hosts,
            slow_nic=args.slow_nic,
            seed=args.seed,
            **extra,
        )
    elif kind == "multi-site":
        return _generate_multi_site(args)
    elif kind == "fat-tree":
        t = g.fat_tree(args.k, bandwidth=args.bandwidth, latency=args.latency, seed=args.seed, **extra)
    else:
        t = g.random_tree(
            args.hosts,
            args.switches,
            min_mbit=args.min_mbit,
            max_mbit=args.max_mbit,
            asymmetric=args.asymmetric,
            hosts_as_leaves=not args.hosts_anywhere,
            latency=args.latency,
            shape=args.shape,
            switch_mbit=_mbit_range(args.switch_mbit),
            asymmetric_switch_links=args.asymmetric_switch_links,
            seed=args.seed,
            **extra,
        )
    return _emit(t, args.output)
