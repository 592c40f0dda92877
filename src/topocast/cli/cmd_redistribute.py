"""``topocast redistribute plan|predict|decide``: data redistribution between two clusters."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import PLOT_SUFFIXES, bandwidth_arg, check_output, help_of, print_json, size_arg, time_arg

if TYPE_CHECKING:
    from ..plan import Redistribution
    from ..topology import Topology

HELP = "redistribute data between two clusters (KPBS: brute force, GGP, OGGP)"


def _common(p) -> None:
    src = p.add_argument_group("redistribution matrix")
    src.add_argument("--matrix", metavar="FILE", help="CSV or JSON matrix of bytes (rows: senders, columns: receivers)")
    src.add_argument(
        "--pattern",
        choices=("random", "dense", "fig2"),
        default=None,
        help="generate a pattern instead: the paper's random patterns, a dense matrix, or Fig. 2",
    )
    src.add_argument("--senders", type=int, default=10, metavar="N", help="generated patterns: senders (default 10)")
    src.add_argument(
        "--receivers", type=int, default=10, metavar="N", help="generated patterns: receivers (default 10)"
    )
    src.add_argument(
        "--messages", type=int, default=30, metavar="N", help="random pattern: number of messages (default 30)"
    )
    src.add_argument(
        "--min-size", type=size_arg, default="10MB", metavar="SIZE", help="smallest message (default 10MB)"
    )
    src.add_argument(
        "--max-size",
        type=size_arg,
        default="80MB",
        metavar="SIZE",
        help="largest message, x of the paper (default 80MB)",
    )
    src.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    net = p.add_argument_group("network")
    net.add_argument(
        "--topology", metavar="TOPO", help="topology file or builtin:NAME (default: two clusters joined by a backbone)"
    )
    net.add_argument(
        "--nic",
        type=bandwidth_arg,
        default="100Mbps",
        metavar="BW",
        help="NIC speed of the default platform (default 100Mbps)",
    )
    net.add_argument(
        "--backbone",
        type=bandwidth_arg,
        default=None,
        metavar="BW",
        help="backbone speed of the default platform (default k x NIC, k = 5)",
    )
    net.add_argument(
        "--k",
        type=int,
        default=None,
        help="transfers the backbone carries without contention (default: backbone / NIC)",
    )
    net.add_argument(
        "--beta", type=time_arg, default=0.0, metavar="TIME", help="set-up time of one step (e.g. 10ms; default 0)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "redistribute",
        help=HELP,
        description="Data redistribution between two clusters. The matrix comes from a file (--matrix "
        "m.csv|m.json, bytes) or a generator (--pattern random|dense|fig2); the network from --topology "
        "or, by default, the paper's two-cluster platform (--nic, --backbone; k = backbone / NIC unless --k).",
    )
    sub = p.add_subparsers(dest="redistribute_command", metavar="ACTION")
    pp = sub.add_parser("plan", help="compute a schedule (or the brute-force plan) and print / save it")
    _common(pp)
    pp.add_argument("-a", "--algorithm", default="ggp", choices=("ggp", "oggp", "brute_force"), help="default ggp")
    pp.add_argument(
        "--barrier",
        choices=("auto", "full", "longest"),
        default="auto",
        help="step barrier: every transfer waits for all of the previous step (full) or its longest one; "
        "auto (default): full unless that needs over 2 million 'after' entries",
    )
    pp.add_argument("-o", "--output", metavar="FILE", help="write the plan (JSON) here")
    pp.add_argument("--plot", metavar="FILE", help="Gantt chart per host of the schedule's steps (png/pdf/svg)")
    pp.add_argument(
        "--save-topology",
        metavar="FILE",
        help="write the topology used (YAML), e.g. for `topocast simulate --plan` or `topocast run`",
    )
    pp.add_argument("--show-steps", type=int, default=20, metavar="N", help="steps listed in the table (default 20)")
    pp.set_defaults(func=cmd_plan)
    pr = sub.add_parser("predict", help="lower bounds, model predictions and the fluid simulator for each approach")
    _common(pr)
    pr.add_argument("--no-simulate", action="store_true", help="skip the fluid simulator")
    pr.set_defaults(func=cmd_predict)
    pd = sub.add_parser("decide", help="should this pattern be scheduled? (predicted gain)")
    _common(pd)
    pd.add_argument(
        "--basis",
        choices=("model", "simulated"),
        default="model",
        help="compare the paper's predictions (model) or the fluid simulator's",
    )
    pd.add_argument("--threshold", type=float, default=0.0, help="schedule only if the gain exceeds this fraction")
    pd.add_argument(
        "--count-planning", action="store_true", help="add the time to compute a schedule to its predicted time"
    )
    pd.set_defaults(func=cmd_decide)
    p.set_defaults(func=help_of(p))


def load_request(args: argparse.Namespace) -> tuple[Redistribution, Topology]:
    """``(request, topology)`` from the arguments."""
    from ..errors import InputError
    from ..redistribute import matrix as mx

    if args.matrix and args.pattern:
        raise InputError("give either --matrix or --pattern, not both", element="--matrix")
    if args.k is not None and args.k < 1:
        raise InputError(f"--k must be >= 1, got {args.k}", element="--k")
    if args.beta < 0:
        raise InputError("--beta must be >= 0", element="--beta")
    if args.matrix:
        req = mx.load_matrix(args.matrix, k=args.k, beta=args.beta)
    else:
        pattern = args.pattern or "random"
        for name in ("senders", "receivers"):
            if getattr(args, name) < 1:
                raise InputError("must be >= 1", element=f"--{name}")
        if pattern == "fig2":
            req = mx.fig2_pattern(unit=args.min_size, beta=args.beta)
            if args.k is not None:
                req = req.with_(k=args.k)
        elif pattern == "dense":
            req = mx.dense_pattern(
                args.senders, args.receivers, args.max_size, low=args.min_size, seed=args.seed, k=args.k, beta=args.beta
            )
        else:
            req = mx.random_pattern(
                args.senders,
                args.receivers,
                args.messages,
                args.max_size,
                low=args.min_size,
                seed=args.seed,
                k=args.k,
                beta=args.beta,
            )
    if args.topology:
        from ..topology import load_topology

        topo = load_topology(args.topology)
        if args.pattern and not all(topo.is_host(h) for h in req.senders + req.receivers):
            n1, n2 = len(req.senders), len(req.receivers)
            if len(topo.hosts) < n1 + n2:
                raise InputError(
                    f"the pattern needs {n1 + n2} hosts, topology {topo.name!r} has {len(topo.hosts)}",
                    element="--topology",
                )
            req = req.with_(senders=topo.hosts[:n1], receivers=topo.hosts[n1 : n1 + n2])
    else:
        k = req.k if req.k is not None else 5
        backbone = args.backbone if args.backbone is not None else k * args.nic
        topo = mx.two_cluster_topology(
            len(req.senders),
            len(req.receivers),
            nic=args.nic,
            backbone=backbone,
            senders=req.senders,
            receivers=req.receivers,
        )
    return req, topo


def _fmt(x):
    from ..units import format_time

    return "-" if x is None else format_time(x)


def cmd_plan(args: argparse.Namespace) -> int:
    check_output(args.output, "--output", (".json",))
    check_output(args.plot, "--plot", PLOT_SUFFIXES)
    from ..planners.redistribute.brute_force import brute_force
    from ..planners.redistribute.ggp import ggp
    from ..planners.redistribute.oggp import oggp
    from ..redistribute.kpbs import lower_bound
    from ..redistribute.matrix import resolve_platform

    req, topo = load_request(args)
    plat = resolve_platform(req, topo)
    if args.algorithm == "brute_force":
        plan = brute_force(topo, req)
    else:
        plan = (ggp if args.algorithm == "ggp" else oggp)(topo, req, barrier=args.barrier)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(plan.dumps())
    if args.plot:
        _plot(args, req, plat, plan)
    if args.save_topology:
        from ..topology.io import save_file

        save_file(topo, args.save_topology)
    lb = lower_bound(req.matrix, plat.k, nic=plat.nic, beta=req.beta)
    if args.json:
        print_json(
            {
                "plan": plan.to_json() if not args.output else args.output,
                "lower_bound": lb.to_json(),
                "k": plat.k,
                "nic_bytes_per_s": plat.nic,
            }
        )
        return 0
    from rich.table import Table

    from .common import console

    con = console()
    con.print(
        f"[bold]{plan.planner}[/]: {len(req.senders)} senders x {len(req.receivers)} receivers, "
        f"{int((req.matrix > 0).sum())} messages, k = {plat.k}, beta = {_fmt(req.beta)}"
    )
    t = Table("quantity", "value")
    t.add_row("transfers in plan", str(len(plan.transfers)))
    if plan.planner == "brute_force":
        t.add_row("predicted time (fair-sharing estimate)", _fmt(plan.notes["predicted_time"]))
    else:
        t.add_row("steps", str(plan.notes["steps"]))
        t.add_row("predicted cost sum(beta + m_i)", _fmt(plan.notes["predicted_cost"]))
        t.add_row("transfer time (beta = 0)", _fmt(plan.notes["transfer_time"]))
    t.add_row("lower bound max(P/k, W)", _fmt(lb.eta))
    t.add_row("lower bound eta + beta s(G)", _fmt(lb.total) + f"  (s(G) = {lb.steps})")
    con.print(t)
    if plan.planner != "brute_force" and args.show_steps > 0:
        st = Table("step", "transfers", "duration", "slices (sender->receiver: bytes)")
        by_step: dict[str, list] = {}
        for tr in plan.transfers:
            by_step.setdefault(tr.label, []).append(tr)
        for n, (lab, trs) in enumerate(by_step.items()):
            if n >= args.show_steps:
                st.add_row("...", f"{len(by_step) - n} more steps", "", "")
                break
            dur = max(tr.nbytes for tr in trs) / plat.nic
            st.add_row(
                lab.split()[-1],
                str(len(trs)),
                _fmt(dur),
                ", ".join(f"{tr.src}->{tr.dst}: {tr.nbytes}" for tr in trs[:6]) + (" ..." if len(trs) > 6 else ""),
            )
        con.print(st)
    if args.output:
        con.print(f"plan written to {args.output}")
    if args.plot:
        con.print(f"Gantt chart written to {args.plot}")
    if args.save_topology:
        con.print(f"topology written to {args.save_topology}")
    return 0


def _plot(args, req, plat, plan) -> None:
    from ..redistribute.gantt import brute_force_bars, plot_gantt, schedule_bars
    from ..redistribute.kpbs import Schedule

    if plan.planner == "brute_force":
        bars, steps = brute_force_bars(req.matrix, plat.ratio, plat.nic)
    else:
        si = {h: i for i, h in enumerate(req.senders)}
        ri = {h: j for j, h in enumerate(req.receivers)}
        by_step: dict[str, list] = {}
        for tr in plan.transfers:
            by_step.setdefault(tr.label, []).append((si[tr.src], ri[tr.dst], tr.nbytes))
        sched = Schedule(tuple(tuple(v) for v in by_step.values()), plat.k)
        bars, steps = schedule_bars(sched, req.beta, plat.nic)
    plot_gantt(
        bars, steps, req.senders, req.receivers, args.plot, title=f"{plan.planner}: k = {plat.k}, beta = {req.beta:g} s"
    )


def cmd_predict(args: argparse.Namespace) -> int:
    from ..planners.redistribute.decide import predict

    req, topo = load_request(args)
    preds, info = predict(topo, req, simulate=not args.no_simulate)
    if args.json:
        print_json({"platform": info, "predictions": [p.to_json() for p in preds]})
        return 0
    from rich.table import Table

    from .common import console

    con = console()
    b = info["bounds"]
    con.print(
        f"{info['senders']} senders x {info['receivers']} receivers, {info['messages']} messages, "
        f"k = {info['k']} (backbone / NIC = {info['backbone_ratio']:.3g}, from {info['k_from']}), beta = {_fmt(info['beta'])}"
    )
    con.print(
        f"lower bound max(P/k, W) = {_fmt(b['eta'])} (P/k = {_fmt(b['P_over_k'])}, W = {_fmt(b['W'])}); "
        f"step bound s(G) = {b['step_bound']}"
    )
    t = Table()
    t.add_column("approach", no_wrap=True)
    for h in ("lower bound", "model", "fluid sim", "steps", "transfers", "plan time"):
        t.add_column(h)
    for p in preds:
        t.add_row(
            p.approach,
            _fmt(p.lower_bound),
            _fmt(p.model),
            _fmt(p.simulated),
            str(p.steps) if p.steps else "-",
            str(p.transfers),
            _fmt(p.plan_seconds),
        )
    con.print(t)
    if info.get("note"):
        con.print(f"[yellow]{info['note']}[/]")
    if any(p.simulated is None for p in preds) and not args.no_simulate:
        con.print("[dim]fluid simulator not available in this build: '-'[/]")
    con.print(
        "[dim]model: brute force = discrete-event fair sharing (eta_o); schedules = sum(beta + m_i). "
        "Simulator figures for schedules add beta x steps.[/]"
    )
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from ..planners.redistribute.decide import decide

    req, topo = load_request(args)
    d = decide(topo, req, basis=args.basis, threshold=args.threshold, count_planning=args.count_planning)
    if args.json:
        print_json(d.to_json())
        return 0
    from .common import console

    con = console()
    verdict = (
        f"[bold green]schedule with {d.best}[/]" if d.schedule else "[bold yellow]do not schedule (brute force)[/]"
    )
    con.print(
        f"{verdict}: predicted brute force {_fmt(d.brute_force_time)}, scheduled {_fmt(d.scheduled_time)}, "
        f"gain {100 * d.gain:.1f} % (basis: {d.basis})"
    )
    from rich.table import Table

    t = Table()
    t.add_column("approach", no_wrap=True)
    for h in ("lower bound", "model", "fluid sim", "steps"):
        t.add_column(h)
    for p in d.predictions:
        t.add_row(p.approach, _fmt(p.lower_bound), _fmt(p.model), _fmt(p.simulated), str(p.steps) if p.steps else "-")
    con.print(t)
    return 0
