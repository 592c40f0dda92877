"""Planning and simulation at scale: every figure of docs/performance.md, "Planning and
simulation at scale", with the machine load beside each.

Parts (``--parts``, default all; run each under the shared lock on a shared machine):

* ``compare1k``: random tree, 1,000 hosts, symmetric and asymmetric: ``topocast compare
  --algorithms stable`` and ``topocast compare`` (every default broadcast planner), each a
  whole process (interpreter start, imports, topology file, bound, plans, simulations); a
  compare still running after ``--compare-timeout`` seconds is stopped and reported as such;
* ``tree10k``: the same generator at 10,000 hosts: ``topocast simulate -a stable`` and
  ``-a optimal`` (plan + check + simulate), whole process, with peak RSS;
* ``cluster100k``: 100,000 hosts in the multi-cluster generator (2,000 clusters), as JSON:
  ``topocast simulate -a flat / depth_first / stable``;
* ``g5k``: the 1,528-host SimGrid platform ``DATA/simgrid/g5k.xml`` (``--data``): ``topocast
  compare`` with every default broadcast planner (stopped after ``--compare-timeout``);
* ``simgrid``: one flow set simulated by topocast and by SimGrid 3.32 (CM02, TCP-gamma 0,
  cross traffic off: latency-weighted max-min; every route has the same latency, so the
  weights are equal and the two models coincide), times and ratio;
* ``scaling``: plan time, simulate time and peak RSS against hosts (random tree,
  symmetric) for each planner, and the log-log plot ``--plot``;
* ``plan1k``: planning time alone of every default broadcast planner (no simulation), random
  tree, 1,000 hosts, symmetric and asymmetric, each in its own process stopped after
  ``--plan-timeout`` seconds, with the plan's number of transfers;
* ``perplanner``: what each default broadcast planner costs inside ``topocast compare`` on the
  1,000-host random trees and ``g5k.xml``: load, plan, check and simulate seconds, each planner
  in its own process stopped after ``--plan-timeout`` seconds;
* ``plan100k``: the 100,000-host multi-cluster network (YAML and JSON): loading seconds, and
  planning seconds and transfers of ``flat``, ``depth_first`` and ``stable`` (no simulation).

Networks come from the project's generator (``topocast topology generate random-tree --hosts N
--switches N/4 --min-mbit 100 --max-mbit 1000 [--asymmetric] --seed 1``), written to
``--work``. Timings are wall-clock seconds of a child process; peak RSS is that child's
``ru_maxrss`` (os.wait4). Every timing is repeated ``--repeat`` times: min / median / max.

    PYTHONPATH=src python benchmarks/bench_scale.py [--parts compare1k,tree10k,...] [--repeat 3]
        [--work /tmp/topocast-scale] [--plot docs/scale.png] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# real topologies: a folder beside the repository by default (docs/topology.md says where to get them)
DATA = ROOT.parent / "shared" / "data"
G5K = DATA / "simgrid" / "g5k.xml"
SIMGRID_PYTHON = "/usr/bin/python3"
PARTS = ("compare1k", "tree10k", "cluster100k", "g5k", "simgrid", "scaling", "plan1k", "perplanner", "plan100k")
SCALING_HOSTS = (100, 300, 1000, 3000, 10000)
SCALING_PLANNERS = ("flat", "depth_first", "fpfr", "stable", "optimal", "balanced_multicast")


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def timed(argv: list[str], timeout: float | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of ``argv`` run as a child (os.wait4 for its rusage);
    a child still running after ``timeout`` seconds is killed (``subprocess.TimeoutExpired``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # read the pipes in threads so a chatty child never blocks, then reap it with wait4
    chunks: dict[str, str] = {}

    def drain(name, stream):
        chunks[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for th in threads:
        th.start()
    killer = threading.Timer(timeout, proc.kill) if timeout else None
    if killer is not None:
        killer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if killer is not None:
        killer.cancel()
    for th in threads:
        th.join()
    if timeout and wall >= timeout:
        raise subprocess.TimeoutExpired(argv, timeout)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {chunks.get('err', '').strip()[-600:]}")
    return wall, usage.ru_maxrss / 1024.0, chunks.get("out", "")


def repeated(argv: list[str], repeat: int, timeout: float | None = None) -> dict:
    walls, rss, out = [], [], ""
    for _ in range(repeat):
        w, r, out = timed(argv, timeout)
        walls.append(w)
        rss.append(r)
    return {
        "min": min(walls),
        "median": statistics.median(walls),
        "max": max(walls),
        "peak_rss_mib": max(rss),
        "load": load(),
        "out": out,
    }


def fmt(r: dict) -> str:
    return (
        f"{r['min']:7.2f} s  (median {r['median']:.2f}, max {r['max']:.2f})  "
        f"peak RSS {r['peak_rss_mib']:7.0f} MiB  [{r['load']}]"
    )


def topocast(*args) -> list[str]:
    return [sys.executable, "-m", "topocast.cli.main", *map(str, args)]


def random_tree_file(work: Path, hosts: int, asymmetric: bool) -> Path:
    path = work / f"rt{hosts}{'-asym' if asymmetric else ''}.yaml"
    if not path.exists():
        cmd = topocast(
            "topology", "generate", "random-tree", "--hosts", hosts, "--switches", max(1, hosts // 4),
            "--min-mbit", 100, "--max-mbit", 1000, *(["--asymmetric"] if asymmetric else []),
            "--seed", 1, "-o", path,
        )  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
    return path


def cluster_file(work: Path, hosts: int, suffix: str = ".yaml") -> Path:
    path = work / f"mc{hosts}{suffix}"
    if not path.exists():
        cmd = topocast(
            "topology", "generate", "multi-cluster", "--hosts", hosts, "--clusters", hosts // 50,
            "--bandwidth", "uniform-100-1000", "--seed", 1, "-o", path,
        )  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
    return path


def target(figure: float, goal: float) -> str:
    return f"target < {goal:g} s: {'met' if figure < goal else f'MISSED by {figure - goal:.2f} s'}"


# --------------------------------------------------------------------------- parts
def part_compare1k(work: Path, repeat: int, report: dict, timeout: float | None = None) -> None:
    print("== random tree, 1,000 hosts: topocast compare, whole process")
    for asym in (False, True):
        f = random_tree_file(work, 1000, asym)
        name = "asymmetric" if asym else "symmetric"
        r = repeated(topocast("compare", f, "--algorithms", "stable", "--json"), repeat)
        of_bound = json.loads(r.pop("out"))["results"][0]["of_bound"]
        print(f"  {name:10s} --algorithms stable     {fmt(r)}  of bound {of_bound:.4f}  {target(r['min'], 3)}")
        report[f"compare_stable_1000_{name}"] = {**r, "of_bound": of_bound}
        try:
            r = repeated(topocast("compare", f, "--json"), max(1, repeat - 1), timeout)
        except subprocess.TimeoutExpired:
            print(f"  {name:10s} every default planner stopped after {timeout:g} s  [{load()}]  target < 30 s: MISSED")
            report[f"compare_all_1000_{name}"] = {"over_s": timeout, "load": load()}
            continue
        data = json.loads(r.pop("out"))
        print(f"  {name:10s} every default planner {fmt(r)}  {target(r['min'], 30)}")
        if data["errors"]:
            print(f"    errors: {data['errors']}")
        report[f"compare_all_1000_{name}"] = {**r, "planners": len(data["results"]), "errors": data["errors"]}


def part_tree10k(work: Path, repeat: int, report: dict) -> None:
    print("== random tree, 10,000 hosts: topocast simulate (plan + check + simulate), whole process")
    for asym in (False, True):
        f = random_tree_file(work, 10000, asym)
        name = "asymmetric" if asym else "symmetric"
        for planner, goal in (("stable", 30), ("optimal", 60)):
            r = repeated(topocast("simulate", f, "-a", planner, "--json"), repeat)
            r.pop("out")
            mem = "met" if r["peak_rss_mib"] < 4096 else "MISSED"
            extra = f"  < 4 GiB: {mem}" if planner == "stable" else ""
            print(f"  {name:10s} {planner:8s} {fmt(r)}  {target(r['min'], goal)}{extra}")
            report[f"simulate_{planner}_10000_{name}"] = r


#: --rate-tolerance of stable on the 100,000-host multi-cluster network (docs/guide.md).
BIG_TOLERANCE = "0.05"


def part_cluster100k(work: Path, repeat: int, report: dict) -> None:
    print("== multi-cluster, 100,000 hosts (2,000 clusters, uniform 100-1000 Mbit/s): topocast simulate (JSON)")
    f = cluster_file(work, 100000, ".json")  # the YAML file alone takes seconds to load (plan100k)
    for planner in ("flat", "depth_first", "stable"):
        # 271 bandwidth levels: the default tolerance (1e-4 of each host's rate) keeps every
        # tree, a plan that does not fit in memory; 5 % per host keeps 42
        merge = ["--rate-tolerance", BIG_TOLERANCE] if planner == "stable" else []
        r = repeated(topocast("simulate", f, "-a", planner, "--json", *merge), repeat)
        r.pop("out")
        print(f"  {planner:12s} {fmt(r)}  {target(r['min'], 60)}")
        report[f"simulate_{planner}_100000"] = r


def part_g5k(work: Path, repeat: int, report: dict, timeout: float | None = None) -> None:
    print("== g5k.xml (SimGrid platform): topocast compare, every default broadcast planner")
    if not G5K.exists():
        print(f"  skipped: {G5K} not found")
        return
    try:
        r = repeated(topocast("compare", G5K, "--json"), repeat, timeout)
    except subprocess.TimeoutExpired:
        print(f"  every default planner stopped after {timeout:g} s  [{load()}]  target < 120 s: MISSED")
        report["compare_all_g5k"] = {"over_s": timeout, "load": load()}
        return
    data = json.loads(r.pop("out"))
    print(f"  {len(data['results'])} planners  {fmt(r)}  {target(r['min'], 120)}")
    if data["errors"]:
        print(f"    errors: {data['errors']}")
    report["compare_all_g5k"] = {**r, "planners": len(data["results"]), "errors": data["errors"]}


def _equal_latency(topo, latency: float):
    """``topo`` with ``latency`` on every host's link and none elsewhere: hosts are leaves, so
    every host-to-host route crosses two host links and has latency 2 x ``latency``."""
    from dataclasses import replace

    hosts = set(topo.hosts)
    links = [replace(pl, latency=latency if (pl.a in hosts or pl.b in hosts) else 0.0) for pl in topo.physical_links]
    return topo.replace(links=links)


def _flow_plan(topo, planner: str, size: int):
    """The planner's hops as flows that all start at time 0 (every sender holds the message)."""
    from topocast.plan import Broadcast, Plan, Transfer
    from topocast.planners import get_planner

    hops = get_planner("broadcast", planner)(topo, Broadcast(topo.hosts[0], size)).transfers
    whole = ((0, size),)
    transfers = [Transfer(t.src, t.dst, whole) for t in hops]
    initial = {t.src: whole for t in transfers}
    wanted = {t.dst: whole for t in transfers}
    return Plan("broadcast", size, transfers, initial, wanted, source=topo.hosts[0], planner=planner)


