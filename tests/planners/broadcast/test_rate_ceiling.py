"""``optimal``'s rate ceiling: an upper bound on the aggregate bandwidth the simulator predicts
for a plan, computed without simulating it (step 4 skips structures that cannot win)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from topocast import Broadcast, broadcast_bounds, simulate
from topocast.errors import TopocastError
from topocast.planners import available_planners, get_planner
from topocast.planners.broadcast.optimal import rate_ceiling
from topocast.topology.generators import multi_cluster_tree, random_tree


def _with_latencies(topo, seed, most):
    rng = np.random.default_rng(seed)
    links = [dataclasses.replace(pl, latency=float(rng.uniform(0.0, most))) for pl in topo.physical_links]
    return topo.replace(links=links)


NETWORKS = [
    _with_latencies(multi_cluster_tree(20, n_clusters=4, bandwidth="mixed", asymmetric=True, seed=3), 1, 5e-3),
    _with_latencies(random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=2), 2, 2e-3),
]
#: The MPI-style plans (p^2 blocking transfers) take most of the simulation time and come
#: nowhere near the ceiling; one of them is enough to cover ``after`` dependencies.
SLOW = {"scatter_allgather_ring", "far_first", "gridmpi", "mpich", "topology_aware"}


@pytest.mark.parametrize("topo", NETWORKS, ids=[t.name for t in NETWORKS])
def test_no_planner_is_predicted_above_its_rate_ceiling(topo):
    src = topo.hosts[0]
    per_host = broadcast_bounds(topo, src).per_host_rate
    tight = 0
    for info in available_planners("broadcast", include_selectors=False):
        if info.name in SLOW:
            continue
        try:
            plan = info(topo, Broadcast(src, 10**8))
        except TopocastError:
            continue
        predicted = simulate(plan, topo).aggregate_bandwidth
        ceiling = rate_ceiling(topo, plan, per_host)
        assert predicted <= ceiling * (1 + 1e-12), info.name
        tight += predicted >= 0.99 * ceiling
    assert tight >= 3  # the paced and pipelined plans come close to it: the ceiling is not vacuous


def test_optimal_does_not_simulate_a_structure_that_cannot_win():
    topo = _with_latencies(multi_cluster_tree(40, n_clusters=4, bandwidth="uniform-100-1000", seed=1), 1, 5e-3)
    plan = get_planner("broadcast", "optimal")(topo, Broadcast(topo.hosts[0], 10**9))
    skipped = plan.notes["not_simulated_rate_ceiling"]
    predicted = plan.notes["predicted_aggregate_bandwidth"]
    assert "depth_first" in skipped  # one unpaced chain through 40 hosts: far below the trees
    assert max(skipped.values()) < max(predicted.values())


def test_compare_gives_optimal_the_predictions_it_made(monkeypatch):
    # compare plans and simulates two_tree, dijkstra and depth_first anyway: optimal takes
    # those predictions instead of making them again, and reaches the same choice
    from topocast.evaluate.compare import compare
    from topocast.planners.broadcast import optimal

    topo = _with_latencies(multi_cluster_tree(24, n_clusters=3, bandwidth="uniform-100-1000", seed=2), 3, 5e-3)
    alone = simulate(get_planner("broadcast", "optimal")(topo, Broadcast(topo.hosts[0], 10**9)), topo)
    planned = []
    real = optimal._candidates

    def spy(topology, request, n_dests, evaluated):
        for name, plan, bw in real(topology, request, n_dests, evaluated):
            planned.append((name, bw is not None))
            yield name, plan, bw

    monkeypatch.setattr(optimal, "_candidates", spy)
    _, results = compare(topo, topo.hosts[0], 10**9, ["two_tree", "optimal", "depth_first", "dijkstra"])
    assert planned and all(reused for _, reused in planned)
    assert dict(results)["optimal"].aggregate_bandwidth == pytest.approx(alone.aggregate_bandwidth, rel=1e-12)
