"""Bandwidth planners on platforms whose declared routes go up to a gateway and back.

Where routes are fixed a transfer crosses its declared route, not the graph's path: no planner
may count on capacity those routes do not give, nor give a transfer a path they do not route.

* every plan passes ``check_plan`` and no transfer carries a path other than its route;
* rate-capped plans ask no resource for more than its capacity along the declared routes
  (a cable crossed twice counted twice), and the simulator gives what they announce;
* ``optimal`` is never below another bandwidth planner;
* the planners see the hairpin: ``stable``'s announced rates hold on the declared routes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from routed_helpers import hairpin_platform

from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners.broadcast._trees import route_excess
from topocast.planners.registry import get_planner
from topocast.sim import simulate
from topocast.topology.multisite import multi_site_platform

M = 10**13  # large: the fill of a pipeline (hop latencies) stays far below the tolerances
PLANNERS = ["stable", "fpfr", "dijkstra", "balanced_multicast", "two_tree", "optimal", "depth_first"]

hairpins = st.builds(
    lambda sites, switches, behind, direct, up, seed: hairpin_platform(
        sites, switches, behind, direct, uplink_bw=up * 1e9, latency=0.0, seed=seed
    ),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(2, 4),
    st.integers(0, 2),
    st.sampled_from([1.0, 1.5, 2.0, 4.0]),
    st.integers(0, 10**6),
)
multi_sites = st.builds(lambda n, seed: multi_site_platform(n, seed=seed), st.integers(4, 24), st.integers(0, 10**6))
quick = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _planned_load(plan, topo) -> np.ndarray:
    """Bytes/s the plan's rate caps ask of each resource along the transfers' routes."""
    load = np.zeros(len(topo.resource_capacity))
    for t in plan.transfers:
        for lid in topo.path_links(t.path) if t.path else topo.route(t.src, t.dst):
            for res in (topo.link_resource[lid], topo.link_direction_resource[lid]):
                if res >= 0:
                    load[res] += t.rate_cap
    return load


def _check_contracts(topo, pick, tolerance):
    src = topo.hosts[pick % len(topo.hosts)]
    aggregate = {}
    for name in PLANNERS:
        plan = get_planner("broadcast", name)(topo, Broadcast(src, M))
        check_plan(plan, topo)
        off = [t for t in plan.transfers if t.path is not None and tuple(t.path) != topo.route_nodes(t.src, t.dst)]
        assert not off, (name, off[:3])
        res = simulate(plan, topo)
        if all(t.rate_cap is not None for t in plan.transfers):
            assert np.all(_planned_load(plan, topo) <= topo.resource_capacity * (1 + 1e-9)), name
            expected = plan.notes.get("expected_aggregate_bandwidth")
            if expected is not None:  # what the planner announces is what the routes give
                assert res.aggregate_bandwidth >= expected * (1 - tolerance), (name, res.aggregate_bandwidth / expected)
        aggregate[name] = res.aggregate_bandwidth
    best_other = max(v for k, v in aggregate.items() if k != "optimal")
    assert aggregate["optimal"] >= best_other * (1 - tolerance), aggregate


@quick
@given(hairpins, st.integers(0, 10**6))
def test_planners_keep_to_the_declared_routes_on_hairpin_platforms(topo, pick):
    _check_contracts(topo, pick, 1e-6)


@quick
@given(multi_sites, st.integers(0, 10**6))
def test_planners_keep_to_the_declared_routes_on_multi_site_platforms(topo, pick):
    _check_contracts(topo, pick, 1e-3)  # 1-5 ms links: a pipeline's fill costs up to ~1e-4


def test_route_excess_is_the_hairpin():
    topo = hairpin_platform(sites=1, switches=1, behind=2, direct=1)
    a, b = topo.index("s0w0h0"), topo.index("s0w0h1")
    extra = route_excess(topo, a, b)
    assert sorted((topo.links[l].src, topo.links[l].dst) for l in extra) == [("gw0", "sw0_0"), ("sw0_0", "gw0")]
    assert route_excess(topo, topo.index("s0d0"), b) == ()  # the tree path: nothing beyond it


@pytest.mark.parametrize("name", ["stable", "fpfr", "balanced_multicast", "two_tree", "optimal"])
def test_announced_rates_hold_where_siblings_route_through_the_gateway(name):
    """Three hosts behind a 2 GB/s uplink, shared both ways, reached from each other through
    the gateway: a pipeline through them crosses the uplink six times, so no announced rate
    may exceed 2/6 GB/s for them; the simulator gives what is announced."""
    topo = hairpin_platform(sites=1, switches=1, behind=3, direct=1, uplink_bw=2e9, latency=0.0, seed=1)
    plan = get_planner("broadcast", name)(topo, Broadcast("s0d0", M))
    res = simulate(plan, topo)
    assert res.aggregate_bandwidth >= plan.notes["expected_aggregate_bandwidth"] * (1 - 1e-6)
    assert np.all(_planned_load(plan, topo) <= topo.resource_capacity * (1 + 1e-9))
