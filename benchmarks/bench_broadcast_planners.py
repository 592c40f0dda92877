"""Planning time of ``stable``, ``fpfr`` and ``optimal`` at 100, 1,000 and 10,000 hosts.

Targets (issue 3): ``stable`` < 1 s at 1,000 hosts and < 10 s at 10,000; ``optimal`` < 10 s at
1,000. Topologies: ``multi_cluster_tree(n, n_clusters=max(4, n // 50))`` (the paper's study
topologies, seed 0), every other host a destination; for each size the symmetric ``mixed``
setting (where ``stable`` reaches the bound and ``optimal`` stops after it), and the
asymmetric ``uniform-100-1000`` setting (many distinct bottlenecks -> many partial trees,
and ``optimal`` runs its LP). Planning only (no simulation); best of ``--repeat`` runs.

    PYTHONPATH=src python benchmarks/bench_broadcast_planners.py [--sizes 100,1000,10000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import time

from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.topology.generators import multi_cluster_tree

PLANNERS = ("stable", "fpfr", "optimal")
CASES = (("mixed", False), ("uniform-100-1000", True))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip", default="", help="comma list of planner@size to skip, e.g. optimal@10000")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    print(f"{'setting':24s} {'hosts':>6s} {'planner':8s} {'plan s':>8s} {'trees':>6s} {'transfers':>9s}")
    for bw, asym in CASES:
        for n in [int(x) for x in args.sizes.split(",")]:
            topo = multi_cluster_tree(n, n_clusters=max(4, n // 50), bandwidth=bw, asymmetric=asym, seed=0)
            req = Broadcast(topo.hosts[0], 10**9)
            for name in PLANNERS:
                if f"{name}@{n}" in skip:
                    print(f"{bw + (' asym' if asym else ''):24s} {n:6d} {name:8s} {'skipped':>8s}")
                    continue
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    plan = get_planner("broadcast", name)(topo, req)
                    best = min(best, time.perf_counter() - t0)
                print(
                    f"{bw + (' asym' if asym else ''):24s} {n:6d} {name:8s} {best:8.3f} "
                    f"{plan.notes.get('trees', ''):>6} {len(plan.transfers):9d}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
