#!/usr/bin/env python3
"""topocast's broadcast plans performed for real beside MPICH's MPI_Bcast, on one emulated network.

For each topology (default: builtin:hetero-2switch and builtin:uniform-2switch) the script
builds the testbed (needs root), then

(a) for every planner among ``--planners`` that is registered (default stable, depth_first,
    flat, auto): plans the broadcast, predicts it with the simulator (same chunk size as the
    runtime, link bandwidths and rate caps scaled by the measured TCP goodput factor of HTB),
    performs it with the testbed launcher and records per-host completion times;
(b) runs MPICH's MPI_Bcast (mpi4py + the ``mpich`` wheel), one rank per emulated host, with
    ``mpiexec -launcher ssh -launcher-exec benchmarks/mpich_netns_launch.sh`` started in the
    source's namespace, netmod ofi/tcp bound to each host's data interface and shared memory
    disabled; the interface counters show the bytes crossed the emulated links;

and prints per-host completion times, aggregate bandwidth, the bound and the ratios. The load
average is recorded beside every run (the 2 cores are shared).

    sudo PYTHONPATH=src python benchmarks/bench_vs_mpich.py --size 32MiB --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from topocast.bounds import broadcast_bounds  # noqa: E402
from topocast.plan import Broadcast  # noqa: E402
from topocast.plan.check import check_plan  # noqa: E402
from topocast.planners import available_planners, get_planner  # noqa: E402
from topocast.runtime import DEFAULT_CHUNK, TestbedLauncher, perform  # noqa: E402
from topocast.runtime.calibration import GOODPUT_TESTBED, scale_caps, scale_topology  # noqa: E402
from topocast.sim import simulate  # noqa: E402
from topocast.testbed import counters, down, up  # noqa: E402
from topocast.testbed.net import HTB_BURST  # noqa: E402
from topocast.topology import load_topology  # noqa: E402
from topocast.units import parse_size  # noqa: E402

MBIT = 1e6 / 8


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def rx_bytes(before, after) -> dict:
    return {h: sum(after[h][i]["rx"] - before[h][i]["rx"] for i in after[h]) for h in after}


def run_topocast(topo, st, name, size, chunk, goodput, timeout, fair_uplink=True):
    plan = get_planner("broadcast", name)(topo, Broadcast(topo.hosts[0] if "s" not in topo.hosts else "s", size))
    check_plan(plan, topo)
    plan = scale_caps(plan, goodput).with_chunk_size(chunk)
    predicted = simulate(plan, scale_topology(topo, goodput), chunk_size=chunk)
    ld = load()
    c0 = counters(st)
    out = perform(
        plan,
        topo,
        launcher=TestbedLauncher(st),
        chunk_size=chunk,
        timeout=timeout,
        fair_uplink=fair_uplink,
        goodput=goodput,
    )
    c1 = counters(st)
    return {
        "algorithm": name,
        "kind": "topocast",
        "fair_uplink": fair_uplink,
        "load_before": ld,
        "load_after": load(),
        "measured": _res(out.result),
        "predicted": _res(predicted),
        "failed": out.failed,
        "cpu_seconds": out.cpu,
        "cpu_bound": out.cpu_bound,
        "cpu_busy": out.cpu_busy,
        "cpu_steal": out.cpu_steal,
        "cpu_steal_peak": out.cpu_steal_peak,
        "wall": out.wall,
        "rx_bytes": rx_bytes(c0, c1),
        "warnings": out.warnings,
        # per transfer, run clock (s): when it could start, when its connection was ready,
        # its first and last byte at the receiver; and the simulator's start and end
        "transfers": [
            {
                "src": t.src,
                "dst": t.dst,
                "ready": _num(out.send_times.get(i, (None, None))[0]),
                "connected": _num(out.send_times.get(i, (None, None))[1]),
                "first": _num(out.result.transfer_times[i][0]) if out.result.transfer_times else None,
                "end": _num(out.result.transfer_times[i][1]) if out.result.transfer_times else None,
                "predicted": [_num(x) for x in predicted.transfer_times[i]] if predicted.transfer_times else None,
            }
            for i, t in enumerate(plan.transfers)
        ],
    }


def _num(x):
    """A float for JSON: None for missing or NaN (a transfer that never ran)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _res(r):
    return {
        "aggregate_bandwidth": r.aggregate_bandwidth,
        "makespan": r.makespan,
        "per_host": {h: {"time": x.time, "rate": x.rate} for h, x in r.per_host.items()},
    }


