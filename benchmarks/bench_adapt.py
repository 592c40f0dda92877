"""Runs that follow the network (``run --adapt``) on the emulated network (root).

For each network (``builtin:hetero-2switch``, a random tree of ``--hosts`` hosts drawn with a
fresh seed, printed), ``--size`` bytes, planner ``--algorithm`` (default stable), fair uplink
and goodput 0.9 as ``run --launcher testbed``:

* **nothing changes**: the run without and with ``--adapt`` (cost, and re-plans: none expected);
* **a link drops**: at a quarter of the unchanged run's makespan, one link drops to a fifth of
  its rate in the direction the plan uses (``testbed set-rate --one-way``; both directions of
  a tree's link cut the hosts behind it off whatever the plan): without ``--adapt``, with it,
  and a run
  planned from the start on the changed network (the link slow from the start). The link is
  the one, among those the plan's transfers to its last host cross, whose drop a new plan is
  predicted to recover from best (the simulator decides before any run; printed);
* **background traffic**: TCP flows at half the rate of the busiest switch-to-switch link (or
  host link on a switchless tree), in the plan's direction, for the whole run: without
  ``--adapt``, with it, and a plan made for the residual capacity (same traffic).
* **events** (``--events FRACTION:A-B:FACTOR,...``): the link changes given, each at a fraction
  of the unchanged run's makespan (one way, A -> B, to FACTOR of its rate; 1 restores it):
  a drop off the busiest path, two drops, a drop that recovers; without ``--adapt`` and with.

Every run holds ``/tmp/topocast-bench.lock``. Figures: makespans, re-plans, the ratios the
targets name (docs/guide.md, "Runs that follow the network")::

    PYTHONPATH=src python benchmarks/bench_adapt.py --size 256MiB [--seed N] [--only hetero]
        [--parts unchanged,drop,traffic,events] [--events 0.25:h5-sw2:0.2,0.6:h5-sw2:1] [--repeat N]

Without ``unchanged``, the drop comes at a quarter of the predicted makespan.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import os
import random
import signal
import sys
import threading
import time
import uuid

from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.runtime import perform
from topocast.runtime.adapt import continue_from, predicted_holdings
from topocast.runtime.calibration import GOODPUT_TESTBED, scale_caps
from topocast.runtime.calibration import scale_topology as scale
from topocast.runtime.launchers import TestbedLauncher
from topocast.sim import simulate
from topocast.testbed import down, up
from topocast.testbed.live import Traffic, set_rate
from topocast.topology import load_topology
from topocast.topology.generators import random_tree
from topocast.units import parse_size

CHUNK = 64 * 1024
LOCK = "/tmp/topocast-bench.lock"


def with_rate(topo, a: str, b: str, factor: float, one_way: bool = False):
    """``topo`` with the link a-b at ``factor`` of its rate (only a -> b when ``one_way``)."""
    links = []
    for pl in topo.physical_links:
        if {pl.a, pl.b} != {a, b}:
            links.append(pl)
        elif not one_way:
            back = None if pl.bandwidth_ba is None else pl.bandwidth_ba * factor
            links.append(dataclasses.replace(pl, bandwidth=pl.bandwidth * factor, bandwidth_ba=back))
        elif pl.a == a:
            links.append(dataclasses.replace(pl, bandwidth=pl.bandwidth * factor, bandwidth_ba=pl.reverse_bandwidth))
        else:
            links.append(dataclasses.replace(pl, bandwidth_ba=pl.reverse_bandwidth * factor))
    return topo.replace(links=links)


class Bench:
    forced_drop: tuple[str, str] | None = None  # --drop A-B: that link direction, not the pick
    events = ""  # --events: the link changes of the ``events`` part

    def __init__(self, topo, size: int, algorithm: str):
        self.topo, self.size = topo, size
        self.info = get_planner("broadcast", algorithm)
        self.source = topo.hosts[0]

    def planner(self, topo):
        plan = self.info(topo, Broadcast(self.source, self.size))
        return scale_caps(plan, GOODPUT_TESTBED).with_chunk_size(CHUNK)

    def predict(self, plan, topo) -> float:
        return simulate(plan, scale_topology(topo), chunk_size=CHUNK).makespan

    def pick_drop(self, plan):
        """The link direction, on the paths to the plan's last host (its busiest path), whose
        drop to a fifth at a quarter of the run a new plan is predicted to recover from best:
        the rest of the old plan and of a new one, both from what every host holds then
        (each transfer taken as steady between its predicted start and end). One direction:
        a link dropping both ways in a tree cuts the hosts behind it off at the same rate
        whatever the plan; among links alike, the one the plan's transfers load most.
        Returns (predicted gain, a, b, without, re-planned at once, rate), makespans in
        seconds."""
        only = self.forced_drop
        res = simulate(plan, scale_topology(self.topo), chunk_size=CHUNK)
        at = res.makespan / 4
        held = predicted_holdings(plan, res.transfer_times, at)
        done = {i for i, (_, end) in enumerate(res.transfer_times) if end <= at}
        last = max(res.per_host, key=lambda h: res.per_host[h].time)
        hosts, frontier = {last}, [last]
        while frontier:
            h = frontier.pop()
            for t in plan.transfers:
                if t.dst == h and t.src not in hosts:
                    hosts.add(t.src)
                    frontier.append(t.src)
        links = set()
        for t in plan.transfers:
            if t.dst in hosts or only:
                links.update(self.topo.route(t.src, t.dst))
        carried = {i: 0 for i in links}  # ties (no gain anywhere) go to the link the plan loads most
        for t in plan.transfers:
            for i in self.topo.route(t.src, t.dst):
                if i in carried:
                    carried[i] += t.nbytes
        best, key = None, None
        for i in sorted(links):
            link = self.topo.links[i]
            if self.source in (link.src, link.dst) or (only and (link.src, link.dst) != only):
                continue  # the source's own link: no plan can route around it
            changed = with_rate(self.topo, link.src, link.dst, 0.2, one_way=True)
            old = at + self.predict(continue_from(plan, held, done), changed)
            new = at + self.predict(continue_from(self.planner(changed), held, set()), changed)
            if key is None or (round(old / new, 2), carried[i]) > key:
                key = (round(old / new, 2), carried[i])
                best = (old / new, link.src, link.dst, old, new, link.bandwidth)
        if best is None and only:
            raise SystemExit(
                f"bench_adapt: --drop {'-'.join(only)}: no link {only[0]} -> {only[1]} that a transfer of the plan "
                f"crosses, other than the source's own (expected A-B, two adjacent nodes of the network)"
            )
        return best

    def pick_traffic(self, plan):
        """The busiest switch-to-switch link of the plan (or host link), and two hosts whose
        route crosses it in the plan's direction."""
        load: dict[int, float] = {}
        for t in plan.transfers:
            for i in self.topo.route(t.src, t.dst):
                load[i] = load.get(i, 0.0) + t.nbytes
        sw = set(self.topo.switches)
        order = sorted(load, key=lambda i: -load[i])
        pick = next((i for i in order if self.topo.links[i].src in sw and self.topo.links[i].dst in sw), order[0])
        link = self.topo.links[pick]
        for a in self.topo.hosts:
            for b in self.topo.hosts:
                if a != b and a != self.source and pick in self.topo.route(a, b):
                    return link, a, b
        return link, None, None


