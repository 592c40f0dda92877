"""The relay ceiling against brute force: on small stars of hosts on shared (half-duplex) or
duplex links, the best fluid multi-tree broadcast (every partial arborescence rooted at the
source, rates by LP) never beats the ceiling, and the ceiling is what that optimum reaches on
the cases where the cut is tight."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from topocast import Topology, broadcast_bounds
from topocast.bounds.relay import relay_ceiling
from topocast.topology.model import PhysicalLink


def star(caps, sharing):
    hosts = [f"h{i}" for i in range(len(caps))]
    links = [PhysicalLink(h, "sw", c, sharing=s) for h, c, s in zip(hosts, caps, sharing)]
    return Topology("star", hosts, ["sw"], links)


def arborescences(hosts, source):
    """Every tree rooted at the source over a subset of the other hosts: {child: parent}."""
    others = [h for h in hosts if h != source]
    for k in range(1, len(others) + 1):
        for subset in itertools.combinations(others, k):
            for parents in itertools.product([source, *subset], repeat=k):
                tree = dict(zip(subset, parents))
                if any(c == p for c, p in tree.items()):
                    continue
                ok = True
                for c in subset:  # every node reaches the source without a cycle
                    seen, x = set(), c
                    while x != source:
                        if x in seen:
                            ok = False
                            break
                        seen.add(x)
                        x = tree[x]
                    if not ok:
                        break
                if ok:
                    yield tree


def brute_force(topo, source):
    """Best aggregate of fluid multi-tree broadcasts on a star (a non-blocking switch)."""
    trees = list(arborescences(list(topo.hosts), source))
    rows, rhs = [], []
    for h in topo.hosts:
        lid = topo.out_links(h)[0]
        link = topo.links[lid]
        send = [sum(1 for p in t.values() if p == h) for t in trees]
        recv = [1 if h in t else 0 for t in trees]
        if link.sharing == "shared":
            rows.append([s + r for s, r in zip(send, recv)])
            rhs.append(link.bandwidth)
        else:
            rows.append(send)
            rhs.append(link.bandwidth)
            rows.append(recv)
            rhs.append(topo.links[topo.link_id("sw", h)].bandwidth)
    gain = [len(t) for t in trees]
    res = linprog(-np.array(gain, float), A_ub=np.array(rows, float), b_ub=np.array(rhs), method="highs")
    assert res.status == 0
    return -res.fun


CASES = [
    ([10, 10, 10], ["shared"] * 3),
    ([10, 10, 10, 10], ["shared"] * 4),
    ([10, 4, 7, 3], ["shared"] * 4),
    ([3, 10, 10, 10], ["shared"] * 4),
    ([10, 10, 10, 10], ["duplex"] * 4),
    ([10, 4, 7, 3, 8], ["shared", "duplex", "shared", "duplex", "shared"]),
    ([6, 9, 2, 9, 5], ["shared"] * 5),
]


@pytest.mark.parametrize("caps, sharing", CASES)
def test_ceiling_is_never_beaten_and_never_above_the_max_flow_sum(caps, sharing):
    topo = star(caps, sharing)
    bound = broadcast_bounds(topo, "h0")
    ceiling = relay_ceiling(topo, "h0", bound.per_host_rate)
    best = brute_force(topo, "h0")
    assert best <= ceiling * (1 + 1e-9)
    assert ceiling <= bound.aggregate_bandwidth * (1 + 1e-12)


def test_all_shared_equal_hosts_reach_the_cut():
    """n + 1 hosts of capacity C on shared links: (C + n C) / 2, reached by brute force."""
    for n in (2, 3, 4):
        topo = star([10.0] * (n + 1), ["shared"] * (n + 1))
        bound = broadcast_bounds(topo, "h0")
        ceiling = relay_ceiling(topo, "h0", bound.per_host_rate)
        assert ceiling == pytest.approx(10.0 * (n + 1) / 2)
        assert bound.aggregate_bandwidth == pytest.approx(10.0 * n)  # max-flow alone sees n C
        assert brute_force(topo, "h0") == pytest.approx(ceiling)


def test_duplex_hosts_leave_the_max_flow_sum_alone():
    topo = star([10.0] * 4, ["duplex"] * 4)
    bound = broadcast_bounds(topo, "h0")
    assert relay_ceiling(topo, "h0", bound.per_host_rate) == pytest.approx(bound.aggregate_bandwidth)
    assert brute_force(topo, "h0") == pytest.approx(bound.aggregate_bandwidth)


def test_unbounded_flows_stay_unbounded():
    topo = Topology("fat", ["a", "b"], [], [PhysicalLink("a", "b", 10.0, sharing="fatpipe")])
    assert math.isinf(relay_ceiling(topo, "a", {"b": math.inf}))