def part_simgrid(work: Path, repeat: int, report: dict) -> None:
    print("== beside SimGrid 3.32: one flow set, topocast simulate vs SimGrid's engine.run")
    from topocast.sim import simulate
    from topocast.topology import load_topology
    from topocast.topology.simgrid.export import save_simgrid

    if not Path(SIMGRID_PYTHON).exists():
        print(f"  skipped: {SIMGRID_PYTHON} not found")
        return
    topo = _equal_latency(load_topology(str(random_tree_file(work, 1000, False))), 1e-4)
    platform = work / "rt1000-equal-latency.xml"
    save_simgrid(topo, platform)
    size = 10**8
    for planner in ("flat", "depth_first"):
        plan = _flow_plan(topo, planner, size)
        spec = work / f"flows-{planner}.json"
        spec.write_text(
            json.dumps({"platform": str(platform), "flows": [[t.src, t.dst, size] for t in plan.transfers]})
        )
        ours, theirs = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            res = simulate(plan, topo)
            ours.append(time.perf_counter() - t0)
            _, _, out = timed([SIMGRID_PYTHON, str(Path(__file__).with_name("simgrid_flows.py")), str(spec)])
            sg = json.loads(out)
            theirs.append(sg["run_seconds"])
        done = [end for _, end in res.transfer_times]
        worst = max(abs(a - b) / b for a, b in zip(done, sg["times"]))
        a, b = min(ours), min(theirs)
        print(
            f"  {planner:12s} {len(plan.transfers):5d} flows  topocast {a:6.3f} s  SimGrid {b:6.3f} s  "
            f"SimGrid/topocast {b / a:5.2f}  completion times differ by at most {worst:.2e} (relative)  [{load()}]"
        )
        report[f"simgrid_{planner}"] = {
            "flows": len(plan.transfers),
            "topocast_s": ours,
            "simgrid_s": theirs,
            "max_relative_difference": worst,
            "load": load(),
        }


