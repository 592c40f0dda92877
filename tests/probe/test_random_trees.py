"""The whole inference (probe.infer.infer_trees) on seeded random trees whose hosts hang off
inner switches too, against the fake max-min network (tests/probe/fake_network.py): the
same host groups as the truth's bandwidth-equivalent form (probe.equivalent), every max-flow
within 10 %, the stable plan within 5 %."""

from __future__ import annotations

import numpy as np
import pytest

from topocast.bounds import maxflow_from
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.probe.equivalent import bandwidth_equivalent, host_groups
from topocast.probe.estimates import RETAKES
from topocast.probe.infer import build_topology, infer_trees
from topocast.probe.link_rates import EDGE_REPEATS, FAN, FAN_REPEATS, MAX_FLOWS
from topocast.sim import simulate
from topocast.topology.generators import random_tree

from .fake_network import FakeNetwork


def with_latencies(topo, seed: int, switch_links=(100e-6, 2e-3), host_links=(20e-6, 500e-6)):
    """``topo`` with random one-way latencies (switch links longer than host links)."""
    rng = np.random.default_rng(seed)
    hosts = set(topo.hosts)
    links = [
        type(pl)(
            pl.a,
            pl.b,
            pl.bandwidth,
            float(rng.uniform(*(host_links if hosts & {pl.a, pl.b} else switch_links))),
            pl.bandwidth_ba,
        )
        for pl in topo.physical_links
    ]
    return topo.replace(links=links)


def check(truth, tree, lat_inferred_hosts, goodput=0.955):
    inferred = build_topology(tree, lat_inferred_hosts, goodput=goodput, measurements=tree.measurements)
    assert host_groups(bandwidth_equivalent(inferred)) == host_groups(bandwidth_equivalent(truth))
    for s in truth.hosts:
        a, b = maxflow_from(truth, s), maxflow_from(inferred, s)
        for h in truth.hosts:
            if h != s:
                assert b[h] == pytest.approx(a[h], rel=0.10), (s, h)
    stable = get_planner("broadcast", "stable")
    src = truth.hosts[0]
    mine = simulate(stable(inferred, Broadcast(src, 1 << 26)), truth).aggregate_bandwidth
    best = simulate(stable(truth, Broadcast(src, 1 << 26)), truth).aggregate_bandwidth
    assert mine >= 0.95 * best
    return inferred


