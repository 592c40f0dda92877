"""Worked examples by hand for the bandwidth-oriented broadcast planners (docs/algorithms.md 1-3)."""

import math

import pytest
from bcast_helpers import ring_with_switches, star, triangle

from topocast.bounds import broadcast_bounds
from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners.broadcast._layout import contiguous_layout, nested_layout
from topocast.planners.broadcast._trees import e2_rates
from topocast.planners.broadcast.balanced_multicast import plan_balanced_multicast
from topocast.planners.broadcast.dijkstra import dijkstra_tree, plan_dijkstra
from topocast.planners.broadcast.fpfr import fpfr_pipelines, plan_fpfr
from topocast.planners.broadcast.optimal import plan_optimal
from topocast.planners.broadcast.random_pipeline import plan_random_pipeline
from topocast.planners.broadcast.stable import plan_stable, stable_pipelines
from topocast.sim import simulate
from topocast.topology import load_topology

MBIT = 125_000


def _prefix_set(seq, p):
    out = set()
    for off, ln in seq:
        take = min(ln, p)
        out.update(range(off, off + take))
        p -= take
        if p <= 0:
            break
    return out


def test_staged_transfer_v321_m60_by_hand():
    # V = (3, 2, 1), M = 60: hosts finish at 10 (in T1,T2,T3), 12 (T1,T2) and 20 (T1 only)
    topo = star("v321", 6.0, [3.0, 5.0, 6.0])  # b(H0)=3, b(H1)=5, b(H2)=6
    pipes, _ = stable_pipelines(topo, "S", ["H0", "H1", "H2"])
    assert [p.rate for p in pipes] == [3.0, 2.0, 1.0]
    assert [p.members for p in pipes] == [["H0", "H1", "H2"], ["H1", "H2"], ["H2"]]
    seqs = nested_layout(60, [3.0, 2.0, 1.0])
    # stage 1 of the slides: fragments 30/20/10 by t=10; stage 2 ends at 12; stage 3 at 20
    assert seqs == [((0, 60),), ((36, 24),), ((30, 6), (56, 4))]
    plan = plan_stable(topo, Broadcast("S", 60))
    check_plan(plan, topo)
    res = simulate(plan, topo)
    assert res.per_host["H2"].time == pytest.approx(10.0, rel=1e-12)
    assert res.per_host["H1"].time == pytest.approx(12.0, rel=1e-12)
    assert res.per_host["H0"].time == pytest.approx(20.0, rel=1e-12)
    assert all(t.rate_cap in (3.0, 2.0, 1.0) for t in plan.transfers)


def test_nested_layout_tiles_at_every_level():
    rates = [5.0, 1.0, 3.0, 0.5, 2.0]
    m = 1000
    seqs = nested_layout(m, rates)
    total = 0.0
    for level in range(len(rates)):
        total += rates[level]
        t = m / total
        held = set()
        for j in range(level + 1):
            part = _prefix_set(seqs[j], int(math.floor(rates[j] * t + 1e-9)))
            assert not (held & part), "prefixes overlap"
            held |= part
        assert len(held) >= m - level  # integer floors lose at most one byte per tree
        # and tree `level` is done by t (its whole sequence fits in V * t, up to the floors)
        assert sum(ln for _, ln in seqs[level]) <= rates[level] * t + level + 1e-9


def test_slides_example_one_spanning_two_partial_trees():
    topo = load_topology("builtin:stable-example")
    pipes, _ = stable_pipelines(topo, "S", ["A", "B", "C"])
    assert [set(p.members) for p in pipes] == [{"A", "B", "C"}, {"A", "B"}, {"A"}]
    assert [p.rate / MBIT for p in pipes] == pytest.approx([100, 200, 300])
    plan = plan_stable(topo, Broadcast("S", 10**12))
    check_plan(plan, topo)
    res = simulate(plan, topo)
    bound = broadcast_bounds(topo, "S")
    for h in "ABC":
        assert res.per_host[h].rate == pytest.approx(bound.per_host_rate[h], rel=1e-9)
    assert res.aggregate_bandwidth == pytest.approx(1000 * MBIT, rel=1e-9)