def scale_topology(topo):
    return scale(topo, GOODPUT_TESTBED)


def run_once(st, topo, plan, *, adapt=False, planner=None, changes=(), traffic=None) -> tuple[float, list, dict]:
    """One run under the lock; ``changes``: (seconds, a, b, rate) each, applied while it runs
    (one way, a -> b); ``traffic``: (a, b, rate) running for the whole run."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        flows = Traffic(st, *traffic[:2], rate=traffic[2], flows=2).start() if traffic else None
        if flows:
            time.sleep(2.0)
        timers: list[threading.Timer] = []
        cpu_at_start: list[float] = []

        def on_start(_procs):
            cpu_at_start.append(_own_cpu())
            for at, a, b, rate in changes:
                timers.append(threading.Timer(at, set_rate, args=(st, a, b, rate), kwargs={"one_way": True}))
                timers[-1].start()

        try:
            out = perform(
                plan,
                topo,
                launcher=TestbedLauncher(st),
                fair_uplink=True,
                goodput=GOODPUT_TESTBED,
                chunk_size=CHUNK,
                adapt=adapt,
                planner=planner,
                on_start=on_start,
            )
        finally:
            for timer in timers:
                timer.join()
            if flows:
                flows.stop()
    RUN_CPU.update(
        coordinator=_own_cpu() - cpu_at_start[0] if cpu_at_start else float("nan"),
        agents=sum(out.cpu.values()),
        busy=out.cpu_busy,
    )
    return out.result.makespan, out.replans, out.failed


RUN_CPU: dict[str, float] = {}  # the last run's CPU seconds: the coordinator's from the start on, the agents'


def _own_cpu() -> float:
    """This process's CPU seconds (user + system), every thread."""
    t = os.times()
    return t.user + t.system


