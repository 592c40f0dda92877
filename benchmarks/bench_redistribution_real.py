#!/usr/bin/env python3
"""Redistribution schedules performed for real on an emulated two-cluster network, beside the predictions.

Jeannot & Wagner (AINA 2006) measured scheduled redistributions (GGP/OGGP) about 30 % faster
than the brute-force approach with sockets and 20 % with MPI, on two clusters of 10 PCs whose
NICs were limited so that the interconnect carried k = 5 of them. This script does the same
on one machine: it builds the emulated network (default ``builtin:redistribution-2x8``:
2 x 8 hosts, 100 Mbit/s NICs, a 400 Mbit/s backbone, so k = 4) with ``topocast testbed``
(root; its own testbed name), and for every pattern

* the paper's random patterns (``--messages`` messages between random sender/receiver pairs,
  sizes uniform in [10 MB, x MB] for each x of ``--x``, all sizes multiplied by ``--scale`` so
  that one run takes seconds, the same pairs for every x, as in the paper's Fig. 6);
* the Fig. 2 pattern generalised to k (``fig2_pattern(unit, k=k)``: k messages of one unit
  and one of two units; brute force 2 + 1/k units, a schedule 2 units);

plans ``brute_force``, ``ggp`` and ``oggp`` (steps separated by full barriers: every transfer
of step s + 1 lists every transfer of step s in ``after``), performs each plan with the
testbed launcher (every byte verified by the agents), and prints measured times beside the
predictions: the lower bound, the paper's model (brute force: discrete-event fair-sharing
estimate eta_o; schedules: sum of (beta + m_i)), the fluid simulator, and the per-step set-up
beta-hat that the runtime actually pays (measured by ``--probe-steps`` tiny steps first).
Predictions use the links' TCP goodput (``--goodput``, 0.955 of the HTB rate, measured in
docs/experiments/runtime.md). The testbed is ALWAYS brought down (try/finally, SIGTERM too).

    sudo PYTHONPATH=src python benchmarks/bench_redistribution_real.py --links fifo fair --json out.json
    PYTHONPATH=src python benchmarks/bench_redistribution_real.py --render out.json   # markdown tables
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

from topocast.plan import Redistribution  # noqa: E402
from topocast.plan.check import check_plan  # noqa: E402
from topocast.planners.redistribute.brute_force import brute_force  # noqa: E402
from topocast.planners.redistribute.ggp import ggp  # noqa: E402
from topocast.planners.redistribute.oggp import oggp  # noqa: E402
from topocast.redistribute.kpbs import Schedule, brute_force_time, lower_bound, schedule_to_plan, validate_schedule  # noqa: E402
from topocast.redistribute.matrix import fig2_pattern, random_pattern, resolve_platform  # noqa: E402
from topocast.runtime import DEFAULT_CHUNK, TestbedLauncher, perform  # noqa: E402
from topocast.runtime.calibration import GOODPUT_TESTBED, scale_topology  # noqa: E402
from topocast.sim import simulate  # noqa: E402
from topocast.testbed import counters, down, up  # noqa: E402
from topocast.topology import load_topology  # noqa: E402
from topocast.units import parse_size  # noqa: E402

MB = 1e6
SCHEDULES = ("brute_force", "ggp", "oggp")
PAPER = {"sockets": 0.30, "MPI": 0.20}  # scheduled faster than brute force (AINA 2006, Figs. 6 and 7)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------- patterns
def make_patterns(topo, k: int, args) -> list[dict]:
    """The requests to run: random patterns (one per x) and Fig. 2 generalised to k."""
    senders, receivers = clusters(topo)
    out = []
    for seed in args.seeds:
        for x in args.x:
            r = random_pattern(
                len(senders),
                len(receivers),
                args.messages,
                x * MB * args.scale,
                low=10 * MB * args.scale,
                seed=seed,
                beta=args.beta,
            )
            r = r.with_(senders=senders, receivers=receivers)
            out.append(
                {
                    "name": f"random s{seed} x={x:g}MB",
                    "request": r,
                    "what": f"{args.messages} messages, sizes U[{10 * args.scale:g}, {x * args.scale:g}] MB (paper's [10, {x:g}] MB x {args.scale:g}), seed {seed}",
                }
            )
    if args.fig2_unit:
        unit = int(args.fig2_unit)
        r = fig2_pattern(unit, k=k, beta=args.beta)
        r = r.with_(senders=senders[: k + 1], receivers=receivers[: k + 1], k=None)
        out.append(
            {
                "name": f"fig2 k={k}",
                "request": r,
                "what": f"Fig. 2 generalised to k = {k}: {k} messages of {unit / MB:g} MB and one of {2 * unit / MB:g} MB",
            }
        )
    return out


def plan_of(name: str, topo, req: Redistribution):
    if name == "brute_force":
        return brute_force(topo, req)
    return (ggp if name == "ggp" else oggp)(topo, req, barrier="full")


# ---------------------------------------------------------------------------- predictions
def predictions(plan, req: Redistribution, topo_eff, beta_hat: float | None) -> dict:
    """Lower bound, the paper's model and the fluid simulator, on the goodput-scaled topology."""
    plat = resolve_platform(req, topo_eff)
    m = req.matrix
    lb = lower_bound(m, plat.k, nic=plat.nic, beta=req.beta)
    sim = simulate(plan, topo_eff)
    out = {
        "nic_eff": plat.nic,
        "k": plat.k,
        "eta": lb.eta,
        "P_over_k": lb.p_over_k,
        "W": lb.w,
        "step_bound": lb.steps,
        "simulated": float(sim.makespan),
        "simulated_per_host": {h: float(r.time) for h, r in sim.per_host.items()},
    }
    if plan.planner == "brute_force":
        out["lower_bound"] = lb.eta
        out["model"] = brute_force_time(m, plat.ratio, nic=plat.nic)
        out["steps"] = 0
    else:
        steps = int(plan.notes["steps"])
        step_time = sum(plan.notes["step_bytes"]) / plat.nic
        out["lower_bound"] = lb.total
        out["model"] = steps * req.beta + step_time
        out["steps"] = steps
        out["step_time"] = step_time
        if beta_hat is not None:
            out["model_beta_hat"] = steps * beta_hat + step_time
            out["simulated_beta_hat"] = float(sim.makespan) + steps * beta_hat
    return out


