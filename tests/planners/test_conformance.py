"""Every registered broadcast planner x several topologies: check_plan, simulate, bound.

Adding a planner to the registry gets it tested here automatically (like networkx's
``validate_flows`` run over every flow function).
"""

import math

import pytest

from topocast import Broadcast, Topology, broadcast_bounds, check_plan, simulate
from topocast.planners import available_planners, get_planner
from topocast.topology import load_topology
from topocast.topology.generators import fat_tree, multi_cluster_tree, two_cluster_grid
from topocast.topology.model import PhysicalLink as L

BROADCAST = [p.name for p in available_planners("broadcast")]


def _topologies():
    yield "builtin:two-clusters", load_topology("builtin:two-clusters")
    yield "builtin:stable-example", load_topology("builtin:stable-example")
    yield "builtin:hetero-2switch", load_topology("builtin:hetero-2switch")
    yield (
        "multi-cluster-asym-13",
        multi_cluster_tree(13, n_clusters=3, bandwidth="uniform-100-1000", asymmetric=True, seed=3),
    )
    yield "two-cluster-grid-3x2", two_cluster_grid(3)
    yield "fat-tree-4", fat_tree(4)
    # fatpipe links (SimGrid FATPIPE: no sharing): capacity-subtraction planners once looped
    # forever on them (nothing was ever subtracted); every planner must terminate here
    yield (
        "fatpipe-star",
        Topology(
            "fatpipe-star",
            ["h0", "h1", "h2"],
            ["s3"],
            [
                L("h0", "s3", 100.0, 0, sharing="fatpipe"),
                L("s3", "h1", 10.0, 0, sharing="fatpipe"),
                L("s3", "h2", 100.0, 0),
            ],
        ),
    )
    yield (
        "fatpipe-triangle",
        Topology(
            "fatpipe-triangle",
            ["h0", "h1", "h2"],
            [],
            [
                L("h0", "h1", 100.0, 0, sharing="fatpipe"),
                L("h1", "h2", 10.0, 0, sharing="fatpipe"),
                L("h0", "h2", 100.0, 0, sharing="fatpipe"),
            ],
        ),
    )


TOPOLOGIES = dict(_topologies())


@pytest.mark.parametrize("topo_name", list(TOPOLOGIES))
@pytest.mark.parametrize("planner", BROADCAST)
def test_planner_conforms(planner, topo_name):
    """Valid plan; simulates; every host completes; no host above its max-flow bound."""
    topo = TOPOLOGIES[topo_name]
    source = topo.hosts[0]
    info = next(p for p in available_planners("broadcast") if p.name == planner)
    plan = info(topo, Broadcast(source, 10**8))
    check_plan(plan, topo)
    result = simulate(plan, topo)
    bound = broadcast_bounds(topo, source)
    assert set(result.per_host) == set(bound.per_host_rate)
    for h, r in result.per_host.items():
        assert math.isfinite(r.time) and r.time > 0
        assert r.rate <= bound.per_host_rate[h] * (1 + 1e-9), (h, r.rate, bound.per_host_rate[h])
    assert result.aggregate_bandwidth <= bound.aggregate_bandwidth * (1 + 1e-9)


@pytest.mark.parametrize("planner", BROADCAST)
def test_planner_handles_a_destination_subset(planner):
    topo = TOPOLOGIES["multi-cluster-asym-13"]
    dests = topo.hosts[3:8]
    info = next(p for p in available_planners("broadcast") if p.name == planner)
    plan = info(topo, Broadcast(topo.hosts[0], 10**6, tuple(dests)))
    check_plan(plan, topo)
    assert set(plan.wanted) == set(dests)
    result = simulate(plan, topo)
    assert set(result.per_host) == set(dests)


# ---------------------------------------------------------------- allreduce, from the registry
ALLREDUCE = [p.name for p in available_planners("allreduce")]
ALLREDUCE_TOPOLOGIES = ["builtin:two-clusters", "builtin:hetero-2switch", "two-cluster-grid-3x2", "fat-tree-4"]


@pytest.mark.parametrize("topo_name", ALLREDUCE_TOPOLOGIES)
@pytest.mark.parametrize("planner", ALLREDUCE)
def test_allreduce_planner_conforms(planner, topo_name):
    """Every registered allreduce planner either refuses a topology with a clear error or
    gives a plan that passes the contribution check and simulates to completion."""
    from topocast import Allreduce, InputError

    topo = TOPOLOGIES[topo_name]
    info = get_planner("allreduce", planner)
    for size in (1, 999_999):
        try:
            plan = info(topo, Allreduce(size))
        except InputError as exc:  # e.g. a two-cluster algorithm on one cluster
            assert str(exc)
            return
        assert set(plan.wanted) == set(topo.hosts)
        check_plan(plan, topo)
        result = simulate(plan, topo)
        assert all(math.isfinite(r.time) for r in result.per_host.values())


# ---------------------------------------------------------------- redistribution, from the registry
REDISTRIBUTE = [p.name for p in available_planners("redistribute")]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("planner", REDISTRIBUTE)
def test_redistribute_planner_conforms(planner, seed):
    """Every registered redistribution planner delivers every block exactly as the check
    requires, and its simulated time is at least the KPBS lower bound."""
    from topocast.redistribute import lower_bound, random_pattern, two_cluster_topology
    from topocast.redistribute.matrix import resolve_platform

    request = random_pattern(4, 5, 9, x=4_000_000, low=500_000, seed=seed, k=3, beta=0.001)
    topo = two_cluster_topology(4, 5, nic=1e7, k=3, senders=request.senders, receivers=request.receivers)
    plan = get_planner("redistribute", planner)(topo, request)
    check_plan(plan, topo)
    result = simulate(plan, topo)
    platform = resolve_platform(request, topo)
    bound = lower_bound(request.matrix, platform.ratio, nic=platform.nic)
    assert result.makespan >= bound.eta * (1 - 1e-9)
