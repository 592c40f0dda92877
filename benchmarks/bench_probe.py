"""Validate ``topocast probe`` on emulated networks whose truth is known.

For every network: bring a testbed up, run ``topocast probe --launcher testbed``, and compare
the inferred topology with the truth (docs/experiments/probe.md):

* structure: the hosts grouped under each switch, inferred vs true, both in their
  bandwidth-equivalent form (``probe.equivalent``: switches no transfer can tell apart merged);
* bandwidth: every host's max-flow from every source, inferred / true - 1 (worst, in %; the
  inferred file holds measured rates / goodput, so it compares with the true link rates);
* stable plan: the ``stable`` plan made from the inferred topology, simulated on the truth,
  / the ``stable`` plan made from the truth (aggregate bandwidth);
* with ``--real``: both plans performed on the testbed ``--repeats`` times, alternating,
  median inferred / median truth, and each plan's spread ((max - min) / median); whether the
  two plans are the same transfers, rate caps aside.

Prints per network the measurement count, the probe time and these errors. Needs root
(network namespaces); run under the shared lock::

    flock /tmp/topocast-bench.lock python benchmarks/bench_probe.py [--real] [NETWORK ...]

NETWORK: builtin:NAME, a topology file, random-tree:HOSTS:SEED (``generators.random_tree``,
20-200 Mbit/s), clusters:HOSTS:SWITCHES (leaf switches of equal size under one core,
hosts at 100 Mbit/s, uplinks at 150 Mbit/s), or net:SEED[:MIN:MAX[:LO:HI]] (one network of
the family ``generators.random_network``: MIN-MAX hosts, links LO-HI Mbit/s).

**Families** (``--family fake|testbed``): ``--count`` networks of ``generators.random_network``
drawn from fresh seeds (the batch seed is printed; ``--seed`` replays a batch, ``--nets``
given network seeds), probed on the fake max-min network (``tests/probe/fake_network.py``,
``--noise``, TCP's uneven split unless ``--even``; no latency evidence) or on the testbed.
For each network: ``stable`` planned from the inferred file and simulated on the truth,
divided by ``stable`` planned from the truth, worst of ``--sources`` sources (the first host
and others drawn from the network's seed), and the probe's rounds (fake network) or time
(testbed). The summary gives the share of networks at 0.95 or more, the worst, and the load;
on the fake network also the same ratio for the truth itself with its switches listed in
another order (``stable`` depends on the order of the nodes: the probe cannot do better
than that reference by being right)::

    python benchmarks/bench_probe.py --family fake --count 200
    flock /tmp/topocast-bench.lock python benchmarks/bench_probe.py --family testbed --count 10
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from topocast.bounds import maxflow_from
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.probe.equivalent import bandwidth_equivalent, host_groups
from topocast.sim import simulate
from topocast.topology import load_topology
from topocast.topology.generators import random_network, random_tree
from topocast.topology.io import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_NETWORKS = [
    "builtin:hetero-2switch",
    "builtin:uniform-2switch",
    "builtin:two-clusters",
    os.path.join(HERE, "..", "tests", "probe", "data", "three-level-asym.yaml"),
    "clusters:16:4",
    "random-tree:12:1",
    "random-tree:16:2",
]


def clusters(n: int, k: int):
    from topocast.topology.model import PhysicalLink, Topology

    mbit = 125_000
    hosts = [f"h{i}" for i in range(n)]
    leaves = [f"l{j}" for j in range(k)]
    links = [PhysicalLink(h, leaves[i * k // n], 100 * mbit) for i, h in enumerate(hosts)]
    links += [PhysicalLink(leaf, "core", 150 * mbit) for leaf in leaves]
    return Topology(f"clusters{n}x{k}", hosts, [*leaves, "core"], links)


def truth_of(spec: str):
    if spec.startswith("clusters:"):
        _, n, k = spec.split(":")
        return clusters(int(n), int(k))
    if spec.startswith("net:"):
        seed, *bounds = (int(x) for x in spec.split(":")[1:])
        lo, hi, mlo, mhi = [*bounds, *(8, 24, 20, 200)[len(bounds) :]]
        return random_network(seed, min_hosts=lo, max_hosts=hi, min_mbit=mlo, max_mbit=mhi)
    if spec.startswith("random-tree:"):
        _, n, seed = spec.split(":")
        # bandwidths the emulated network carries on this machine; every switch observable
        return random_tree(int(n), max(2, int(n) // 4), min_mbit=20, max_mbit=200, seed=int(seed), name=f"rt{n}s{seed}")
    return load_topology(spec)


def maxflow_error(truth, inferred) -> float:
    worst = 0.0
    for s in truth.hosts:
        a, b = maxflow_from(truth, s), maxflow_from(inferred, s)
        worst = max(worst, max(abs(b[h] / a[h] - 1) for h in truth.hosts if h != s))
    return worst


def sources_of(truth, count: int) -> list:
    """The first host and ``count - 1`` others drawn from the network's name (replayable)."""
    rng = np.random.default_rng(sum(map(ord, truth.name)))
    others = rng.permutation(len(truth.hosts) - 1)[: count - 1] + 1
    return [truth.hosts[0], *(truth.hosts[int(i)] for i in others)]


