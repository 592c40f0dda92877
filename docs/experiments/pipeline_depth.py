"""Figure of docs/experiments/pipeline-depth.md: fraction of Σ max-flow that ``stable`` and
``two_tree`` reach on SimGrid's g5k.xml (1 GB from bordeplage-1) as every link's latency grows.

    PYTHONPATH=src python docs/experiments/pipeline_depth.py --data DATA \
        --out docs/experiments/pipeline-depth.png

DATA is a folder with simgrid/g5k.xml (SimGrid's platform files: docs/topology.md says where
to get them).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from topocast import Broadcast, broadcast_bounds, simulate
from topocast.planners import get_planner
from topocast.topology import load_topology

SOURCE = "bordeplage-1.bordeaux.grid5000.fr"
LATENCIES_MS = (0.1, 0.5, 1.0, 2.25, 5.0)
PLANNERS = ("stable", "two_tree")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with simgrid/g5k.xml (docs/topology.md)")
    ap.add_argument("--out", default="docs/experiments/pipeline-depth.png")
    args = ap.parse_args(argv)
    base = load_topology(Path(args.data) / "simgrid" / "g5k.xml")
    rows = {name: [] for name in PLANNERS}
    for ms in LATENCIES_MS:
        topo = base.replace(links=[dataclasses.replace(pl, latency=ms / 1e3) for pl in base.physical_links])
        bound = broadcast_bounds(topo, SOURCE).aggregate_bandwidth
        for name in PLANNERS:
            plan = get_planner("broadcast", name)(topo, Broadcast(SOURCE, 10**9))
            frac = simulate(plan, topo).aggregate_bandwidth / bound
            rows[name].append(frac)
            print(f"{ms:5.2f} ms  {name:9s} {frac:.3f}", flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for name, marker in zip(PLANNERS, "os"):
        ax.plot(LATENCIES_MS, rows[name], marker=marker, label=name)
    ax.set_xlabel("latency of every link (ms)")
    ax.set_ylabel("fraction of Σ max-flow")
    ax.set_title("g5k.xml, 1,528 hosts, 1 GB (predicted)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
