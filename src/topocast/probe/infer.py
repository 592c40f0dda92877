"""From measurements to a topology file: the probe's steps, in order (docs/experiments/probe.md).

1. round-trip times: the latency tree (``latency_tree``): the links' latencies and, when
   the latencies tell switches apart, the tree's shape;
2. timed transfers: every link's bandwidth per direction, on the latency tree's links
   (``link_rates``), or, when the latencies show no switches, with the hosts grouped under
   switches by contention (``bandwidth_tree``);
3. the topology: the bandwidth tree's switches and links; bandwidths grouped into levels and
   divided by the goodput factor (TCP carries about 95 % of a link's rate: the file holds
   link rates, as every other topology file); each link's latency is half the round-trip
   time it adds between hosts, from the latency tree (hosts' pendant delays: the per-host
   stack delay is in them); a ``measured:`` section with the measurement count, the
   probe's duration and each estimate's spread and flags;
4. where the switch tree came from contention, a hub that the measurements cannot tell from
   a chain through one of its neighbours: experiments that tell them apart where one can
   (``ambiguity.decide_by_contention``), and of the explanations left, the one whose plans
   lose least when wrong (``ambiguity.least_loss_tree``), the others written into
   ``measured:``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from ..topology.measured import measured_notes
from ..topology.model import PhysicalLink, Topology
from .ambiguity import decide_by_contention, least_loss_tree
from .bandwidth_tree import Bulk, infer_bandwidth_tree
from .estimates import BandwidthTree, levels
from .latency_tree import LatencyTree, infer_latency_tree, merge_short_links
from .link_rates import measure_links
from .session import ProbeSession, robust_rtt

__all__ = ["build_topology", "infer_trees", "probe_network"]


RTT_NOISE_FACTOR = 3.0


def _round(x: float, digits: int = 3) -> float:
    """``x`` to ``digits`` significant digits (a probe is not more precise than that)."""
    return float(f"{x:.{digits}g}")


def probe_network(
    session: ProbeSession,
    hosts: list[str],
    *,
    duration: float = 1.0,
    pings: int = 10,
    rtt_threshold: float = 200e-6,
) -> tuple[LatencyTree, BandwidthTree]:
    """Measure with a started ``ProbeSession``: ``infer_trees`` on its round-trip times and
    timed transfers."""
    spreads: list[float] = []

    def rtt(a: str, b: str) -> float:
        samples = session.rtt(a, b, pings)
        spreads.append(rtt_spread(samples))
        return robust_rtt(samples)

    return infer_trees(hosts, rtt, session.bulk, duration, rtt_threshold, spreads)


def infer_trees(
    hosts: list[str],
    rtt: Callable[[str, str], float],
    bulk: Bulk,
    duration: float,
    rtt_threshold: float,
    rtt_spreads: list[float] | None = None,
) -> tuple[LatencyTree, BandwidthTree]:
    """The latency tree from ``rtt(a, b)`` (seconds); then, when it shows switches (two or
    more: the latencies tell places apart), that tree's links measured by ``bulk`` transfers
    (``link_rates``); else (one switch: no latency evidence, as on the emulated network) the
    switches found by contention (``bandwidth_tree``).

    ``rtt_spreads``: the spread of each round-trip estimate (filled while ``rtt`` measures):
    switch-to-switch links shorter than ``RTT_NOISE_FACTOR`` times their median are merged
    (noise, not structure), so a loaded machine's jitter never passes for switches."""
    lat = infer_latency_tree(hosts, rtt, rtt_threshold)
    if rtt_spreads:
        merge_short_links(lat, max(rtt_threshold, RTT_NOISE_FACTOR * statistics.median(rtt_spreads)))
    if len(lat.switches) >= 2:
        return lat, measure_links(lat.adj, hosts, lat.switches, bulk, duration)
    bw = infer_bandwidth_tree(hosts, bulk, duration)
    # hubs that the transfers so far cannot tell from a chain: experiments that can
    as_measured = Topology("measured", list(hosts), list(bw.switches), _links_as_measured(bw))
    bw.standing, count = decide_by_contention(as_measured, bulk, duration, bw.threshold)
    bw.measurements += count
    return lat, bw


def _links_as_measured(bw: BandwidthTree) -> list[PhysicalLink]:
    return [PhysicalLink(a, b, max(ab.value, 1.0), 0.0, max(ba.value, 1.0)) for (a, b), (ab, ba) in bw.links.items()]


def rtt_spread(samples: list[float]) -> float:
    """How far apart the samples behind one round-trip estimate lie (the lower half's range,
    the half ``robust_rtt`` takes its median of)."""
    low = sorted(samples)[: max(1, len(samples) // 2)]
    return low[-1] - low[0]


def host_latency(lat: LatencyTree | None, host: str) -> float:
    """One-way latency of a host's pendant link in the latency tree (half its RTT share)."""
    if lat is None or host not in lat.adj or not lat.adj[host]:
        return 0.0
    return max(0.0, next(iter(lat.adj[host].values())) / 2)


def build_topology(
    bw: BandwidthTree,
    hosts: list,
    *,
    name: str = "probed",
    goodput: float = 1.0,
    lat: LatencyTree | None = None,
    measurements: int = 0,
    duration: float = 0.0,
    launcher: str = "",
) -> Topology:
    rates = [e.value for ests in bw.links.values() for e in ests if e.value > 0]
    level = levels(rates)
    links, estimates = [], []
    for (a, b), (ab, ba) in bw.links.items():
        fwd = _round(level.get(ab.value, ab.value) / goodput)
        rev = _round(level.get(ba.value, ba.value) / goodput)
        latency = host_latency(lat, a) if a in hosts else (host_latency(lat, b) if b in hosts else 0.0)
        latency = _round(latency, 2)
        links.append(PhysicalLink(a, b, max(fwd, 1.0), latency, None if rev == fwd else max(rev, 1.0)))
        for d, e in (("a->b", ab), ("b->a", ba)):
            est = {"a": a, "b": b, "direction": d, "samples": max(1, len(e.samples)), "spread": round(e.spread, 4)}
            if e.at_least:
                est["at_least"] = True
            if e.uncertain:
                est["uncertain"] = True
            estimates.append(est)
    measured: dict = {
        "by": "topocast probe",
        "launcher": launcher,
        "measurements": int(measurements),
        "duration": round(float(duration), 3),
        "goodput": goodput,
        "estimates": estimates,
    }
    topo = Topology(name, list(hosts), list(bw.switches), links)
    if bw.by_contention:
        topo, alternatives = least_loss_tree(topo, bw.standing)
        if alternatives:
            measured["alternatives"] = alternatives
        merged = {r["switch"]: r["chosen"] for r in alternatives if r["chosen"] != r["switch"]}
        for e in estimates:
            e["a"], e["b"] = merged.get(e["a"], e["a"]), merged.get(e["b"], e["b"])
        kept = {frozenset((pl.a, pl.b)) for pl in topo.physical_links}
        measured["estimates"] = [e for e in estimates if frozenset((e["a"], e["b"])) in kept]
    return topo.replace(measured=measured, notes=measured_notes(measured))