# ---------------------------------------------------------------------------- running
def step_analysis(plan, result, send_times: dict, nic_eff: float, chunk: int) -> dict:
    """Where a barrier's time goes, from the measured times of every transfer (one clock):

    * ``release``: last completion of step s - 1 (receiver side) -> the sender of a step-s
      transfer is released (completion relayed by the coordinator, thread woken);
    * ``connect``: released -> data connection authenticated (TCP handshake + HMAC challenge);
    * ``first_chunk``: connected -> the first chunk (64 KiB) held by the receiver;
    * ``overhead``: (end of step s - end of step s - 1) - longest slice of step s at the
      goodput rate: the per-step set-up the run actually paid (beta-hat of that step).
    Medians / maxima over the steps after the first (milliseconds in the report)."""
    steps: dict[int, list] = {}
    for i, (t, (a, b)) in enumerate(zip(plan.transfers, result.transfer_times)):
        if t.label and t.label.startswith("step ") and math.isfinite(a) and math.isfinite(b):
            steps.setdefault(int(t.label.split()[1]), []).append((i, a, b, sum(n for _, n in t.ranges)))
    if len(steps) < 2:
        return {}
    order = sorted(steps)
    end = {s: max(b for _, _, b, _ in steps[s]) for s in order}
    start = {s: min(a for _, a, _, _ in steps[s]) for s in order}
    release, connect, first, overhead, skew, gaps = [], [], [], [], [], []
    for p, s in zip(order, order[1:]):
        gaps.append(start[s] - end[p])
        overhead.append(end[s] - end[p] - max(n for *_, n in steps[s]) / nic_eff)
        readies = []
        for i, a, b, n in steps[s]:
            if i in send_times:
                ready, conn = send_times[i]
                release.append(ready - end[p])
                connect.append(max(0.0, conn - ready))  # a pipelined transfer may connect before it is ready
                first.append(a - conn)
                readies.append(ready)
        if len(readies) > 1:
            skew.append(max(readies) - min(readies))

    def md(x):
        return statistics.median(x) if x else None

    return {
        "steps_seen": len(order),
        "gap_median": md(gaps),
        "gap_max": max(gaps),
        "overhead_median": md(overhead),
        "overhead_mean": statistics.fmean(overhead),
        "overhead_max": max(overhead),
        "release_median": md(release),
        "release_max": max(release) if release else None,
        "connect_median": md(connect),
        "connect_max": max(connect) if connect else None,
        "first_chunk_median": md(first),
        "first_chunk_at_rate": chunk / nic_eff,
        "release_skew_median": md(skew),
        "release_skew_max": max(skew) if skew else None,
        "first_start": start[order[0]],
    }