SCALING_CHILD = """
import json, sys, time
from topocast.plan.check import check_plan
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.sim import simulate
from topocast.topology import load_topology
topo = load_topology(sys.argv[1])
t0 = time.perf_counter()
kw = {"rate_tolerance": float(sys.argv[3])} if len(sys.argv) > 3 else {}
plan = get_planner("broadcast", sys.argv[2])(topo, Broadcast(topo.hosts[0], 10**9), **kw)
t1 = time.perf_counter()
check_plan(plan, topo)
t2 = time.perf_counter()
simulate(plan, topo)
t3 = time.perf_counter()
print(json.dumps({"plan": t1 - t0, "check": t2 - t1, "simulate": t3 - t2, "transfers": len(plan.transfers)}))
"""


def part_scaling(work: Path, repeat: int, report: dict, hosts=SCALING_HOSTS, planners=SCALING_PLANNERS) -> None:
    print("== scaling: random tree (symmetric), in-process plan / check / simulate seconds, peak RSS")
    rows = report.setdefault("scaling", [])
    for n in hosts:
        f = random_tree_file(work, n, False)
        for planner in planners:
            try:
                w, rss, out = timed([sys.executable, "-c", SCALING_CHILD, str(f), planner])
            except RuntimeError as exc:
                print(f"  {n:6d} {planner:18s} failed: {str(exc)[-200:]}")
                continue
            d = json.loads(out)
            row = {"hosts": n, "planner": planner, **d, "process": w, "peak_rss_mib": rss, "load": load()}
            rows.append(row)
            print(
                f"  {n:6d} {planner:18s} plan {d['plan']:7.2f}  check {d['check']:6.2f}  simulate {d['simulate']:7.2f}"
                f"  transfers {d['transfers']:7d}  process {w:7.2f} s  peak RSS {rss:6.0f} MiB  [{row['load']}]",
                flush=True,
            )


