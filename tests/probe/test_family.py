"""The probe judged on a family of random networks (``generators.random_network``) on the
fake max-min network, a few fixed seeds (the benchmark draws fresh ones:
``benchmarks/bench_probe.py --family fake``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from topocast.plan import Broadcast
from topocast.planners import get_planner
from topocast.probe.ambiguity import decide_by_contention, least_loss_tree, same_pair_rates
from topocast.probe.bandwidth_tree import infer_bandwidth_tree
from topocast.probe.equivalent import bandwidth_equivalent, host_groups
from topocast.probe.infer import build_topology, infer_trees
from topocast.sim import simulate
from topocast.topology.generators import random_network
from topocast.topology.model import PhysicalLink, Topology

from .fake_network import FakeNetwork

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_the_family_benchmark_replays_given_networks():
    out = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "bench_probe.py"),
            "--family",
            "fake",
            "--nets",
            "3,5",
            "--hosts",
            "8-10",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")},
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [r["spec"] for r in rows] == ["net:3:8:10:10:1000", "net:5:8:10:10:1000"]
    assert all(0 < r["stable_sim_worst"] <= 1.5 and r["rounds"] > 0 for r in rows)
    assert "summary: " in out.stdout and "batch seed" in out.stdout


def _worst_stable(truth, inferred, sources):
    stable = get_planner("broadcast", "stable")
    worst = 1.0
    for src in sources:
        plan = Broadcast(src, 1 << 26)
        best = simulate(stable(truth, plan), truth).aggregate_bandwidth
        worst = min(worst, simulate(stable(inferred, plan), truth).aggregate_bandwidth / best)
    return worst


@pytest.mark.parametrize("noise_seed", [0, 1, 2])
def test_a_chain_with_asymmetric_links_is_not_planned_as_a_star(noise_seed):
    """Network 248819508 of the family: 9 hosts under a chain of three switches whose two
    links are asymmetric (547/130 and 741/49 Mbit/s). Every group and host link comes out
    right, but single linkage joins the groups under a hub that does not exist; with the
    hub's links written at what the transfers carried, the star gives every pair of hosts
    the rate the chain gives, and ``stable`` planned on it reached 0.64 of the truth's plan.
    The chain through the middle group's switch is an explanation of the same measurements
    whose plans lose nothing on the star: it is kept, the star written as its alternative."""
    truth = random_network(248819508, min_hosts=8, max_hosts=32)
    net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
    tree = infer_bandwidth_tree(list(truth.hosts), net.bulk, 0.3)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
    assert host_groups(bandwidth_equivalent(inferred)) == host_groups(truth)
    assert len(inferred.switches) == 3
    assert _switch_tree_shape(inferred) == _switch_tree_shape(truth)
    # the chain is found by the level tests (the third group attached to the group whose
    # switch its link meets) or, where they do not tell, kept by the least-loss rule with
    # the star written as its alternative
    for alternative in inferred.measured.get("alternatives", []):
        assert alternative["chosen"] in inferred.switches and alternative["switch"] not in inferred.switches
    assert _worst_stable(truth, inferred, ["h0", "h5", "h2"]) >= 0.95


def test_a_hub_whose_merge_changes_some_pair_rate_is_no_alternative():
    """Merging a hub into a neighbour is an explanation of the same measurements only when
    every pair of hosts keeps its single-transfer rate."""
    mbit = 125_000
    links = [PhysicalLink(f"h{i}", f"s{i}", 100 * mbit) for i in range(3)]
    links += [
        PhysicalLink("x", "s0", 50 * mbit),
        PhysicalLink("x", "s1", 80 * mbit),
        PhysicalLink("x", "s2", 80 * mbit),
    ]
    star = Topology("star", ["h0", "h1", "h2"], ["s0", "s1", "s2", "x"], links)
    kept, record = least_loss_tree(star)
    # merged into s0, h0 -> h1 would no longer cross the 50 Mbit/s link; into s1 or s2,
    # every pair keeps its rate
    assert record[0]["switch"] == "x" and record[0]["or_merged_into"] == ["s1", "s2"]
    assert same_pair_rates(star, kept)


def _switch_tree_shape(topo):
    """The links between switches of ``topo``'s bandwidth-equivalent form, each switch named
    by the hosts under it."""
    eq = bandwidth_equivalent(topo)
    name = {s: frozenset(n for n in eq.neighbors(s) if eq.is_host(n)) for s in eq.switches}
    return {frozenset((name[pl.a], name[pl.b])) for pl in eq.physical_links if pl.a in name and pl.b in name}


@pytest.mark.parametrize("noise_seed", [1, 2, 3])
def test_an_experiment_tells_the_star_from_the_chain(noise_seed):
    """Network 89719775 of the family: a switch of two fast hosts between a switch of three
    and one of twelve (855/103 and 495/681 Mbit/s). Single linkage joins the three groups
    under a hub; merged into either outer switch or into the middle one, every pair of hosts
    keeps its rate, and the least-loss rule alone chose an outer switch. The explanations
    differ in which transfers share a link: the outer groups sending into the middle one at
    once carry what both links carry on the truth, what one carries on a chain through an
    outer switch. That experiment is made, and the tree kept is the truth's."""
    truth = random_network(89719775, min_hosts=8, max_hosts=32)
    net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
    assert host_groups(bandwidth_equivalent(inferred)) == host_groups(bandwidth_equivalent(truth))
    assert _switch_tree_shape(inferred) == _switch_tree_shape(truth)
    (alternative,) = inferred.measured["alternatives"]
    assert alternative["or_merged_into"] == [alternative["chosen"]]  # the star denied, no other left