def _cpu_note() -> str:
    c = RUN_CPU
    return f"coordinator {c['coordinator']:.2f} s CPU, agents {c['agents']:.1f} s, machine busy {c['busy'] or 0:.0%}"


def scenario(name: str, topo, size: int, algorithm: str, parts: set[str], repeat: int) -> None:
    bench = Bench(topo, size, algorithm)
    plan = bench.planner(topo)
    tb = f"ad{uuid.uuid4().hex[:6]}"
    st = up(topo, name=tb)
    try:
        pred = bench.predict(plan, topo)
        print(f"\n== {name}: {len(topo.hosts)} hosts, {size} bytes, {algorithm}; predicted {pred:.2f} s; {_load()}")
        for k in range(repeat):
            print(f"-- repeat {k + 1} of {repeat}")
            base = pred
            if "unchanged" in parts:
                base = unchanged(st, topo, plan, bench, adapt_first=k % 2 == 1)
            if "drop" in parts:
                drop(st, topo, plan, bench, base)
            if "traffic" in parts:
                background(st, topo, plan, bench)
            if "events" in parts:
                events(st, topo, plan, bench, base, Bench.events)
    finally:
        down(tb)
        print(f"# {_load()}")


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def unchanged(st, topo, plan, bench, adapt_first: bool = False) -> float:
    """Nothing changes: the run without and with ``--adapt`` (in that order, or the other way
    round when ``adapt_first``: repeats alternate, so a load that drifts does not favour one
    side); returns the makespan without."""
    if adapt_first:
        based, r1, f1 = run_once(st, topo, plan, adapt=True, planner=bench.planner)
        cpu_with = _cpu_note()
        base, r0, f0 = run_once(st, topo, plan)
        cpu_without = _cpu_note()
    else:
        base, r0, f0 = run_once(st, topo, plan)
        cpu_without = _cpu_note()
        based, r1, f1 = run_once(st, topo, plan, adapt=True, planner=bench.planner)
        cpu_with = _cpu_note()
    print(
        f"nothing changes: {base:.2f} s without --adapt, {based:.2f} s with (cost {based / base - 1:+.1%}, "
        f"target <= 3 %); re-plans {sum(r['applied'] for r in r1)} (decisions {len(r1)}; target 0); "
        f"failed {f0 or f1 or 'none'}; {'adapt first' if adapt_first else 'adapt second'}; {_load()}"
    )
    print(f"  CPU without: {cpu_without}; with: {cpu_with}")
    _print_decisions(r1)
    return base