PLAN_CHILD = """
import json, sys, time
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.topology import load_topology
topo = load_topology(sys.argv[1])
t0 = time.perf_counter()
kw = {"rate_tolerance": float(sys.argv[3])} if len(sys.argv) > 3 else {}
plan = get_planner("broadcast", sys.argv[2])(topo, Broadcast(topo.hosts[0], 10**9), **kw)
print(json.dumps({"plan": time.perf_counter() - t0, "transfers": len(plan.transfers)}))
"""


def part_plan1k(work: Path, repeat: int, report: dict, timeout: float = 120.0) -> None:
    from topocast.planners import available_planners

    print(f"== random tree, 1,000 hosts: planning time alone, every default broadcast planner (stop at {timeout:g} s)")
    for asym in (False, True):
        f = random_tree_file(work, 1000, asym)
        name = "asymmetric" if asym else "symmetric"
        for info in available_planners("broadcast"):
            argv = [sys.executable, "-c", PLAN_CHILD, str(f), info.name]
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout
            except subprocess.TimeoutExpired:
                print(f"  {name:10s} {info.name:24s} over {timeout:g} s  [{load()}]", flush=True)
                report[f"plan_{info.name}_1000_{name}"] = {"over_s": timeout, "load": load()}
                continue
            except subprocess.CalledProcessError as exc:
                print(f"  {name:10s} {info.name:24s} failed: {exc.stderr.strip()[-200:]}", flush=True)
                continue
            d = json.loads(out)
            print(
                f"  {name:10s} {info.name:24s} plan {d['plan']:7.2f} s  transfers {d['transfers']:8d}  [{load()}]",
                flush=True,
            )
            report[f"plan_{info.name}_1000_{name}"] = {**d, "load": load()}


