"""Switch trees that the measurements cannot tell apart, and the one whose plans lose least
when it is wrong (our design, docs/experiments/probe.md, "Trees the measurements cannot
tell apart").

Single linkage joins groups under a new switch of its own (a hub without hosts). Where the
hub's link to one of its neighbour switches z is never the narrowest on any host pair's path,
the same single-transfer rates come from a tree in which the hub *is* z (a chain through z's
switch): the star and each such chain are explanations of the same measurements, and the
level tests (``bandwidth_tree._LevelTree``) did not decide between them. A plan made on the
wrong one loses: it counts on a link the network shares, or avoids one it has. So every
explanation is planned on (``stable``, from a host behind each of the hub's links) and the
plan simulated on every other explanation; the tree kept is the one whose plans' worst
ratio to the best plan of the explanation they run on is highest (minimax regret; ties to
the star). The alternatives and that worst ratio go into the file's ``measured:`` section.

Before that, where an experiment can tell the explanations apart, it is made
(``decide_by_contention``): the explanations differ in which transfers share a link, so the
hosts behind all of the hub's links but one send to the hosts behind that one at once (and
the other way), the total each explanation predicts (max-min sharing on its links) is
compared with the total measured, and an explanation whose prediction misses by more than
the contention threshold is denied. The one left is kept; where several are left, the least
loss decides among them.
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np

from ..plan import Broadcast
from ..planners import get_planner
from ..sim import simulate
from ..sim.maxmin import progressive_filling
from ..topology.model import PhysicalLink, Topology

__all__ = ["decide_by_contention", "least_loss_tree", "same_pair_rates"]

SAME_RATE = 0.03  # single-transfer rates this close are one measurement's worth apart
TIE = 0.005  # worst ratios this close: the star stays
MAX_NEIGHBOURS = 5  # hubs with more switch neighbours keep the star (the candidates grow)
SIZE = 64 << 20
SENDERS = 3  # transfers from each side in an experiment


def _pair_rates(topo: Topology) -> np.ndarray:
    hosts = topo.hosts
    return np.array([[topo.route_bandwidth(a, b) if a != b else 0.0 for b in hosts] for a in hosts])


def same_pair_rates(a: Topology, b: Topology) -> bool:
    """Do ``a`` and ``b`` give every ordered pair of hosts the same single-transfer rate
    (their paths' narrowest link), within ``SAME_RATE``?"""
    ra, rb = _pair_rates(a), _pair_rates(b)
    return bool(np.all(np.abs(ra - rb) <= SAME_RATE * np.maximum(ra, 1.0)))


def _contract(topo: Topology, hub: str, into: str) -> Topology:
    """``topo`` with ``hub`` merged into its neighbour switch ``into`` (their link dropped,
    the hub's other links moved to ``into``, each direction's rate kept)."""
    links = []
    for pl in topo.physical_links:
        if {pl.a, pl.b} == {hub, into}:
            continue
        a, b = (into if pl.a == hub else pl.a), (into if pl.b == hub else pl.b)
        links.append(PhysicalLink(a, b, pl.bandwidth, pl.latency, pl.bandwidth_ba))
    return topo.replace(switches=[s for s in topo.switches if s != hub], links=links)


def _hubs(topo: Topology) -> list[tuple[str, list[str]]]:
    """Switches without hosts joined to three or more nodes, with their neighbour switches."""
    out = []
    for s in topo.switches:
        around = topo.neighbors(s)
        if len(around) >= 3 and not any(topo.is_host(n) for n in around):
            out.append((s, sorted(around)))
    return out


def _sides(topo: Topology, hub: str) -> dict[str, list[str]]:
    """Each neighbour of ``hub`` -> the hosts behind it, fastest first."""
    graph = nx.Graph((pl.a, pl.b) for pl in topo.physical_links)
    graph.remove_node(hub)
    out = {}
    for n in topo.neighbors(hub):
        side = nx.node_connected_component(graph, n)
        hosts = [h for h in topo.hosts if h in side]
        out[n] = sorted(hosts, key=lambda h: (-topo.route_bandwidth(h, topo.neighbors(h)[0]), h))
    return out


def _explanations(topo: Topology, hub: str, around: list[str]) -> list[tuple[str, Topology]]:
    """(name, tree): the star (named by the hub) and the hub merged into each neighbour
    switch that keeps every pair's single-transfer rate."""
    options = [(z, _contract(topo, hub, z)) for z in around if z in topo.switches]
    return [(hub, topo)] + [(z, c) for z, c in options if same_pair_rates(topo, c)]


def _experiments(sides: dict[str, list[str]]) -> list[list[tuple]]:
    """For each side z: the other sides' fastest hosts send to z's hosts at once, and z's
    hosts to theirs (each host in one transfer at most)."""
    out = []
    for z, inside in sides.items():
        others = [hs for n, hs in sides.items() if n != z]
        for into in (True, False):
            flows: list[tuple] = []
            free = list(inside)
            for k in range(SENDERS):
                for hs in others:
                    if free and k < len(hs):
                        far, near = hs[k], free.pop(0)
                        flows.append((far, near) if into else (near, far))
            if len({f[0] for f in flows}) >= 2 or len({f[1] for f in flows}) >= 2:
                out.append(flows)
    return out


def _max_min_total(topo: Topology, flows: list[tuple]) -> float:
    """What ``flows`` carry together on ``topo`` under max-min sharing."""
    pair_flow, pair_res = [], []
    for k, (s, d) in enumerate(flows):
        for link in topo.route(s, d):
            pair_flow.append(k)
            pair_res.append(link)
    rates = progressive_filling(
        np.array(pair_flow, dtype=np.int64),
        np.array(pair_res, dtype=np.int64),
        topo.link_bandwidth,
        np.full(len(flows), np.inf),
    )
    return float(np.sum(rates))


def decide_by_contention(
    topo: Topology, bulk: Callable[[list, float], list], duration: float, threshold: float
) -> tuple[dict[str, list[str]], int]:
    """For each ambiguous hub of ``topo`` (rates as measured), the explanations that the
    experiments leave standing (by name: the hub for the star, else the switch it is merged
    into), and the transfers measured. An experiment is made only where two explanations'
    predicted totals differ by more than twice ``threshold``; an explanation whose
    prediction misses the measured total by more than ``threshold`` (relative) is denied,
    unless that would deny them all."""
    left: dict[str, list[str]] = {}
    count = 0
    for hub, around in _hubs(topo):
        options = _explanations(topo, hub, around)
        if len(options) < 2 or len(around) > MAX_NEIGHBOURS:
            continue
        standing = [name for name, _ in options]
        for flows in _experiments(_sides(topo, hub)):
            predicted = {name: _max_min_total(t, flows) for name, t in options if name in standing}
            if max(predicted.values()) <= (1 + 2 * threshold) * min(predicted.values()):
                continue
            measured = sum(bulk(flows, duration))
            count += len(flows)
            fits = [n for n, p in predicted.items() if abs(measured / p - 1) <= threshold]
            if fits:
                standing = [n for n in standing if n not in predicted or n in fits]
        left[hub] = standing
    return left, count


def _sources(topo: Topology, hub: str) -> list[str]:
    """The fastest host behind each of the hub's links (a plan from each side)."""
    graph = nx.Graph((pl.a, pl.b) for pl in topo.physical_links)
    graph.remove_node(hub)
    out = []
    for side in nx.connected_components(graph):
        hosts = [h for h in topo.hosts if h in side]
        out.append(max(hosts, key=lambda h: (topo.route_bandwidth(h, topo.neighbors(h)[0]), h)))
    return out


def _worst_ratios(candidates: list[Topology], sources: list[str]) -> list[float]:
    """For each candidate, the worst over sources and over the other candidates of its
    plan's rate on that candidate / that candidate's own plan's rate."""
    stable = get_planner("broadcast", "stable")
    worst = [1.0] * len(candidates)
    for src in sources:
        plans = [stable(c, Broadcast(src, SIZE)) for c in candidates]
        for j, truth in enumerate(candidates):
            best = simulate(plans[j], truth).aggregate_bandwidth
            for i, plan in enumerate(plans):
                if i != j:
                    worst[i] = min(worst[i], simulate(plan, truth).aggregate_bandwidth / best)
    return worst


def least_loss_tree(topo: Topology, standing: dict[str, list[str]] | None = None) -> tuple[Topology, list[dict]]:
    """``topo`` with each ambiguous hub replaced by the explanation that loses least when
    wrong, among those that the experiments left ``standing`` (hub -> names, from
    ``decide_by_contention``; all of them when the hub is not in it); the record of every
    hub with alternatives (for ``measured: alternatives``)."""
    record = []
    for hub, around in _hubs(topo):
        if hub not in topo.switches or len(around) > MAX_NEIGHBOURS:
            continue
        options = _explanations(topo, hub, around)
        if len(options) < 2:
            continue
        kept = (standing or {}).get(hub)
        candidates = [(n, t) for n, t in options if kept is None or n in kept] or options
        worst = _worst_ratios([t for _, t in candidates], _sources(topo, hub)) if len(candidates) > 1 else [1.0]
        best = int(np.argmax(worst))
        if candidates[0][0] == hub and worst[best] <= worst[0] + TIE:
            best = 0
        chosen, tree = candidates[best]
        # the alternatives written are the explanations left standing: a hub that the
        # experiments showed to be one neighbour's switch is written merged, with none
        others = [n for n, _ in candidates if n != hub]
        if others or chosen != hub:
            record.append(
                {"switch": hub, "or_merged_into": others, "chosen": chosen, "worst_ratio": round(float(worst[best]), 3)}
            )
        topo = tree
    return topo, record