def test_fpfr_on_a_tree_is_one_depth_first_pipeline():
    topo = load_topology("builtin:stable-example")
    pipes, _ = fpfr_pipelines(topo, "S", ["A", "B", "C"])
    assert len(pipes) == 1 and pipes[0].rate == pytest.approx(100 * MBIT)
    plan = plan_fpfr(topo, Broadcast("S", 10**9))
    check_plan(plan, topo)
    res = simulate(plan, topo)
    for h in "ABC":  # everyone at the common rate min b(d)
        assert res.per_host[h].rate == pytest.approx(100 * MBIT, rel=1e-9)


def test_fpfr_two_spanning_trees_on_a_triangle():
    topo = triangle()
    pipes, _ = fpfr_pipelines(topo, "S", ["A", "B"])
    assert [p.members for p in pipes] == [["A", "B"], ["B", "A"]]
    assert [p.rate for p in pipes] == [10.0, 10.0]
    plan = plan_fpfr(topo, Broadcast("S", 1000))
    check_plan(plan, topo)
    assert [t.ranges for t in plan.transfers] == [((0, 500),)] * 2 + [((500, 500),)] * 2
    res = simulate(plan, topo)
    for h in "AB":  # 20 B/s = maxflow(S -> h)
        assert res.per_host[h].rate == pytest.approx(20.0, rel=1e-9)


def test_contiguous_layout_fractions():
    assert contiguous_layout(100, [3.0, 1.0]) == [((0, 75),), ((75, 25),)]


def test_balanced_multicast_matches_lp_on_triangle():
    plan = plan_balanced_multicast(triangle(), Broadcast("S", 1000), seed=1)
    check_plan(plan, triangle())
    assert plan.notes["expected_aggregate_bandwidth"] == pytest.approx(40.0)  # 2 hosts x 20 B/s
    res = simulate(plan, triangle())
    assert res.aggregate_bandwidth == pytest.approx(40.0, rel=1e-9)


def test_dijkstra_load_aware_prefers_unshared_links():
    # S-X 100; H0 fast (100), H1 slow (10), H2 fast (100)
    topo = star("dij", 100.0, [100.0, 10.0, 100.0])
    hops = dijkstra_tree(topo, "S", ["H0", "H1", "H2"])
    # step 1: S->H0 (100); step 2: H0->H2 (min(100, 100/1, 100)=100 beats S->H2 at 100/2);
    # step 3: H1 at 10 from the earliest host (S)
    assert hops == [("S", "H0"), ("H0", "H2"), ("S", "H1")]
    # the literal widest-path variant degenerates to the flat tree on a star (docs/algorithms.md 2.5)
    assert all(u == "S" for u, _ in dijkstra_tree(topo, "S", ["H0", "H1", "H2"], variant="widest"))
    plan = plan_dijkstra(topo, Broadcast("S", 1000))
    check_plan(plan, topo)


def test_random_pipeline_seeded_and_best_of_n():
    topo = load_topology("builtin:two-clusters")
    src = topo.hosts[0]
    a = plan_random_pipeline(topo, Broadcast(src, 1000), seed=7)
    b = plan_random_pipeline(topo, Broadcast(src, 1000), seed=7)
    assert [t.dst for t in a.transfers] == [t.dst for t in b.transfers]
    best = plan_random_pipeline(topo, Broadcast(src, 1000), seed=7, trials=50)
    check_plan(best, topo)

    def e2(plan):
        chain = [src] + [t.dst for t in plan.transfers]
        return sum(e2_rates(topo, list(zip(chain, chain[1:])), src).values())

    assert e2(best) >= e2(a) - 1e-9