def drop(st, topo, plan, bench, base: float) -> None:
    """A link on the paths to the plan's last host drops to a fifth at a quarter of ``base``:
    without ``--adapt``, with it, and planned on the changed network from the start."""
    gain, a, b, old, new, rate = bench.pick_drop(plan)
    at = base / 4
    print(
        f"drop: link {a}->{b} {rate * 8e-6:.0f} -> {rate * 0.2 * 8e-6:.0f} Mbit/s at {at:.2f} s "
        f"(predicted: without --adapt {old:.2f} s, re-planned at once {new:.2f} s, {gain:.2f}x)"
    )
    change = (at, a, b, rate * 0.2)
    try:
        slow, _, f2 = run_once(st, topo, plan, changes=[change])
    finally:
        set_rate(st, a, b, rate, one_way=True)
    try:
        fast, reps, f3 = run_once(st, topo, plan, adapt=True, planner=bench.planner, changes=[change])
    finally:
        set_rate(st, a, b, rate, one_way=True)
    changed = with_rate(topo, a, b, 0.2, one_way=True)
    set_rate(st, a, b, rate * 0.2, one_way=True)
    try:
        ref, _, f4 = run_once(st, changed, bench.planner(changed))
    finally:
        set_rate(st, a, b, rate, one_way=True)
    after_ref = ref * (1 - at / base)
    print(
        f"  without --adapt {slow:.2f} s, with {fast:.2f} s: {slow / fast:.2f}x sooner (target >= 1.5); "
        f"planned on the changed network from the start {ref:.2f} s ({slow / ref:.2f}x sooner than without; "
        f"a re-plan from what the hosts hold at the drop can do better)"
    )
    print(
        f"  after the change: adapt {fast - at:.2f} s vs {after_ref:.2f} s for the changed plan's "
        f"remaining share ({(fast - at) / after_ref - 1:+.0%}; target within 20 %); "
        f"failed {f2 or f3 or f4 or 'none'}; {_load()}"
    )
    _print_decisions(reps)


def events(st, topo, plan, bench, base: float, spec: str) -> None:
    """The link changes ``spec`` (``FRACTION:A-B:FACTOR,...``: at FRACTION of ``base``, the
    direction A -> B at FACTOR of its rate in the topology; 1 restores it), without and with
    ``--adapt``: makespans, whether every host verified, every decision."""
    changes, rates = [], {}
    for item in spec.split(","):
        try:
            frac, ab, factor = item.split(":")
            a, b = ab.split("-")
            link = next(lk for lk in topo.links if (lk.src, lk.dst) == (a, b))
            changes.append((float(frac) * base, a, b, link.bandwidth * float(factor)))
        except (ValueError, StopIteration):
            raise SystemExit(
                f"bench_adapt: --events {item!r}: expected FRACTION:A-B:FACTOR with A-B a link of the network"
            ) from None
        rates[(a, b)] = link.bandwidth
    print("events: " + ", ".join(f"{at:.2f} s {a}->{b} {r * 8e-6:.1f} Mbit/s" for at, a, b, r in changes))
    for adapt in (False, True):
        try:
            t, reps, failed = run_once(
                st, topo, plan, adapt=adapt, planner=bench.planner if adapt else None, changes=changes
            )
        finally:
            for (a, b), rate in rates.items():
                set_rate(st, a, b, rate, one_way=True)
        print(
            f"  {'with' if adapt else 'without'} --adapt: {t:.2f} s, "
            f"{f'failed {failed}, the others verified' if failed else 'every host verified'} the whole message; "
            f"decisions {len(reps)}, re-plans {sum(r['applied'] for r in reps)}; {_load()}"
        )
        _print_decisions(reps)


def _print_decisions(reps) -> None:
    for r in reps:
        what = ", ".join(f"{c['link']} -> {c['new_bit_s'] / 1e6:.1f} Mbit/s" for c in r["changed"])
        probed = "; ".join(f"probe {p.get('measured_bit_s')} chose {p.get('chosen', '-')}" for p in r.get("probe", ()))
        print(f"  decision at {r['time']:.2f} s: {what or '-'}; {r['outcome']}{'; ' + probed if probed else ''}")


def background(st, topo, plan, bench) -> None:
    """TCP flows at half the busiest inter-switch link's rate for the whole run: without
    ``--adapt``, with it, and a plan made for the residual capacity."""
    link, ta, tb_host = bench.pick_traffic(plan)
    if ta is None:
        print("traffic: no pair of hosts crosses the busiest link; skipped")
        return
    half = link.bandwidth / 2
    traffic = (ta, tb_host, half)
    residual = with_rate(topo, link.src, link.dst, 0.5)
    t_plain, _, f5 = run_once(st, topo, plan, traffic=traffic)
    t_adapt, reps, f6 = run_once(st, topo, plan, adapt=True, planner=bench.planner, traffic=traffic)
    t_res, _, f7 = run_once(st, topo, bench.planner(residual), traffic=traffic)
    print(
        f"traffic {ta}->{tb_host} at {half * 8e-6:.0f} Mbit/s over {link.src}->{link.dst}: without --adapt "
        f"{t_plain:.2f} s, with {t_adapt:.2f} s, plan for the residual capacity {t_res:.2f} s "
        f"(adapt {t_adapt / t_res - 1:+.0%}; target within 20 %); re-plans {sum(r['applied'] for r in reps)}; "
        f"failed {f5 or f6 or f7 or 'none'}; {_load()}"
    )