STEPS_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from topocast.plan.check import check_plan
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.sim import simulate
from topocast.topology import load_topology
topo = load_topology(sys.argv[1])
t1 = time.perf_counter()
kw = {"rate_tolerance": float(sys.argv[3])} if len(sys.argv) > 3 else {}
plan = get_planner("broadcast", sys.argv[2])(topo, Broadcast(topo.hosts[0], 10**9), **kw)
t2 = time.perf_counter()
out = {"load": t1 - t0, "plan": t2 - t1, "transfers": len(plan.transfers)}
print(json.dumps(out), flush=True)
check_plan(plan, topo)
t3 = time.perf_counter()
out["check"] = t3 - t2
print(json.dumps(out), flush=True)
simulate(plan, topo)
out["simulate"] = time.perf_counter() - t3
print(json.dumps(out), flush=True)
"""


def _steps(argv: list[str], timeout: float) -> tuple[dict, bool]:
    """The last JSON line a STEPS_CHILD printed, and whether it finished within ``timeout``."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True)
        out, done = proc.stdout, True
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        done = False
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), done


def part_perplanner(
    work: Path, repeat: int, report: dict, timeout: float = 120.0, only: str = "rt1000,rt1000-asym,g5k"
) -> None:
    from topocast.planners import available_planners

    print(f"== every default broadcast planner, each in its own process (stop at {timeout:g} s)")
    nets = [("rt1000", random_tree_file(work, 1000, False)), ("rt1000-asym", random_tree_file(work, 1000, True))]
    if G5K.exists():
        nets.append(("g5k", G5K))
    for net, f in [(n, f) for n, f in nets if n in only.split(",")]:
        total = 0.0
        for info in available_planners("broadcast", include_selectors=False):
            t0 = time.perf_counter()
            d, done = _steps([sys.executable, "-c", STEPS_CHILD, str(f), info.name], timeout)
            wall = time.perf_counter() - t0
            total += wall
            steps = "  ".join(f"{k} {d[k]:6.2f}" for k in ("load", "plan", "check", "simulate") if k in d)
            state = "" if done else f"  STOPPED at {timeout:g} s"
            print(
                f"  {net:11s} {info.name:24s} process {wall:7.2f} s  {steps}  transfers {d.get('transfers', '?')}"
                f"{state}  [{load()}]",
                flush=True,
            )
            report[f"perplanner_{net}_{info.name}"] = {**d, "process": wall, "finished": done, "load": load()}
        print(f"  {net:11s} sum of the processes {total:.1f} s (each pays its own start and loading)", flush=True)


def part_plan100k(work: Path, repeat: int, report: dict) -> None:
    print("== multi-cluster, 100,000 hosts: loading and planning (no simulation)")
    for f in (cluster_file(work, 100000), cluster_file(work, 100000, ".json")):
        for planner in ("flat", "depth_first", "stable"):
            for _ in range(repeat):
                merge = [BIG_TOLERANCE] if planner == "stable" else []
                w, rss, out = timed([sys.executable, "-c", PLAN_STEPS_CHILD, str(f), planner, *merge])
                d = json.loads(out)
                print(
                    f"  {f.suffix:5s} {planner:12s} load {d['load']:6.2f} s  plan {d['plan']:6.2f} s  "
                    f"transfers {d['transfers']:8d}  process {w:6.2f} s  peak RSS {rss:6.0f} MiB  [{load()}]",
                    flush=True,
                )
                report.setdefault("plan100k", []).append({"file": f.suffix, "planner": planner, **d, "process": w})