def test_optimal_beats_or_matches_stable_on_asymmetric_star():
    # H1's up-link is tiny: stable's chain must leave H1's branch -> drop rule
    topo = star("asym", 100.0, [50.0, 1.0, 30.0], asym=[50.0, 80.0, 30.0])
    st = plan_stable(topo, Broadcast("S", 10**9))
    op = plan_optimal(topo, Broadcast("S", 10**9))
    check_plan(st, topo)
    check_plan(op, topo)
    rs, ro = simulate(st, topo), simulate(op, topo)
    bound = broadcast_bounds(topo, "S")
    # stable: T1 at 1 B/s (H1's up-link), H1 dropped, then {H0,H2} at 29, {H0} at 20: 81 B/s
    assert rs.aggregate_bandwidth == pytest.approx(81.0, rel=1e-6)
    # optimal visits H1 last (its up-link unused) and reaches the bound 50 + 80 + 30
    assert bound.aggregate_bandwidth == pytest.approx(160.0)
    assert ro.aggregate_bandwidth == pytest.approx(160.0, rel=1e-6)
    assert op.notes["gap_to_bound"] == pytest.approx(0.0, abs=1e-9)
    for h, r in ro.per_host.items():
        assert r.rate <= bound.per_host_rate[h] * (1 + 1e-9)


def test_general_graph_planners_use_explicit_paths():
    topo = ring_with_switches()
    for planner in (plan_stable, plan_fpfr, plan_optimal, plan_balanced_multicast):
        plan = planner(topo, Broadcast("s", 10**6))
        check_plan(plan, topo)
        assert all(t.path is not None for t in plan.transfers)
        res = simulate(plan, topo)
        bound = broadcast_bounds(topo, "s")
        for h, r in res.per_host.items():
            assert r.rate <= bound.per_host_rate[h] * (1 + 1e-9)


@pytest.mark.parametrize("plan_fn", [plan_stable, plan_optimal, plan_fpfr])
def test_slow_direction_of_a_shared_cable_is_planned_at_its_own_rate(plan_fn):
    """Source h2 behind a shared cable of 20 B/s (h0->h2) / 10 B/s (h2->h0), h0 relays to four
    10 B/s hosts: every host's bound is 10. Planned at the cable's 20 B/s, stable sent two
    trees through the 10 B/s direction and the other hosts got 6.7 B/s."""
    from topocast import Topology
    from topocast.topology.model import PhysicalLink as L

    topo = Topology(
        "t",
        ["h0", "h1", "h2", "h3", "h4", "h5"],
        [],
        [
            L("h0", "h1", 10.0, 0),
            L("h0", "h2", 20.0, 0, bandwidth_ba=10.0, sharing="shared"),
            L("h0", "h3", 10.0, 0),
            L("h0", "h4", 10.0, 0),
            L("h0", "h5", 10.0, 0),
        ],
    )
    plan = plan_fn(topo, Broadcast("h2", 1000))
    check_plan(plan, topo)
    result = simulate(plan, topo)
    bound = broadcast_bounds(topo, "h2")
    for h, r in result.per_host.items():
        assert r.rate == pytest.approx(bound.per_host_rate[h], rel=1e-9), h


def test_one_way_route_graph_gives_a_clear_plan_error():
    # A SimGrid-style route graph: every link one-way, no link has its reverse, so no
    # depth-first pipeline can walk back up a tree link. stable refuses with a PlanError;
    # optimal (which starts from stable) once passed an empty column list to scipy's linprog
    # and failed with "c must be a 1-D array" (seen on simgrid/small_platform.xml).
    from topocast import Topology
    from topocast.errors import PlanError
    from topocast.topology.model import PhysicalLink as L

    topo = Topology(
        "oneway",
        ["s", "a", "b"],
        ["x"],
        [
            L("s", "x", 10.0, directed=True),
            L("x", "a", 5.0, directed=True),
            L("x", "b", 5.0, directed=True),
            L("a", "s", 5.0, directed=True),
            L("b", "s", 5.0, directed=True),
        ],
    )
    with pytest.raises(PlanError, match="cannot be reached"):
        plan_stable(topo, Broadcast("s", 10**6))
    # optimal falls back to the relay trees of its step 4, which follow the routes
    from topocast.plan.check import check_plan
    from topocast.sim import simulate

    plan = plan_optimal(topo, Broadcast("s", 10**6))
    assert plan.planner == "optimal" and "no depth-first pipeline" in plan.notes["method"]
    check_plan(plan, topo)
    assert set(simulate(plan, topo).per_host) == {"a", "b"}
