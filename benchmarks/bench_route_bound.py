"""Time and tightness of the broadcast bounds on multi-site SimGrid platforms and g5k.xml.

For each platform (fresh seeds of ``topocast topology generate multi-site`` unless ``--seeds``
is given; the seeds are printed so that a run can be replayed) and for SimGrid's ``g5k.xml``
when found: CPU seconds of Σ max-flow (``broadcast_bounds``), of the relay ceiling and of the
route-aware bounds (``route_bounds``), and the route-aware bounds as fractions of Σ max-flow.

    PYTHONPATH=src python benchmarks/bench_route_bound.py [--platforms 5] [--seeds 1,2,3] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

from topocast.bounds import broadcast_bounds
from topocast.bounds.relay import relay_ceiling
from topocast.bounds.route import route_bounds, routes_are_fixed
from topocast.topology import load_topology
from topocast.topology.multisite import multi_site_platform

_ROOT = Path(__file__).resolve().parents[1]
# ../shared/data beside the repository (one level further up from a git worktree)
DATA = next((d for d in (_ROOT.parent / "shared" / "data", _ROOT.parents[1] / "shared" / "data") if d.is_dir()), _ROOT)


def cpu(f):
    t0 = time.process_time()
    out = f()
    return out, time.process_time() - t0


def measure(name: str, topo) -> None:
    src = topo.hosts[0]
    bound, t_mf = cpu(lambda: broadcast_bounds(topo, src))
    ceiling, t_rc = cpu(lambda: relay_ceiling(topo, src, bound.per_host_rate))
    fixed = routes_are_fixed(topo)
    rb, t_rb = cpu(lambda: route_bounds(topo, src, bound.per_host_rate)) if fixed else (None, 0.0)
    total = bound.aggregate_bandwidth
    line = (
        f"{name:34s} {len(topo.hosts):5d} hosts {len(topo.routes):7d} declared routes | "
        f"Σ max-flow {t_mf:5.2f} s, relay ceiling {t_rc:5.2f} s ({ceiling / total:.3f})"
    )
    if rb is not None:
        line += f", route bounds {t_rb:5.2f} s: steady {rb.steady / total:.3f}, aggregate {rb.aggregate / total:.3f}"
    else:
        line += ", routes not fixed: no route bound"
    print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platforms", type=int, default=5, help="fresh multi-site platforms (default 5)")
    ap.add_argument("--seeds", help="comma-separated seeds instead of fresh ones")
    ap.add_argument("--data", type=Path, default=DATA, help="folder with simgrid/g5k.xml")
    args = ap.parse_args()
    seeds = (
        [int(s) for s in args.seeds.split(",")]
        if args.seeds
        else [random.SystemRandom().randrange(10**6) for _ in range(args.platforms)]
    )
    print(f"seeds: {','.join(map(str, seeds))}   load: {os.getloadavg()[0]:.1f}", flush=True)
    for seed in seeds:
        topo, t_gen = cpu(lambda seed=seed: multi_site_platform(seed=seed))
        measure(f"multi-site seed {seed} ({t_gen:.1f} s)", topo)
    g5k = args.data / "simgrid" / "g5k.xml"
    if g5k.exists():
        measure("g5k.xml", load_topology(g5k))
    else:
        print(f"g5k.xml: skipped, {g5k} not found")
    print(f"load: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
