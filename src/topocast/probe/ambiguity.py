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
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..plan import Broadcast
from ..planners import get_planner
from ..sim import simulate
from ..topology.model import PhysicalLink, Topology

__all__ = ["least_loss_tree", "same_pair_rates"]

SAME_RATE = 0.03  # single-transfer rates this close are one measurement's worth apart
TIE = 0.005  # worst ratios this close: the star stays
MAX_NEIGHBOURS = 5  # hubs with more switch neighbours keep the star (the candidates grow)
SIZE = 64 << 20


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


def least_loss_tree(topo: Topology) -> tuple[Topology, list[dict]]:
    """``topo`` with each ambiguous hub replaced by the explanation that loses least when
    wrong; the record of every hub with alternatives (for ``measured: alternatives``)."""
    record = []
    for hub, around in _hubs(topo):
        if hub not in topo.switches or len(around) > MAX_NEIGHBOURS:
            continue
        options = [(z, _contract(topo, hub, z)) for z in around if z in topo.switches]
        options = [(z, c) for z, c in options if same_pair_rates(topo, c)]
        if not options:
            continue
        worst = _worst_ratios([topo, *(c for _, c in options)], _sources(topo, hub))
        best = int(np.argmax(worst))
        if worst[best] <= worst[0] + TIE:
            best = 0
        record.append(
            {
                "switch": hub,
                "or_merged_into": [z for z, _ in options],
                "chosen": hub if best == 0 else options[best - 1][0],
                "worst_ratio": round(float(worst[best]), 3),
            }
        )
        if best:
            topo = options[best - 1][1]
    return topo, record
