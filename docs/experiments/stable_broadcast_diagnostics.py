"""Diagnostics behind docs/experiments/stable-broadcast.md: why our headline ratios differ.

    cd <repo> && PYTHONPATH=src python docs/experiments/stable_broadcast_diagnostics.py \\
        [--results docs/experiments/stable-broadcast] [--sensitivity DIR ...] [--data DATA]

Reads the ``results.csv`` / ``stability.csv`` written by ``topocast experiment stable-broadcast``
and prints, for the paper's headline comparisons at 100 destinations:

1. the ratio of means (what ``summary.md`` reports) next to the mean, minimum and maximum of the
   per-draw ratios;
2. the mixed setting split by the speed of the source's own link (100 or 1000 Mbit/s);
3. the random pipeline under a second reading of a chain's rate: every host at the rate of the
   chain's slowest host (one common rate, as FPFR runs), by re-simulating the same 10 draws;
4. with ``--sensitivity``: the same headline ratios from the ``summary.json`` of other runs
   (other ``--topology-seed`` / ``--clusters``; the stability test does not use these topologies);
5. with ``--data``: the Topology Zoo edges that have no speed (the real-topology table gives
   them ``--default-bandwidth``, 1 Gbit/s by default), and stable on g5k.xml with and without
   its latencies.

Deterministic: the same numbers on every run.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
MBIT = 125_000

# (setting, numerator, denominator, paper's figure)
# (depth_first: the paper's "Depth-First (FPFR)" read as one unpaced store-and-forward chain)
HEADLINES = [
    ("mixed", "stable", "random_pipeline", "40x"),
    ("mixed", "stable", "fpfr", "3x"),
    ("mixed", "stable", "depth_first", "3x"),
    ("switch-uniform-100-1000", "stable", "flat", "36x"),
    ("switch-uniform-100-1000", "stable", "fpfr", "1.2x"),
    ("switch-uniform-100-1000", "stable", "depth_first", "1.2x"),
]


def _load(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def per_draw(rows, setting, n=100):
    """{draw: {algorithm: aggregate Mbit/s}} for one (setting, destinations) cell."""
    out = defaultdict(dict)
    for r in rows:
        if r["setting"] == setting and int(r["destinations"]) == n:
            out[int(r["draw"])][r["algorithm"]] = float(r["aggregate_mbit"])
    return out


def headline_table(rows):
    print("## 1. Headline ratios at 100 destinations: ratio of means vs per-draw ratios\n")
    print("| setting | ratio | paper | ratio of means | mean of ratios | min | max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for setting, a, b, paper in HEADLINES:
        cell = per_draw(rows, setting)
        num = np.array([cell[d][a] for d in sorted(cell)])
        den = np.array([cell[d][b] for d in sorted(cell)])
        r = num / den
        print(f"| {setting} | {a} / {b} | {paper} | {num.mean() / den.mean():.2f} | {r.mean():.2f} | "
              f"{r.min():.2f} | {r.max():.2f} |")


def margin_table(rows):
    """Stable over the best of the paper's other four algorithms, per setting, 100 destinations."""
    print("\n## Stable over the best of flat, random, fpfr, dijkstra (ratio of means, 100 destinations)\n")
    print("| setting | best other | stable / best other |")
    print("|---|---|---:|")
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    for setting in settings:
        cell = per_draw(rows, setting)
        mean = {a: np.mean([cell[d][a] for d in cell]) for a in ("flat", "random_pipeline", "fpfr", "dijkstra", "stable")}
        best = max(("flat", "random_pipeline", "fpfr", "dijkstra"), key=mean.get)
        print(f"| {setting} | {best} | {mean['stable'] / mean[best]:.2f} |")


