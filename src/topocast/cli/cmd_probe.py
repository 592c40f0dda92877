"""``topocast probe``: measure the network between the hosts and write a topology file."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import TYPE_CHECKING, TypedDict

from ..errors import InputError
from .common import print_json, time_arg
from .launch_options import add_launcher_options, goodput_defaults, goodput_from_args, launcher_from_args


class ProbeSummary(TypedDict):
    """What ``topocast probe`` reports (``--json`` prints it as is)."""

    output: str
    hosts: int
    switches: int
    groups: list[list[str]]  # hosts found under one switch
    measurements: int
    rounds: int
    seconds: float
    structure_from: str  # "latency" (the round-trip tree) or "contention"
    noise: float  # the bandwidth measurements' relative spread
    contention_threshold: float  # slowdown that counts as contention
    goodput_factor: float
    notes: list[str]


if TYPE_CHECKING:
    from ..runtime.launchers import Launcher
    from ..topology import Topology


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "probe",
        help="infer a topology (switches, bandwidths, latencies) from measurements between the hosts",
        description=(
            "Start one agent per host (as topocast run does), measure round-trip times and timed "
            "transfers between the hosts, infer the switches and every link's bandwidth per direction, "
            "and write a topology file every other command reads. TARGETS: the hosts to probe; with "
            "--launcher testbed the default is every host of the testbed, with ssh every host of "
            "--ssh-hosts; with local give at least two names (agents on this machine)."
        ),
    )
    p.add_argument("targets", nargs="*", metavar="HOST", help="hosts to probe (see above)")
    p.add_argument(
        "-o", "--output", default=None, metavar="FILE.yaml", help="topology file to write (with --verify: default FILE)"
    )
    p.add_argument(
        "--verify",
        default=None,
        metavar="FILE",
        help="instead of probing: run a few seconds of a stable plan on the topology FILE, compare every "
        "transfer's rate with its prediction, find and measure again the links that disagree, and write "
        "the corrected file (what was compared and corrected goes into its measured: section)",
    )
    p.add_argument("-s", "--source", default=None, help="with --verify: the plan's source (default: the first host)")
    add_launcher_options(p, agents_only=True)
    add_probe_options(p)
    p.add_argument(
        "--goodput",
        type=float,
        default=None,
        help=f"TCP goodput as a fraction of link bandwidth: measured rates are divided by it (default "
        f"{goodput_defaults()})",
    )
    p.add_argument("--name", default=None, help="topology name (default: the output file's stem)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=run)


def add_probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probe-duration",
        type=time_arg,
        default=1.0,
        metavar="SECONDS",
        help="longest timed transfer (default 1.0): each stops earlier, together with the others "
        "started with it, once every receiver's rate estimate has converged over at least 1 MiB",
    )
    p.add_argument("--pings", type=int, default=10, help="round trips per pair of hosts measured (default 10)")
    p.add_argument(
        "--rtt-threshold",
        type=time_arg,
        default=200e-6,
        metavar="SECONDS",
        help="round-trip differences below this are noise (default 200e-6: within one room, switch "
        "hops add less than a loaded machine's jitter, and contention finds the switches)",
    )
    p.add_argument(
        "--verify-seconds",
        type=time_arg,
        default=4.0,
        metavar="SECONDS",
        help="how long the check runs its plan (probe --verify; run --probe checks the file it wrote "
        "this way too, 0: not at all); default 4",
    )


def probe_hosts(args: argparse.Namespace, launcher: Launcher) -> list[str]:
    """The hosts to probe, from TARGETS and the launcher: by default every host it knows (a
    host named twice, or one the launcher does not know, is an error)."""
    seen: set = set()
    for h in args.targets:
        if h in seen:
            raise InputError(f"host {h!r} is listed twice", element="TARGETS")
        seen.add(h)
    launcher.require_hosts(args.targets, element="TARGETS")
    hosts = list(args.targets) or list(launcher.known_hosts() or ())
    if len(hosts) < 2:
        raise InputError("give at least two hosts to probe", element="TARGETS")
    return hosts


def probe_to_file(args: argparse.Namespace, output: str) -> tuple[Topology, ProbeSummary]:
    """Probe with the launcher and goodput ``args`` give, write ``output`` atomically, return
    (topology, summary dict). On failure the measurements made so far go to
    OUTPUT.partial.json and the error says so."""
    from ..probe import ProbeError, ProbeSession
    from ..probe.infer import build_topology, probe_network

    if args.probe_duration <= 0 or args.pings < 1 or args.rtt_threshold < 0:
        raise InputError("need --probe-duration > 0, --pings >= 1 and --rtt-threshold >= 0", element="probe options")
    kind, launcher = launcher_from_args(args)
    if launcher is None:
        raise InputError(f"the {kind.name} launcher starts no agents to probe with", element="--launcher")
    goodput = goodput_from_args(args, kind)
    hosts = probe_hosts(args, launcher)
    _check_writable(output)
    launcher.prepare(fork_this_process=True)  # agents forked, not each an interpreter start
    t0 = time.monotonic()
    session = ProbeSession(hosts, launcher)
    try:
        with session:
            lat, bw = probe_network(
                session, hosts, duration=args.probe_duration, pings=args.pings, rtt_threshold=args.rtt_threshold
            )
    except ProbeError as exc:
        if not exc.partial:  # nothing measured: no file to keep
            raise ProbeError(f"probe failed: {exc}") from None
        partial = output + ".partial.json"
        with open(partial, "w") as fh:
            json.dump({"hosts": hosts, "error": str(exc), "measurements": exc.partial}, fh, indent=1)
        raise ProbeError(f"probe failed: {exc}; what was measured so far is in {partial}") from None
    elapsed = time.monotonic() - t0
    name = args.name or os.path.splitext(os.path.basename(output))[0]
    topo = build_topology(
        bw,
        hosts,
        name=name,
        goodput=goodput,
        lat=lat,
        measurements=session.measurements,
        duration=elapsed,
        launcher=args.launcher,
    )
    _write_atomically(topo, output)
    summary: ProbeSummary = {
        "output": output,
        "hosts": len(hosts),
        "switches": len(topo.switches),
        "groups": bw.groups,
        "measurements": session.measurements,
        "rounds": session.rounds,
        "seconds": round(elapsed, 2),
        "structure_from": "latency" if len(lat.switches) >= 2 else "contention",
        "noise": round(bw.noise, 4),
        "contention_threshold": round(bw.threshold, 4),
        "goodput_factor": goodput,
        "notes": list(topo.notes),
    }
    return topo, summary


def verify_file(args: argparse.Namespace, path: str, output: str, source: str | None) -> dict:
    """Check the topology ``path`` against the network (``probe.verify``), write the
    corrected file to ``output``; returns the summary written into its ``measured:``."""
    from ..probe import ProbeError
    from ..probe.verify import verify_network
    from ..topology.io import load_file
    from .common import resolve_source

    if not args.verify_seconds > 0:
        raise InputError("expected a number of seconds > 0", element="--verify-seconds")
    kind, launcher = launcher_from_args(args)
    if launcher is None:
        raise InputError(f"the {kind.name} launcher starts no agents to verify with", element="--launcher")
    goodput = goodput_from_args(args, kind)
    topo = load_file(path)
    probe_hosts(argparse.Namespace(**{**vars(args), "targets": list(topo.hosts)}), launcher)
    src = resolve_source(topo, source)
    _check_writable(output)
    try:
        corrected, summary = verify_network(
            topo,
            src,
            launcher,
            lambda: launcher_from_args(args)[1],
            seconds=args.verify_seconds,
            goodput=goodput,
            fair_uplink=kind.shaped_as_topology,
        )
    except ProbeError as exc:
        raise ProbeError(f"verify failed: {exc}") from None
    _write_atomically(corrected, output)
    return summary


def _check_writable(output: str) -> None:
    out_dir = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK):
        raise InputError("the folder does not exist or is not writable", source=output)


def _write_atomically(topo: Topology, output: str) -> None:
    """Never a half-written file: write beside it, then rename over it."""
    from ..topology.io import save_file

    fd, tmp = tempfile.mkstemp(
        prefix=".probe-", suffix=os.path.splitext(output)[1] or ".yaml", dir=os.path.dirname(os.path.abspath(output))
    )
    os.close(fd)
    try:
        save_file(topo, tmp)
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def print_verified(summary: dict, output: str, file=None) -> None:
    """``probe --verify``'s summary in words."""
    print(
        f"checked {output}: {summary['transfers_compared']} transfers compared for {summary['seconds']:.1f} s, "
        f"{summary['slower_than_predicted']} slower than predicted (lowest {summary['worst_ratio']:.0%}), "
        f"{summary['faster_than_predicted']} faster",
        file=file,
    )
    for e in summary.get("links", ()):
        if e["outcome"] == "corrected":
            print(
                f"  corrected {e['link']}: {e['file_bit_s'] / 1e6:.4g} -> {e['corrected_bit_s'] / 1e6:.4g} Mbit/s "
                f"({e['pair']} measured alone)",
                file=file,
            )
        else:
            print(f"  {e['link']}: {e['outcome']}", file=file)


def run(args: argparse.Namespace) -> int:
    if args.verify is not None:
        output = args.output or args.verify
        checked = verify_file(args, args.verify, output, args.source)
        if args.json:
            print_json({"output": output, **checked})
        else:
            print_verified(checked, output)
        return 0
    if args.output is None:
        raise InputError("give the topology file to write (-o FILE.yaml)", element="--output")
    _, summary = probe_to_file(args, args.output)
    if args.json:
        print_json(summary)
        return 0
    print(
        f"probed {summary['hosts']} hosts: {summary['measurements']} measurements in {summary['seconds']:.1f} s; "
        f"{summary['switches']} switches; wrote {summary['output']}"
    )
    for g in summary["groups"]:
        print(f"  under one switch: {', '.join(g)}")
    for n in summary["notes"]:
        print(f"  note: {n}", file=sys.stderr)
    if summary["goodput_factor"] != 1.0:
        print(f"  bandwidths = measured TCP rates / {summary['goodput_factor']} (TCP goodput, see --goodput)")
    return 0