def _three_switches(hub: bool) -> Topology:
    """Three switches of two 100 Mbit/s hosts each, under a hub ``x`` (``hub``) or in a chain
    s0 - s1 - s2; every link between switches 150 Mbit/s. Every pair of hosts runs at
    100 Mbit/s on both."""
    mbit = 125_000
    links = [PhysicalLink(f"h{k}{i}", f"s{k}", 100 * mbit) for k in range(3) for i in range(2)]
    if hub:
        links += [PhysicalLink(f"s{k}", "x", 150 * mbit) for k in range(3)]
    else:
        links += [PhysicalLink("s0", "s1", 150 * mbit), PhysicalLink("s1", "s2", 150 * mbit)]
    hosts = [f"h{k}{i}" for k in range(3) for i in range(2)]
    return Topology("three", hosts, ["s0", "s1", "s2", *(["x"] if hub else [])], links)


@pytest.mark.parametrize("truth_is_hub, left", [(False, ["s1"]), (True, ["x"])])
def test_contention_experiments_deny_the_explanations_the_network_contradicts(truth_is_hub, left):
    """The star and the chains through s0, s1 or s2 give every pair the same rate; the
    outer switches sending into one of them at once carry 150 Mbit/s on the star (its link
    to the hub) and 200 on a chain through it. Measured on the truth, only the truth's
    explanation stands."""
    star = _three_switches(hub=True)
    net = FakeNetwork(_three_switches(hub=truth_is_hub), goodput=1.0, noise=0.0)
    standing, count = decide_by_contention(star, net.bulk, 0.3, 0.1)
    assert standing == {"x": left} and count > 0


def test_slow_hosts_do_not_displace_a_switchs_fast_hosts_from_its_group():
    """Network 732773459 of the family: sw0 holds three fast hosts and three slow ones
    (121-160 Mbit/s) between sw1 and sw2 (526/434 and 403/981 Mbit/s). The slow hosts' transfers
    fill no link between switches, so hardly anything separates them from anyone: the largest
    clique of never-separated hosts took two of them into sw2's group in place of two of its
    fast hosts, and the contention tests that place them loaded and probed hosts that were
    themselves misplaced. Cliques weighted by the separations their hosts rest on, and tests
    between hosts sure of their group, give the truth's groups (3 noise seeds of 4; 0 of 4
    before)."""
    truth = random_network(732773459, min_hosts=8, max_hosts=32)
    right = 0
    for noise_seed in range(4):
        net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
        _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
        inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
        right += host_groups(bandwidth_equivalent(inferred)) == host_groups(bandwidth_equivalent(truth))
    assert right >= 3


def test_a_group_joining_two_joined_groups_is_attached_where_its_link_meets():
    """Network 371237439 of the family: single linkage joined two groups under a hub and
    each later group to the hub above (a caterpillar of hubs around groups that form a chain
    in fact); no merge of one hub reaches the truth, and `stable` from it reached 0.78 of the
    truth's plan. Two groups joined are now placed one by one, so the level tests attach the
    next group to the one whose switch its link meets: the truth's tree."""
    truth = random_network(371237439, min_hosts=8, max_hosts=32)
    net = FakeNetwork(truth, noise=0.03, seed=0, uneven=True)
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
    assert _switch_tree_shape(inferred) == _switch_tree_shape(truth)


@pytest.mark.parametrize("noise_seed", [0, 1, 2])
def test_two_chains_of_groups_are_joined_where_their_link_meets_each(noise_seed):
    """Network 1365257093 of the family: a chain of five groups; single linkage builds two
    chains of groups placed one by one and then joins the two, at a lower rate. Joined at
    their top switches (under a hub, then one link), the link between the chains was
    written between the wrong switches and `stable` from the file reached 0.70 of the
    truth's plan; each chain is now tested for the group the other's link meets (the truth's
    tree in 4 noise seeds of 4; 0 of 4 before)."""
    truth = random_network(1365257093, min_hosts=8, max_hosts=32)
    net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955, measurements=tree.measurements)
    assert _switch_tree_shape(inferred) == _switch_tree_shape(truth)


@pytest.mark.parametrize("noise_seed", [869535109, 1])
def test_host_links_are_written_at_the_centre_of_readings_of_their_own_link(noise_seed):
    """Network 869535108 of the family (9 hosts, right groups and tree): with the benchmark's
    noise seed, h3's link was written 5 % fast both ways, from the median of a few readings
    just below its fastest (the upper half that noise spreads around its rate), and `stable`
    from the file reached 0.93 of the truth's plan. Re-centred from three readings of its
    own link (transfers limited by a slower partner left out), 0.96."""
    truth = random_network(869535108, min_hosts=8, max_hosts=32)
    net = FakeNetwork(truth, noise=0.03, seed=noise_seed, uneven=True)
    _, tree = infer_trees(list(truth.hosts), net.rtt, net.bulk, 0.3, 200e-6)
    inferred = build_topology(tree, list(truth.hosts), goodput=0.955)
    assert _worst_stable(truth, inferred, ["h0", "h5", "h2"]) >= 0.95  # the benchmark's sources