def run_plan(plan, topo, st, chunk: int, timeout: float, nic_eff: float) -> dict:
    ld = load()
    c0 = counters(st)
    out = perform(plan, topo, launcher=TestbedLauncher(st), chunk_size=chunk, timeout=timeout)
    c1 = counters(st)
    rx = {h: sum(c1[h][i]["rx"] - c0[h][i]["rx"] for i in c1[h]) for h in c1}
    r = out.result
    rec = {
        "measured": float(r.makespan),
        "per_host": {h: float(x.time) for h, x in r.per_host.items()},
        "failed": out.failed,
        "warnings": out.warnings,
        "cpu_seconds": out.cpu,
        "cpu_bound": out.cpu_bound,
        "cpu_busy": out.cpu_busy,
        "cpu_niced": out.cpu_niced,
        "cpu_steal": out.cpu_steal,
        "cpu_steal_peak": out.cpu_steal_peak,
        "wall": out.wall,
        "load_before": ld,
        "load_after": load(),
        "rx_bytes_receivers": sum(v for h, v in rx.items() if h in plan.wanted),
        "bytes_wanted": sum(n for rs in plan.wanted.values() for _, n in rs),
    }
    rec["barriers"] = step_analysis(plan, r, out.send_times, nic_eff, chunk)
    return rec


