"""The bandwidth-proportional allreduce: its shares, its contributions, and the gain the
simulator predicts on two clusters with slow hosts (docs/algorithms.md 5.7)."""

import itertools

import pytest

from topocast.plan import Allreduce
from topocast.plan.check import check_plan
from topocast.planners import get_planner
from topocast.planners.allreduce.proportional import ownership_shares
from topocast.sim import simulate
from topocast.topology import load_topology
from topocast.topology.generators import two_cluster_grid

plan_proportional = get_planner("allreduce", "proportional")


def slowest_load(bandwidths, shares, groups=2):
    p = len(bandwidths)
    return max((1 + (p + groups - 3) * f) / b for f, b in zip(shares, bandwidths))


def test_shares_leave_slow_hosts_out_and_split_equally_among_equals():
    assert ownership_shares([125.0, 125.0, 125.0, 12.5]) == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0])
    assert ownership_shares([5.0] * 4) == pytest.approx([0.25] * 4)
    assert ownership_shares([7.0]) == [1.0]
    assert ownership_shares([1.0, 9.0], groups=1) == [0.5, 0.5]  # two hosts alone: shares do not matter


@pytest.mark.parametrize("bandwidths", [[100.0, 60.0, 30.0, 10.0], [10.0, 10.0, 80.0], [50.0, 40.0, 45.0, 1.0, 44.0]])
def test_shares_minimise_the_slowest_hosts_load(bandwidths):
    """No share vector on a 1/20 grid gives a lower maximum load than the water-filling."""
    best = slowest_load(bandwidths, ownership_shares(bandwidths))
    p = len(bandwidths)
    steps = 20
    for cut in itertools.combinations_with_replacement(range(steps + 1), p - 1):
        shares = [(b - a) / steps for a, b in zip((0, *cut), (*cut, steps))]
        assert slowest_load(bandwidths, shares) >= best * (1 - 1e-9)


TOPOLOGIES = [load_topology(f"builtin:{b}") for b in ("two-clusters", "hetero-2switch", "uniform-2switch")]
TOPOLOGIES += [two_cluster_grid(3), load_topology("builtin:stable-example")]


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
@pytest.mark.parametrize("segments", [None, 1, 3])
def test_contributions(topo, segments):
    for size in (1, 7, 1000, 999_999):
        plan = plan_proportional(topo, Allreduce(size), segments=segments)
        check_plan(plan, topo)


def test_three_clusters_and_a_subset():
    topo = two_cluster_grid(4)
    plan = plan_proportional(topo, Allreduce(10_001), clusters="a0,a1;a2,a3,b0;b1,b2,b3", segments=2)
    check_plan(plan, topo)
    plan = plan_proportional(topo, Allreduce(5000, hosts=("a1", "b2", "b3")))
    check_plan(plan, topo)
    assert set(plan.wanted) == {"a1", "b2", "b3"}


def test_slow_hosts_send_their_vector_once_and_receive_the_result_once():
    topo = load_topology("builtin:two-clusters")
    size = 1 << 20
    plan = plan_proportional(topo, Allreduce(size))
    for slow in ("a3", "b3"):
        assert sum(n for t in plan.transfers if t.src == slow for _, n in t.ranges) == size
        assert sum(n for t in plan.transfers if t.dst == slow for _, n in t.ranges) == size
    # each byte crosses the wide-area link once in each direction
    cluster = {h: h in ("s", "a1", "a2", "a3") for h in topo.hosts}
    crossing = [t for t in plan.transfers if cluster[t.src] != cluster[t.dst]]
    assert sum(n for t in crossing if cluster[t.src] for _, n in t.ranges) == size
    assert sum(n for t in crossing if not cluster[t.src] for _, n in t.ranges) == size


def test_predicted_near_the_slow_hosts_bound_on_two_clusters():
    """32 MiB on two-clusters: a 100 Mbit/s host must send 32 MiB and receive 32 MiB, so no
    plan beats 32 MiB / 12.5 MB/s = 2.68 s; the planner comes within 5 % and 1.5x below the
    registered MPI-style planners."""
    topo = load_topology("builtin:two-clusters")
    size = 32 << 20
    bound = size / 12.5e6
    got = simulate(plan_proportional(topo, Allreduce(size)), topo).makespan
    assert bound <= got <= 1.05 * bound
    for other in ("gridmpi", "rabenseifner", "ring"):
        theirs = simulate(get_planner("allreduce", other)(topo, Allreduce(size)), topo).makespan
        assert theirs >= 1.5 * got, other