def worst_stable_ratio(truth, inferred, sources: int, size: int = 64 << 20) -> float:
    return min(stable_ratio(truth, inferred, size, src)[0] for src in sources_of(truth, sources))


def stable_ratio(truth, inferred, size: int = 64 << 20, src=None) -> tuple[float, object, object]:
    planner = get_planner("broadcast", "stable")
    src = src or truth.hosts[0]
    p_true, p_inf = planner(truth, Broadcast(src, size)), planner(inferred, Broadcast(src, size))
    return simulate(p_inf, truth).aggregate_bandwidth / simulate(p_true, truth).aggregate_bandwidth, p_true, p_inf


PROBE_TIMEOUT = 600.0  # seconds a probe may take (--probe-timeout)


def run_stopping(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``cmd`` with its output captured; past ``timeout`` it gets SIGTERM, on which topocast
    stops its agents and removes its temporary files (``subprocess.run``'s SIGKILL left
    them), and SIGKILL only if it has not ended 60 s later."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            err = f"{err}\nstopped after the benchmark's limit of {timeout:g} s"
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def real_run(plan, name: str, tmp: str) -> float:
    path = os.path.join(tmp, "plan.json")
    with open(path, "w") as fh:
        json.dump(plan.to_json(), fh)
    out = run_stopping(
        [sys.executable, "-m", "topocast", "run", path, "--launcher", "testbed", "--testbed", name, "--json"], 300
    )
    if out.returncode != 0:
        raise RuntimeError(f"run failed: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)["measured"]["aggregate_bandwidth"]


def bench(
    spec: str, real: bool, size: int, repeats: int, sources: int = 3, probe_timeout: float = PROBE_TIMEOUT
) -> dict:
    truth = truth_of(spec)
    name = f"pb{abs(hash(spec)) % 10000}"
    row: dict = {"network": truth.name, "hosts": len(truth.hosts)}
    with tempfile.TemporaryDirectory() as tmp:
        tfile = os.path.join(tmp, "truth.yaml")
        save_file(truth, tfile)
        subprocess.run(
            [sys.executable, "-m", "topocast", "testbed", "up", tfile, "--name", name], check=True, capture_output=True
        )
        try:
            out = os.path.join(tmp, "probed.yaml")
            t0 = time.monotonic()
            res = run_stopping(
                [sys.executable, "-m", "topocast", "probe", "--launcher", "testbed", "--testbed", name, "-o", out]
                + ["--json"],
                probe_timeout,
            )
            row["wall_s"] = round(time.monotonic() - t0, 1)
            if res.returncode != 0:
                row["error"] = res.stderr.strip()[-300:]
                return row
            summary = json.loads(res.stdout)
            inferred = load_topology(out)
            row["measurements"], row["probe_s"] = summary["measurements"], summary["seconds"]
            for key in ("rounds", "structure_from", "noise", "contention_threshold"):
                row[key] = summary[key]
            groups_inferred = host_groups(bandwidth_equivalent(inferred))
            groups_true = host_groups(bandwidth_equivalent(truth))
            row["structure_ok"] = groups_inferred == groups_true
            if not row["structure_ok"]:
                row["groups_inferred"] = sorted(sorted(g) for g in groups_inferred if len(g) > 1)
                row["groups_true"] = sorted(sorted(g) for g in groups_true if len(g) > 1)
            row["maxflow_err_pct"] = round(100 * maxflow_error(truth, inferred), 1)
            ratio, p_true, p_inf = stable_ratio(truth, inferred, size)
            row["stable_sim_ratio"] = round(ratio, 3)
            row["stable_sim_worst"] = round(worst_stable_ratio(truth, inferred, sources, size), 3)
            # the same transfers (who sends which bytes to whom), rate caps aside
            row["same_transfers"] = [(t.src, t.dst, t.ranges) for t in p_true.transfers] == [
                (t.src, t.dst, t.ranges) for t in p_inf.transfers
            ]
            row["flags"] = len(inferred.notes)
            if real:  # alternating, so that the machine's load falls on both alike
                r_true, r_inf = [], []
                for _ in range(repeats):
                    r_true.append(real_run(p_true, name, tmp))
                    r_inf.append(real_run(p_inf, name, tmp))
                row["stable_real_ratio"] = round(statistics.median(r_inf) / statistics.median(r_true), 3)
                for key, runs in (("spread_true", r_true), ("spread_inferred", r_inf)):
                    row[key] = round((max(runs) - min(runs)) / statistics.median(runs), 3)
                row["real_mbit_true"] = [round(x * 8e-6, 1) for x in r_true]
                row["real_mbit_inferred"] = [round(x * 8e-6, 1) for x in r_inf]
        finally:
            subprocess.run([sys.executable, "-m", "topocast", "testbed", "down", name], capture_output=True)
    return row


def fake_probe(truth, noise: float, uneven: bool, noise_seed: int, sources: int) -> dict:
    """Probe ``truth`` on the fake max-min network (no latency evidence: contention alone)."""
    sys.path.insert(0, os.path.join(HERE, ".."))
    from tests.probe.fake_network import FakeNetwork
    from topocast.probe.infer import build_topology, infer_trees

    net = FakeNetwork(truth, noise=noise, seed=noise_seed, uneven=uneven)
    t0 = time.process_time()
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
    cpu = time.process_time() - t0
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
    row = {"network": truth.name, "hosts": len(truth.hosts), "switches": len(truth.switches)}
    row["rounds"], row["measurements"], row["cpu_s"] = net.rounds, tree.measurements, round(cpu, 2)
    row["structure_ok"] = host_groups(bandwidth_equivalent(inferred)) == host_groups(bandwidth_equivalent(truth))
    row["stable_sim_worst"] = round(worst_stable_ratio(truth, inferred, sources), 3)
    row["truth_reordered_worst"] = round(worst_stable_ratio(truth, reordered(truth), sources), 3)
    return row


def reordered(truth):
    """The truth with its switches listed in another order (drawn from its name): the same
    network. ``stable`` breaks ties by the order of the nodes, so a plan made from it shows
    how far the order alone moves the ratio that the probe is judged by."""
    from topocast.topology.model import Topology

    rng = np.random.default_rng(sum(map(ord, truth.name)) + 1)
    switches = [truth.switches[int(i)] for i in rng.permutation(len(truth.switches))]
    return Topology(truth.name, list(truth.hosts), switches, list(truth.physical_links))


def family(args) -> int:
    batch = args.seed if args.seed is not None else secrets.randbits(32)
    fake = args.family == "fake"
    lo, hi = args.hosts or ((8, 32) if fake else (8, 24))
    mlo, mhi = args.mbit or ((10, 1000) if fake else (20, 200))
    count = args.count or (200 if fake else 10)
    rng = np.random.default_rng(batch)
    nets = args.nets or [int(x) for x in rng.integers(2**31, size=count)]
    print(
        f"family {args.family}: batch seed {batch} (replay: --seed {batch}), {len(nets)} networks of {lo}-{hi} hosts, "
        f"links {mlo}-{mhi} Mbit/s"
        + (f", noise {args.noise}, {'even' if args.even else 'uneven'} split" if fake else "")
    )
    print(f"load: {os.getloadavg()}", flush=True)
    rows = []
    for k, seed in enumerate(nets):
        spec = f"net:{seed}:{lo}:{hi}:{mlo}:{mhi}"
        if fake:
            row = fake_probe(truth_of(spec), args.noise, not args.even, seed + 1, args.sources)
        else:
            row = bench(spec, False, args.size, 0, args.sources, args.probe_timeout)
        row["spec"] = spec
        rows.append(row)
        print(json.dumps(row), flush=True)
    ratios = [r.get("stable_sim_worst", 0.0) for r in rows]
    good = sum(r >= 0.95 for r in ratios)
    print(f"load: {os.getloadavg()}")
    print(
        f"summary: {good}/{len(rows)} networks at >= 0.95 ({100 * good / len(rows):.1f} %), worst {min(ratios):.3f}, "
        f"median {statistics.median(ratios):.3f}, below 0.85: {sum(r < 0.85 for r in ratios)}; "
        f"structure right {sum(bool(r.get('structure_ok')) for r in rows)}/{len(rows)}"
    )
    if fake:
        ref = [r["truth_reordered_worst"] for r in rows]
        print(
            f"reference, stable from the truth with its switches listed in another order: "
            f"{sum(r >= 0.95 for r in ref)}/{len(rows)} at >= 0.95, worst {min(ref):.3f}, "
            f"below 0.85: {sum(r < 0.85 for r in ref)}"
        )
    key = "rounds" if fake else "probe_s"
    by_size = {}
    for r in rows:
        if key in r:
            by_size.setdefault(r["hosts"], []).append(r[key])
    print(f"{key} by hosts: " + ", ".join(f"{n}: {statistics.mean(v):.0f}" for n, v in sorted(by_size.items())))
    print(
        "worst: "
        + ", ".join(
            f"{r['spec']} {r.get('stable_sim_worst')}"
            for r in sorted(rows, key=lambda r: r.get("stable_sim_worst", 0))[:5]
        )
    )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*", default=DEFAULT_NETWORKS)
    ap.add_argument("--real", action="store_true", help="also perform both stable plans on the testbed")
    ap.add_argument("--repeats", type=int, default=3, help="real runs of each plan (median)")
    ap.add_argument("--size", type=int, default=16 << 20, help="message size of the stable plans (bytes)")
    ap.add_argument("--sources", type=int, default=3, help="sources of the stable plans (the worst counts)")
    ap.add_argument("--family", choices=("fake", "testbed"), help="judge on fresh random networks instead")
    ap.add_argument("--count", type=int, help="networks in a family run (default 200 fake, 10 testbed)")
    ap.add_argument("--seed", type=int, help="batch seed to replay (default: fresh)")
    ap.add_argument("--nets", type=lambda s: [int(x) for x in s.split(",")], help="network seeds to replay")
    ap.add_argument("--hosts", type=lambda s: tuple(int(x) for x in s.split("-")), help="LO-HI hosts")
    ap.add_argument("--mbit", type=lambda s: tuple(int(x) for x in s.split("-")), help="LO-HI link Mbit/s")
    ap.add_argument("--noise", type=float, default=0.03, help="fake network's noise (default 0.03)")
    ap.add_argument("--even", action="store_true", help="fake network shares links evenly (not as TCP)")
    ap.add_argument("--probe-timeout", type=float, default=PROBE_TIMEOUT, help="seconds a testbed probe may take")
    args = ap.parse_args(argv)
    if args.family == "fake":
        return family(args)
    # a timeout's SIGTERM unwinds like an error, so every testbed brought up is brought down
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if os.geteuid() != 0:
        print("bench_probe: needs root (the emulated network)", file=sys.stderr)
        return 2
    if args.family == "testbed":
        return family(args)
    print(f"load: {os.getloadavg()}")
    for spec in args.networks:
        print(json.dumps(bench(spec, args.real, args.size, args.repeats, args.sources, args.probe_timeout)), flush=True)
    print(f"load: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
