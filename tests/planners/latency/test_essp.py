"""Mateescu & Taylor: E-SSSP + labelling, the slides' example and Δ in the simulator."""

import math

import pytest

from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners import get_planner
from topocast.planners.broadcast.essp import essp_tree, label_tree
from topocast.sim import simulate
from topocast.topology import Topology
from topocast.topology.model import PhysicalLink


def mesh(n, delta, latency=1.0, bw=1e15):
    """Complete graph of n hosts, every pair joined directly (unit latency), injection Δ."""
    hosts = [f"v{i}" for i in range(n)]
    links = [PhysicalLink(a, b, bw, latency) for i, a in enumerate(hosts) for b in hosts[i + 1 :]]
    return Topology(f"mesh-{n}", hosts, [], links, injection_time={h: delta for h in hosts})


@pytest.mark.parametrize("delta", [0.6, 0.8, 1.0, 2.0])
def test_slides_example_essp_gives_2_plus_3_delta(delta):
    """Slide 5: six vertices, unit latencies. Plain SSSP (= flat tree) costs 1 + 5Δ; the better
    schedule costs 2 + 3Δ (better for Δ > 0.5). E-SSSP + labelling finds it."""
    topo = mesh(6, delta)
    plan = get_planner("broadcast", "essp")(topo, Broadcast("v0", 1))
    check_plan(plan, topo)
    assert math.isclose(plan.notes["predicted_time_model"], 2 + 3 * delta)
    r = simulate(plan, topo)
    assert math.isclose(r.makespan, 2 + 3 * delta, rel_tol=1e-9, abs_tol=1e-9)
    flat = simulate(get_planner("broadcast", "flat")(topo, Broadcast("v0", 1)), topo)
    assert math.isclose(flat.makespan, 1 + 5 * delta, rel_tol=1e-9, abs_tol=1e-9)
    assert r.makespan < flat.makespan
    if delta > 1.0:
        return  # for large Δ E-SSSP re-parents more vertices (another tree of the same cost)
    # the tree: v0 -> v1 (first: largest label), v2, v3; v1 -> v4, v5
    parent = plan.notes["parent"]
    assert parent == {"v1": "v0", "v2": "v0", "v3": "v0", "v4": "v1", "v5": "v1"}
    assert [t.dst for t in plan.transfers if t.src == "v0"] == ["v1", "v2", "v3"]


def test_slides_example_small_delta_keeps_the_flat_tree():
    """For Δ < 0.5 the flat tree (1 + 5Δ) is better and E-SSSP keeps it."""
    topo = mesh(6, 0.3)
    plan = get_planner("broadcast", "essp")(topo, Broadcast("v0", 1))
    r = simulate(plan, topo)
    assert math.isclose(r.makespan, 1 + 5 * 0.3, rel_tol=1e-9)


def test_labels_follow_the_formula_with_unequal_children():
    w = lambda u, v: {("r", "a"): 1.0, ("r", "b"): 3.0, ("a", "c"): 2.0}.get((u, v), 1.0)  # noqa: E731
    d = lambda u, v: 0.5  # noqa: E731
    children = {"r": ["a", "b"], "a": ["c"], "b": [], "c": []}
    label, ordered = label_tree("r", children, w, d)
    assert label["c"] == 0 and label["a"] == 2.5
    # r: a -> 2.5 + 1 = 3.5, b -> 0 + 3 = 3: a first; label = max(3.5 + 0.5, 3 + 1.0) = 4.0
    assert ordered["r"] == ["a", "b"] and label["r"] == 4.0


def test_essp_tree_quirk_injection_not_given_back():
    """v4 and v5 are re-parented to v1; the root keeps their injection time (slides' code)."""
    hosts = [f"v{i}" for i in range(6)]
    parent, children = essp_tree(hosts, "v0", lambda u, v: 1.0, lambda u, v: 0.8)
    assert children["v0"] == ["v1", "v2", "v3"] and children["v1"] == ["v4", "v5"]


def test_blocking_variant_chains_sends():
    topo = mesh(6, 0.8)
    plan = get_planner("broadcast", "essp")(topo, Broadcast("v0", 1), blocking=True)
    check_plan(plan, topo)
    root = [i for i, t in enumerate(plan.transfers) if t.src == "v0"]
    assert plan.transfers[root[1]].after == (root[0],)


def test_small_messages_latency_bound_large_ones_bandwidth_bound():
    """No special case: the same plan is latency + Δ bound at 1 byte and bandwidth bound at 1 GB."""
    topo = mesh(4, 1e-3, latency=1e-3, bw=125e6)
    small = simulate(get_planner("broadcast", "essp")(topo, Broadcast("v0", 1)), topo)
    big = simulate(get_planner("broadcast", "essp")(topo, Broadcast("v0", 10**9)), topo)
    assert small.makespan < 1e-2  # a few latencies and injections
    assert big.makespan > 10**9 / 125e6  # at least one full transfer time
    assert big.makespan < 3 * 10**9 / 125e6 + 1


@pytest.mark.parametrize("seed", range(5))
def test_label_equals_simulated_time_with_per_pair_injection(seed):
    """With negligible message size the simulator reproduces the model exactly: the root's
    label (prefix sums of per-child Δ) is the predicted broadcast time."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 7
    hosts = [f"v{i}" for i in range(n)]
    links = [
        PhysicalLink(a, b, 1e15, float(rng.uniform(0.1, 1.2))) for i, a in enumerate(hosts) for b in hosts[i + 1 :]
    ]
    pairs = {(a, b): float(rng.uniform(0.03, 0.3)) for a in hosts for b in hosts if a != b}
    topo = Topology("rand-mesh", hosts, [], links, injection_pair=pairs)
    plan = get_planner("broadcast", "essp")(topo, Broadcast("v0", 1))
    check_plan(plan, topo)
    assert math.isclose(simulate(plan, topo).makespan, plan.notes["predicted_time_model"], rel_tol=1e-9)