def predicted(name: str, topo, size: int, algorithm: str) -> None:
    """The simulator's view of the drop scenario (no run, no root)."""
    bench = Bench(topo, size, algorithm)
    plan = bench.planner(topo)
    gain, a, b, old, new, rate = bench.pick_drop(plan)
    print(
        f"{name}: unchanged {bench.predict(plan, topo):.2f} s; drop {a}->{b} to a fifth at a quarter: "
        f"without --adapt {old:.2f} s, re-planned at once {new:.2f} s ({gain:.2f}x)"
    )


def main() -> int:
    # SIGTERM unwinds like an error, so that every testbed brought up is brought down
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="32MiB")
    ap.add_argument("--algorithm", default="stable")
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--seed", type=int, default=None, help="random tree (default: drawn now, printed)")
    ap.add_argument("--only", choices=("hetero", "tree"), default=None)
    ap.add_argument("--sustain", type=float, default=None, help="seconds slow before a decision (adapt.SUSTAIN)")
    ap.add_argument(
        "--parts", default="unchanged,drop,traffic", help="comma-separated: unchanged, drop, traffic, events"
    )
    ap.add_argument(
        "--events",
        default="",
        help="FRACTION:A-B:FACTOR,...: the events part's link changes (at FRACTION of the makespan, A->B at "
        "FACTOR of its rate; 1 restores it)",
    )
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--drop", default=None, help="A-B: drop this link direction (default: picked, see Bench.pick_drop)")
    ap.add_argument("--predict-only", action="store_true", help="the simulator's figures for the drop, no run")
    args = ap.parse_args()
    if args.sustain is not None:
        from topocast.runtime import adapt

        adapt.SUSTAIN = args.sustain
    if args.drop:
        a, _, b = args.drop.partition("-")
        Bench.forced_drop = (a, b)
    if args.predict_only:
        seed = args.seed if args.seed is not None else random.randrange(1 << 20)
        size = int(parse_size(args.size))
        if args.only in (None, "hetero"):
            predicted("builtin:hetero-2switch", load_topology("builtin:hetero-2switch"), size, args.algorithm)
        if args.only in (None, "tree"):
            topo = random_tree(args.hosts, max(2, args.hosts // 4), min_mbit=20, max_mbit=200, seed=seed, name="rt")
            predicted(f"random tree, seed {seed}", topo, size, args.algorithm)
        return 0
    if os.geteuid() != 0:
        print("bench_adapt: needs root (the emulated network)", file=sys.stderr)
        return 2
    size = int(parse_size(args.size))
    parts = set(args.parts.split(","))
    if not parts <= {"unchanged", "drop", "traffic", "events"}:
        ap.error(f"--parts: expected unchanged, drop, traffic, events, not {args.parts!r}")
    if ("events" in parts) != bool(args.events):
        ap.error("--events and the events part go together (--parts ...,events --events FRACTION:A-B:FACTOR,...)")
    Bench.events = args.events
    seed = args.seed if args.seed is not None else random.randrange(1 << 20)
    print(f"seed {seed}")
    if args.only in (None, "hetero"):
        scenario(
            "builtin:hetero-2switch", load_topology("builtin:hetero-2switch"), size, args.algorithm, parts, args.repeat
        )
    if args.only in (None, "tree"):
        n = args.hosts
        topo = random_tree(n, max(2, n // 4), min_mbit=20, max_mbit=200, seed=seed, name=f"rt{n}s{seed}")
        scenario(f"random tree {n} hosts, seed {seed}", topo, size, args.algorithm, parts, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