PLAN_STEPS_CHILD = STEPS_CHILD.split("check_plan(plan, topo)")[0]


def plot_scaling(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    planners = sorted({r["planner"] for r in rows}, key=lambda p: SCALING_PLANNERS.index(p))
    for i, p in enumerate(planners):
        rs = sorted((r for r in rows if r["planner"] == p), key=lambda r: r["hosts"])
        x = [r["hosts"] for r in rs]
        color = f"C{i}"
        ax_t.loglog(x, [r["plan"] for r in rs], "o-", color=color, label=f"{p}: plan")
        ax_t.loglog(x, [r["simulate"] for r in rs], "s--", color=color, label=f"{p}: simulate")
        ax_m.loglog(x, [r["peak_rss_mib"] for r in rs], "o-", color=color, label=p)
    ax_t.set(xlabel="hosts", ylabel="seconds", title="time (random tree, 100-1000 Mbit/s)")
    ax_m.set(xlabel="hosts", ylabel="peak RSS of plan + simulate (MiB)", title="memory")
    ax_t.legend(fontsize=7, ncol=2)
    ax_m.legend(fontsize=7)
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {', '.join(PARTS)}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/topocast-scale", help="folder for the generated networks")
    ap.add_argument("--scaling-hosts", default=",".join(map(str, SCALING_HOSTS)))
    ap.add_argument("--scaling-planners", default=",".join(SCALING_PLANNERS))
    ap.add_argument(
        "--plan-timeout", type=float, default=120.0, help="plan1k, perplanner: seconds per planner (default 120)"
    )
    ap.add_argument(
        "--compare-timeout",
        type=float,
        default=600.0,
        help="compare1k, g5k: stop a compare with every planner after this many seconds (default 600)",
    )
    ap.add_argument("--perplanner-nets", default="rt1000,rt1000-asym,g5k", help="perplanner: comma list of networks")
    ap.add_argument("--data", default=str(DATA), help="folder of real topologies (g5k: simgrid/g5k.xml in it)")
    ap.add_argument("--plot", help="write the scaling plot (PNG)")
    ap.add_argument("--json", help="write every figure as JSON (merged into the file if it exists)")
    args = ap.parse_args(argv)
    global G5K
    G5K = Path(args.data) / "simgrid" / "g5k.xml"
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict = json.loads(Path(args.json).read_text()) if args.json and Path(args.json).exists() else {}
    print(f"topocast bench_scale, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    for part in filter(None, args.parts.split(",")):
        if part == "scaling":
            # keep the rows of other (hosts, planner) pairs from earlier runs merged into --json
            redo = {(int(h), p) for h in args.scaling_hosts.split(",") for p in args.scaling_planners.split(",")}
            report["scaling"] = [r for r in report.get("scaling", []) if (r["hosts"], r["planner"]) not in redo]
            part_scaling(
                work,
                args.repeat,
                report,
                [int(x) for x in args.scaling_hosts.split(",")],
                args.scaling_planners.split(","),
            )
        elif part == "plan1k":
            part_plan1k(work, args.repeat, report, args.plan_timeout)
        elif part in ("compare1k", "g5k"):
            globals()[f"part_{part}"](work, args.repeat, report, args.compare_timeout)
        elif part == "perplanner":
            part_perplanner(work, args.repeat, report, args.plan_timeout, args.perplanner_nets)
        elif part in PARTS:
            globals()[f"part_{part}"](work, args.repeat, report)
        else:
            ap.error(f"--parts: unknown part {part!r} (expected {', '.join(PARTS)})")
    if args.plot and report.get("scaling"):
        plot_scaling(report["scaling"], args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
