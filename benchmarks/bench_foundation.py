"""Planning + simulating `flat` and `depth_first` at 100, 1,000 and 10,000 hosts.

Prints wall-clock seconds (best of --repeat runs) for each step on the Stable Broadcast
study's multi-cluster trees (uniform 100-1000 Mbit/s links, 20 hosts per cluster), plus the
max-flow bound. Target on the 2-core reference machine: planning + simulating 1,000 hosts
in under 1 s. This is a benchmark, not a test: it prints figures and never fails on time.

    python benchmarks/bench_foundation.py [--sizes 100,1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from topocast import Broadcast, broadcast_bounds, get_planner, simulate
from topocast.topology.generators import multi_cluster_tree


def best_of(repeat, fn):
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'hosts':>6} {'planner':<12} {'plan s':>8} {'simulate s':>10} {'total s':>8} {'aggregate Mbit/s':>17} {'of bound':>8}"
    )
    for n in [int(x) for x in args.sizes.split(",")]:
        t_gen, topo = best_of(
            args.repeat, lambda: multi_cluster_tree(n, n_clusters=max(1, n // 20), bandwidth="uniform-100-1000", seed=1)
        )
        print(f"{n:>6} {'(generate)':<12} {t_gen:>8.3f}")
        source = topo.hosts[0]
        request = Broadcast(source, 10**9)
        t_bound, bound = best_of(args.repeat, lambda: broadcast_bounds(topo, source))
        for name in ("flat", "depth_first"):
            planner = get_planner("broadcast", name)
            t_plan, plan = best_of(args.repeat, lambda: planner(topo, request))
            t_sim, res = best_of(args.repeat, lambda: simulate(plan, topo))
            print(
                f"{n:>6} {name:<12} {t_plan:>8.3f} {t_sim:>10.3f} {t_plan + t_sim:>8.3f} "
                f"{res.aggregate_bandwidth * 8e-6:>17.0f} {res.aggregate_bandwidth / bound.aggregate_bandwidth:>8.1%}"
            )
        print(f"{n:>6} {'(bound)':<12} {t_bound:>8.3f} {'':>10} {'':>8} {bound.aggregate_bandwidth * 8e-6:>17.0f}")


if __name__ == "__main__":
    main()