def stability_table(stab):
    print("\n## Stability: stable / dijkstra (the 9 existing hosts after the slow host joins)\n")
    by = defaultdict(dict)
    for r in stab:
        by[int(r["draw"])][r["algorithm"]] = r
    s = np.array([float(by[d]["stable"]["existing_after_mbit"]) for d in sorted(by)])
    k = np.array([float(by[d]["dijkstra"]["existing_after_mbit"]) for d in sorted(by)])
    sa = np.array([float(by[d]["stable"]["aggregate_after_mbit"]) for d in sorted(by)])
    ka = np.array([float(by[d]["dijkstra"]["aggregate_after_mbit"]) for d in sorted(by)])
    r = s / k
    print("| quantity | paper | ratio of means | mean of ratios | min | max |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| 9 existing hosts after | 1.6x | {s.mean() / k.mean():.2f} | {r.mean():.2f} | {r.min():.2f} | {r.max():.2f} |")
    r2 = sa / ka
    print(f"| all 10 hosts after | 1.6x | {sa.mean() / ka.mean():.2f} | {r2.mean():.2f} | {r2.min():.2f} | {r2.max():.2f} |")


def source_split(rows):
    """Mixed setting, 100 destinations: draws whose source link is 100 vs 1000 Mbit/s."""
    from topocast.experiments.stable_broadcast import N_CLUSTERS, N_HOSTS
    from topocast.topology.generators import multi_cluster_tree

    topo = multi_cluster_tree(N_HOSTS, n_clusters=N_CLUSTERS, bandwidth="mixed", seed=0)
    print("\n## 2. Mixed, 100 destinations, by the source's own link\n")
    print("| source link (Mbit/s) | draws | flat | random | fpfr | stable | bound | stable/fpfr | stable/random |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cell = per_draw(rows, "mixed")
    groups = defaultdict(list)
    for d in sorted(cell):
        src, _ = _source(topo, 100, d)
        (lid,) = topo.out_links(src)  # a host has one link, to its cluster switch
        groups[round(topo.link_bandwidth[lid] / MBIT)].append((d, cell[d]))
    bounds = {int(r["draw"]): float(r["bound_mbit"]) for r in rows
              if r["setting"] == "mixed" and int(r["destinations"]) == 100 and r["algorithm"] == "stable"}
    for link, dcs in sorted(groups.items()):
        cs = [c for _, c in dcs]
        m = {a: np.mean([c[a] for c in cs]) for a in ("flat", "random_pipeline", "fpfr", "stable")}
        b = np.mean([bounds[d] for d, _ in dcs])
        print(f"| {link} | {len(cs)} | {m['flat']:.0f} | {m['random_pipeline']:.0f} | {m['fpfr']:.0f} | "
              f"{m['stable']:.0f} | {b:.0f} | {m['stable'] / m['fpfr']:.2f} | {m['stable'] / m['random_pipeline']:.2f} |")


def _source(topo, n_dest, draw):
    rng = np.random.default_rng(1000 * n_dest + draw)
    pick = rng.choice(len(topo.hosts), n_dest + 1, replace=False)
    return topo.hosts[int(pick[0])], [topo.hosts[int(i)] for i in pick[1:]]


def random_common_rate(rows):
    """Random pipeline, mixed, 100 destinations: store-and-forward (ours) vs one common rate."""
    from topocast.experiments.stable_broadcast import N_CLUSTERS, N_HOSTS, _run_one
    from topocast.topology.generators import multi_cluster_tree

    topo = multi_cluster_tree(N_HOSTS, n_clusters=N_CLUSTERS, bandwidth="mixed", seed=0)
    cell = per_draw(rows, "mixed")
    ours, common, stable = [], [], []
    for d in sorted(cell):
        src, dests = _source(topo, 100, d)
        res, _, _ = _run_one("random_pipeline", topo, src, dests, d)
        rates = [r.rate for r in res.per_host.values()]
        ours.append(sum(rates) / MBIT)
        common.append(len(rates) * min(rates) / MBIT)
        stable.append(cell[d]["stable"])
    ours, common, stable = map(np.array, (ours, common, stable))
    print("\n## 3. Random pipeline, mixed, 100 destinations: two readings of a chain's rate\n")
    print("| reading | mean aggregate (Mbit/s) | stable / random (ratio of means) | mean of ratios |")
    print("|---|---:|---:|---:|")
    print(f"| store-and-forward, each host at the slowest hop up to it (ours) | {ours.mean():.0f} | "
          f"{stable.mean() / ours.mean():.1f} | {(stable / ours).mean():.1f} |")
    print(f"| one common rate, every host at the slowest host's rate | {common.mean():.0f} | "
          f"{stable.mean() / common.mean():.1f} | {(stable / common).mean():.1f} |")


def sensitivity(dirs):
    print("\n## 4. Headline ratios (ratio of means, 100 destinations) on other study topologies\n")
    print("| topologies | stable/random mixed | stable/fpfr mixed | stable/flat switch | stable/fpfr switch | "
          "stable/depth_first switch | stable best (settings at 100 dests) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for d in dirs:
        s = json.loads((Path(d) / "summary.json").read_text())
        cfg = s["config"]
        cell = {(r["setting"], r["destinations"]): r for r in s["table"]}

        def ratio(setting, a, b):
            m = cell[(setting, 100)]["mean_aggregate_mbit"]
            return m[a] / m[b]

        best = sum(1 for r in s["table"] if r["destinations"] == 100 and r["best_of_paper_five"] == "stable")
        n_set = sum(1 for r in s["table"] if r["destinations"] == 100)
        print(f"| {cfg['n_clusters']} clusters, seed {cfg.get('topology_seed', 0)} | "
              f"{ratio('mixed', 'stable', 'random_pipeline'):.1f} | {ratio('mixed', 'stable', 'fpfr'):.2f} | "
              f"{ratio('switch-uniform-100-1000', 'stable', 'flat'):.1f} | "
              f"{ratio('switch-uniform-100-1000', 'stable', 'fpfr'):.2f} | "
              f"{ratio('switch-uniform-100-1000', 'stable', 'depth_first'):.2f} | {best}/{n_set} |")


def zoo_missing_speeds(data: Path):
    """Topology Zoo edges without a speed (they get ``--default-bandwidth``, 1 Gbit/s by default)."""
    from topocast.topology.graphml import graphml_summary

    print("\n## 5. Topology Zoo edges without a speed (given the default bandwidth)\n")
    print("| file | edges | from LinkSpeedRaw | from LinkLabel | without a speed | those edges |")
    print("|---|---:|---:|---:|---:|---|")
    for f in sorted((data / "topology-zoo").glob("*.graphml")):
        g = graphml_summary(f)
        miss = g["edges_without_speed"]
        n = g["edges"] - g["self_loops"]
        print(f"| {f.name} | {n} | {g['edges_with_speed'] - g['speed_from_label']} | {g['speed_from_label']} | "
              f"{len(miss)} | {', '.join(miss) if miss else ''} |")


def g5k_latency(data: Path):
    """stable on g5k.xml (the real-topology table's draw) with and without the file's latencies."""
    import dataclasses

    from topocast.bounds import broadcast_bounds
    from topocast.experiments.stable_broadcast import _run_one
    from topocast.topology import load_topology

    topo = load_topology(str(data / "simgrid" / "g5k.xml"))
    flat = topo.replace(links=[dataclasses.replace(lk, latency=0.0) for lk in topo.physical_links])
    src = topo.hosts[0]
    dests = [h for h in topo.hosts if h != src]
    rng = np.random.default_rng(0)  # as real_topology_table samples 100 destinations
    dests = [dests[i] for i in sorted(rng.choice(len(dests), 100, replace=False))]
    print("\n## 6. g5k.xml, stable: latency, not bandwidth, keeps it below the bound\n")
    print("| latencies | aggregate / bound | makespan (s) |")
    print("|---|---:|---:|")
    for label, t in (("as in the file", topo), ("all 0", flat)):
        b = broadcast_bounds(t, src, dests)
        res, _, _ = _run_one("stable", t, src, dests, 0)
        print(f"| {label} | {res.aggregate_bandwidth / b.aggregate_bandwidth:.4f} | {res.makespan:.4f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=HERE / "stable-broadcast")
    ap.add_argument("--sensitivity", nargs="*", default=[], help="folders with a summary.json of other runs")
    ap.add_argument("--data", type=Path, default=None, help="a folder with a topology-zoo/ subfolder: list Zoo edges without a speed")
    args = ap.parse_args(argv)
    rows = _load(args.results / "results.csv")
    headline_table(rows)
    margin_table(rows)
    stability_table(_load(args.results / "stability.csv"))
    source_split(rows)
    random_common_rate(rows)
    if args.sensitivity:
        sensitivity(args.sensitivity)
    if args.data is not None:
        zoo_missing_speeds(args.data)
        g5k_latency(args.data)


if __name__ == "__main__":
    main()
