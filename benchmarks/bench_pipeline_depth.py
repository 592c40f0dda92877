"""Pipeline depth against millisecond latencies: the fraction of the applicable bound each
planner's predicted broadcast reaches (docs/experiments/pipeline-depth.md).

Cases (1 GB from the first host, or g5k's ``bordeplage-1``, to every other host):

* ``g5k``: SimGrid's g5k.xml from ``--data`` (default: a folder ``shared/data`` beside the
  repository, docs/topology.md) with every link at 2.25 ms; target: the best
  planner >= 0.95 of Σ max-flow;
* ``g5k-shared``: the same with every host link half-duplex (``sharing: shared``); target: the
  best >= 0.9 of the half-duplex relay ceiling;
* ``mc-N-SETTING``: ``multi_cluster_tree(N, n_clusters=N // 50, bandwidth=SETTING, seed=1)``
  with every link's latency drawn uniformly in 1-5 ms (seed 1); target: the best >= 0.9 of the
  bound;
* ``fat-K``: ``fat_tree(K)`` (1 Gbit/s everywhere) with every link at 5 ms; target 0.9.

The bound printed is the relay ceiling (:func:`topocast.bounds.relay.relay_ceiling`), which is
Σ max-flow when no host sits on a shared link. Prints one row per planner: fraction of the
bound, makespan, planning and simulation seconds, and the machine load.

    PYTHONPATH=src python benchmarks/bench_pipeline_depth.py [--cases g5k,g5k-shared,mc-1000-uniform-500-1000]
        [--planners stable,depth_first,two_tree,optimal] [--data DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

from topocast import Broadcast, broadcast_bounds, simulate
from topocast.bounds.relay import relay_ceiling
from topocast.planners import get_planner
from topocast.planners.broadcast.optimal import _fill_time
from topocast.topology import load_topology
from topocast.topology.generators import fat_tree, multi_cluster_tree

G5K_SOURCE = "bordeplage-1.bordeaux.grid5000.fr"
DEFAULT_CASES = "g5k,g5k-shared,mc-1000-switch-uniform-100-1000,mc-1000-uniform-500-1000"
TARGETS = {"g5k": 0.95, "g5k-shared": 0.9}


def _with_latency(topo, latency):
    return topo.replace(links=[dataclasses.replace(pl, latency=latency(pl)) for pl in topo.physical_links])


def g5k_case(data: Path, shared: bool):
    topo = _with_latency(load_topology(data / "simgrid" / "g5k.xml"), lambda pl: 2.25e-3)
    if shared:
        hosts = set(topo.hosts)
        links = [
            dataclasses.replace(pl, sharing="shared") if pl.a in hosts or pl.b in hosts else pl
            for pl in topo.physical_links
        ]
        topo = topo.replace(links=links)
    return topo, G5K_SOURCE


def multi_cluster_case(n: int, setting: str):
    topo = multi_cluster_tree(n, n_clusters=max(4, n // 50), bandwidth=setting, seed=1)
    rng = np.random.default_rng(1)
    return _with_latency(topo, lambda pl: float(rng.uniform(1e-3, 5e-3))), topo.hosts[0]


def build(case: str, data: Path):
    if case in ("g5k", "g5k-shared"):
        return g5k_case(data, case == "g5k-shared")
    if case.startswith("mc-") and case.count("-") >= 2 and case.split("-")[1].isdigit():
        _, n, setting = case.split("-", 2)
        return multi_cluster_case(int(n), setting)
    if case.startswith("fat-") and case[4:].isdigit():
        topo = fat_tree(int(case[4:]), bandwidth="1Gbps")
        return _with_latency(topo, lambda pl: 5e-3), topo.hosts[0]
    raise SystemExit(f"--cases: unknown case {case!r} (expected g5k, g5k-shared, mc-N-SETTING or fat-K)")


def print_promise(case, name, plan, topo, bound, plan_seconds) -> None:
    """What a plan promises without simulating it: its expected rates over the bound, the
    summed route latencies down its deepest chain of pipelined hops, and M / mean rate."""
    expected = plan.notes["expected_aggregate_bandwidth"]
    fill = _fill_time(topo, plan)
    mean_rate = expected / len(plan.wanted)
    print(
        f"{case:36s} {name:12s} promised {expected / bound:.3f} of the bound, fill {fill:.2f} s against"
        f" M/rate {plan.size / mean_rate:.1f} s; plan {plan_seconds:.1f} s, {len(plan.transfers)} transfers,"
        f" depth {plan.notes.get('depth', '-')}",
        flush=True,
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--planners", default="stable,depth_first,two_tree,optimal")
    ap.add_argument("--size", type=int, default=10**9, help="message size in bytes (default 1 GB)")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument(
        "--no-sim",
        action="store_true",
        help="plan only: print the plans' promised rates (of the bound) and their fill, for sizes the simulator cannot reach in time",
    )
    args = ap.parse_args(argv)
    data = Path(args.data)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    print(f"{'case':36s} {'planner':12s} {'of bound':>8s} {'makespan s':>10s} {'plan s':>7s} {'sim s':>7s}  notes")
    for case in filter(None, args.cases.split(",")):
        if case.startswith("g5k") and not (data / "simgrid" / "g5k.xml").is_file():
            print(f"{case:36s} skipped: {data / 'simgrid' / 'g5k.xml'} not found", flush=True)
            continue
        topo, src = build(case, data)
        bound = broadcast_bounds(topo, src)
        ceiling = relay_ceiling(topo, src, bound.per_host_rate)
        kind = "relay ceiling" if ceiling < bound.aggregate_bandwidth * (1 - 1e-9) else "Σ max-flow"
        print(f"{case:36s} bound: {kind} {ceiling:.4g} B/s ({len(topo.hosts)} hosts)", flush=True)
        best = 0.0
        for name in filter(None, args.planners.split(",")):
            t0 = time.perf_counter()
            plan = get_planner("broadcast", name)(topo, Broadcast(src, args.size))
            t1 = time.perf_counter()
            if args.no_sim:
                print_promise(case, name, plan, topo, ceiling, t1 - t0)
                continue
            result = simulate(plan, topo)
            t2 = time.perf_counter()
            frac = result.aggregate_bandwidth / ceiling
            best = max(best, frac)
            extra = {k: plan.notes[k] for k in ("levels", "depth", "method") if k in plan.notes}
            print(
                f"{case:36s} {name:12s} {frac:8.3f} {result.makespan:10.2f} {t1 - t0:7.1f} {t2 - t1:7.1f}  {extra}",
                flush=True,
            )
        if args.no_sim:
            continue
        target = TARGETS.get(case, 0.9)
        print(f"{case:36s} best {best:.3f} target {target} {'met' if best >= target else 'NOT MET'}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
