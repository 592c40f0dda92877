"""Bandwidth/structure inference (probe.bandwidth_tree) against max-min fair rates on known
topologies (tests/probe/fake_network.py), with 3 % noise and TCP goodput 0.955."""

from __future__ import annotations

from pathlib import Path

import pytest

from topocast.bounds import maxflow_from
from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.probe import bandwidth_tree
from topocast.probe.bandwidth_tree import _contend, _Prober, infer_bandwidth_tree
from topocast.probe.equivalent import bandwidth_equivalent, host_groups
from topocast.probe.estimates import FlowSamples, levels
from topocast.probe.infer import build_topology
from topocast.probe.link_rates import FAN, FAN_REPEATS
from topocast.sim import simulate
from topocast.topology import load_topology
from topocast.topology.generators import random_tree

from .fake_network import FakeNetwork

THREE_LEVEL = str(Path(__file__).parent / "data" / "three-level-asym.yaml")


@pytest.mark.parametrize(
    "spec", ["builtin:hetero-2switch", "builtin:uniform-2switch", "builtin:two-clusters", THREE_LEVEL]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_groups_bandwidths_and_stable_plan(spec, seed):
    truth = load_topology(spec)
    net = FakeNetwork(truth, goodput=0.955, noise=0.03, seed=seed)
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
    assert host_groups(inferred) == host_groups(truth)
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
    n = len(truth.hosts)
    # every pair both ways once (N(N-1) transfers) in N - 1 rounds, plus the noise round,
    # borderline rounds again, the links between groups and the fan tests (at most one
    # each way per host, measured FAN_REPEATS times), and the groups' own round robins
    # (each round at most twice): O(N) rounds
    largest = max(len(g) for g in host_groups(truth))
    assert net.rounds <= 4 * n + 2 * (largest - 1)
    assert tree.measurements <= 3 * n * n + 2 * FAN * FAN_REPEATS * n
    assert inferred.measured["measurements"] == tree.measurements


def test_one_switch_when_nothing_contends(monkeypatch):
    """A star of equal hosts: nothing ever slows down, so every host hangs off one switch.
    Its group is all hosts, whose round robin was the round robin of all hosts: it is not
    run a second time."""
    truth = load_topology("builtin:hetero-2switch")
    truth = truth.replace(
        switches=["hub"],
        links=[type(truth.physical_links[0])(h, "hub", 25e6) for h in truth.hosts],
    )
    net = FakeNetwork(truth, noise=0.02)
    own_rounds = []
    monkeypatch.setattr(bandwidth_tree, "_slowed", lambda pr, flows, rates: own_rounds.append(flows) or set())
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    assert own_rounds == []
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
    assert host_groups(inferred) == {frozenset(truth.hosts)}
    for h in truth.hosts[1:]:
        assert maxflow_from(inferred, truth.hosts[0])[h] == pytest.approx(25e6, rel=0.1)


def test_levels_group_nearly_equal_rates_at_their_smallest():
    lv = levels([100.0, 103.0, 98.0, 40.0, 41.0, 10.0, 104.5])
    assert lv[100.0] == lv[103.0] == lv[98.0] == 98.0
    assert lv[104.5] == 104.5  # more than 6 % above the level's smallest: a level of its own
    assert lv[40.0] == lv[41.0] == 40.0
    assert lv[10.0] == 10.0


def test_contention_threshold_follows_the_measured_noise():
    """16 hosts under 4 leaf switches (uplinks 1.5 x a host): recovered with 3 % and with 8 %
    noise; the threshold taken as contention grows with the noise measured."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from bench_probe import clusters

    truth = clusters(16, 4)
    thresholds = []
    for noise in (0.03, 0.08):
        net = FakeNetwork(truth, noise=noise, seed=1)
        tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
        assert {frozenset(g) for g in tree.groups} == host_groups(truth)
        thresholds.append(tree.threshold)
    assert thresholds[0] < thresholds[1]


def test_a_lone_fastest_reading_is_measured_again():
    """A 10 Mbit/s link that once read 11.4 (testbed luck): measured twice more, the median
    of the readings counts and the link reads as its other readings; a true fastest reading
    is confirmed, though one of its readings was slowed down."""
    fs = FlowSamples()
    fs.add([("b4", "a1"), ("b4", "a2"), ("b4", "a3"), ("b4", "b1")], [11.4, 10.2, 10.1, 10.0])
    assert fs.host_up("b4").value == pytest.approx(10.1)  # unconfirmed: the next one counts
    assert ("b4", "a1") in fs.unconfirmed_tops()
    fs.retake([("b4", "a1"), ("b4", "a1")], [10.2, 10.3])
    assert fs.host_up("b4").value == pytest.approx(10.15)
    fast = FlowSamples()
    fast.add([("x", "a"), ("x", "b"), ("x", "c")], [150.0, 120.0, 118.0])
    assert ("x", "a") in fast.unconfirmed_tops()
    fast.retake([("x", "a"), ("x", "a")], [146.0, 90.0])
    assert fast.host_up("x").value == pytest.approx(146.0)
    assert ("x", "a") not in fast.unconfirmed_tops()


@pytest.mark.parametrize("seed", range(4))
def test_a_slow_host_shares_the_link_it_crosses(seed):
    """hetero-2switch's 10 Mbit/s host b4 beside transfers that fill the 40 Mbit/s link
    between the switches, the link split unevenly between them as TCP does: its transfer
    across shares that link, its transfer within its switch does not."""
    truth = load_topology("builtin:hetero-2switch")
    pr = _Prober(FakeNetwork(truth, noise=0.03, seed=seed, uneven=True).bulk, 0.3)
    assert _contend(pr, ("b4", "s"), ("b1", "a1"), ("b2", "a2"), ("b3", "a3"))
    assert not _contend(pr, ("b4", "b1"), ("s", "b2"), ("a1", "b3"), ("a2", "b4"))


def test_one_stalled_transfer_does_not_split_a_group():
    """A transfer between two hosts under one switch read 40 % slow once (a stall of the
    machine running the emulation): its round is measured again and the hosts stay together."""
    truth = load_topology("builtin:hetero-2switch")
    net = FakeNetwork(truth, noise=0.01, seed=0)
    stalled = {"done": False}

    def bulk(flows, duration):
        rates = net.bulk(flows, duration)
        if not stalled["done"] and ("a1", "a2") in flows:
            stalled["done"] = True
            rates[flows.index(("a1", "a2"))] *= 0.6
        return rates

    tree = infer_bandwidth_tree(list(truth.hosts), bulk, 0.3)
    assert stalled["done"]
    assert {frozenset(g) for g in tree.groups} == host_groups(truth)


def _two_switches(fast_mbit: float):
    """sw0: h0 at ``fast_mbit`` beside three hosts at 60 Mbit/s; sw1: two hosts at 100 Mbit/s;
    a 40 Mbit/s link between the switches."""
    mbit = 1e6 / 8
    link = type(load_topology("builtin:hetero-2switch").physical_links[0])
    links = [link("h0", "sw0", fast_mbit * mbit)]
    links += [link(h, "sw0", 60 * mbit) for h in ("h1", "h2", "h3")]
    links += [link(h, "sw1", 100 * mbit) for h in ("h4", "h5")]
    links.append(link("sw0", "sw1", 40 * mbit))
    return load_topology("builtin:hetero-2switch").replace(
        name="fan", hosts=[f"h{i}" for i in range(6)], switches=["sw0", "sw1"], links=links
    )


@pytest.mark.parametrize("seed", range(30))
def test_a_host_faster_than_each_of_its_partners_is_read_by_a_fan_test(seed):
    """h0's link (150 Mbit/s) is faster than every single transfer it can make: to a mate
    (60) or across the 40 Mbit/s link. The round robin shows it at 60; its fan-out and fan-in
    (three mates at once: 180) show its own link. Many noise seeds: a mate read a few percent
    faster than h0's 60 must not pass for a faster link, and two fan readings a little further
    apart than ``NEAR_TOP`` must not both be dropped."""
    truth = _two_switches(150)
    net = FakeNetwork(truth, goodput=0.955, noise=0.03, seed=seed)
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
    (h0,) = [pl for pl in inferred.physical_links if "h0" in (pl.a, pl.b)]
    assert h0.bandwidth == pytest.approx(150e6 / 8, rel=0.08)
    assert (h0.bandwidth_ba or h0.bandwidth) == pytest.approx(150e6 / 8, rel=0.08)


def test_no_fan_test_where_a_faster_mate_showed_the_link():
    """h0 at 50 Mbit/s beside mates at 60: its transfers with them show its own link, so it
    gets no fan test (only the fastest of each switch does)."""
    from topocast.probe.link_rates import _fan_tasks

    truth = _two_switches(50)
    net = FakeNetwork(truth, goodput=0.955, noise=0.0, seed=0)
    samples = FlowSamples()
    for a in truth.hosts:
        for b in truth.hosts:
            if a != b:
                samples.add([(a, b)], net.bulk([(a, b)], 0.3))
    adj = {h: ["sw0" if h in ("h0", "h1", "h2", "h3") else "sw1"] for h in truth.hosts}
    adj["sw0"] = ["h0", "h1", "h2", "h3", "sw1"]
    adj["sw1"] = ["h4", "h5", "sw0"]
    speed = {h: samples.speed(h) for h in truth.hosts}
    tested = {info for _, _, info in _fan_tasks(adj, list(truth.hosts), samples, speed)}
    assert ("h0", 0) not in tested and ("h0", 1) not in tested
    # the fastest of each switch (ties within NEAR_TOP: all three 60 Mbit/s mates) are tested
    assert {("h4", 0), ("h4", 1), ("h5", 0), ("h5", 1)} <= tested
    assert ("h1", 0) in tested


def _switches(hosts_per_switch: dict, between: list):
    """Hosts at 100 Mbit/s under each switch (``{switch: count}``), switches joined by
    ``between`` ([(a, b, Mbit/s)])."""
    mbit = 1e6 / 8
    base = load_topology("builtin:hetero-2switch")
    link = type(base.physical_links[0])
    hosts, links = [], []
    for sw, count in hosts_per_switch.items():
        for _ in range(count):
            hosts.append(f"h{len(hosts)}")
            links.append(link(hosts[-1], sw, 100 * mbit))
    links += [link(a, b, rate * mbit) for a, b, rate in between]
    switches = list(hosts_per_switch) + sorted({s for a, b, _ in between for s in (a, b)} - set(hosts_per_switch))
    return base.replace(name="levels", hosts=hosts, switches=switches, links=links)


def _infer(truth, seed: int):
    net = FakeNetwork(truth, goodput=0.955, noise=0.03, seed=seed, uneven=True)
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    return build_topology(tree, list(truth.hosts), goodput=0.955)


def _switch_of(topology, host: str) -> str:
    (pl,) = [pl for pl in topology.physical_links if host in (pl.a, pl.b)]
    return pl.b if pl.a == host else pl.a


@pytest.mark.parametrize("seed", range(3))
def test_a_group_between_two_others_is_found(seed):
    """Three groups joined in a chain a - b - c at one rate: every pair of groups has the
    same bottleneck, as under a star, but b takes in from a and c at once twice what one
    link carries. The inferred route from a to c passes b's switch, and the stable plan made
    from it reaches the truth's."""
    truth = _switches({"a": 3, "b": 3, "c": 3}, [("a", "b", 150), ("b", "c", 150)])
    inferred = _infer(truth, seed)
    assert host_groups(inferred) == host_groups(truth)
    assert _switch_of(inferred, "h3") in inferred.route_nodes("h0", "h6")
    stable = get_planner("broadcast", "stable")
    plan = Broadcast("h6", 1 << 26)
    mine = simulate(stable(inferred, plan), truth).aggregate_bandwidth
    assert mine >= 0.95 * simulate(stable(truth, plan), truth).aggregate_bandwidth


@pytest.mark.parametrize("seed", range(3))
def test_groups_around_a_switch_of_their_own_stay_a_star(seed):
    """Three groups each joined to a switch without hosts at one rate: none of them lies
    between the others."""
    truth = _switches({"a": 3, "b": 3, "c": 3}, [("a", "hub", 150), ("b", "hub", 150), ("c", "hub", 150)])
    inferred = _infer(truth, seed)
    assert host_groups(inferred) == host_groups(truth)
    for x, y, z in (("h0", "h3", "h6"), ("h3", "h6", "h0"), ("h0", "h6", "h3")):
        assert _switch_of(inferred, z) not in inferred.route_nodes(x, y)


@pytest.mark.parametrize("seed", range(3))
def test_a_slower_group_is_linked_to_the_group_it_meets(seed):
    """A chain a - b - c at 150 Mbit/s, and d joined to c at 60: d's link meets c's switch,
    not the middle of the chain."""
    truth = _switches({"a": 3, "b": 3, "c": 3, "d": 2}, [("a", "b", 150), ("b", "c", 150), ("c", "d", 60)])
    inferred = _infer(truth, seed)
    assert host_groups(inferred) == host_groups(truth)
    assert inferred.route_nodes("h9", "h0")[1:4] == (
        _switch_of(inferred, "h9"),
        _switch_of(inferred, "h6"),
        _switch_of(inferred, "h3"),
    )


def _random_tree_39():
    """The fake network's random tree 39 (17 hosts; docs/experiments/probe.md): two of its
    switches, of 2 and 6 hosts, are joined by a 139 Mbit/s link that a single transfer fills
    only between their fastest hosts, and two at once between most of the others. The round
    robin of all hosts, which sends their pairs across it one at a time, separates the
    fastest and mixes the rest of the two switches."""
    return bandwidth_equivalent(random_tree(17, 4, min_mbit=20, max_mbit=200, seed=39))


@pytest.mark.parametrize("seed", range(3))
def test_a_link_that_only_a_groups_own_round_robin_fills_splits_it(seed, monkeypatch):
    """Random tree 39's groups come out right with each group's own round robin, and wrong
    without it (TCP's uneven split, 3 noise seeds)."""
    truth = _random_tree_39()
    assert host_groups(_infer(truth, seed)) == host_groups(truth)
    # the same probe without the groups' own round robins groups them wrongly
    monkeypatch.setattr(bandwidth_tree, "_split_by_own_round_robins", lambda groups, pr: [])
    assert host_groups(_infer(truth, seed)) != host_groups(truth)


def test_a_host_link_is_written_at_its_rate_not_at_its_readings_upper_half():
    """Forty readings of one link, spread by 3 % noise around 100 (the normal quantiles),
    and ten slowed by other traffic: the estimate for the contention tests (the readings
    near the fastest confirmed one) lies above 100; the rate written is re-centred on the
    readings around it, the slowed ones left out."""
    from statistics import NormalDist

    free = [100 * (1 + 0.03 * NormalDist().inv_cdf((k + 0.5) / 40)) for k in range(40)]
    slowed = [50 + 4 * k for k in range(10)]
    samples = FlowSamples()
    samples.add([("h", f"p{i}") for i in range(50)], free + slowed)
    assert samples.host_up("h").value > 101.5
    assert samples.written("h", 0).value == pytest.approx(100, rel=0.01)
    # few readings: the estimate is their median already, and stays
    few = FlowSamples()
    few.add([("h", "a"), ("h", "b"), ("h", "c")], [97.0, 100.0, 103.0])
    assert few.written("h", 0).value == few.host_up("h").value


def test_a_host_link_is_written_from_readings_of_its_own_link_not_of_a_slower_partners():
    """Three readings of a host's own link at about 100 (to partners whose links read 200),
    and three transfers to partners whose links read 94: those ran at the partners' rate,
    6 % below the host's, inside the band the rate written is re-centred in. Re-centred on
    all six readings the rate would be written at about 97; on the host's own readings it
    is written at 100."""
    samples = FlowSamples()
    fast, slow = ["f1", "f2", "f3"], ["s1", "s2", "s3"]
    samples.add([("h", p) for p in fast + slow], [99.0, 100.0, 101.0, 94.0, 94.2, 94.4])
    # what the partners' own links read, as receivers (from other senders)
    samples.add([(f"x{i}", p) for i, p in enumerate(fast + slow)], [200.0] * 3 + [94.0, 94.2, 94.4])
    assert samples.host_up("h").value == pytest.approx(100)
    assert samples.written("h", 0).value == pytest.approx(100)