@pytest.mark.parametrize("seed", range(8))
def test_latency_tree_and_link_rates_recover_random_trees(seed):
    """Latencies tell the switches apart: the latency tree is the structure, every link
    measured across it (hosts under inner switches included)."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(8, 25))
    truth = with_latencies(random_tree(n, max(2, n // 4), min_mbit=20, max_mbit=200, seed=seed), seed)
    truth = bandwidth_equivalent(truth).replace(name=truth.name)
    net = FakeNetwork(truth, noise=0.03, seed=seed)
    lat, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 60e-6)
    assert len(lat.switches) >= 2
    check(truth, tree, list(truth.hosts))
    # O(N·d), not all pairs: the pairs under each switch, the fan tests and retakes per host,
    # and a few transfers per link between switches
    under = [
        sum(1 for pl in truth.physical_links if s in (pl.a, pl.b) and {pl.a, pl.b} & set(truth.hosts))
        for s in truth.switches
    ]
    switch_links = sum(1 for pl in truth.physical_links if {pl.a, pl.b} <= set(truth.switches))
    budget = (
        sum(g * (g - 1) for g in under)
        + n * 2 * (FAN * FAN_REPEATS + RETAKES)
        + switch_links * 2 * MAX_FLOWS * (EDGE_REPEATS + RETAKES)
    )
    assert tree.measurements <= budget


def test_link_measurements_run_in_parallel():
    """Measurements that share no link run in one round: far fewer rounds than measurements."""
    truth = with_latencies(random_tree(20, 5, min_mbit=20, max_mbit=200, seed=3), 3)
    truth = bandwidth_equivalent(truth).replace(name=truth.name)
    net = FakeNetwork(truth, noise=0.0, seed=3)
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 60e-6)
    biggest = max(len(g) for g in tree.groups)
    # the round robins of all switches run together (biggest - 1 rounds), then the rest;
    # each link between switches is measured EDGE_REPEATS times; the hosts' lone fastest
    # readings are measured RETAKES times more, each time packed into at most two rounds here
    switch_links = sum(1 for link in truth.physical_links if link.a in truth.switches and link.b in truth.switches)
    extra = (EDGE_REPEATS - 1) * switch_links + 2 * RETAKES
    assert net.rounds <= biggest - 1 + len(truth.physical_links) // 2 + extra, (net.rounds, biggest)
    assert tree.measurements >= 3 * net.rounds


def test_contention_alone_recovers_most_random_trees():
    """No latency evidence (as on the emulated network): the switches found by contention
    alone, on 12 seeded random trees with hosts under inner switches, 3 % noise. A switch-to-
    switch link that only a particular set of transfers fills can go unseen, so this asserts
    a share (docs/experiments/probe.md gives the per-tree results): the host groups of at
    least 9 trees of 12, the max-flows within 10 % for at least 11, and the stable plan within
    5 % for at least 11."""
    from topocast.probe.bandwidth_tree import infer_bandwidth_tree

    groups_ok = flows_ok = stable_ok = 0
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(8, 25))
        truth = bandwidth_equivalent(random_tree(n, max(2, n // 4), min_mbit=20, max_mbit=200, seed=seed))
        net = FakeNetwork(truth, noise=0.03, seed=1)
        tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
        inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
        groups_ok += host_groups(bandwidth_equivalent(inferred)) == host_groups(truth)
        worst = max(
            abs(maxflow_from(inferred, s)[h] / maxflow_from(truth, s)[h] - 1)
            for s in truth.hosts
            for h in truth.hosts
            if h != s
        )
        flows_ok += worst <= 0.10
        stable = get_planner("broadcast", "stable")
        plan = Broadcast(truth.hosts[0], 1 << 26)
        mine = simulate(stable(inferred, plan), truth).aggregate_bandwidth
        stable_ok += mine >= 0.95 * simulate(stable(truth, plan), truth).aggregate_bandwidth
        # O(N) rounds: the groups' own round robins add at most twice their largest group's
        largest = max(len(g) for g in tree.groups)
        assert net.rounds <= 5 * n + 2 * (largest - 1)
    assert groups_ok >= 9 and flows_ok >= 11 and stable_ok >= 11, (groups_ok, flows_ok, stable_ok)


class _ScriptedRuns:
    """Stands in for link_rates._Runner: each call of ``tasks`` returns the next scripted
    readings (per task, the rates of its transfers)."""

    def __init__(self, *calls):
        self.calls = list(calls)
        self.asked = []

    def tasks(self, tasks, retake=False, pack=True):
        self.asked.append(len(tasks))
        return self.calls.pop(0)


def test_a_lone_fast_reading_of_a_switch_link_is_measured_again_and_outvoted():
    """Of two readings of a link between switches, a fastest total more than NEAR_TOP above
    the other may be luck: the link is measured RETAKES times more and the median counts;
    the direction whose readings agree keeps its fastest."""
    from topocast.probe.link_rates import _edge_readings

    edges = [("edge", [("a1", "b1"), ("b1", "a1")], ("sw0", "sw1"))]
    runs = _ScriptedRuns([[50.0, 40.0]], [[40.0, 39.0]], [[41.0, 38.0]], [[39.0, 37.0]])
    ((there, back),) = _edge_readings(runs, edges)
    assert there == [41.0] and back == [40.0]
    assert runs.asked == [1, 1] + [1] * RETAKES and not runs.calls


def test_switch_link_readings_that_agree_are_not_measured_again():
    from topocast.probe.link_rates import _edge_readings

    edges = [("edge", [("a1", "b1"), ("b1", "a1")], ("sw0", "sw1"))]
    runs = _ScriptedRuns([[40.0, 40.0]], [[41.0, 39.0]])
    assert _edge_readings(runs, edges) == [([41.0], [40.0])]
    assert runs.asked == [1, 1]


@pytest.mark.parametrize("hosts, tree_seed", [(12, 1), (20, 3)])
@pytest.mark.parametrize("noise_seed", [0, 1, 2])
def test_slow_hosts_are_placed_by_contention_in_either_direction(hosts, tree_seed, noise_seed):
    """Two seeded trees of the testbed's benchmark (benchmarks/bench_probe.py) with hosts
    too slow to fill any link between switches, so never separated from anyone: random
    tree 12/1 has two of them (24 and 42 Mbit/s) beside a candidate group of two hosts too
    few to fill the link from its side (only the load from the candidate's side shows where
    they are); random tree 20/3 has a 20 Mbit/s host under a switch between two other groups'
    (on the side of both candidates; the comparison between the candidates places it).
    The shared links split unevenly between transfers, as TCP does."""
    from topocast.probe.bandwidth_tree import infer_bandwidth_tree

    truth = bandwidth_equivalent(random_tree(hosts, hosts // 4, min_mbit=20, max_mbit=200, seed=tree_seed))
    net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
    assert host_groups(bandwidth_equivalent(inferred)) == host_groups(truth)