def probe_goodput(topo, st, source, size):
    """One transfer alone to each destination in turn: TCP goodput / bottleneck bandwidth."""
    from topocast.plan import Plan, Transfer

    out = {}
    for d in topo.hosts:
        if d == source:
            continue
        plan = Plan.broadcast(source, size, [d], [Transfer.of(source, d, 0, size)], planner="probe")
        r = perform(plan, topo, launcher=TestbedLauncher(st), chunk_size=DEFAULT_CHUNK)
        if r.failed:
            continue
        out[d] = r.result.per_host[d].rate / topo.route_bandwidth(source, d)
    return out


def mpich_model(topo, source, size, chunk, goodput):
    """topocast's model of MPICH's MPI_Bcast (planner ``mpich``), simulated, when registered."""
    if "mpich" not in {p.name for p in available_planners("broadcast")}:
        return None
    plan = get_planner("broadcast", "mpich")(topo, Broadcast(source, size))
    plan = scale_caps(plan, goodput).with_chunk_size(plan.chunk_size or chunk)
    return _res(simulate(plan, scale_topology(topo, goodput), chunk_size=plan.chunk_size))


def mpiexec_command(st, order, script_args):
    """``mpiexec`` with one rank per emulated host of ``order`` (rank k in host k's namespace,
    started from the first host's), netmod ofi/tcp on the hosts' data interface and shared
    memory disabled, so every byte crosses the emulated links; None and the reason when
    MPICH or mpi4py is missing."""
    mpiexec = shutil.which("mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None, "mpi4py is not installed (pip install mpi4py mpich)"
    if mpiexec is None:
        return None, "mpiexec not found (pip install mpich)"
    namespaces = [st.host_ns[h] for h in order]
    ifaces = {st.data_iface(h) for h in order}
    if len(ifaces) != 1:
        return None, f"hosts have different data interfaces {ifaces}"
    env = []
    for k, v in (
        ("MPIR_CVAR_CH4_NETMOD", "ofi"),
        ("FI_PROVIDER", "tcp"),
        ("FI_TCP_IFACE", ifaces.pop()),
        ("MPIR_CVAR_NOLOCAL", "1"),
    ):
        env += ["-genv", k, v]
    cmd = [
        "ip", "netns", "exec", st.host_ns[order[0]],
        mpiexec, "-launcher", "ssh", "-launcher-exec", str(HERE / "mpich_netns_launch.sh"),
        "-localhost", st.host_addr[order[0]],
        "-hosts", ",".join(namespaces), "-n", str(len(order)), "-ppn", "1",
        *env, sys.executable, *script_args,
    ]  # fmt: skip
    return cmd, None


def run_mpich(topo, st, source, size, timeout):
    order = [source] + [h for h in topo.hosts if h != source]
    cmd, why = mpiexec_command(st, order, [str(HERE / "mpi_bcast_rank.py"), str(size)])
    if cmd is None:
        return {"kind": "mpich", "skipped": why}
    ld = load()
    c0 = counters(st)
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t
    c1 = counters(st)
    line = next((x for x in r.stdout.splitlines() if x.startswith("{")), None)
    if r.returncode or line is None:
        return {"kind": "mpich", "skipped": f"mpiexec failed ({r.returncode}): {r.stderr[-500:]}"}
    data = json.loads(line)
    per_host, agg, mk = {}, 0.0, 0.0
    for h, tm, ok in zip(order, data["times"], data["ok"]):
        if h == source:
            continue
        if not ok:
            per_host[h] = {"time": math.inf, "rate": 0.0, "wrong_bytes": True}
            continue
        per_host[h] = {"time": tm, "rate": size / tm}
        agg += size / tm
        mk = max(mk, tm)
    return {
        "algorithm": "MPI_Bcast (MPICH)",
        "kind": "mpich",
        "load_before": ld,
        "load_after": load(),
        "measured": {"aggregate_bandwidth": agg, "makespan": mk, "per_host": per_host},
        "wall": wall,
        "rx_bytes": rx_bytes(c0, c1),
    }


def report(topo_name, size, bound, runs, out=sys.stdout):
    from rich.console import Console
    from rich.table import Table

    con = Console(file=out, width=200)
    hosts = list(bound.per_host_rate)
    t = Table(
        title=f"{topo_name}: {size / 2**20:g} MiB from s; per-host completion time in s, measured (predicted); rates Mbit/s"
    )
    t.add_column("host")
    t.add_column("bound rate", justify="right")
    for r in runs:
        if "measured" in r:
            t.add_column(r["algorithm"], justify="right")
    for h in hosts:
        row = [h, f"{bound.per_host_rate[h] / MBIT:.1f}"]
        for r in runs:
            if "measured" not in r:
                continue
            m = r["measured"]["per_host"].get(h, {})
            cell = f"{m.get('time', math.inf):.2f}"
            if "predicted" in r:
                cell += f" ({r['predicted']['per_host'][h]['time']:.2f})"
            row.append(cell)
        t.add_row(*row)
    row = ["aggregate", f"{bound.aggregate_bandwidth / MBIT:.1f}"]
    for r in runs:
        if "measured" not in r:
            continue
        cell = f"{r['measured']['aggregate_bandwidth'] / MBIT:.1f}"
        if "predicted" in r:
            cell += f" ({r['predicted']['aggregate_bandwidth'] / MBIT:.1f})"
        row.append(cell)
    t.add_row(*row, end_section=True)
    con.print(t)
    mpich = next((r for r in runs if r["kind"] == "mpich" and "measured" in r), None)
    for r in runs:
        if "measured" not in r:
            con.print(f"{r.get('algorithm', r['kind'])}: skipped: {r.get('skipped')}")
            continue
        m = r["measured"]
        line = f"{r['algorithm']:>20}: aggregate {m['aggregate_bandwidth'] / MBIT:7.1f} Mbit/s = {m['aggregate_bandwidth'] / bound.aggregate_bandwidth:5.1%} of bound"
        if mpich and r is not mpich:
            line += f", {m['aggregate_bandwidth'] / mpich['measured']['aggregate_bandwidth']:5.2f}x MPICH"
        if "predicted" in r:
            ratios = [m["per_host"][h]["rate"] / r["predicted"]["per_host"][h]["rate"] for h in hosts]
            tratios = [m["per_host"][h]["time"] / r["predicted"]["per_host"][h]["time"] for h in hosts]
            line += f"; measured/predicted rate min {min(ratios):.3f}; time error max {max(abs(x - 1) for x in tratios):5.1%}"
        if r.get("failed"):
            line += f"; FAILED {r['failed']}"
        if r.get("cpu_bound"):
            line += f"; CPU? {r['cpu_bound']}"
        for w in r.get("warnings") or []:
            line += f"; note: {w}"
        if r.get("cpu_busy") is not None:
            line += f"; cores busy {r['cpu_busy']:.0%}"
            if r.get("cpu_steal") is not None:
                line += f" (steal {r['cpu_steal']:.0%})"
        line += f"; load {r['load_before']}->{r['load_after']}"
        con.print(line)
    if mpich:
        crossed = mpich["rx_bytes"]
        con.print(f"MPICH bytes received on each host's emulated interface: {crossed}")


def _testbed_note(everything) -> str:
    """How the testbed was shaped (files without this record were made with a FIFO per link and
    tc's own HTB bucket)."""
    if "ack_priority" not in everything:
        return "; testbed: ACKs behind data, tc's default HTB bucket"
    acks = "small packets first" if everything["ack_priority"] else "ACKs behind data"
    return f"; testbed: {acks}, HTB bucket {everything['htb_burst'] * 1e3:g} ms"


def render_markdown(everything) -> str:
    """Markdown tables of a --json file: per-host times measured (predicted), aggregates, ratios."""
    out = []
    for t in everything["topologies"]:
        bound = t["bound"]
        runs = [r for r in t["runs"] if "measured" in r]
        mp = next((r for r in runs if r["kind"] == "mpich"), None)
        out.append(
            f"**{t['topology']}**, {everything['size_bytes'] / 2**20:g} MiB from `{t['source']}`, chunk {everything['chunk_size'] // 1024} KiB, "
            f"goodput factor {everything['goodput_factor']}{_testbed_note(everything)}; completion time in s, measured (predicted)\n"
        )
        out.append("| host | bound Mbit/s | " + " | ".join(r["algorithm"] for r in runs) + " |")
        out.append("|---" * (2 + len(runs)) + "|")
        for h, b in bound["per_host_rate"].items():
            cells = []
            for r in runs:
                m = r["measured"]["per_host"].get(h, {})
                c = f"{m.get('time', math.inf):.2f}"
                if r.get("predicted"):
                    c += f" ({r['predicted']['per_host'][h]['time']:.2f})"
                cells.append(c)
            out.append(f"| {h} | {b / MBIT:.0f} | " + " | ".join(cells) + " |")
        cells = []
        for r in runs:
            c = f"**{r['measured']['aggregate_bandwidth'] / MBIT:.1f}**"
            if r.get("predicted"):
                c += f" ({r['predicted']['aggregate_bandwidth'] / MBIT:.1f})"
            cells.append(c)
        out.append(f"| aggregate Mbit/s | {bound['aggregate_bandwidth'] / MBIT:.0f} | " + " | ".join(cells) + " |")
        cells = [f"{r['measured']['aggregate_bandwidth'] / bound['aggregate_bandwidth']:.1%}" for r in runs]
        out.append("| of bound | | " + " | ".join(cells) + " |")
        if mp:
            cells = [
                f"{r['measured']['aggregate_bandwidth'] / mp['measured']['aggregate_bandwidth']:.2f}x" for r in runs
            ]
            out.append("| vs MPICH | | " + " | ".join(cells) + " |")
        cells = []
        for r in runs:
            if r.get("predicted") and r["kind"] != "mpich":
                errs = [
                    abs(r["measured"]["per_host"][h]["time"] / r["predicted"]["per_host"][h]["time"] - 1)
                    for h in bound["per_host_rate"]
                ]
                rr = [
                    r["measured"]["per_host"][h]["rate"] / r["predicted"]["per_host"][h]["rate"]
                    for h in bound["per_host_rate"]
                ]
                cells.append(f"{max(errs):.1%} / {min(rr):.3f}")
            else:
                cells.append("-")
        out.append("| max time error / min meas÷pred rate | | " + " | ".join(cells) + " |")
        cells = [
            f"{r['load_before'][0]:.1f}→{r['load_after'][0]:.1f}"
            + (f", cores {r['cpu_busy']:.0%}" if r.get("cpu_busy") is not None else "")
            for r in runs
        ]
        out.append("| load (1 min), cores busy | | " + " | ".join(cells) + " |")
        if mp:
            out.append(
                f"\nMPICH: bytes received on each host's `e0` during MPI_Bcast: {mp['rx_bytes']}; "
                "(predicted) = topocast's model of MPICH's algorithm (planner `mpich`), simulated."
            )
        if t.get("goodput_probe"):
            out.append(
                "\nOne transfer alone, goodput / HTB rate: "
                + ", ".join(f"{h} {x:.3f}" for h, x in t["goodput_probe"].items())
            )
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", action="append", default=None)
    ap.add_argument("--size", default="32MiB")
    ap.add_argument("--planners", default="stable,depth_first,flat,auto")
    ap.add_argument("--chunk-size", default=str(DEFAULT_CHUNK))
    ap.add_argument("--goodput", type=float, default=GOODPUT_TESTBED)
    ap.add_argument("--no-mpich", action="store_true")
    ap.add_argument("--json", default=None, help="write all numbers here")
    ap.add_argument(
        "--fair",
        action="store_true",
        help="testbed links share fairly among TCP flows (see topocast.testbed.net._shape_fair)",
    )
    ap.add_argument(
        "--no-ack-priority",
        dest="ack_priority",
        action="store_false",
        help="testbed: TCP ACKs wait behind data in each link's FIFO (how older result files were made)",
    )
    ap.add_argument(
        "--htb-burst",
        type=float,
        default=None,
        metavar="SECONDS",
        help="testbed: HTB token bucket in seconds of the rate (default 0.005; tc's own default, one MTU, made the older result files)",
    )
    ap.add_argument(
        "--no-fair-uplink",
        dest="fair_uplink",
        action="store_false",
        help="leave the sharing of each link among a sender's transfers to TCP and the links' queues "
        "(default: agents pace their transfers max-min, topocast.runtime.pacing)",
    )
    ap.add_argument(
        "--probe-goodput", default=None, metavar="SIZE", help="first measure single-transfer goodput with SIZE bytes"
    )
    ap.add_argument(
        "--render", default=None, metavar="JSON", help="only print the markdown tables of an earlier --json file"
    )
    args = ap.parse_args(argv)
    if args.htb_burst is not None and not args.htb_burst > 0:
        ap.error(f"--htb-burst: expected a positive number of seconds, got {args.htb_burst}")
    htb_burst = HTB_BURST if args.htb_burst is None else args.htb_burst
    if args.render:
        print(render_markdown(json.loads(Path(args.render).read_text())))
        return 0
    if os.geteuid() != 0:
        print("bench_vs_mpich: needs root (emulated network)", file=sys.stderr)
        return 2
    size = int(parse_size(args.size, field="--size"))
    chunk = int(parse_size(args.chunk_size, field="--chunk-size"))
    registered = {p.name for p in available_planners("broadcast")}
    wanted = [p for p in args.planners.split(",") if p]
    planners = [p for p in wanted if p in registered]
    for p in wanted:
        if p not in registered:
            print(f"bench_vs_mpich: planner {p!r} is not registered here; skipped", file=sys.stderr)
    everything = {
        "fair_links": args.fair,
        "ack_priority": args.ack_priority,
        "htb_burst": htb_burst,
        "fair_uplink": args.fair_uplink,
        "size_bytes": size,
        "chunk_size": chunk,
        "goodput_factor": args.goodput,
        "topologies": [],
    }
    for spec in args.topology or ["builtin:hetero-2switch", "builtin:uniform-2switch"]:
        topo = load_topology(spec)
        source = "s" if "s" in topo.hosts else topo.hosts[0]
        bound = broadcast_bounds(topo, source)
        timeout = 120 + 40 * size * 8 / min(l.bandwidth * 8 for l in topo.links)
        st = up(topo, name=f"bench-{os.getpid()}", fair=args.fair, ack_priority=args.ack_priority, burst=htb_burst)
        runs = []
        try:
            for w in st.warnings:
                print(f"warning: {w}", file=sys.stderr)
            probe = None
            if args.probe_goodput:
                probe = probe_goodput(topo, st, source, int(parse_size(args.probe_goodput, field="--probe-goodput")))
                print(
                    f"[{topo.name}] goodput / bottleneck bandwidth, one transfer alone: "
                    + ", ".join(f"{h} {x:.3f}" for h, x in probe.items())
                )
            for p in planners:
                print(f"[{topo.name}] topocast {p} ...", file=sys.stderr, flush=True)
                runs.append(run_topocast(topo, st, p, size, chunk, args.goodput, timeout, args.fair_uplink))
            if not args.no_mpich:
                print(f"[{topo.name}] MPICH MPI_Bcast ...", file=sys.stderr, flush=True)
                r = run_mpich(topo, st, source, size, timeout)
                model = mpich_model(topo, source, size, chunk, args.goodput)
                if model is not None and "measured" in r:
                    r["predicted"] = model  # what topocast's model of MPICH's algorithm predicts
                runs.append(r)
        finally:
            down(st.name)
        report(topo.name, size, bound, runs)
        everything["topologies"].append(
            {"topology": topo.name, "source": source, "bound": bound.to_json(), "runs": runs, "goodput_probe": probe}
        )
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1, default=lambda x: None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
