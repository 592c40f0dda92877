"""Reproduction of the Stable Broadcast paper's simulation study (docs/algorithms.md 1.6).

Paper [S:SB-slides 26-29, 33, 40]: 5 algorithms (flat tree, random pipeline, depth-first
(FPFR), Dijkstra, stable) simulated on "a real topology"; 8 bandwidth settings (4
distributions x same/different bandwidth per direction); broadcast to 10, 50 and 100 nodes;
10 (source, destinations) conditions each; y-axis: speed-up of the aggregate bandwidth over
the flat tree. Stability: 9 nodes, then one slow node added.

Ours ([I]):

* topology: :func:`~topocast.topology.generators.multi_cluster_tree` (the paper's topology is
  not given); ``N_HOSTS`` hosts in ``N_CLUSTERS`` clusters, one topology per bandwidth setting
  (seed 0), Mbit/s; draws pick the source and destinations uniformly (seed = draw index);
* "depth-first (FPFR)" is run twice, as ``depth_first`` (one unpaced chain; with our
  store-and-forward relays a host gets the minimum hop rate up to it, docs/algorithms.md 2.3) and as
  ``fpfr`` (paced common rate); the paper's curve is FPFR's. We also run
  ``balanced_multicast`` and ``optimal``;
* rates come from topocast's simulator (max-min sharing, pacing caps, fluid pipelining), not
  from the paper's simulator; message 1 GB;
* speed-up over flat = mean aggregate of the algorithm / mean aggregate of the flat tree over
  the draws (ratio of means);
* stability: ``multi_cluster_tree(10, 3 clusters, uniform 500-1000)`` = source + 9
  destinations, then a slow host (``SLOW_MBIT`` Mbit/s) added under a random switch;
  10 draws (seeds).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

import numpy as np

from ..bounds import broadcast_bounds
from ..plan import Broadcast
from ..planners import get_planner
from ..results import Result
from ..sim import simulate
from ..topology.generators import multi_cluster_tree
from ..topology.model import PhysicalLink, Topology

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = ["run_experiment", "SETTINGS", "ALGORITHMS", "real_topology_table"]

MBIT = 125_000
SIZE = 10**9
N_HOSTS = 200
N_CLUSTERS = 10
SLOW_MBIT = 10
ALGORITHMS = ["flat", "random_pipeline", "depth_first", "fpfr", "dijkstra", "balanced_multicast", "stable", "optimal"]
PAPER_FIVE = ["flat", "random_pipeline", "fpfr", "dijkstra", "stable"]
DISTRIBUTIONS = ["uniform-500-1000", "uniform-100-1000", "mixed", "switch-uniform-100-1000"]
SETTINGS = [(d, asym) for d in DISTRIBUTIONS for asym in (False, True)]
SEEDED = {"random_pipeline", "balanced_multicast"}
EXACT_TREES = {"stable", "fpfr", "balanced_multicast", "optimal"}


class _ResultRow(TypedDict):
    """One row of ``results.csv``: one algorithm on one draw of one setting."""

    setting: str
    distribution: str
    asymmetric: bool
    destinations: int
    draw: int
    algorithm: str
    aggregate_mbit: float
    bound_mbit: float
    makespan_s: float
    plan_s: float
    sim_s: float


class _StabilityRow(TypedDict):
    """One row of ``stability.csv``: one algorithm before and after the slow host joins."""

    draw: int
    algorithm: str
    aggregate_before_mbit: float
    aggregate_after_mbit: float
    existing_after_mbit: float
    worst_existing_ratio: float


class TableRow(TypedDict):
    """Means over the draws of one (setting, number of destinations)."""

    setting: str
    destinations: int
    bound_mbit: float
    mean_aggregate_mbit: dict[str, float]
    speedup_over_flat: dict[str, float]
    best_of_paper_five: str


class StabilityStats(TypedDict):
    """Means over the draws of one algorithm, before and after the slow host (Mbit/s)."""

    aggregate_before_mbit: float
    aggregate_after_mbit: float
    existing_hosts_after_mbit: float
    worst_existing_host_ratio: float


class StudyConfig(TypedDict):
    """What the study ran on (``summary.json``'s ``config``)."""

    n_hosts: int
    n_clusters: int
    topology_seed: int
    size_bytes: int
    draws: int
    destinations: list[int]
    slow_mbit: int


class Summary(TypedDict):
    """``summary.json``: the study's table and stability per algorithm."""

    table: list[TableRow]
    stability: dict[str, StabilityStats]
    elapsed_s: NotRequired[float]
    quick: NotRequired[bool]
    config: NotRequired[StudyConfig]


def _stepper(progress: Progress | None, description: str, total: int) -> Callable[[], None]:
    """Advance a task of ``progress`` by one step (nothing without a progress display)."""
    if progress is None:
        return lambda: None
    task = progress.add_task(description, total=total)
    return lambda: progress.advance(task)


def _setting_name(dist: str, asym: bool) -> str:
    return f"{dist}{' asym' if asym else ''}"


def _run_one(name: str, topo: Topology, src: str, dests: Sequence[str], seed: int) -> tuple[Result, float, float]:
    kw: dict[str, float] = {"seed": seed} if name in SEEDED else {}
    if name in EXACT_TREES:
        kw["rate_tolerance"] = 0.0  # the papers' trees, none merged (docs/planners.md)
    t0 = time.perf_counter()
    plan = get_planner("broadcast", name)(topo, Broadcast(src, SIZE, tuple(dests)), **kw)
    t1 = time.perf_counter()
    res = simulate(plan, topo)
    return res, t1 - t0, time.perf_counter() - t1


def _add_slow_host(topo: Topology, rng: np.random.Generator) -> Topology:
    attach = topo.switches[int(rng.integers(len(topo.switches)))]
    links = list(topo.physical_links) + [PhysicalLink("slow", attach, SLOW_MBIT * MBIT)]
    return topo.replace(hosts=tuple(topo.hosts) + ("slow",), links=links, name=topo.name + "+slow")


def run_experiment(
    out: Path,
    *,
    quick: bool = False,
    progress: Progress | None = None,
    topology_seed: int = 0,
    n_clusters: int = N_CLUSTERS,
) -> Summary:
    """Run the study, write ``results.csv``, ``summary.json``, ``summary.md`` and figures into ``out``.

    ``topology_seed`` and ``n_clusters`` change the generated study topologies (the paper does
    not give its own), to see how much the headline ratios depend on them.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [10, 50] if quick else [10, 50, 100]
    draws = 2 if quick else 10
    settings = SETTINGS[::2] if quick else SETTINGS
    rows: list[_ResultRow] = []
    n_tasks = len(settings) * len(sizes) * draws * len(ALGORITHMS) + draws * 2 * len(ALGORITHMS)
    step = _stepper(progress, "stable-broadcast", n_tasks)
    t_start = time.perf_counter()
    for dist, asym in settings:
        topo = multi_cluster_tree(N_HOSTS, n_clusters=n_clusters, bandwidth=dist, asymmetric=asym, seed=topology_seed)
        for n_dest in sizes:
            for draw in range(draws):
                rng = np.random.default_rng(1000 * n_dest + draw)
                pick = rng.choice(len(topo.hosts), n_dest + 1, replace=False)
                src = topo.hosts[int(pick[0])]
                dests = [topo.hosts[int(i)] for i in pick[1:]]
                bound = broadcast_bounds(topo, src, dests)
                for name in ALGORITHMS:
                    res, tp, ts = _run_one(name, topo, src, dests, draw)
                    rows.append(
                        {
                            "setting": _setting_name(dist, asym),
                            "distribution": dist,
                            "asymmetric": asym,
                            "destinations": n_dest,
                            "draw": draw,
                            "algorithm": name,
                            "aggregate_mbit": res.aggregate_bandwidth / MBIT,
                            "bound_mbit": bound.aggregate_bandwidth / MBIT,
                            "makespan_s": res.makespan,
                            "plan_s": tp,
                            "sim_s": ts,
                        }
                    )
                    step()
    # stability experiment
    stab: list[_StabilityRow] = []
    for draw in range(draws):
        topo = multi_cluster_tree(10, n_clusters=3, bandwidth="uniform-500-1000", seed=draw)
        bigger = _add_slow_host(topo, np.random.default_rng(draw))
        src = topo.hosts[0]
        for name in ALGORITHMS:
            before, _, _ = _run_one(name, topo, src, topo.hosts[1:], draw)
            step()
            after, _, _ = _run_one(name, bigger, src, bigger.hosts[1:], draw)
            step()
            worst = min(after.per_host[h].rate / r.rate for h, r in before.per_host.items())
            stab.append(
                {
                    "draw": draw,
                    "algorithm": name,
                    "aggregate_before_mbit": before.aggregate_bandwidth / MBIT,
                    "aggregate_after_mbit": after.aggregate_bandwidth / MBIT,
                    "existing_after_mbit": sum(after.per_host[h].rate for h in before.per_host) / MBIT,
                    "worst_existing_ratio": worst,
                }
            )
    elapsed = time.perf_counter() - t_start
    _write_rows(out / "results.csv", rows)
    _write_rows(out / "stability.csv", stab)
    summary = summarize(rows, stab)
    summary["elapsed_s"] = elapsed
    summary["quick"] = quick
    summary["config"] = {
        "n_hosts": N_HOSTS,
        "n_clusters": n_clusters,
        "topology_seed": topology_seed,
        "size_bytes": SIZE,
        "draws": draws,
        "destinations": sizes,
        "slow_mbit": SLOW_MBIT,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "summary.md").write_text(summary_markdown(summary))
    plot(summary, out)
    return summary


def _write_rows(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def summarize(rows: Sequence[_ResultRow], stab: Sequence[_StabilityRow]) -> Summary:
    """Mean aggregate per (setting, destinations, algorithm); speed-ups over flat; winners."""
    cells: dict[tuple[str, int], dict[str, list[float]]] = {}
    for r in rows:
        key = (r["setting"], r["destinations"])
        c = cells.setdefault(key, {})
        c.setdefault(r["algorithm"], []).append(r["aggregate_mbit"])
        if r["algorithm"] == "flat":
            c.setdefault("_bound", []).append(r["bound_mbit"])
    table: list[TableRow] = []
    for (setting, n), c in cells.items():
        mean = {a: float(np.mean(v)) for a, v in c.items() if not a.startswith("_")}
        flat = mean["flat"]
        table.append(
            {
                "setting": setting,
                "destinations": n,
                "bound_mbit": float(np.mean(c["_bound"])),
                "mean_aggregate_mbit": mean,
                "speedup_over_flat": {a: v / flat for a, v in mean.items()},
                "best_of_paper_five": max(PAPER_FIVE, key=lambda a: mean[a]),
            }
        )
    st: dict[str, dict[str, list[float]]] = {}
    for sr in stab:
        s = st.setdefault(sr["algorithm"], {"before": [], "after": [], "existing_after": [], "worst": []})
        s["before"].append(sr["aggregate_before_mbit"])
        s["after"].append(sr["aggregate_after_mbit"])
        s["existing_after"].append(sr["existing_after_mbit"])
        s["worst"].append(sr["worst_existing_ratio"])
    stability: dict[str, StabilityStats] = {
        a: {
            "aggregate_before_mbit": float(np.mean(s["before"])),
            "aggregate_after_mbit": float(np.mean(s["after"])),
            "existing_hosts_after_mbit": float(np.mean(s["existing_after"])),
            "worst_existing_host_ratio": float(np.min(s["worst"])),
        }
        for a, s in st.items()
    }
    return {"table": table, "stability": stability}


def summary_markdown(summary: Summary) -> str:
    lines = ["# Stable Broadcast simulation study (topocast reproduction)", ""]
    algs = ALGORITHMS
    cfg = summary.get("config")
    if cfg:
        lines += [
            f"Topologies: multi_cluster_tree({cfg['n_hosts']} hosts, {cfg['n_clusters']} clusters, "
            f"seed {cfg.get('topology_seed', 0)}) per setting; {cfg['draws']} draws of (source, destinations) "
            f"for {', '.join(map(str, cfg['destinations']))} destinations; message {cfg['size_bytes']:,} bytes.",
            "",
        ]
    lines.append(
        "Speed-up of the aggregate bandwidth over the flat tree (mean over draws); "
        "last columns: stable / bound and the best of the paper's five algorithms."
    )
    lines.append("")
    lines.append("| setting | dests | " + " | ".join(algs) + " | stable/bound | best of 5 |")
    lines.append("|---|---:|" + "---:|" * len(algs) + "---:|---|")
    for row in sorted(summary["table"], key=lambda r: (r["setting"], r["destinations"])):
        sp = row["speedup_over_flat"]
        ratio = row["mean_aggregate_mbit"]["stable"] / row["bound_mbit"]
        lines.append(
            f"| {row['setting']} | {row['destinations']} | "
            + " | ".join(f"{sp[a]:.2f}" for a in algs)
            + f" | {ratio:.3f} | {row['best_of_paper_five']} |"
        )
    lines += [
        "",
        "Stability (source + 9 destinations, then one slow host; mean over draws, Mbit/s):",
        "",
        "| algorithm | aggregate before | aggregate after | the 9 hosts after | worst host after/before |",
        "|---|---:|---:|---:|---:|",
    ]
    for a in algs:
        s = summary["stability"][a]
        lines.append(
            f"| {a} | {s['aggregate_before_mbit']:.1f} | {s['aggregate_after_mbit']:.1f} | "
            f"{s['existing_hosts_after_mbit']:.1f} | {s['worst_existing_host_ratio']:.3f} |"
        )
    if "elapsed_s" in summary:
        lines += ["", f"Run time: {summary['elapsed_s']:.0f} s."]
    return "\n".join(lines) + "\n"


def plot(summary: Summary, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = sorted(
        {r["setting"] for r in summary["table"]}, key=lambda s: [_setting_name(d, a) for d, a in SETTINGS].index(s)
    )
    cols = 4 if len(settings) > 4 else len(settings)
    nrows = math.ceil(len(settings) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.6 * nrows), squeeze=False, sharey=True)
    markers = dict(zip(ALGORITHMS, "o^vsDPX*"))
    for ax, setting in zip(axes.flat, settings):
        rows = sorted((r for r in summary["table"] if r["setting"] == setting), key=lambda r: r["destinations"])
        xs = [r["destinations"] for r in rows]
        for a in ALGORITHMS:
            ax.plot(xs, [r["speedup_over_flat"][a] for r in rows], marker=markers[a], label=a)
        ax.plot(xs, [r["bound_mbit"] / r["mean_aggregate_mbit"]["flat"] for r in rows], "k--", label="bound")
        ax.set_title(setting, fontsize=10)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xlabel("destinations")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.flat[len(settings) :]:
        ax.axis("off")
    axes[0][0].set_ylabel("speed-up over flat tree")
    axes.flat[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    st = summary["stability"]
    x = np.arange(len(ALGORITHMS))
    ax.bar(x - 0.2, [st[a]["aggregate_before_mbit"] for a in ALGORITHMS], 0.4, label="9 hosts")
    ax.bar(
        x + 0.2,
        [st[a]["existing_hosts_after_mbit"] for a in ALGORITHMS],
        0.4,
        label="same 9 hosts after adding a slow host",
    )
    ax.set_xticks(x)
    ax.set_xticklabels(ALGORITHMS, rotation=30, fontsize=8)
    ax.set_ylabel("aggregate bandwidth (Mbit/s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "stability.png", dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- real topologies
def real_topology_table(
    data_dir: Path,
    out: Path,
    *,
    default_bandwidth: float = 125e6,
    max_dests: int = 100,
    progress: Progress | None = None,
) -> tuple[list[dict[str, object]], list[dict[str, str]]]:
    """Every broadcast planner on every SimGrid / Topology Zoo file of ``data_dir``.

    Source: the first host. Destinations: every other host, or a seeded sample of
    ``max_dests`` when there are more. Zoo links without a speed get ``default_bandwidth``
    (bytes/s; default 1 Gbit/s). Files that fail to load are listed with the reason.
    """
    from ..planners import available_planners
    from ..topology import load_topology

    files = sorted(Path(data_dir).glob("simgrid/*")) + sorted(Path(data_dir).glob("topology-zoo/*.graphml"))
    files = [f for f in files if f.suffix in (".xml", ".conf", ".graphml")]
    names = [p.name for p in available_planners("broadcast", include_selectors=False)]
    rows: list[dict[str, object]] = []
    failed: list[dict[str, str]] = []
    step = _stepper(progress, "real topologies", len(files))
    for f in files:
        try:
            topo = load_topology(str(f), default_bandwidth=default_bandwidth)
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed.append({"file": f.name, "reason": str(exc)[:200]})
            step()
            continue
        src = topo.hosts[0]
        dests = [h for h in topo.hosts if h != src]
        if len(dests) > max_dests:
            rng = np.random.default_rng(0)
            dests = [dests[i] for i in sorted(rng.choice(len(dests), max_dests, replace=False))]
        bound = broadcast_bounds(topo, src, dests)
        row: dict[str, object] = {
            "file": f"{f.parent.name}/{f.name}",
            "hosts": len(topo.hosts),
            "destinations": len(dests),
            "tree": topo.is_tree(),
            "bound_mbit": bound.aggregate_bandwidth / MBIT,
        }
        for name in names:
            try:
                res, _, _ = _run_one(name, topo, src, dests, 0)
                row[name] = res.aggregate_bandwidth / bound.aggregate_bandwidth
            except Exception as exc:  # noqa: BLE001
                row[name] = float("nan")
                failed.append({"file": f.name, "reason": f"{name}: {str(exc)[:240]}"})
        rows.append(row)
        step()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_rows(out / "real_topologies.csv", rows)
    lines = [
        "| topology | hosts | dests | tree | bound (Mbit/s) | " + " | ".join(names) + " |",
        "|---|---:|---:|---|---:|" + "---:|" * len(names),
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['hosts']} | {r['destinations']} | {'yes' if r['tree'] else 'no'} | "
            f"{r['bound_mbit']:.0f} | " + " | ".join(f"{r[n]:.3f}" for n in names) + " |"
        )
    if failed:
        lines += ["", "Not run:", ""] + [f"* {x['file']}: {x['reason']}" for x in failed]
    (out / "real_topologies.md").write_text("\n".join(lines) + "\n")
    return rows, failed
