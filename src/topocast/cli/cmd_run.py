"""``topocast run``: perform a plan for real and print measured beside predicted beside bound."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..units import format_mbit, format_size
from .cmd_probe import add_probe_options, probe_to_file
from .common import add_rate_tolerance_arg, print_json, require_wanted, size_arg, time_arg
from .launch_options import add_launcher_options, goodput_defaults, goodput_from_args, launcher_from_args

if TYPE_CHECKING:
    from rich.console import Console

    from ..bounds import Bound
    from ..plan import Plan
    from ..results import Result
    from ..runtime import RunOutcome
    from ..runtime.launchers import Launcher


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="perform a plan for real (agents over TCP)",
        description=(
            "Perform a plan: one agent per host over TCP, chunked and pipelined as planned, every chunk "
            "checked, the whole message verified on every host. Give a plan file (topocast plan --output) "
            "or a topology with --algorithm and --source."
        ),
    )
    p.add_argument("target", metavar="PLAN.json|TOPOLOGY", help="a plan file, or a topology file / builtin:NAME")
    p.add_argument("-a", "--algorithm", default=None, help="broadcast planner (with a topology)")
    p.add_argument("-s", "--source", default=None, help="source host (with a topology; default: the first host)")
    p.add_argument(
        "--destinations",
        default=None,
        help="comma-separated destination hosts (with a topology; default: all other hosts)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--file", default=None, help="the message: a file every initial holder can read")
    g.add_argument("--size", type=size_arg, default=None, help="message size (e.g. 32MiB); random bytes")
    p.add_argument("--topology", default=None, help="topology of a plan file (for the prediction and the bound)")
    add_launcher_options(p)
    p.add_argument("--dest-dir", default=None, help="each receiving host writes DIR/HOST/NAME")
    p.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --dest-dir: keep the pieces an earlier run left there (NAME.part, NAME) that verify "
        "against the message and move only the rest (default: on)",
    )
    p.add_argument("--chunk-size", type=size_arg, default=None, help="chunk size (default 64KiB)")
    p.add_argument(
        "--goodput",
        type=float,
        default=None,
        help=f"TCP goodput as a fraction of link bandwidth, applied to the prediction and to rate caps "
        f"(default {goodput_defaults()})",
    )
    p.add_argument(
        "--fair-uplink",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="agents share each link among their own transfers max-min (round-robin pacer at the link's "
        "bandwidth x goodput, caps further on, small send buffers), as the simulator does, instead of "
        "leaving it to TCP in the links' FIFO queues (default: on with --launcher testbed, where the "
        "topology is the real network; off otherwise)",
    )
    p.add_argument(
        "--prefault",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="receivers without --dest-dir touch their memory before the start, so the measured transfer "
        "does not include the kernel's first touch of it (default: on)",
    )
    p.add_argument(
        "--all-or-nothing",
        action="store_true",
        help="a host whose agent fails before the start stops the run (default: the run goes on without it, "
        "planned again for the hosts that are there, and exits 1 naming it)",
    )
    p.add_argument(
        "--adapt",
        action="store_true",
        help="watch every transfer's rate against its prediction and, when the network changed, plan the "
        "rest again on what every host holds (broadcast, needs the topology; see docs/guide.md)",
    )
    add_rate_tolerance_arg(p)
    p.add_argument("--timeout", type=time_arg, default=None, help="give up after this many seconds (default: no limit)")
    p.add_argument(
        "--idle-timeout",
        type=time_arg,
        default=60.0,
        metavar="SECONDS",
        help="give up when no byte has moved anywhere for this long (default 60)",
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="first probe the network between the hosts (as topocast probe) and write what it infers to "
        "TOPOLOGY, then plan on it (--algorithm, --source) and perform",
    )
    p.add_argument(
        "--probe-hosts",
        default=None,
        metavar="H1,H2,...",
        help="with --probe: the hosts (default: the testbed's, or every host of --ssh-hosts)",
    )
    add_probe_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _load_target(args, launcher: Launcher | None):
    """(plan, topology or None, algorithm name); a plan file without --topology is run on the
    launcher's own topology when it has one (a testbed's)."""
    from ..plan import Broadcast, Plan
    from ..topology import load_topology

    target = args.target
    plan = None
    if target.endswith(".json"):
        try:
            with open(target) as fh:
                data = json.load(fh)
        except (OSError, json.JSONDecodeError):
            data = None
        if isinstance(data, dict) and data.get("format") == "topocast-plan/1":
            plan = Plan.from_json(data, source=target)
            require_wanted(plan, target)
    if plan is not None:
        for option, value in (
            ("--algorithm", args.algorithm),
            ("--source", args.source),
            ("--destinations", args.destinations),
        ):
            if value is not None:
                raise InputError(
                    f"{option} goes with a topology; the plan file {target} already says it", element=option
                )
        topo = load_topology(args.topology) if args.topology else None
        if topo is None and launcher is not None:
            topo = launcher.topology()
        if args.size is not None and args.size != plan.size:
            raise InputError(f"the plan moves {plan.size} bytes, not {args.size}", element="--size")
        from ..plan.check import check_plan

        check_plan(plan, topo if topo is not None else _plan_hosts_star(plan, target))
        return plan, topo, plan.planner or "plan"
    topo = load_topology(target)
    if not args.algorithm:
        raise InputError("with a topology, give --algorithm NAME (see topocast planners)", element=target)
    if args.file is not None:
        from ..runtime.message import message_file_stat

        size = message_file_stat(args.file).st_size
    elif args.size is not None:
        size = int(args.size)
    else:
        raise InputError("give --file PATH or --size SIZE", element="message")
    from ..evaluate.compare import plan_with
    from ..plan.check import check_plan
    from ..planners import get_planner
    from .common import destinations_arg, resolve_source

    info = get_planner("broadcast", args.algorithm)
    source = resolve_source(topo, args.source)
    request = Broadcast(source, size, destinations_arg(args.destinations, topo, source))
    plan = plan_with(info, topo, request, None, args.rate_tolerance)
    check_plan(plan, topo)
    return plan, topo, info.name


def _plan_hosts_star(plan, target: str):
    """Without a topology, the plan is checked on a star of the hosts it names as holding or
    wanting data: every rule of the Plan contract but the routes. A transfer to any other
    host (a typo, a host of another plan) is an error before any agent starts."""
    from ..topology.model import PhysicalLink, Topology

    hosts = list(dict.fromkeys([*plan.initial, *plan.wanted]))
    for i, t in enumerate(plan.transfers):
        for end in (t.src, t.dst):
            if end not in hosts:
                raise InputError(
                    f"transfers[{i}] ({t.src}->{t.dst}): {end!r} neither holds nor wants any byte of "
                    f"this plan (hosts: {', '.join(hosts[:8])}{', ...' if len(hosts) > 8 else ''}); "
                    "give --topology to run a plan through relays that want no data",
                    source=target,
                )
    hub = "plan-hub"
    while hub in hosts:
        hub += "_"
    return Topology("plan hosts", hosts, [hub], [PhysicalLink(h, hub, 1.0) for h in hosts], source=target)


def run(args: argparse.Namespace) -> int:
    from ..runtime import DEFAULT_CHUNK
    from ..runtime.calibration import scale_caps
    from ..runtime.prediction import predict_with_bound

    if args.probe:
        _probe_first(args)
    kind, launcher = launcher_from_args(args)
    if args.adapt and not kind.agents:
        raise InputError(f"the {kind.name} launcher starts no agents whose transfers it could watch", element="--adapt")
    if launcher is not None:
        # e.g. the local launcher's fork server starts (as a fork of this process, which still
        # runs one thread and holds little) while we plan
        launcher.prepare(fork_this_process=True)
    plan, topo, algorithm = _load_target(args, launcher)
    if args.chunk_size is not None and int(args.chunk_size) <= 0:
        raise InputError(f"must be at least one byte, got {args.chunk_size!r} (e.g. 64KiB)", element="--chunk-size")
    chunk = DEFAULT_CHUNK if args.chunk_size is None else int(args.chunk_size)
    goodput = goodput_from_args(args, kind)
    plan = scale_caps(plan, goodput).with_chunk_size(chunk)
    if launcher is not None:
        launcher.require_hosts(plan.hosts)
        for w in launcher.warnings:
            print(f"topocast: warning: {w}", file=sys.stderr)
    fair_uplink = args.fair_uplink if args.fair_uplink is not None else kind.shaped_as_topology
    if fair_uplink and topo is None:
        if args.fair_uplink:
            raise InputError("--fair-uplink needs the topology (give --topology)", element="--fair-uplink")
        fair_uplink = False

    # computed while the agents start (perform waits for it before the data moves)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="predict")
    expected = pool.submit(predict_with_bound, plan, topo, chunk, goodput)
    if not args.json:  # the table's modules, imported while this process waits for its agents
        for module in ("rich.console", "rich.table"):
            pool.submit(importlib.import_module, module)
    pool.shutdown(wait=False)

    bars = _TransferBars(plan) if sys.stderr.isatty() and not args.json else None
    extra = _follow_options(args, plan, topo, algorithm, goodput, chunk) if kind.agents else {}
    try:
        outcome = kind.performer()(
            plan,
            topo,
            launcher=launcher,
            file=args.file,
            chunk_size=chunk,
            dest_dir=args.dest_dir,
            timeout=args.timeout,
            idle_timeout=args.idle_timeout,
            on_progress=bars,
            fair_uplink=fair_uplink,
            goodput=goodput,
            prefault=args.prefault,
            before_start=expected.result,
            **extra,
        )
    finally:
        if bars is not None:
            bars.close()
    predicted, bound = expected.result()
    for h, why in outcome.absent.items():  # on stderr too: the status is 1 because of them
        print(f"topocast: {h} never came (its agent {why}); the others went on without it", file=sys.stderr)
    measured = outcome.result
    if args.json:
        print_json(
            {
                "topology": topo.name if topo is not None else None,
                "source": plan.source,
                "size_bytes": plan.size,
                "algorithm": algorithm,
                "launcher": args.launcher,
                "chunk_size": chunk,
                "goodput_factor": goodput,
                "fair_uplink": fair_uplink,
                "bound": bound.to_json() if bound else None,
                "predicted": _res_json(predicted),
                "measured": _res_json(measured),
                "failed": outcome.failed,
                "warnings": outcome.warnings,
                "cpu_seconds": outcome.cpu,
                "cpu_bound": outcome.cpu_bound,
                "cpu_busy": outcome.cpu_busy,
                "cpu_niced": outcome.cpu_niced,
                "cpu_steal": outcome.cpu_steal,
                "cpu_steal_peak": list(outcome.cpu_steal_peak) if outcome.cpu_steal_peak else None,
                "peak_rss_bytes": {**outcome.peak_rss, "(coordinator)": outcome.coordinator_rss},
                "absent": outcome.absent,
                "replans": outcome.replans,
                "kept_bytes": outcome.kept,
                "received_bytes": outcome.received,
            }
        )
    else:
        from rich.console import Console

        print_table(Console(), plan, algorithm, measured, predicted, bound, outcome, kind.note)
    return 0 if not outcome.failed else 1


def _follow_options(args, plan, topo, algorithm, goodput, chunk) -> dict:
    """``perform``'s options for a run that follows what happens: resume, absent hosts and
    ``--adapt`` (with the planner it re-runs)."""
    from ..runtime.replan import make_replanner

    extra: dict = {
        "resume": args.resume,
        "all_or_nothing": args.all_or_nothing,
        "replan": make_replanner(plan, topo, algorithm, goodput, chunk, args.rate_tolerance),
    }
    if args.adapt:
        whole = make_replanner(plan, topo, algorithm, goodput, chunk, args.rate_tolerance, whole=True)
        if whole is None:
            raise InputError("--adapt needs a broadcast, its topology and a registered planner", element="--adapt")
        extra.update(adapt=True, planner=whole)
    return extra


class _TransferBars:
    """One progress bar per receiving host on a terminal's stderr, started with the first
    progress report: rich is imported while the data moves, not before (a run's set-up time
    is part of what the user waits for)."""

    def __init__(self, plan) -> None:
        self.plan = plan
        self.progress: Any = None
        self.tasks: dict[str, Any] = {}

    def __call__(self, held: dict[str, int], seconds: float) -> None:
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

            columns = (TextColumn("{task.description:>8}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
            self.progress = Progress(*columns, console=Console(stderr=True), transient=True)
            self.progress.start()
        for h, n in held.items():
            if h not in self.tasks:
                self.tasks[h] = self.progress.add_task(h, total=sum(length for _, length in self.plan.wanted[h]))
            self.progress.update(self.tasks[h], completed=n)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _probe_first(args) -> None:
    """``run --probe``: probe the hosts and write the inferred topology to the target file."""
    if args.target.startswith("builtin:") or args.target.endswith(".json"):
        raise InputError("with --probe, give the topology file to write (FILE.yaml)", element="--probe")
    args.targets = [h for h in (args.probe_hosts or "").split(",") if h]
    args.name = None
    _, summary = probe_to_file(args, args.target)
    print(
        f"probed {summary['hosts']} hosts: {summary['measurements']} measurements in {summary['seconds']:.1f} s; "
        f"wrote {summary['output']}",
        file=sys.stderr,
    )
    if args.verify_seconds > 0:  # the file checked against the network, and corrected
        from .cmd_probe import print_verified, verify_file

        checked = verify_file(args, args.target, args.target, args.source)
        print_verified(checked, args.target, file=sys.stderr)


def _res_json(r):
    if r is None:
        return None
    return {
        "aggregate_bandwidth": r.aggregate_bandwidth,
        "makespan": r.makespan,
        "per_host": {h: x.to_json() for h, x in r.per_host.items()},
    }


def _sec(x):
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3f}"


def print_table(
    console: Console,
    plan: Plan,
    algorithm: str,
    measured: Result,
    predicted: Result | None,
    bound: Bound | None,
    outcome: RunOutcome,
    launcher_note: str | None = None,
) -> None:
    """The run's table; ``launcher_note`` (the launcher's, :class:`LauncherKind`) is said below
    it when the run is compared with a bound."""
    from rich.table import Table

    t = Table(title=f"{algorithm}: {format_size(plan.size)} from {plan.source}: measured, predicted, bound")
    # Two-line headers keep the table within 80 columns; a host name or a status too long
    # for its column folds onto the next line rather than being cut.
    t.add_column("host", overflow="fold")
    for c in ("meas\ns", "pred\ns", "m/p", "meas\nMbit/s", "pred\nMbit/s", "bound\nMbit/s"):
        t.add_column(c, justify="right", no_wrap=True)
    t.add_column("status", min_width=8, overflow="fold")
    for h in plan.wanted:
        m = measured.per_host[h]
        p = predicted.per_host.get(h) if predicted else None
        ratio = f"{m.time / p.time:.2f}" if (p and m.completed and p.time > 0) else "-"
        b = bound.per_host_rate.get(h) if bound else None
        t.add_row(
            h,
            _sec(m.time),
            _sec(p.time if p else None),
            ratio,
            format_mbit(m.rate),
            format_mbit(p.rate if p else None),
            format_mbit(b),
            "ok" if m.completed else f"FAILED: {m.reason}",
        )
    t.add_row(
        "total",
        _sec(measured.makespan),
        _sec(predicted.makespan if predicted else None),
        f"{measured.makespan / predicted.makespan:.2f}"
        if predicted and math.isfinite(measured.makespan) and predicted.makespan > 0
        else "-",
        format_mbit(measured.aggregate_bandwidth),
        format_mbit(predicted.aggregate_bandwidth if predicted else None),
        format_mbit(bound.aggregate_bandwidth if bound else None),
        f"{len(outcome.failed)} failed" if outcome.failed else "verified",
        end_section=True,
    )
    console.print(t)
    if outcome.failed:
        console.print("[bold red]hosts that did not complete:[/]")
        for h, why in outcome.failed.items():
            console.print(f"  {h}: {why}")
    for w in outcome.warnings:
        console.print(f"[yellow]note:[/] {w}")
    for r in outcome.replans:
        changed = ", ".join(
            f"{c['link']} {format_mbit(c['old_bit_s'] / 8)} -> {format_mbit(c['new_bit_s'] / 8)} Mbit/s "
            f"(confidence {c['confidence']:.0%})"
            for c in r["changed"]
        )
        console.print(f"adapt at t = {r['time']:.2f} s: {len(r['why'])} slow transfers; {changed or 'no link named'}")
        console.print(f"  {r['outcome']}")
    if outcome.kept:
        kept = sum(outcome.kept.values())
        want = sum(length for h in outcome.kept for _, length in plan.wanted.get(h, ()))
        console.print(
            f"resumed: {kept} bytes an earlier run left in --dest-dir verified and were kept "
            f"({len(outcome.kept)} hosts; {kept / want:.0%} of what they want); "
            f"{sum(outcome.received.values())} bytes moved"
            if want
            else f"resumed: {kept} bytes kept from an earlier run"
        )
    if launcher_note and bound is not None:
        console.print(f"note: {launcher_note}")
    if outcome.cpu_busy is not None:
        niced = f" (plus {outcome.cpu_niced:.0%} niced background work, not counted)" if outcome.cpu_niced else ""
        if outcome.cpu_steal:
            niced += f", of which {outcome.cpu_steal:.0%} taken by the hypervisor (steal)"
        console.print(
            f"cores busy during the run: {outcome.cpu_busy:.0%}{niced}; agent CPU time {sum(outcome.cpu.values()):.2f} s over {outcome.wall:.2f} s"
        )
    if outcome.cpu_bound:
        console.print(f"[yellow]warning: the CPU may have set the pace, not the links:[/] {outcome.cpu_bound}")
