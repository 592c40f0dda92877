"""Every planner of issue 3 passes check_plan and stays under the bound on several topologies."""

import pytest
from bcast_helpers import ring_with_switches, triangle

from topocast.bounds import broadcast_bounds
from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners.registry import available_planners, get_planner
from topocast.sim import simulate
from topocast.topology import load_topology
from topocast.topology.generators import fat_tree, multi_cluster_tree

OURS = ["random_pipeline", "dijkstra", "fpfr", "balanced_multicast", "stable", "optimal"]


def _topologies():
    yield load_topology("builtin:stable-example")
    yield load_topology("builtin:two-clusters")
    yield multi_cluster_tree(24, n_clusters=4, bandwidth="mixed", asymmetric=True, seed=2)
    yield multi_cluster_tree(24, n_clusters=5, bandwidth="switch-uniform-100-1000", seed=3)
    yield fat_tree(4)
    yield triangle()
    yield ring_with_switches()


TOPOS = list(_topologies())


def test_all_registered():
    names = {p.name for p in available_planners("broadcast")}
    assert set(OURS) <= names
    for n in OURS:
        info = get_planner("broadcast", n)
        assert info.summary and info.reference


@pytest.mark.parametrize("name", OURS)
@pytest.mark.parametrize("topo", TOPOS, ids=[t.name for t in TOPOS])
def test_check_plan_and_bound(name, topo):
    src = topo.hosts[0]
    plan = get_planner("broadcast", name)(topo, Broadcast(src, 10**9))
    assert plan.planner == name
    check_plan(plan, topo)
    res = simulate(plan, topo)
    bound = broadcast_bounds(topo, src)
    assert set(res.per_host) == set(bound.per_host_rate)
    for h, r in res.per_host.items():
        assert 0 < r.rate <= bound.per_host_rate[h] * (1 + 1e-9)


@pytest.mark.parametrize("topo", TOPOS, ids=[t.name for t in TOPOS])
def test_optimal_never_below_stable(topo):
    src = topo.hosts[0]
    st = simulate(get_planner("broadcast", "stable")(topo, Broadcast(src, 10**12)), topo)
    op = simulate(get_planner("broadcast", "optimal")(topo, Broadcast(src, 10**12)), topo)
    assert op.aggregate_bandwidth >= st.aggregate_bandwidth * (1 - 1e-9)


def test_subset_of_destinations():
    topo = multi_cluster_tree(30, n_clusters=4, bandwidth="uniform-100-1000", seed=5)
    dests = topo.hosts[3:20:2]
    for name in OURS:
        plan = get_planner("broadcast", name)(topo, Broadcast(topo.hosts[7], 10**9, dests))
        check_plan(plan, topo)
        assert set(plan.wanted) == set(dests) - {topo.hosts[7]}