def probe_beta(topo, st, k: int, nbytes: int, nsteps: int, chunk: int, nic_eff: float) -> dict:
    """The set-up time of one step as the runtime performs it: ``nsteps`` steps of ``k``
    disjoint transfers of ``nbytes`` each, full barriers; beta-hat = (measured - data time) / steps."""
    senders, receivers = clusters(topo)
    n1, n2 = len(senders), len(receivers)
    m = np.zeros((n1, n2), dtype=np.int64)
    steps = []
    for s in range(nsteps):
        st_ = tuple(((x + s) % n1, (x + 2 * s + s // n2) % n2, nbytes) for x in range(k))
        steps.append(st_)
        for i, j, b in st_:
            m[i, j] += b
    req = Redistribution(m, senders, receivers, k=k)
    sched = Schedule(tuple(steps), k, "probe")
    validate_schedule(sched, m, k)
    plan = schedule_to_plan(sched, req, nic=nic_eff, beta=0.0, planner="beta-probe", params={}, barrier="full")
    check_plan(plan, topo)
    rec = run_plan(plan, topo, st, chunk, 60 + 10 * nsteps * nbytes / nic_eff, nic_eff)
    data = nsteps * nbytes / nic_eff
    rec.update(
        {
            "steps": nsteps,
            "bytes_per_transfer": nbytes,
            "data_time": data,
            "beta_hat": (rec["measured"] - data) / nsteps if not rec["failed"] else None,
        }
    )
    return rec


# ---------------------------------------------------------------------------- report
def _f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def barrier_text(b: dict) -> str:
    """One sentence on where a barrier's time goes (see ``step_analysis``)."""
    if not b:
        return "no barriers"

    def ms(key):
        v = b.get(key)
        return "-" if v is None else f"{v * 1e3:.2f}"

    return (
        f"per-step overhead median {ms('overhead_median')} ms (mean {ms('overhead_mean')}, max {ms('overhead_max')}); "
        f"previous step complete -> sender released median {ms('release_median')} ms (max {ms('release_max')}), "
        f"released -> connection authenticated {ms('connect_median')} ms (max {ms('connect_max')}), "
        f"connected -> first 64 KiB chunk held {ms('first_chunk_median')} ms (the chunk alone at the goodput rate: {ms('first_chunk_at_rate')}); "
        f"release skew within a step median {ms('release_skew_median')} ms (max {ms('release_skew_max')})"
    )


def gains(runs: list[dict]) -> list[dict]:
    """Per pattern: median measured time of each schedule, gains over brute force (measured,
    model, simulator)."""
    by: dict[str, dict[str, list]] = {}
    for r in runs:
        by.setdefault(r["pattern"], {}).setdefault(r["schedule"], []).append(r)
    out = []
    for pat, d in by.items():
        if "brute_force" not in d:
            continue
        med = {s: statistics.median(x["run"]["measured"] for x in rs) for s, rs in d.items()}
        pred = {s: rs[0]["predicted"] for s, rs in d.items()}
        row = {"pattern": pat, "brute_force": med["brute_force"]}
        for s in ("ggp", "oggp"):
            if s not in d:
                continue
            row[s] = med[s]
            row[f"{s}_gain_measured"] = (med["brute_force"] - med[s]) / med["brute_force"]
            row[f"{s}_gain_model"] = (pred["brute_force"]["model"] - pred[s]["model"]) / pred["brute_force"]["model"]
            row[f"{s}_gain_simulated"] = (pred["brute_force"]["simulated"] - pred[s]["simulated"]) / pred[
                "brute_force"
            ]["simulated"]
            if "model_beta_hat" in pred[s]:
                row[f"{s}_gain_model_beta_hat"] = (pred["brute_force"]["model"] - pred[s]["model_beta_hat"]) / pred[
                    "brute_force"
                ]["model"]
        out.append(row)
    return out


def report(mode: dict, out=sys.stdout) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(file=out, width=220)
    pr = mode.get("beta_probe")
    if pr:
        con.print(
            f"[bold]{mode['links']} links[/]: beta probe: {pr['steps']} steps x {mode['k']} transfers of {pr['bytes_per_transfer'] / MB:g} MB: "
            f"measured {pr['measured']:.3f} s, data {pr['data_time']:.3f} s -> beta-hat {_f(pr['beta_hat'] and pr['beta_hat'] * 1e3)} ms per step; "
            + barrier_text(pr["barriers"])
        )
    t = Table(
        title=f"{mode['topology']} ({mode['links']} links): measured vs predicted, seconds (predictions at goodput {mode['goodput']} of the link rates)"
    )
    for c in (
        "pattern",
        "schedule",
        "rep",
        "steps",
        "xfers",
        "lower bd",
        "model",
        "model β̂",
        "fluid sim",
        "measured",
        "m/model",
        "m/sim",
        "host err",
        "β run ms",
        "cpu",
        "load",
    ):
        t.add_column(c, justify="left" if c in ("pattern", "schedule", "cpu") else "right")
    for r in mode["runs"]:
        p, m = r["predicted"], r["run"]
        errs = [
            abs(m["per_host"][h] / p["simulated_per_host"][h] - 1)
            for h in p["simulated_per_host"]
            if math.isfinite(m["per_host"].get(h, math.inf))
        ]
        cpu = (
            "FAILED " + str(m["failed"])
            if m["failed"]
            else (
                "CPU? " + m["cpu_bound"]
                if m["cpu_bound"]
                else f"ok {_f(m['cpu_busy'], '{:.0%}')} (+{_f(m['cpu_niced'], '{:.0%}')} niced)"
            )
        )
        t.add_row(
            r["pattern"],
            r["schedule"],
            str(r["rep"]),
            str(p["steps"]),
            str(r["transfers"]),
            _f(p["lower_bound"]),
            _f(p["model"]),
            _f(p.get("model_beta_hat")),
            _f(p["simulated"]),
            f"[bold]{m['measured']:.2f}[/]",
            _f(m["measured"] / p["model"], "{:.3f}"),
            _f(m["measured"] / p["simulated"], "{:.3f}"),
            _f(max(errs) if errs else None, "{:.1%}"),
            _f(m["barriers"].get("overhead_mean") and m["barriers"]["overhead_mean"] * 1e3, "{:.1f}"),
            cpu,
            f"{m['load_before'][0]:.1f}",
        )
    con.print(t)
    g = Table(
        title=f"{mode['links']} links: gain of scheduling over brute force = (T_bf - T_sched) / T_bf (median of repetitions); paper: 30 % (sockets), 20 % (MPI)"
    )
    for c in (
        "pattern",
        "brute force s",
        "ggp s",
        "oggp s",
        "ggp measured",
        "oggp measured",
        "model (β)",
        "model (β̂)",
        "fluid sim",
    ):
        g.add_column(c, justify="left" if c == "pattern" else "right")
    for row in mode["gains"]:
        g.add_row(
            row["pattern"],
            _f(row["brute_force"]),
            _f(row.get("ggp")),
            _f(row.get("oggp")),
            _f(row.get("ggp_gain_measured"), "{:+.1%}"),
            _f(row.get("oggp_gain_measured"), "{:+.1%}"),
            _f(row.get("ggp_gain_model"), "{:+.1%}"),
            _f(row.get("ggp_gain_model_beta_hat"), "{:+.1%}"),
            _f(row.get("ggp_gain_simulated"), "{:+.1%}"),
        )
    con.print(g)


def summary_markdown(everything: dict) -> str:
    """One row per (links, pattern): predictions and the median (min-max) of the measured times."""
    out = [
        "| links | pattern | lower bound | brute force: model η_o = fluid sim | measured | GGP: model Σ m_i (β = 0) | with β̂ | measured | OGGP measured "
        "| gain measured (GGP) | gain model (β = 0) | gain model (β̂) |",
        "|---" * 12 + "|",
    ]
    for mode in everything["modes"]:
        by: dict = {}
        for r in mode["runs"]:
            by.setdefault(r["pattern"], {}).setdefault(r["schedule"], []).append(r)
        for pat, d in by.items():

            def meas(s):
                xs = sorted(x["run"]["measured"] for x in d.get(s, ()))
                if not xs:
                    return "-", None
                return f"**{statistics.median(xs):.2f}** ({xs[0]:.2f}–{xs[-1]:.2f})", statistics.median(xs)

            bf, g, og = meas("brute_force"), meas("ggp"), meas("oggp")
            pb, pg = d["brute_force"][0]["predicted"], d["ggp"][0]["predicted"]
            gm = (bf[1] - g[1]) / bf[1] if bf[1] and g[1] else None
            out.append(
                f"| {mode['links']} | {pat} | {pb['lower_bound']:.2f} | {pb['model']:.2f} = {pb['simulated']:.2f} | {bf[0]} | {pg['model']:.2f} | "
                f"{_f(pg.get('model_beta_hat'))} | {g[0]} | {og[0]} | {_f(gm, '{:+.1%}')} | {(pb['model'] - pg['model']) / pb['model']:+.1%} | "
                f"{_f(pg.get('model_beta_hat') and (pb['model'] - pg['model_beta_hat']) / pb['model'], '{:+.1%}')} |"
            )
    return "\n".join(out)


def render_markdown(everything: dict) -> str:
    out = [summary_markdown(everything), ""]
    for mode in everything["modes"]:
        out.append(
            f"**{mode['topology']}, {mode['links']} links** (chunk {mode['chunk_size'] // 1024} KiB, predictions at goodput "
            f"{mode['goodput']} x link rate = {mode['nic_eff'] * 8 / 1e6:.2f} Mbit/s per NIC, k = {mode['k']}, planning beta = {everything['beta']:g} s)\n"
        )
        pr = mode.get("beta_probe")
        if pr and pr.get("beta_hat") is not None:
            out.append(
                f"beta probe: {pr['steps']} steps of {mode['k']} x {pr['bytes_per_transfer'] / MB:g} MB: measured {pr['measured']:.3f} s, "
                f"data {pr['data_time']:.3f} s, **beta-hat = {pr['beta_hat'] * 1e3:.1f} ms per step**; "
                + barrier_text(pr["barriers"])
                + ".\n"
            )
        out.append(
            "| pattern | schedule | rep | steps | transfers | lower bound | model | model β̂ | fluid sim | **measured** | meas/model | meas/sim | max host err vs sim | step overhead ms (mean) | cores busy (+niced) | load |"
        )
        out.append("|---" * 16 + "|")
        for r in mode["runs"]:
            p, m = r["predicted"], r["run"]
            errs = [
                abs(m["per_host"][h] / p["simulated_per_host"][h] - 1)
                for h in p["simulated_per_host"]
                if math.isfinite(m["per_host"].get(h, math.inf))
            ]
            cpu = f"{_f(m['cpu_busy'], '{:.0%}')} (+{_f(m['cpu_niced'], '{:.0%}')})" + (
                f" CPU? {m['cpu_bound']}" if m["cpu_bound"] else ""
            )
            if m["failed"]:
                cpu = f"FAILED {m['failed']}"
            gap = m["barriers"].get("overhead_mean")
            out.append(
                f"| {r['pattern']} | {r['schedule']} | {r['rep']} | {p['steps']} | {r['transfers']} | {p['lower_bound']:.2f} | {p['model']:.2f} | "
                f"{_f(p.get('model_beta_hat'))} | {p['simulated']:.2f} | **{m['measured']:.2f}** | {m['measured'] / p['model']:.3f} | "
                f"{m['measured'] / p['simulated']:.3f} | {_f(max(errs) if errs else None, '{:.1%}')} | {_f(gap and gap * 1e3, '{:.1f}')} | {cpu} | {m['load_before'][0]:.1f} |"
            )
        out.append("")
        out.append(
            "| pattern | brute force s | GGP s | OGGP s | GGP gain measured | OGGP gain measured | GGP gain model (β) | GGP gain model (β̂) | GGP gain fluid sim |"
        )
        out.append("|---" * 9 + "|")
        for row in mode["gains"]:
            out.append(
                f"| {row['pattern']} | {row['brute_force']:.2f} | {_f(row.get('ggp'))} | {_f(row.get('oggp'))} | {_f(row.get('ggp_gain_measured'), '{:+.1%}')} | "
                f"{_f(row.get('oggp_gain_measured'), '{:+.1%}')} | {_f(row.get('ggp_gain_model'), '{:+.1%}')} | {_f(row.get('ggp_gain_model_beta_hat'), '{:+.1%}')} | "
                f"{_f(row.get('ggp_gain_simulated'), '{:+.1%}')} |"
            )
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------- main
def _interrupt(signum, frame):
    """SIGTERM ends the script like Ctrl-C, so the finally clauses take the testbed down."""
    raise KeyboardInterrupt(f"signal {signum}")


def clusters(topo) -> tuple[list[str], list[str]]:
    """Senders (first half of the hosts) and receivers (second half)."""
    half = len(topo.hosts) // 2
    return list(topo.hosts[:half]), list(topo.hosts[half:])


def run_mode(links: str, topo, args, chunk: int) -> dict:
    topo_eff = scale_topology(topo, args.goodput)
    senders, receivers = clusters(topo)
    plat = resolve_platform(
        Redistribution(np.ones((len(senders), len(receivers)), dtype=np.int64), senders, receivers), topo_eff
    )
    mode = {
        "links": links,
        "topology": topo.name,
        "goodput": args.goodput,
        "chunk_size": chunk,
        "nic_eff": plat.nic,
        "k": plat.k,
        "runs": [],
        "patterns": [],
    }
    name = f"{args.name}-{links}"  # testbed names: letters, digits, - and _
    print(f"[{links}] testbed up: {name}", file=sys.stderr, flush=True)
    queue = args.queue if links == "fifo" else None
    mode["queue"] = queue
    if queue:
        mode["links"] = links = f"fifo, {queue * 1e3:g} ms queues"
    st = up(topo, name=name, fair=(links == "fair"), queue=queue)
    try:
        for w in st.warnings:
            print(f"warning: {w}", file=sys.stderr)
        beta_hat = None
        if args.probe_steps:
            pr = probe_beta(topo, st, plat.k, int(args.probe_bytes), args.probe_steps, chunk, plat.nic)
            mode["beta_probe"] = pr
            beta_hat = pr["beta_hat"]
            print(
                f"[{links}] beta probe: {pr['measured']:.3f} s for {args.probe_steps} steps, beta-hat {_f(beta_hat and beta_hat * 1e3)} ms",
                file=sys.stderr,
                flush=True,
            )
        for pat in make_patterns(topo, plat.k, args):
            req = pat["request"]
            mode["patterns"].append(
                {
                    "name": pat["name"],
                    "what": pat["what"],
                    "matrix": req.matrix.tolist(),
                    "senders": list(req.senders),
                    "receivers": list(req.receivers),
                    "total_bytes": req.total,
                }
            )
            plans = {s: plan_of(s, topo, req) for s in args.schedules}
            preds = {}
            for s, plan in plans.items():
                check_plan(plan, topo)
                preds[s] = predictions(plan, req, topo_eff, beta_hat)
            for rep in range(args.repeat):
                order = list(args.schedules)
                order = order[rep % len(order) :] + order[: rep % len(order)]  # rotate: no schedule always runs first
                for s in order:
                    print(
                        f"[{links}] {pat['name']} {s} rep {rep}: model {preds[s]['model']:.2f} s ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    rec = run_plan(plans[s], topo, st, chunk, 60 + 5 * preds[s]["model"], plat.nic)
                    print(
                        f"[{links}]   measured {rec['measured']:.3f} s (sim {preds[s]['simulated']:.3f}){' FAILED ' + str(rec['failed']) if rec['failed'] else ''}"
                        f"{' CPU? ' + rec['cpu_bound'] if rec['cpu_bound'] else ''}",
                        file=sys.stderr,
                        flush=True,
                    )
                    mode["runs"].append(
                        {
                            "pattern": pat["name"],
                            "schedule": s,
                            "rep": rep,
                            "transfers": len(plans[s].transfers),
                            "predicted": preds[s],
                            "run": rec,
                        }
                    )
    finally:
        removed = down(st.name)
        print(f"[{links}] testbed down: {len(removed)} namespaces removed", file=sys.stderr, flush=True)
    mode["gains"] = gains(mode["runs"])
    return mode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="builtin:redistribution-2x8")
    ap.add_argument(
        "--name", default=f"redist-real-{os.getpid()}", help="testbed name prefix (unique: default uses the PID)"
    )
    ap.add_argument(
        "--links",
        nargs="+",
        choices=("fifo", "fair"),
        default=["fifo"],
        help="fifo: one FIFO per link direction (default); fair: per-flow fair links (testbed --fair)",
    )
    ap.add_argument("--fair", action="store_true", help="same as --links fair")
    ap.add_argument(
        "--queue",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fifo links: leaf queue of every link direction in seconds of its rate (bfifo; default: the "
        "kernel's pfifo of txqueuelen packets). Shallow queues (switch-like buffers) drop packets",
    )
    ap.add_argument(
        "--x", type=float, nargs="+", default=[20, 50, 80], help="the paper's x (MB): sizes U[10, x] MB before --scale"
    )
    ap.add_argument(
        "--scale",
        type=float,
        default=0.25,
        help="multiply the paper's sizes by this (default 0.25: a run takes seconds)",
    )
    ap.add_argument("--messages", type=int, default=24, help="messages per random pattern (default 24 on 8 x 8 hosts)")
    ap.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[6, 24],
        help="random patterns' seeds (default 6 and 24: on 8 x 8 hosts, 24 messages, the fair-sharing model "
        "predicts scheduling gains of 4.5 %% (the median of seeds 1-30) and 13.8 %% (their largest) at x = 80 MB)",
    )
    ap.add_argument("--fig2-unit", type=parse_size, default="20MB", help="Fig. 2 unit in bytes (0: skip the pattern)")
    ap.add_argument("--beta", type=float, default=0.0, help="beta (s) the schedules are planned with (default 0)")
    ap.add_argument("--schedules", nargs="+", choices=SCHEDULES, default=list(SCHEDULES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--probe-steps", type=int, default=20, help="beta probe: steps (0: skip)")
    ap.add_argument("--probe-bytes", type=parse_size, default="1MB", help="beta probe: bytes per transfer")
    ap.add_argument("--chunk-size", type=parse_size, default=str(DEFAULT_CHUNK))
    ap.add_argument(
        "--goodput",
        type=float,
        default=GOODPUT_TESTBED,
        help=f"TCP goodput / HTB rate for the predictions (default {GOODPUT_TESTBED})",
    )
    ap.add_argument("--json", default=None, help="write every number here")
    ap.add_argument(
        "--render", default=None, metavar="JSON", help="only print the markdown tables of an earlier --json file"
    )
    args = ap.parse_args(argv)
    if args.render:
        print(render_markdown(json.loads(Path(args.render).read_text())))
        return 0
    if os.geteuid() != 0:
        print("bench_redistribution_real: needs root (emulated network: namespaces, tc)", file=sys.stderr)
        return 2
    if args.fair and "fair" not in args.links:
        args.links = list(args.links) + ["fair"] if args.links != ["fifo"] else ["fair"]
    signal.signal(signal.SIGTERM, _interrupt)
    topo = load_topology(args.topology)
    everything = {
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "beta": args.beta,
        "scale": args.scale,
        "x": args.x,
        "messages": args.messages,
        "seeds": args.seeds,
        "paper_gains": PAPER,
        "cpus": os.cpu_count(),
        "modes": [],
    }
    for links in args.links:
        mode = run_mode(links, topo, args, int(args.chunk_size))
        everything["modes"].append(mode)
        report(mode)
        if args.json:  # after every mode: a cut session keeps what was measured
            Path(args.json).write_text(json.dumps(everything, indent=1, default=lambda x: None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
