"""Reproduce docs/experiments/latency-and-grid-collectives.md (tables and figures).

    cd <repo> && PYTHONPATH=src python docs/experiments/latency_grid.py [--figures]

Prints every table of the document; with ``--figures`` also writes the PNGs (through the
same code as ``topocast sweep``) and the topology files under docs/experiments/topologies/.
Deterministic: the same numbers on every run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from topocast.bounds import cost
from topocast.evaluate.sweep import plot_sweep, sweep
from topocast.plan import Allreduce, Broadcast
from topocast.planners import get_planner
from topocast.sim import simulate
from topocast.topology import Topology, load_topology
from topocast.topology.generators import two_cluster_grid
from topocast.topology.io import save_file
from topocast.topology.model import PhysicalLink

HERE = Path(__file__).parent
SIZES = [2**k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB


def switch(p, bw=125e6, lat=25e-6, gamma=None):
    hosts = [f"h{i:02d}" for i in range(p)]
    red = {h: gamma for h in hosts} if gamma else None
    return Topology(f"switch-{p}", hosts, ["sw"], [PhysicalLink(h, "sw", bw, lat) for h in hosts], reduction_cost=red)


def campus():
    """Mateescu & Taylor's testbed shape: 8 machines on two campuses; λ 0.085 .. 1.2 ms,
    Δ 0.035 .. 0.3 ms (drawn once with seed 3), 100 Mbit/s links."""
    rng = np.random.default_rng(3)
    hosts = [f"m{i}" for i in range(8)]
    links = [PhysicalLink(h, "nrcA" if i < 4 else "nrcB", 12.5e6, 42.5e-6) for i, h in enumerate(hosts)]
    links.append(PhysicalLink("nrcA", "nrcB", 12.5e6, 1.115e-3, name="campus-link"))
    delta = {h: float(np.round(rng.uniform(35e-6, 300e-6), 7)) for h in hosts}
    return Topology("campus-8", hosts, ["nrcA", "nrcB"], links, injection_time=delta)


def sdr_ddr(only_ddr=False):
    """16 InfiniBand hosts on one switch; 8 DDR (16 Gbit/s) and 8 SDR (8 Gbit/s) placed at
    random (seed 5; the root n00 is DDR). ``only_ddr``: the same 16 hosts, all DDR."""
    rng = np.random.default_rng(5)
    ddr = {0} | set((rng.permutation(15)[:7] + 1).tolist())
    hosts = [f"n{i:02d}" for i in range(16)]
    links = [PhysicalLink(h, "ib", 2e9 if (only_ddr or i in ddr) else 1e9, 1e-6) for i, h in enumerate(hosts)]
    return Topology("ddr-only-16" if only_ddr else "sdr-ddr-16", hosts, ["ib"], links)


def leaf_spine():
    """4 leaf switches x 8 hosts (1 Gbit/s), 2 Gbit/s up-links to one spine (4:1 over-
    subscribed); ranks round-robin over the leaves, as a scheduler often places them."""
    hosts, links = [], []
    for i in range(32):
        h = f"r{i:02d}"
        hosts.append(h)
        links.append(PhysicalLink(h, f"leaf{i % 4}", 125e6, 2e-6))
    for k in range(4):
        links.append(PhysicalLink(f"leaf{k}", "spine", 250e6, 2e-6))
    return Topology("leaf-spine-32", hosts, [f"leaf{k}" for k in range(4)] + ["spine"], links)


def t(coll, name, topo, size, **kw):
    req = Broadcast(topo.hosts[0], size) if coll == "broadcast" else Allreduce(size)
    return simulate(get_planner(coll, name)(topo, req, **kw), topo).makespan


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print()


def hockney():
    print("### Hockney formulas vs simulator (switch, 1 Gbit/s, 25 us per link, gamma 0.2 ns/B)\n")
    alpha, beta = cost.hockney_params(125e6, 25e-6)
    g = 2e-10
    rows = []
    for p in (8, 12, 16):
        topo = switch(p, gamma=g)
        for n in (1024 * p, (1 << 20) // p * p, (256 << 20) // p * p):
            for coll, name, f in (
                ("broadcast", "binomial", cost.binomial_bcast(n, p, alpha, beta)),
                ("broadcast", "scatter_allgather_ring", cost.scatter_ring_bcast(n, p, alpha, beta)),
                ("broadcast", "scatter_allgather_rdb", cost.scatter_rdb_bcast(n, p, alpha, beta) if p & (p - 1) == 0 else None),
                ("allreduce", "ring", cost.ring_allreduce(n, p, alpha, beta, g)),
                ("allreduce", "recursive_doubling", cost.recursive_doubling_allreduce(n, p, alpha, beta, g)),
                ("allreduce", "rabenseifner", cost.rabenseifner_allreduce(n, p, alpha, beta, g)),
            ):
                if f is None:
                    continue
                s = t(coll, name, topo, n)
                rows.append((p, n, name, f"{s * 1e3:.4f}", f"{f * 1e3:.4f}", f"{(s / f - 1) * 100:+.3f} %"))
    table(["p", "bytes", "planner", "simulated (ms)", "formula (ms)", "difference"], rows)


def crossover():
    print("### Where MPICH's switch points fall in the model (switch-16 and switch-12)\n")
    rows = []
    for p in (16, 12):
        topo = switch(p)
        sizes = [2**k for k in range(8, 25)]
        best = []
        for n in sizes:
            n2 = max(n // p * p, p)
            cands = ["binomial", "scatter_allgather_ring"] + (["scatter_allgather_rdb"] if p & (p - 1) == 0 else [])
            times = {c: t("broadcast", c, topo, n2) for c in cands}
            best.append((n, min(times, key=times.get)))
        changes = [(n, b) for k, (n, b) in enumerate(best) if k == 0 or best[k - 1][1] != b]
        rows.append((p, ", ".join(f"{b} from {n} B" for n, b in changes)))
    table(["p", "fastest planner by size (simulated)"], rows)


def gridmpi_tables():
    print("### GridMPI formulas vs simulator (builtin:grid-long-fast: 2 x 8 hosts, 1 Gbit/s NICs, 10 Gbit/s WAN, 10 ms)\n")
    topo = load_topology("builtin:grid-long-fast")
    p, B = 8, 125e6
    L = topo.route_latency("a0", "b0")
    alpha = 100e-6
    rows = []
    for M in (1 << 20, 16 << 20, 256 << 20):
        for coll, name, fm, fp in (
            ("broadcast", "far_first", cost.far_first_bcast_model(M, B, L, p, alpha), cost.far_first_bcast_paper(M, B, L)),
            ("broadcast", "gridmpi", cost.gridmpi_bcast_model(M, B, L, p, alpha), cost.gridmpi_bcast_paper(M, B, L, p)),
            ("allreduce", "two_tier", cost.two_tier_allreduce_model(M, B, L, p, alpha), cost.two_tier_allreduce_paper(M, B, L)),
            ("allreduce", "gridmpi", cost.gridmpi_allreduce_model(M, B, L, p, alpha), cost.gridmpi_allreduce_paper(M, B, L, p)),
        ):
            s = t(coll, name, topo, M)
            rows.append((f"{M >> 20} MiB", coll, name, f"{s:.4f}", f"{fm:.4f} ({(s / fm - 1) * 100:+.2f} %)", f"{fp:.4f} ({(s / fp - 1) * 100:+.1f} %)"))
    table(["M", "collective", "planner", "simulated (s)", "step-by-step form", "slide formula"], rows)

    print("### Gain of the modified algorithms (GridMPI throughput, 256 MiB)\n")
    M = 256 << 20
    rows = []
    for label, topo, opts in (
        ("10 ms WAN (grid-long-fast)", topo, {}),
        ("0 ms, 10 Gbit/s up-link", two_cluster_grid(8, wan_latency=0.0, name="grid-no-delay"),
         {"clusters": ",".join(f"a{i}" for i in range(8)) + ";" + ",".join(f"b{i}" for i in range(8))}),
    ):
        h = len(topo.hosts)
        ff = t("broadcast", "far_first", topo, M, **opts)
        gm = t("broadcast", "gridmpi", topo, M, **opts)
        g1 = t("broadcast", "gridmpi", topo, M, connections=1, **opts)
        sr = t("broadcast", "scatter_allgather_ring", topo, M)
        tt = t("allreduce", "two_tier", topo, M, **opts)
        ga = t("allreduce", "gridmpi", topo, M, **opts)
        rb = t("allreduce", "rabenseifner", topo, M)
        bt = lambda x: f"{cost.bcast_throughput(M, h, x) / 1e6:.0f}"  # noqa: E731
        at = lambda x: f"{cost.allreduce_throughput(M, h, x) / 1e6:.0f}"  # noqa: E731
        rows.append((label, bt(ff), bt(gm), bt(g1), bt(sr), f"{ff / gm:.2f}x", at(tt), at(ga), at(rb), f"{tt / ga:.2f}x"))
    table(["setting", "bcast far_first", "bcast gridmpi", "gridmpi n=1", "vdG ring", "gain", "allreduce two_tier", "allreduce gridmpi", "Rabenseifner", "gain"], rows)


def mateescu():
    print("### Mateescu & Taylor: slides' example (6 vertices, unit latency) and campus-8\n")
    rows = []
    for d in (0.3, 0.6, 1.0):
        hosts = [f"v{i}" for i in range(6)]
        mesh = Topology("mesh-6", hosts, [], [PhysicalLink(a, b, 1e15, 1.0) for i, a in enumerate(hosts) for b in hosts[i + 1:]],
                        injection_time={h: d for h in hosts})
        rows.append((d, f"{t('broadcast', 'flat', mesh, 1):.3f}", f"{1 + 5 * d:.3f}", f"{t('broadcast', 'essp', mesh, 1):.3f}",
                     f"{min(1 + 5 * d, 2 + 3 * d):.3f}", f"{t('broadcast', 'binomial', mesh, 1):.3f}"))
    table(["Δ", "flat = SSSP (sim)", "1 + 5Δ", "essp (sim)", "min(1+5Δ, 2+3Δ)", "binomial (sim)"], rows)
    topo = campus()
    rows = []
    for n in (1, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 24):
        r = {name: t("broadcast", name, topo, n) for name in ("essp", "binomial", "flat", "far_first")}
        r["essp bandwidth=True"] = simulate(get_planner("broadcast", "essp")(topo, Broadcast(topo.hosts[0], n), bandwidth=True), topo).makespan
        rows.append((n,) + tuple(f"{v * 1e3:.3f}" for v in r.values()))
    table(["bytes", "essp (ms)", "binomial (ms)", "flat (ms)", "far_first (ms)", "essp bandwidth=True (ms)"], rows)
    return topo


def subramoni():
    print("### Subramoni et al.: speed-aware on SDR/DDR, topology-aware on a 4:1 leaf-spine\n")
    mixed, ddr = sdr_ddr(), sdr_ddr(only_ddr=True)
    rows = []
    for n in (1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 23):
        b = t("broadcast", "binomial", mixed, n)
        s = t("broadcast", "speed_aware", mixed, n)
        d = t("broadcast", "binomial", ddr, n)
        rows.append((n, f"{b * 1e6:.1f}", f"{s * 1e6:.1f}", f"{d * 1e6:.1f}", f"{(b / s - 1) * 100:.0f} %"))
    table(["bytes", "binomial on SDR+DDR (us)", "speed_aware on SDR+DDR (us)", "binomial on DDR-only 16 (us)", "speed_aware gain"], rows)
    ls = leaf_spine()
    rows = []
    for n in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
        r = {name: t("broadcast", name, ls, n) for name in ("binomial", "scatter_allgather_ring", "mpich", "topology_aware")}
        best_default = r["mpich"]
        rows.append((n,) + tuple(f"{v * 1e3:.3f}" for v in r.values()) + (f"{(1 - r['topology_aware'] / best_default) * 100:.0f} %",))
    table(["bytes", "binomial (ms)", "vdG ring (ms)", "mpich (ms)", "topology_aware (ms)", "less time than mpich"], rows)
    return mixed, ls


def auto_table():
    print("### auto on builtin:grid-long-fast\n")
    topo = load_topology("builtin:grid-long-fast")
    rows = []
    for M in (1 << 10, 1 << 16, 1 << 20, 1 << 26):
        b = get_planner("broadcast", "auto")(topo, Broadcast("a0", M)).notes
        a = get_planner("allreduce", "auto")(topo, Allreduce(M)).notes
        ms = lambda n, nm: f"{nm} ({n['scores'][nm]['makespan'] * 1e3:.2f} ms)"  # noqa: E731
        rows.append((M, ms(b, b["choice"]), ms(b, b["runner_up"]), ms(a, a["choice"]), ms(a, a["runner_up"])))
    table(["bytes", "broadcast choice", "runner-up", "allreduce choice", "runner-up"], rows)


def figures(campus_topo, mixed, ls):
    topo_dir = HERE / "topologies"
    topo_dir.mkdir(exist_ok=True)
    for tp in (campus_topo, mixed, ls, two_cluster_grid(8, wan_latency=0.0, name="grid-no-delay")):
        save_file(tp, topo_dir / f"{tp.name}.yaml")
    grid = load_topology("builtin:grid-long-fast")
    nodelay = two_cluster_grid(8, wan_latency=0.0, name="grid-no-delay")
    split = {"clusters": ",".join(f"a{i}" for i in range(8)) + ";" + ",".join(f"b{i}" for i in range(8))}
    jobs = [
        ("mpich-switch16.png", switch(16), "broadcast", ["binomial", "scatter_allgather_rdb", "scatter_allgather_ring", "mpich"], {}, False,
         "MPICH broadcasts on one switch (16 hosts, 1 Gbit/s, α = 50 us)"),
        ("gridmpi-bcast.png", grid, "broadcast", ["far_first", "gridmpi", "scatter_allgather_ring", "binomial"], {}, True,
         "broadcast, 2 x 8 hosts, 10 Gbit/s WAN, 10 ms (GridMPI throughput)"),
        ("gridmpi-allreduce.png", grid, "allreduce", ["two_tier", "gridmpi", "rabenseifner", "ring"], {}, True,
         "allreduce, 2 x 8 hosts, 10 Gbit/s WAN, 10 ms (GridMPI throughput)"),
        ("gridmpi-bcast-nodelay.png", nodelay, "broadcast", ["far_first", "gridmpi", "scatter_allgather_ring", "binomial"], split, True,
         "broadcast, 2 x 8 hosts, 10 Gbit/s up-link, no delay (GridMPI throughput)"),
        ("gridmpi-allreduce-nodelay.png", nodelay, "allreduce", ["two_tier", "gridmpi", "rabenseifner", "ring"], split, True,
         "allreduce, 2 x 8 hosts, 10 Gbit/s up-link, no delay (GridMPI throughput)"),
        ("mateescu-campus.png", campus_topo, "broadcast", ["essp", "binomial", "flat", "far_first"], {}, False,
         "broadcast on campus-8 (λ 0.085-1.2 ms, Δ 0.035-0.3 ms)"),
        ("subramoni-sdr-ddr.png", mixed, "broadcast", ["binomial", "speed_aware", "scatter_allgather_ring"], {}, False,
         "broadcast on 16 hosts, SDR and DDR mixed"),
    ]
    for fname, topo, coll, algs, opts, thr, title in jobs:
        data = sweep(topo, coll, algs, SIZES, options=opts)
        plot_sweep(data, HERE / fname, throughput=thr, title=title)
        print("wrote", HERE / fname)


def main():
    hockney()
    crossover()
    gridmpi_tables()
    c = mateescu()
    m, ls = subramoni()
    auto_table()
    if "--figures" in sys.argv:
        figures(c, m, ls)


if __name__ == "__main__":
    main()
